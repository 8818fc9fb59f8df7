"""ZeroMQ trace files: a forwarding trace as JSON Lines, judged offline by the invariants.

Format ``gapless-trace``, version 2, ``"protocol": "zmq"`` (UTF-8, one JSON object per line;
bytes — topics, payloads — are JSON strings of their Latin-1 characters, so ASCII reads as
itself and every byte round-trips):

* line 1, the header: ``{"format": "gapless-trace", "version": 2, "protocol": "zmq",
  "context": {...}, "meta": {...}}``; ``context`` is the trace's
  :class:`~gapless.impl.zmq.records.ZmqTopology` — ``edges`` (``[up, down, multicast]``),
  ``subscribers``, ``publishers``, ``devices``, ``unfiltered``, ``observed`` (null or a list),
  ``hosted``, ``subsumption``, ``fallback_limit`` (null or an int) — plus ``up`` (the edges
  up before the first record) and ``margin_us`` (null, or how long after its send a
  subscription message arrives, for traces that record sends only);
* every other line, one record ``{"seq", "time", "node", "kind", "detail"}``:

  - ``subscribe``: ``{"subscribe", "topic", "match"}`` — an application (un)subscribed;
  - ``publish``: ``{"seq", "payload"}``;
  - ``send``: ``{"to", "wire"}``; ``receive``: ``{"sender", "wire"}`` — ``wire`` is
    ``{"kind", "topic", "match", "origin", "seq", "payload", "welcome"}``
    (:class:`~gapless.impl.zmq.messages.ZmqWire`);
  - ``deliver``: ``{"subscriber", "pubend", "tick", "payload", "connection"}``;
  - ``link``: ``{"up_node", "down_node", "up"}``; ``fault``: ``{"kind", "target", "phase"}``.
* the last line, the end record every ``gapless-trace`` file shares
  (:mod:`gapless.invariants.trace_envelope`, which writes and reads it here):
  ``{"end": {"records": N, "sha256": HEX}}`` — the number of records and the SHA-256 of every
  line before it (the header included), each line's text without its terminator followed by
  one ``"\n"``. A file without it was cut short (``head -n``) and is refused as incomplete,
  never judged: a prefix of a run reads as lost messages and stale subscriptions. A count or
  digest that disagrees, or a line after it, is refused too. Version 1 files (before the end
  record) are still read, with :attr:`ZmqTraceFile.complete` ``None``: their truncation
  cannot be detected, and ``gapless check`` says so.

The libzmq differential test writes real libzmq's observable trace in this form
(``tests/zmq/_zmq_rig.py``); ``gapless simulate --scenario zmq-tree --trace FILE`` writes a
world run's; ``gapless check FILE`` judges either. A malformed file raises
:class:`~gapless.invariants.tracefile.TraceFileError` naming the line and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs

from gapless.impl.effects import Deliver
from gapless.impl.trace import Fault, TraceRecord
from gapless.impl.zmq.messages import ZmqWire
from gapless.impl.zmq.records import (
    AppChange,
    Edge,
    LinkEvent,
    Posted,
    WireReceived,
    WireSent,
    ZmqTopology,
)
from gapless.invariants.trace_envelope import read_envelope, write_envelope
from gapless.invariants.tracefile import TraceFileError
from gapless.invariants.violation import Violation
from gapless.invariants.zmq import NAMES, Ledger, check_ledger

__all__ = [
    "PROTOCOL",
    "VERSION",
    "ZmqTraceFile",
    "check_zmq_trace_file",
    "read_zmq_trace",
    "trace_check",
    "write_zmq_trace",
]

PROTOCOL: Final = "zmq"
VERSION: Final = 2
"""The version written: 2 ends with the end record."""
_READABLE: Final = (1, 2)  # version 1: no end record (truncation cannot be detected)


@final
@attrs.frozen(kw_only=True)
class ZmqTraceFile:
    """A read ZeroMQ trace: its ``topology``, the edges ``up`` at its start, the arrival
    ``margin_us``, its ``records`` and ``meta``; ``complete`` is ``True`` when its end
    record vouched for every line, ``None`` for a version 1 file (no end record)."""

    topology: ZmqTopology
    up: tuple[tuple[str, str], ...]
    margin_us: int | None
    records: tuple[TraceRecord, ...]
    meta: Mapping[str, Any]
    complete: bool | None = True

    @property
    def live_end(self) -> bool:
        """Liveness is not an invariant here (``gapless check`` asks every trace)."""
        return False


def _b(value: bytes) -> str:
    return value.decode("latin-1")


def _wire_out(w: ZmqWire) -> dict[str, Any]:
    return {
        "kind": w.kind,
        "topic": _b(w.topic),
        "match": w.match,
        "origin": w.origin,
        "seq": w.seq,
        "payload": _b(w.payload),
        "welcome": w.welcome,
    }


def _detail_out(r: TraceRecord) -> dict[str, Any]:
    d = r.detail
    if isinstance(d, AppChange):
        return {"subscribe": d.subscribe, "topic": _b(d.topic), "match": d.kind}
    if isinstance(d, Posted):
        return {"seq": d.seq, "payload": _b(d.payload)}
    if r.kind == "send" and isinstance(getattr(d, "wire", None), ZmqWire):
        return {"to": d.to, "wire": _wire_out(d.wire)}  # WireSent, or the world's Sent
    if isinstance(d, WireReceived):
        return {"sender": d.sender, "wire": _wire_out(d.wire)}
    if isinstance(d, Deliver):
        return {
            "subscriber": d.subscriber,
            "pubend": d.pubend,
            "tick": d.tick,
            "payload": _b(bytes(d.payload)),
            "connection": d.connection,
        }
    if isinstance(d, LinkEvent):
        return {"up_node": d.up_node, "down_node": d.down_node, "up": d.up}
    if isinstance(d, Fault):
        return {"kind": d.kind, "target": d.target, "phase": d.phase}
    raise TraceFileError(f"record {r.seq}: kind {r.kind!r} with detail {d!r} has no encoding")


def _context_out(topo: ZmqTopology, up: Iterable[tuple[str, str]], margin: int | None) -> Any:
    return {
        "edges": [[e.up, e.down, e.multicast] for e in topo.edges],
        "subscribers": list(topo.subscribers),
        "publishers": list(topo.publishers),
        "devices": list(topo.devices),
        "unfiltered": list(topo.unfiltered),
        "observed": None if topo.observed is None else list(topo.observed),
        "hosted": topo.hosted,
        "subsumption": topo.subsumption,
        "fallback_limit": topo.fallback_limit,
        "up": [list(e) for e in up],
        "margin_us": margin,
    }


def write_zmq_trace(
    path: str | os.PathLike[str],
    topology: ZmqTopology,
    records: Iterable[TraceRecord],
    *,
    up: Iterable[tuple[str, str]] = (),
    margin_us: int | None = None,
    meta: Mapping[str, Any] | None = None,
) -> int:
    """Write ``records`` (details of ``gapless.impl.zmq.records``, ``Deliver``, ``Fault``;
    other kinds, e.g. ``notify``, are left out) to ``path``; returns how many were written."""
    header = {
        "format": "gapless-trace",
        "version": VERSION,
        "protocol": PROTOCOL,
        "context": _context_out(topology, up, margin_us),
        "meta": dict(meta or {}),
    }
    kept = ("subscribe", "publish", "send", "receive", "deliver", "link", "fault")
    rows = [
        {"seq": r.seq, "time": r.time, "node": r.node, "kind": r.kind, "detail": _detail_out(r)}
        for r in records
        if r.kind in kept
    ]
    written = write_envelope(path, header, rows)  # aside, then renamed: never half-written
    os.chmod(path, 0o644)
    return written


class _Line:
    def __init__(self, path: Path, number: int) -> None:
        self.where = f"{path}:{number}"

    def fail(self, msg: str) -> TraceFileError:
        return TraceFileError(f"{self.where}: {msg}")

    def get(self, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in obj:
            raise self.fail(f"field {key!r} is missing")
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _tuple(kind)):
            raise self.fail(f"field {key!r} = {value!r} is not {_names(kind)}")
        return value

    def bytes_(self, obj: Mapping[str, Any], key: str) -> bytes:
        try:
            return str(self.get(obj, key, str)).encode("latin-1")
        except UnicodeEncodeError:
            raise self.fail(f"field {key!r} has a character above U+00FF") from None


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _tuple(kind))


def _wire_in(ln: _Line, w: Mapping[str, Any]) -> ZmqWire:
    return ZmqWire(
        kind=ln.get(w, "kind", str),
        topic=ln.bytes_(w, "topic"),
        match=ln.get(w, "match", str),
        origin=ln.get(w, "origin", str),
        seq=ln.get(w, "seq", int),
        payload=ln.bytes_(w, "payload"),
        welcome=ln.get(w, "welcome", bool),
    )


def _detail_in(ln: _Line, kind: str, d: Mapping[str, Any]) -> Any:
    if kind == "subscribe":
        return AppChange(
            subscribe=ln.get(d, "subscribe", bool),
            topic=ln.bytes_(d, "topic"),
            kind=ln.get(d, "match", str),
        )
    if kind == "publish":
        return Posted(seq=ln.get(d, "seq", int), payload=ln.bytes_(d, "payload"))
    if kind in ("send", "receive"):
        wire = _wire_in(ln, ln.get(d, "wire", dict))
        if kind == "send":
            return WireSent(to=ln.get(d, "to", str), wire=wire)
        return WireReceived(sender=ln.get(d, "sender", str), wire=wire)
    if kind == "deliver":
        return Deliver(
            subscriber=ln.get(d, "subscriber", str),
            pubend=ln.get(d, "pubend", str),
            tick=ln.get(d, "tick", int),
            payload=ln.bytes_(d, "payload"),
            connection=ln.get(d, "connection", int),
        )
    if kind == "link":
        return LinkEvent(
            up_node=ln.get(d, "up_node", str),
            down_node=ln.get(d, "down_node", str),
            up=ln.get(d, "up", bool),
        )
    if kind == "fault":
        return Fault(
            kind=ln.get(d, "kind", str),
            target=ln.get(d, "target", str),
            phase=ln.get(d, "phase", str),
        )
    raise ln.fail(
        f"kind {kind!r} is not one of deliver, fault, link, publish, receive, send, subscribe"
    )


def _topology_in(ln: _Line, c: Mapping[str, Any]) -> ZmqTopology:
    edges = []
    for e in ln.get(c, "edges", list):
        if not (isinstance(e, list) and len(e) == 3 and isinstance(e[2], bool)):
            raise ln.fail(f"edge {e!r} is not [up, down, multicast]")
        edges.append(Edge(up=str(e[0]), down=str(e[1]), multicast=e[2]))
    observed = c.get("observed")
    limit = c.get("fallback_limit")
    return ZmqTopology(
        edges=tuple(edges),
        subscribers=tuple(map(str, ln.get(c, "subscribers", list))),
        publishers=tuple(map(str, ln.get(c, "publishers", list))),
        devices=tuple(map(str, ln.get(c, "devices", list))),
        unfiltered=tuple(map(str, ln.get(c, "unfiltered", list))),
        observed=None if observed is None else tuple(map(str, observed)),
        hosted=ln.get(c, "hosted", bool),
        subsumption=ln.get(c, "subsumption", bool),
        fallback_limit=None if limit is None else int(limit),
    )


def read_zmq_trace(path: str | os.PathLike[str]) -> ZmqTraceFile:
    """Read a ZeroMQ ``gapless-trace`` file (see module doc)."""
    p = Path(path)
    if not p.is_file():
        raise TraceFileError(f"{p}: no such trace file")
    lines = p.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise TraceFileError(f"{p}: empty file; a trace starts with its header line")
    ln = _Line(p, 1)
    header = _json(ln, lines[0])
    version = header.get("version")
    if (header.get("format"), header.get("protocol")) != ("gapless-trace", PROTOCOL) or (
        version not in _READABLE
    ):
        raise ln.fail("the header is not format 'gapless-trace', version 1 or 2, protocol 'zmq'")
    ctx = ln.get(header, "context", dict)
    topo = _topology_in(ln, ctx)
    up = tuple((str(a), str(b)) for a, b in ln.get(ctx, "up", list))
    margin = ctx.get("margin_us")
    if version >= 2:  # the shared envelope: end record, truncation and edits refused
        rows = read_envelope(p, protocol=PROTOCOL, versions=(VERSION,)).rows
    else:  # version 1: no end record
        rows = tuple((i, _json(_Line(p, i), text)) for i, text in enumerate(lines[1:], start=2))
    records = [_record_in(_Line(p, i), r) for i, r in rows]
    return ZmqTraceFile(
        topology=topo,
        up=up,
        margin_us=None if margin is None else int(margin),
        records=tuple(records),
        meta=header.get("meta", {}),
        complete=True if version >= 2 else None,
    )


def _record_in(ln: _Line, r: Mapping[str, Any]) -> TraceRecord:
    kind = ln.get(r, "kind", str)
    return TraceRecord(
        seq=ln.get(r, "seq", int),
        time=ln.get(r, "time", int),
        node=ln.get(r, "node", str),
        kind=kind,
        detail=_detail_in(ln, kind, ln.get(r, "detail", dict)),
    )


def _json(ln: _Line, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ln.fail(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ln.fail("a line is one JSON object")
    return value


def check_zmq_trace_file(
    path: str | os.PathLike[str], names: Iterable[str] = ()
) -> tuple[ZmqTraceFile, list[Violation]]:
    """Read ``path`` and judge it with the invariants ``names`` (default: all)."""
    chosen = tuple(names) or NAMES
    unknown = [n for n in chosen if n not in NAMES]
    if unknown:
        raise ValueError(f"unknown invariant(s) {unknown}; allowed: {', '.join(NAMES)}")
    tf = read_zmq_trace(path)
    ledger = Ledger(tf.topology, up=tf.up)
    ledger.margin_us = tf.margin_us
    return tf, check_ledger(ledger, tf.records, chosen)


def trace_check(
    path: str | os.PathLike[str],
    names: Iterable[str] = (),
    *,
    matches: Any = None,
    live_end: bool | None = None,
) -> tuple[ZmqTraceFile, Violation | None]:
    """The registry's trace-file judge (``ProtocolEntry.trace_check``): the file read and
    its first violation, or None. ``matches`` and ``live_end`` are GD's (content filters,
    liveness at the end); ZeroMQ's invariants need neither."""
    tf, violations = check_zmq_trace_file(path, names)
    return tf, (violations[0] if violations else None)
