"""GES trace files: a run's observable trace as JSON Lines, judged offline by GES's
invariants (:mod:`gapless.invariants.ges`) [GES "Reliable delivery"].

Format ``gapless-trace``, version 3, ``"protocol": "ges"`` (UTF-8, one JSON object per line),
shaped like guaranteed delivery's (:mod:`gapless.invariants.tracefile`), end record included:

* line 1, the header: ``{"format": "gapless-trace", "version": 3, "protocol": "ges",
  "context": {...}, "live_end": bool, "meta": {...}}``; ``context`` holds ``profiles``
  (client -> profile, in the filter language), ``storage_of_pubend`` (publisher -> the storage
  that logs its events), ``links`` (``[a, b]`` pairs, ``a < b``) and ``settle_us`` (how long
  ``route_while_path`` lets news of a recovery travel; absent: 100,000). ``live_end``: the trace
  ends healed and drained, so ``roam_complete`` is judged at its end.
* every other line, one record ``{"seq", "time", "node", "kind", "detail"}``:

  - ``publish``: ``{"pubend", "index", "attributes", "size"}``;
  - ``persist``: ``{"key", "write"}`` — ``key`` pairs the write with its completion (any
    JSON value; lists read back as tuples), ``write`` says what it makes durable: ``{"log":
    {"pubend", "epoch", "attributes"}}``, ``{"registration": {"storage", "client", "broker",
    "connection", "profile", "start", "last", "confirmed", "cut", "counts", "old_broker",
    "old_counts"}}`` (``counts``: ``[depth, count]`` pairs; an optional ``change``: the
    profile change within the connection, 0 when absent), ``{"release": {"storage",
    "epoch", "remaining", "targets", "units", "peers"}}`` (``units``, the cluster storages of
    the finer tier, and ``peers``, the system storages of the system-level links, may be
    absent: none), ``{"replica": {"source", "epoch", "pubend", "attributes"}}`` (a cluster
    storage holds the system storage ``source``'s event ``epoch``), ``{"sysin": {"origin",
    "seq", "epoch"}}`` (a system storage holds system storage ``origin``'s ``seq``-th event
    destined into its unit, of epoch ``epoch``), ``{"replica_release": {"source", "epoch",
    "targets"}}`` (a cluster storage released its replica of ``source``'s event ``epoch``,
    destined to ``targets``), or ``{}`` (anything else); ``persisted``:
    ``{"key"}``;
  - ``send``: ``{"to", "wire"}``, ``drop``: ``{"sender", "to", "wire", "reason"}`` — ``wire``
    is :class:`~gapless.impl.ges.messages.GesWire` as an object (``queue``, ``dests``:
    lists);
  - ``deliver``: ``{"subscriber", "connection", "pubend", "tick", "payload"}`` (``payload``:
    the event's attributes; a cohort is written as one record per subscriber);
  - ``connect``: ``{"subscriber", "filter", "connection", "resume"}`` (``resume``: null or
    ``[storage, epoch]`` pairs); ``disconnect``: ``{"subscriber"}``; ``fault``: ``{"kind",
    "target", "phase"}``;
  - ``unrouted`` (since version 3): ``{"dests", "visited", "kind", "storage", "epoch"}`` — the
    record's node dropped a message for want of a route (the world's ``rejected`` record of
    a :class:`~gapless.impl.ges.records.Unrouted`; read back as one).
* the last line, the end record ``{"end": {"records": N, "sha256": HEX}}``: the record count
  and the SHA-256 of every line before it (each line's text and one ``"\\n"``). A file without
  it, or whose count or digest disagrees, is refused: judging a prefix of a run gives false
  liveness violations.

Files are written by :func:`gapless.invariants.trace_envelope.write_envelope` (compact JSON,
written atomically); the reader checks the digest of each line as it is in the file, so files
written before, one ``json.dumps(..., sort_keys=True)`` line each, still read, and so do
version 2 files (written before ``unrouted`` records existed: they hold none).

``gapless simulate --scenario ges-roam --trace FILE`` writes one; ``gapless check FILE``
judges it and gives the verdict the online checker gave. A malformed file raises
:class:`~gapless.invariants.tracefile.TraceFileError` naming the line and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs
from pyrsistent import pmap

from gapless.impl.effects import Deliver, Persist, Rejected, deliveries
from gapless.impl.ges.messages import GesWire, Replicate, SysForward, Unreplicate
from gapless.impl.ges.node import Registration, Release
from gapless.impl.ges.records import Unrouted, unrouted
from gapless.impl.ges.storage import ClientRecord
from gapless.impl.inputs import Connect, Disconnect, Persisted
from gapless.impl.trace import Dropped, Fault, Published, Sent, TraceRecord
from gapless.invariants.ges import INVARIANTS, SETTLE_US, GESChecker, GESContext
from gapless.invariants.trace_envelope import write_envelope
from gapless.invariants.tracefile import TraceFileError
from gapless.invariants.violation import Violation

__all__ = ["PROTOCOL", "GesTraceFile", "read_ges_trace", "trace_check", "write_ges_trace"]

PROTOCOL: Final = "ges"
_KINDS: Final = (
    "publish",
    "persist",
    "persisted",
    "send",
    "drop",
    "deliver",
    "connect",
    "disconnect",
    "fault",
    "unrouted",
)
VERSION: Final = 3
READS: Final = (2, 3)
"""The versions this reader reads (2: before ``unrouted`` records)."""


@final
@attrs.frozen(kw_only=True)
class LoggedWrite:
    """A ``log`` write read from a file: the event it made durable."""

    pubend: str
    epoch: int
    attributes: Any


@final
@attrs.frozen(kw_only=True)
class GesTraceFile:
    """A read GES trace: the invariants' context, its records, whether it ends live, meta,
    and ``complete`` (its end record vouched for every line)."""

    context: GESContext
    records: tuple[TraceRecord, ...]
    live_end: bool
    meta: Mapping[str, Any]
    complete: bool = True


# ------------------------------------------------------------------------------- writing


def _json_key(key: Any) -> Any:
    if isinstance(key, tuple | list):
        return [_json_key(k) for k in key]
    return key


def _wire_out(w: GesWire) -> dict[str, Any]:
    out = attrs.asdict(w, recurse=False)
    out["dests"] = list(w.dests)
    out["queue"] = list(w.queue)
    return out


def _write_out(ctx: GESContext, p: Persist) -> dict[str, Any]:
    kind = ctx.durable(p)
    if kind == "log":
        got = ctx.logged(p)
        if got is not None:
            return {"log": {"pubend": got[0], "epoch": got[1], "attributes": dict(got[2])}}
    if kind == "registration":
        reg: Registration = p.value
        rec = attrs.asdict(reg.record, recurse=False)
        return {
            "registration": {
                "storage": reg.storage,
                "client": reg.client,
                **rec,
                "counts": [list(c) for c in reg.counts],
                "old_broker": reg.old_broker,
                "old_counts": [list(c) for c in reg.old_counts],
            }
        }
    if kind == "release":
        rel: Release = p.value
        return {
            "release": {
                "storage": rel.storage,
                "epoch": rel.epoch,
                "remaining": rel.remaining,
                "targets": list(rel.targets),
                "units": list(rel.units),
                "peers": list(rel.peers),
            }
        }
    if kind == "replica":
        r: Replicate = p.value
        return {
            "replica": {
                "source": r.source,
                "epoch": r.epoch,
                "pubend": r.pubend,
                "attributes": dict(r.attributes),
            }
        }
    if kind == "replica_release":
        u: Unreplicate = p.value
        return {
            "replica_release": {
                "source": u.source,
                "epoch": u.epoch,
                "targets": list(u.targets),
            }
        }
    if kind == "sysin":
        f: SysForward = p.value
        return {"sysin": {"origin": f.origin, "seq": f.seq, "epoch": f.epoch}}
    return {}


def _deliver_out(d: Deliver) -> dict[str, Any]:
    return {
        "subscriber": d.subscriber,
        "connection": d.connection,
        "pubend": d.pubend,
        "tick": d.tick,
        "payload": dict(d.payload),
    }


def _details_out(ctx: GESContext, r: TraceRecord) -> list[dict[str, Any]]:
    d, k = r.detail, r.kind
    if k == "publish":
        return [
            {"pubend": d.pubend, "index": d.index, "attributes": dict(d.attributes), "size": d.size}
        ]
    if k == "persist":
        return [{"key": _json_key(d.key), "write": _write_out(ctx, d)}]
    if k == "persisted":
        return [{"key": _json_key(d.key)}]
    if k == "send":
        return [{"to": d.to, "wire": _wire_out(d.wire)}]
    if k == "drop":
        return [{"sender": d.sender, "to": d.to, "wire": _wire_out(d.wire), "reason": d.reason}]
    if k == "deliver":
        return [_deliver_out(x) for x in deliveries(d)]
    if k == "connect":
        resume = None if d.resume is None else [list(x) for x in d.resume]
        return [
            {
                "subscriber": d.subscriber,
                "filter": d.filter,
                "connection": d.connection,
                "resume": resume,
            }
        ]
    if k == "disconnect":
        return [{"subscriber": d.subscriber}]
    if k == "unrouted":
        u: Unrouted = d.input
        return [
            {
                "dests": list(u.dests),
                "visited": sorted(u.visited),
                "kind": u.kind,
                "storage": u.storage,
                "epoch": u.epoch,
            }
        ]
    return [{"kind": d.kind, "target": d.target, "phase": d.phase}]


def write_ges_trace(
    path: str | os.PathLike[str],
    ctx: GESContext,
    records: Iterable[TraceRecord],
    *,
    live_end: bool,
    meta: Mapping[str, Any] | None = None,
) -> int:
    """Write ``records`` (kinds of :data:`_KINDS`; the others are left out) to ``path`` with
    ``ctx``; returns how many records were written. Records are renumbered from 0."""
    header = {
        "format": "gapless-trace",
        "version": VERSION,
        "protocol": PROTOCOL,
        "context": {
            "profiles": dict(sorted(ctx.profiles.items())),
            "storage_of_pubend": dict(sorted(ctx.storage_of_pubend.items())),
            "links": [list(x) for x in ctx.links],
            "waits": ctx.waits,
            "storages": list(ctx.storages),
            "settle_us": ctx.settle_us,
        },
        "live_end": live_end,
        "meta": dict(meta or {}),
    }
    rows: list[dict[str, Any]] = []
    for r in records:
        kind = r.kind
        if kind == "rejected" and type(getattr(r.detail, "input", None)) is Unrouted:
            kind = "unrouted"
        elif kind not in _KINDS:
            continue
        for detail in _details_out(ctx, attrs.evolve(r, kind=kind)):
            row = {"seq": len(rows), "time": r.time, "node": r.node, "kind": kind}
            rows.append({**row, "detail": detail})
    return write_envelope(path, header, rows)


# ------------------------------------------------------------------------------- reading


class _Line:
    def __init__(self, path: Path, number: int) -> None:
        self.where = f"{path}:{number}"

    def fail(self, msg: str) -> TraceFileError:
        return TraceFileError(f"{self.where}: {msg}")

    def get(self, obj: Any, key: str, kind: type | tuple[type, ...]) -> Any:
        if not isinstance(obj, dict):
            raise self.fail(f"expected an object holding {key!r}, got {obj!r}")
        if key not in obj:
            raise self.fail(f"field {key!r} is missing")
        value = obj[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(t.__name__ for t in kinds)
            raise self.fail(f"field {key!r} = {value!r} is not {names}")
        return value

    def opt_int(self, obj: Any, key: str) -> int | None:
        value = self.get(obj, key, (int, type(None)))
        return None if value is None else int(value)


def _key_in(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_key_in(v) for v in value)
    return value


def _pairs(ln: _Line, obj: Any, key: str) -> tuple[tuple[int, int], ...]:
    out = []
    for x in ln.get(obj, key, list):
        if not (isinstance(x, list) and len(x) == 2 and all(type(v) is int for v in x)):
            raise ln.fail(f"{key}: {x!r} is not a [depth, count] pair")
        out.append((x[0], x[1]))
    return tuple(out)


def _wire_in(ln: _Line, w: Any) -> GesWire:
    return GesWire(
        kind=ln.get(w, "kind", str),
        storage=ln.get(w, "storage", str),
        epoch=ln.opt_int(w, "epoch"),
        pubend=ln.get(w, "pubend", str),
        client=ln.get(w, "client", str),
        connection=ln.opt_int(w, "connection"),
        dests=tuple(map(str, ln.get(w, "dests", list))),
        presented=ln.opt_int(w, "presented"),
        effective=ln.opt_int(w, "effective"),
        cut=ln.opt_int(w, "cut"),
        fresh=ln.get(w, "fresh", bool),
        queue=tuple(int(x) for x in ln.get(w, "queue", list)),
        unit=ln.get(w, "unit", str) if isinstance(w, dict) and "unit" in w else "",
        seq=ln.opt_int(w, "seq") if isinstance(w, dict) and "seq" in w else None,
        change=ln.get(w, "change", int) if isinstance(w, dict) and "change" in w else 0,
    )


def _write_in(ln: _Line, w: Any) -> Any:
    if not isinstance(w, dict) or len(w) > 1:
        raise ln.fail(
            f"write {w!r} is not {{}} or one of log, registration, release, replica, sysin"
        )
    if "log" in w:
        g = w["log"]
        attributes = pmap(ln.get(g, "attributes", dict))
        return LoggedWrite(
            pubend=ln.get(g, "pubend", str), epoch=ln.get(g, "epoch", int), attributes=attributes
        )
    if "registration" in w:
        g = w["registration"]
        record = ClientRecord(
            broker=ln.get(g, "broker", str),
            connection=ln.get(g, "connection", int),
            profile=ln.get(g, "profile", str),
            start=ln.get(g, "start", int),
            last=ln.get(g, "last", int),
            confirmed=ln.get(g, "confirmed", int),
            cut=ln.get(g, "cut", int),
            change=ln.get(g, "change", int) if "change" in g else 0,
        )
        return Registration(
            storage=ln.get(g, "storage", str),
            client=ln.get(g, "client", str),
            record=record,
            counts=_pairs(ln, g, "counts"),
            old_broker=ln.get(g, "old_broker", str),
            old_counts=_pairs(ln, g, "old_counts"),
        )
    if "release" in w:
        g = w["release"]
        return Release(
            storage=ln.get(g, "storage", str),
            epoch=ln.get(g, "epoch", int),
            remaining=ln.get(g, "remaining", int),
            targets=tuple(map(str, ln.get(g, "targets", list))),
            units=tuple(map(str, ln.get(g, "units", list))) if "units" in g else (),
            peers=tuple(map(str, ln.get(g, "peers", list))) if "peers" in g else (),
        )
    if "replica" in w:
        g = w["replica"]
        return Replicate(
            storage="",
            source=ln.get(g, "source", str),
            epoch=ln.get(g, "epoch", int),
            pubend=ln.get(g, "pubend", str),
            attributes=pmap(ln.get(g, "attributes", dict)),
        )
    if "replica_release" in w:
        g = w["replica_release"]
        return Unreplicate(
            storage="",
            source=ln.get(g, "source", str),
            epoch=ln.get(g, "epoch", int),
            targets=tuple(map(str, ln.get(g, "targets", list))),
        )
    if "sysin" in w:
        g = w["sysin"]
        return SysForward(
            storage="",
            origin=ln.get(g, "origin", str),
            seq=ln.get(g, "seq", int),
            epoch=ln.get(g, "epoch", int),
            pubend="",
            attributes=pmap(),
        )
    if w:
        raise ln.fail(
            f"write {w!r} is not {{}} or one of log, registration, release, replica, sysin"
        )
    return None


def _detail_in(ln: _Line, kind: str, d: Any, node: str = "") -> Any:
    if kind == "publish":
        return Published(
            pubend=ln.get(d, "pubend", str),
            index=ln.get(d, "index", int),
            attributes=pmap(ln.get(d, "attributes", dict)),
            size=ln.get(d, "size", int),
        )
    if kind == "persist":
        return Persist(key=_key_in(ln.get(d, "key", object)), value=_write_in(ln, d.get("write")))
    if kind == "persisted":
        return Persisted(key=_key_in(ln.get(d, "key", object)))
    if kind in ("send", "drop"):
        wire: Any = _wire_in(ln, ln.get(d, "wire", dict))  # the protocol's own summary
        if kind == "send":
            return Sent(to=ln.get(d, "to", str), msg=None, wire=wire)
        return Dropped(
            sender=ln.get(d, "sender", str),
            to=ln.get(d, "to", str),
            msg=None,
            wire=wire,
            reason=ln.get(d, "reason", str),
        )
    if kind == "deliver":
        return Deliver(
            subscriber=ln.get(d, "subscriber", str),
            pubend=ln.get(d, "pubend", str),
            tick=ln.get(d, "tick", int),
            payload=pmap(ln.get(d, "payload", dict)),
            connection=ln.get(d, "connection", int),
        )
    if kind == "connect":
        resume = d.get("resume") if isinstance(d, dict) else None
        return Connect(
            subscriber=ln.get(d, "subscriber", str),
            filter=ln.get(d, "filter", str),
            connection=ln.get(d, "connection", int),
            resume=None if resume is None else tuple((str(s), int(e)) for s, e in resume),
        )
    if kind == "disconnect":
        return Disconnect(subscriber=ln.get(d, "subscriber", str))
    if kind == "unrouted":
        got: Rejected = unrouted(
            node,
            tuple(map(str, ln.get(d, "dests", list))),
            frozenset(map(str, ln.get(d, "visited", list))),
            ln.get(d, "kind", str),
            ln.get(d, "storage", str),
            ln.get(d, "epoch", int),
        )
        return got
    if kind == "fault":
        return Fault(
            kind=ln.get(d, "kind", str),
            target=ln.get(d, "target", str),
            phase=ln.get(d, "phase", str),
        )
    raise ln.fail(f"kind {kind!r} is not one of {', '.join(_KINDS)}")


def _durable(p: Persist) -> str | None:
    t = type(p.value)
    if t is LoggedWrite:
        return "log"
    if t is Registration:
        return "registration"
    if t is Release:
        return "release"
    if t is Replicate:
        return "replica"
    if t is SysForward:
        return "sysin"
    if t is Unreplicate:
        return "replica_release"
    return None


def _logged(p: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
    v = p.value
    return (v.pubend, v.epoch, v.attributes) if type(v) is LoggedWrite else None


def _json(ln: _Line, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ln.fail(f"not JSON ({exc.msg} at column {exc.colno})") from None


def _context_in(ln: _Line, c: Any, matches: Callable[[str, Any], bool]) -> GESContext:
    links = []
    for x in ln.get(c, "links", list):
        if not (isinstance(x, list) and len(x) == 2):
            raise ln.fail(f"link {x!r} is not [a, b]")
        links.append((str(x[0]), str(x[1])))
    return GESContext(
        profiles={str(k): str(v) for k, v in ln.get(c, "profiles", dict).items()},
        storage_of_pubend={str(k): str(v) for k, v in ln.get(c, "storage_of_pubend", dict).items()},
        links=tuple(links),
        matches=matches,
        logged=_logged,
        durable=_durable,
        waits=ln.get(c, "waits", bool) if "waits" in c else False,
        storages=tuple(str(x) for x in (ln.get(c, "storages", list) if "storages" in c else ())),
        settle_us=ln.get(c, "settle_us", int) if "settle_us" in c else SETTLE_US,
    )


def read_ges_trace(
    path: str | os.PathLike[str], *, matches: Callable[[str, Any], bool]
) -> GesTraceFile:
    """Read a GES ``gapless-trace`` file (see module doc); ``matches`` evaluates profiles."""
    p = Path(path)
    if not p.is_file():
        raise TraceFileError(f"{p}: no such trace file")
    lines = [x for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    if not lines:
        raise TraceFileError(f"{p}: empty file; a trace starts with its header line")
    ln = _Line(p, 1)
    header = _json(ln, lines[0])
    if (
        not isinstance(header, dict)
        or (header.get("format"), header.get("protocol")) != ("gapless-trace", PROTOCOL)
        or header.get("version") not in READS
    ):
        raise ln.fail("the header is not format 'gapless-trace', version 2 or 3, protocol 'ges'")
    ctx = _context_in(ln, ln.get(header, "context", dict), matches)
    digest = hashlib.sha256(lines[0].encode("utf-8") + b"\n")
    records: list[TraceRecord] = []
    end = None
    for i, text in enumerate(lines[1:], start=2):
        ln = _Line(p, i)
        if end is not None:
            raise ln.fail("a line after the end record; the file was edited")
        obj = _json(ln, text)
        if isinstance(obj, dict) and "end" in obj:
            end = obj["end"]
            _check_end(ln, end, len(records), digest.hexdigest())
            continue
        digest.update(text.encode("utf-8") + b"\n")
        kind = ln.get(obj, "kind", str)
        node = ln.get(obj, "node", str)
        detail = _detail_in(ln, kind, ln.get(obj, "detail", dict), node)
        records.append(
            TraceRecord(
                seq=ln.get(obj, "seq", int),
                time=ln.get(obj, "time", int),
                node=node,
                kind="rejected" if kind == "unrouted" else kind,
                detail=detail,
            )
        )
    if end is None:
        raise TraceFileError(
            f"{p}: no end record: the file was cut short (judging a prefix of a run gives "
            "false liveness violations)"
        )
    return GesTraceFile(
        context=ctx,
        records=tuple(records),
        live_end=ln.get(header, "live_end", bool) if "live_end" in header else False,
        meta=header.get("meta", {}),
    )


def _check_end(ln: _Line, end: Any, records: int, digest: str) -> None:
    said = ln.get(end, "records", int)
    if said != records:
        raise ln.fail(f"the end record says {said} records, the file holds {records}")
    if ln.get(end, "sha256", str) != digest:
        raise ln.fail("the end record's sha256 does not match the lines before it")


def trace_check(
    path: str | os.PathLike[str],
    names: Iterable[str] = (),
    *,
    matches: Callable[[str, Any], bool],
    live_end: bool | None = None,
) -> tuple[GesTraceFile, Violation | None]:
    """The registry's trace-file judge (``ProtocolEntry.trace_check``): the file read and
    its first violation, or None. ``roam_complete`` is judged at the end only when the file
    ends live (and ``live_end`` is not False)."""
    chosen: tuple[str, ...] = tuple(names) or tuple(INVARIANTS)
    unknown = [n for n in chosen if n not in INVARIANTS]
    if unknown:
        raise ValueError(f"unknown invariant(s) {unknown}; allowed: {', '.join(INVARIANTS)}")
    tf = read_ges_trace(path, matches=matches)
    live = tf.live_end if live_end is None else (live_end and tf.live_end)
    if not live:
        chosen = tuple(n for n in chosen if n != "roam_complete")
    if not chosen:  # only roam_complete was asked, and the file does not end live
        return tf, None
    checker = GESChecker(tf.context, chosen)
    for r in tf.records:
        if checker.observe(r):
            return tf, checker.violation
    last = tf.records[-1].time if tf.records else 0
    end = TraceRecord(seq=len(tf.records), time=last, node="-", kind="fault", detail="end")
    return tf, checker.finish(end)
