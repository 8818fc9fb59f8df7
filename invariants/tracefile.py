"""Trace files: a run's observable trace as JSON Lines, checked offline by the invariants.

The invariants judge only what can be observed (DESIGN.md): the workload, the effects the
roles emit and the faults. This module writes exactly that — and nothing of a role's internal
state or message encoding — to a file, and reads it back into
:class:`~gapless.impl.trace.TraceRecord` values and a
:class:`~gapless.invariants.checker.CheckContext`, so that :func:`check_trace_file` gives the
verdict the online checker gave, and so that a trace produced by *another* implementation
(a real broker network's logs, turned into this format) can be judged by the same invariants.
``gapless simulate --trace FILE`` and ``gapless replay --trace FILE`` write one;
``gapless check FILE`` checks one.

Format ``gapless-trace``, version 2 (UTF-8, one JSON object per line):

* line 1, the header: ``{"format": "gapless-trace", "version": 2, "protocol": "gd", "context":
  {...}, "live_end": bool, "meta": {...}}``. ``protocol`` names the registered protocol whose
  invariants judge the file (``gapless check`` finds it in the registry); a header without it
  is guaranteed delivery's (files written before it was recorded). ``context`` holds
  ``subscriptions`` (a list of ``{"name", "shb", "filter", "order"}``; ``filter`` in the
  filter language of :mod:`gapless.impl.filters`), ``cell_of`` (broker -> cell), ``cell_tree``
  (a list of ``[parent_cell, child_cell]``), ``pubend_host`` (pubend -> broker), ``merged``
  (the pubends of a total-order group), ``roles`` (broker -> ``"phb"``, ``"ib"`` or ``"shb"``)
  and ``min_repetition_us``; optionally ``aet_us`` and ``ack_expected_period_us`` (the
  pubend's liveness rule [GD §3.2]; a file without them leaves ``ack_expected_timing``
  unjudged), ``ack_delay_us`` (how long an SHB may wait to ack what it delivered [GD §3.1];
  a file without it leaves ``shb_ack_timing`` unjudged) and ``links`` (the physical links,
  ``[a, b]`` pairs; a file without them leaves ``down_link_routing`` unjudged).
  ``live_end``: the trace ends with every fault healed and the network drained, so
  liveness is judged at its end. ``meta`` is free-form (scenario, seed, digest).
* every other line, one record: ``{"seq", "time", "node", "kind", "detail"}`` with ``kind``
  one of :data:`~gapless.impl.trace.RECORD_KINDS` and ``detail`` by kind:

  - ``publish``: ``{"pubend", "index", "attributes", "size"}``
  - ``persist``: ``{"key", "logged"}`` — ``logged`` is ``{"pubend", "tick", "attributes"}``
    when the write logs a published message, else null; a write that logs several (group
    commit, ``GDConfig.group_commit``) has ``logged`` null and ``"batch"``: the list of them;
    ``persisted``: ``{"key"}`` (the key pairs a write with its completion; any JSON value)
  - ``send``: ``{"to", "wire"}``; ``receive``: ``{"sender", "wire"}``; ``drop``:
    ``{"sender", "to", "wire", "reason"}`` — ``wire`` is the message's protocol-neutral summary
    (:class:`~gapless.impl.trace.Wire`: ``kind``, ``pubend``, ``data_ticks``,
    ``final_ranges``, ``nack_ranges``, ``upto``, ``retransmission``)
  - ``deliver``: ``{"subscriber", "connection", "pubend", "tick", "payload"}``, or for one
    message handed to several subscribers at once ``{"pubend", "tick", "payload", "to"}``
    with ``to`` a list of ``[subscriber, connection]``; ``payload`` is
    ``{"attributes", "published_at"}`` (``published_at`` may be null)
  - ``connect``: ``{"subscriber", "filter", "connection"}``; ``disconnect``:
    ``{"subscriber"}``; ``fault``: ``{"kind", "target", "phase"}``
  - ``timer``, ``link``, ``rejected``, ``coverage``: ``{"text"}``, a description the
    invariants do not read (so ``own_timers``, which needs a rejection's input, is not judged
    from a file); ``malformed``: ``{"text"}``, what ``canonical_state`` reports (read back as
    a :class:`Note`, judged the same).
* the last line, the end record: ``{"end": {"records": N, "sha256": HEX}}`` — the number of
  records and the SHA-256 of every line before it (the header included), each line's text
  without its line terminator followed by one ``"\n"``. A file without it was cut short (a
  copy or a download interrupted at a line boundary: ``head -n``): it is refused as
  incomplete, never judged — judging a prefix of a run gives false liveness violations. A
  count or digest that disagrees, or a line after it, is refused too.

Version 1 files (no end record) are still read; :attr:`TraceFile.complete` is then ``None``:
their truncation cannot be detected, and ``gapless check`` says so.

A file whose name ends in ``.gz`` is written gzip-compressed (the 60 s ``gd-crash-b1`` trace:
32 MB, 1.9 MB gzipped); the reader recognises gzip by its content. Attribute values are JSON
strings, integers, floats, booleans or null. A malformed file raises :class:`TraceFileError`
naming the line, the field and what is allowed; :func:`write_trace` writes to a temporary file
and renames it, so a file is never half-written.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Final, cast, final

import attrs
from pyrsistent import pmap

from gapless.impl.effects import Deliver, DeliverCohort, Persist
from gapless.impl.inputs import Connect, Disconnect, Persisted
from gapless.impl.trace import (
    RECORD_KINDS,
    WIRE_KINDS,
    Dropped,
    Fault,
    Malformed,
    Published,
    Received,
    Sent,
    TraceRecord,
    Wire,
)
from gapless.invariants import INVARIANTS
from gapless.invariants.checker import CheckContext, SubscriptionInfo, check_trace
from gapless.invariants.violation import Violation

__all__ = [
    "FORMAT",
    "VERSION",
    "LoggedMessage",
    "Note",
    "Payload",
    "TraceFile",
    "TraceFileError",
    "check_trace_file",
    "read_trace",
    "write_trace",
]

FORMAT: Final = "gapless-trace"
VERSION: Final = 2
_READABLE: Final = (1, 2)  # version 1: no end record (truncation cannot be detected)
_ROLES: Final = ("phb", "ib", "shb")
_ORDERS: Final = ("publisher", "total")


class TraceFileError(ValueError):
    """A trace file (or a trace about to be written) is malformed: the message names the line,
    the field and what is allowed."""


@final
@attrs.frozen(kw_only=True)
class LoggedMessage:
    """The value of a ``persist`` record read from a file: the message a pubend logged."""

    pubend: str
    tick: int
    attributes: Mapping[str, Any]


@final
@attrs.frozen(kw_only=True)
class LoggedBatch:
    """The value of a ``persist`` record that logs several messages at once (a group-commit
    write [GD §4.1], ``detail.batch`` in the file), in tick order."""

    messages: tuple[LoggedMessage, ...]


@final
@attrs.frozen(kw_only=True)
class Payload:
    """A delivered payload read from a file: the message's attributes and, when known, the
    time its pubend received it (µs)."""

    attributes: Mapping[str, Any]
    published_at: int | None = None


@final
@attrs.frozen(kw_only=True)
class Note:
    """The detail of a ``timer``, ``link``, ``rejected``, ``coverage`` or ``malformed``
    record read from a file: its description (only ``canonical_state`` reads one, the
    ``malformed`` text)."""

    text: str


@final
@attrs.frozen(kw_only=True)
class TraceFile:
    """A trace file read back: its context, records, ``live_end`` flag, meta and the
    protocol its header names. ``complete`` is ``True`` when its end record vouched for every
    line, ``None`` for a version 1 file (no end record: whether it was cut short cannot be
    told)."""

    context: CheckContext
    records: tuple[TraceRecord, ...]
    live_end: bool
    meta: Mapping[str, Any]
    complete: bool | None = True
    protocol: str = "gd"


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _json_scalar(where: str, value: Any) -> Any:
    if value is None or type(value) in (str, bool, int):
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise TraceFileError(f"{where}: {value!r} is not a finite number")
        return value
    raise TraceFileError(
        f"{where}: {type(value).__name__} value {value!r} cannot be written; allowed: "
        "str, int, float, bool or None"
    )


def _attributes_out(where: str, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if attributes is None:
        raise TraceFileError(f"{where}: the binding could not decode the message's attributes")
    return {str(k): _json_scalar(f"{where} attribute {k!r}", v) for k, v in attributes.items()}


def _key_out(where: str, key: Any) -> Any:
    if isinstance(key, tuple):
        return [_key_out(where, k) for k in key]
    return _json_scalar(f"{where} key", key)


def _wire_out(w: Wire) -> dict[str, Any]:
    return {
        "kind": w.kind,
        "pubend": w.pubend,
        "data_ticks": list(w.data_ticks),
        "final_ranges": [list(r) for r in w.final_ranges],
        "nack_ranges": [list(r) for r in w.nack_ranges],
        "upto": w.upto,
        "retransmission": w.retransmission,
    }


def _payload_out(where: str, ctx: CheckContext, payload: Any) -> dict[str, Any]:
    at = getattr(payload, "published_at", None)
    return {
        "attributes": _attributes_out(where, ctx.payload_attributes(payload)),
        "published_at": at if type(at) is int else None,
    }


def _detail_out(ctx: CheckContext, r: TraceRecord) -> dict[str, Any]:
    where = f"record {r.seq} ({r.kind})"
    d = r.detail
    k = r.kind
    if k == "publish" and isinstance(d, Published):
        return {
            "pubend": d.pubend,
            "index": d.index,
            "attributes": _attributes_out(where, d.attributes),
            "size": d.size,
        }
    if k == "persist" and isinstance(d, Persist):
        got = ctx.logged(d)
        logged = None
        if got is not None:
            logged = _logged_out(where, got)
        out: dict[str, Any] = {"key": _key_out(where, d.key), "logged": logged}
        if got is None:
            batch = ctx.logged_all(d)
            if batch:  # a group-commit write of several messages [GD §4.1]
                out["batch"] = [_logged_out(where, m) for m in batch]
        return out
    if k == "persisted" and isinstance(d, Persisted):
        return {"key": _key_out(where, d.key)}
    if k == "send" and isinstance(d, Sent):
        return {"to": d.to, "wire": _wire_out(d.wire)}
    if k == "receive" and isinstance(d, Received):
        return {"sender": d.sender, "wire": _wire_out(d.wire)}
    if k == "drop" and isinstance(d, Dropped):
        return {"sender": d.sender, "to": d.to, "wire": _wire_out(d.wire), "reason": d.reason}
    if k == "deliver" and isinstance(d, Deliver):
        return {
            "subscriber": d.subscriber,
            "connection": d.connection,
            "pubend": d.pubend,
            "tick": d.tick,
            "payload": _payload_out(where, ctx, d.payload),
        }
    if k == "deliver" and isinstance(d, DeliverCohort):
        return {
            "pubend": d.pubend,
            "tick": d.tick,
            "payload": _payload_out(where, ctx, d.payload),
            "to": [[s, c] for s, c in d.to],
        }
    if k == "connect" and isinstance(d, Connect):
        return {"subscriber": d.subscriber, "filter": d.filter, "connection": d.connection}
    if k == "disconnect" and isinstance(d, Disconnect):
        return {"subscriber": d.subscriber}
    if k == "fault" and isinstance(d, Fault):
        return {"kind": d.kind, "target": d.target, "phase": d.phase}
    if k in ("timer", "link", "rejected", "coverage", "malformed"):
        return {"text": d.text if isinstance(d, Note | Malformed) else repr(d)[:500]}
    raise TraceFileError(
        f"{where}: cannot write a {type(d).__name__} detail for kind {k!r}; allowed kinds: "
        + ", ".join(sorted(RECORD_KINDS))
    )


def _context_out(ctx: CheckContext) -> dict[str, Any]:
    return {
        "subscriptions": [
            {"name": s.name, "shb": s.shb, "filter": s.filter, "order": s.order}
            for s in ctx.subscriptions
        ],
        "cell_of": dict(sorted(ctx.cell_of.items())),
        "cell_tree": [list(e) for e in ctx.cell_tree],
        "pubend_host": dict(sorted(ctx.pubend_host.items())),
        "merged": list(ctx.merged),
        "roles": dict(sorted(ctx.roles.items())),
        "min_repetition_us": ctx.min_repetition_us,
        **{
            k: v
            for k, v in (
                ("aet_us", ctx.aet_us),
                ("ack_expected_period_us", ctx.ack_expected_period_us),
                ("ack_delay_us", ctx.ack_delay_us),
            )
            if v is not None
        },
        **({"links": [list(e) for e in ctx.links]} if ctx.links else {}),
    }


def write_trace(
    path: str | os.PathLike[str],
    context: CheckContext,
    records: Iterable[TraceRecord],
    *,
    live_end: bool = True,
    meta: Mapping[str, Any] | None = None,
    protocol: str = "gd",
) -> int:
    """Write ``records`` with ``context`` to ``path`` in the ``gapless-trace`` format; returns
    the number of records. The file appears whole or not at all (written to a temporary file
    in the same directory, then renamed); on any error nothing is left behind."""
    target = Path(path)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "protocol": protocol,
        "context": _context_out(context),
        "live_end": bool(live_end),
        "meta": dict(meta or {}),
    }
    lines = [json.dumps(header, sort_keys=True)]
    for r in records:
        lines.append(
            json.dumps(
                {
                    "seq": r.seq,
                    "time": r.time,
                    "node": r.node,
                    "kind": r.kind,
                    "detail": _detail_out(context, r),
                },
                sort_keys=True,
                allow_nan=False,
            )
        )
    lines.append(_end_line(lines))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # as open() would create it, not mkstemp's 0600
        with os.fdopen(fd, "wb") as raw:
            text = ("\n".join(lines) + "\n").encode("utf-8")
            if target.name.endswith(".gz"):
                # reproducible bytes: no name and no time in the gzip header
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                    gz.write(text)
            else:
                raw.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(lines) - 2


def _end_line(lines: list[str]) -> str:
    """The end record of a file whose lines (header and records) are ``lines``."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8") + b"\n")
    return json.dumps({"end": {"records": len(lines) - 1, "sha256": digest.hexdigest()}})


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


@final
class _Reader:
    """Field access with errors that name the line and the field."""

    def __init__(self, line: int) -> None:
        self.line = line

    def fail(self, what: str) -> TraceFileError:
        return TraceFileError(f"trace line {self.line}: {what}")

    def obj(self, where: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"{where} must be a JSON object, not {type(value).__name__}")
        return value

    def get(self, obj: dict[str, Any], where: str, key: str) -> Any:
        if key not in obj:
            raise self.fail(f"{where} lacks field {key!r}")
        return obj[key]

    def str_(self, obj: dict[str, Any], where: str, key: str) -> str:
        v = self.get(obj, where, key)
        if type(v) is not str:
            raise self.fail(f"{where}.{key} must be a string, not {v!r}")
        return v

    def int_(self, obj: dict[str, Any], where: str, key: str, *, minimum: int = 0) -> int:
        v = self.get(obj, where, key)
        if type(v) is not int or v < minimum:
            raise self.fail(f"{where}.{key} must be an integer >= {minimum}, not {v!r}")
        return v

    def opt_int(self, obj: dict[str, Any], where: str, key: str) -> int | None:
        v = obj.get(key)
        if v is not None and type(v) is not int:
            raise self.fail(f"{where}.{key} must be an integer or null, not {v!r}")
        return v

    def bool_(self, obj: dict[str, Any], where: str, key: str) -> bool:
        v = self.get(obj, where, key)
        if type(v) is not bool:
            raise self.fail(f"{where}.{key} must be true or false, not {v!r}")
        return v

    def attributes(self, obj: dict[str, Any], where: str, key: str) -> Mapping[str, Any]:
        v = self.obj(f"{where}.{key}", self.get(obj, where, key))
        for name, x in v.items():
            if x is not None and type(x) not in (str, bool, int, float):
                raise self.fail(
                    f"{where}.{key}[{name!r}] must be a string, number, boolean or null, not {x!r}"
                )
        return pmap(v)

    def ranges(self, obj: dict[str, Any], where: str, key: str) -> tuple[tuple[int, int], ...]:
        v = obj.get(key, [])
        out: list[tuple[int, int]] = []
        if not isinstance(v, list):
            raise self.fail(f"{where}.{key} must be a list of [low, high] tick pairs")
        for x in v:
            if (
                not isinstance(x, list)
                or len(x) != 2
                or not all(type(t) is int and t >= 0 for t in x)
                or x[0] > x[1]
            ):
                raise self.fail(
                    f"{where}.{key}: {x!r} is not a [low, high] pair of ticks with low <= high"
                )
            out.append((x[0], x[1]))
        return tuple(out)

    def wire(self, obj: dict[str, Any], where: str) -> Wire:
        w = self.obj(f"{where}.wire", self.get(obj, where, "wire"))
        ww = f"{where}.wire"
        kind = self.str_(w, ww, "kind")
        if kind not in WIRE_KINDS:
            raise self.fail(f"{ww}.kind {kind!r} is not one of {sorted(WIRE_KINDS)}")
        pubend = w.get("pubend")
        if pubend is not None and type(pubend) is not str:
            raise self.fail(f"{ww}.pubend must be a string or null, not {pubend!r}")
        ticks = w.get("data_ticks", [])
        if not isinstance(ticks, list) or not all(type(t) is int and t >= 0 for t in ticks):
            raise self.fail(f"{ww}.data_ticks must be a list of ticks (integers >= 0)")
        retx = w.get("retransmission", False)
        if type(retx) is not bool:
            raise self.fail(f"{ww}.retransmission must be true or false, not {retx!r}")
        return Wire(
            kind=kind,
            pubend=pubend,
            data_ticks=tuple(ticks),
            final_ranges=self.ranges(w, ww, "final_ranges"),
            nack_ranges=self.ranges(w, ww, "nack_ranges"),
            upto=self.opt_int(w, ww, "upto"),
            retransmission=retx,
        )

    def payload(self, obj: dict[str, Any], where: str) -> Payload:
        p = self.obj(f"{where}.payload", self.get(obj, where, "payload"))
        return Payload(
            attributes=self.attributes(p, f"{where}.payload", "attributes"),
            published_at=self.opt_int(p, f"{where}.payload", "published_at"),
        )


def _key_in(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_key_in(v) for v in value)
    return value


def _detail_in(rd: _Reader, kind: str, d: dict[str, Any]) -> Any:
    w = "detail"
    if kind == "publish":
        return Published(
            pubend=rd.str_(d, w, "pubend"),
            index=rd.int_(d, w, "index"),
            attributes=rd.attributes(d, w, "attributes"),
            size=rd.int_(d, w, "size"),
        )
    if kind == "persist":
        got = rd.get(d, w, "logged")
        value: LoggedMessage | LoggedBatch | None = None
        if got is not None:
            value = _logged_in(rd, "detail.logged", got)
        batch = d.get("batch")
        if batch is not None:
            if got is not None or not isinstance(batch, list) or not batch:
                raise rd.fail(
                    "detail.batch must be a non-empty list of logged messages, and only on a "
                    "persist whose detail.logged is null"
                )
            value = LoggedBatch(messages=tuple(_logged_in(rd, "detail.batch[]", m) for m in batch))
        if isinstance(rd.get(d, w, "key"), dict):
            raise rd.fail("detail.key must be a JSON scalar or list, not an object")
        return Persist(key=_key_in(d["key"]), value=value)
    if kind == "persisted":
        if isinstance(rd.get(d, w, "key"), dict):
            raise rd.fail("detail.key must be a JSON scalar or list, not an object")
        return Persisted(key=_key_in(d["key"]))
    if kind == "send":
        return Sent(to=rd.str_(d, w, "to"), msg=None, wire=rd.wire(d, w))
    if kind == "receive":
        return Received(sender=rd.str_(d, w, "sender"), msg=None, wire=rd.wire(d, w))
    if kind == "drop":
        return Dropped(
            sender=rd.str_(d, w, "sender"),
            to=rd.str_(d, w, "to"),
            msg=None,
            wire=rd.wire(d, w),
            reason=rd.str_(d, w, "reason"),
        )
    if kind == "deliver":
        if "to" in d:
            to = rd.get(d, w, "to")
            if not isinstance(to, list) or not to:
                raise rd.fail("detail.to must be a non-empty list of [subscriber, connection]")
            pairs: list[tuple[str, int]] = []
            for x in to:
                if (
                    not isinstance(x, list)
                    or len(x) != 2
                    or type(x[0]) is not str
                    or type(x[1]) is not int
                ):
                    raise rd.fail(f"detail.to: {x!r} is not a [subscriber, connection] pair")
                pairs.append((x[0], x[1]))
            return DeliverCohort(
                pubend=rd.str_(d, w, "pubend"),
                tick=rd.int_(d, w, "tick"),
                payload=rd.payload(d, w),
                to=tuple(pairs),
            )
        return Deliver(
            subscriber=rd.str_(d, w, "subscriber"),
            pubend=rd.str_(d, w, "pubend"),
            tick=rd.int_(d, w, "tick"),
            payload=rd.payload(d, w),
            connection=rd.int_(d, w, "connection"),
        )
    if kind == "connect":
        return Connect(
            subscriber=rd.str_(d, w, "subscriber"),
            filter=rd.str_(d, w, "filter"),
            connection=rd.int_(d, w, "connection"),
        )
    if kind == "disconnect":
        return Disconnect(subscriber=rd.str_(d, w, "subscriber"))
    if kind == "fault":
        return Fault(
            kind=rd.str_(d, w, "kind"), target=rd.str_(d, w, "target"), phase=rd.str_(d, w, "phase")
        )
    text = d.get("text", "")
    if type(text) is not str:
        raise rd.fail(f"detail.text must be a string, not {text!r}")
    return Note(text=text)


def _str_map(rd: _Reader, obj: dict[str, Any], where: str, key: str) -> dict[str, str]:
    m = rd.obj(f"{where}.{key}", rd.get(obj, where, key))
    for k, v in m.items():
        if type(v) is not str:
            raise rd.fail(f"{where}.{key}[{k!r}] must be a string, not {v!r}")
    return dict(m)


def _context_in(
    rd: _Reader, c: dict[str, Any], matches: Callable[[str, Any], bool]
) -> CheckContext:
    w = "context"
    subs_raw = rd.get(c, w, "subscriptions")
    if not isinstance(subs_raw, list):
        raise rd.fail("context.subscriptions must be a list")
    subs: list[SubscriptionInfo] = []
    for i, s in enumerate(subs_raw):
        sw = f"context.subscriptions[{i}]"
        s = rd.obj(sw, s)
        order = s.get("order", "publisher")
        if order not in _ORDERS:
            raise rd.fail(f"{sw}.order {order!r} is not one of {list(_ORDERS)}")
        subs.append(
            SubscriptionInfo(
                name=rd.str_(s, sw, "name"),
                shb=rd.str_(s, sw, "shb"),
                filter=rd.str_(s, sw, "filter"),
                order=order,
            )
        )
    roles = _str_map(rd, c, w, "roles")
    for b, role in roles.items():
        if role not in _ROLES:
            raise rd.fail(f"context.roles[{b!r}] {role!r} is not one of {list(_ROLES)}")
    tree = rd.get(c, w, "cell_tree")
    if not isinstance(tree, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(type(x) is str for x in e) for e in tree
    ):
        raise rd.fail("context.cell_tree must be a list of [parent_cell, child_cell] pairs")
    merged = c.get("merged", [])
    if not isinstance(merged, list) or not all(type(x) is str for x in merged):
        raise rd.fail("context.merged must be a list of pubend names")
    return CheckContext(
        subscriptions=tuple(subs),
        cell_of=_str_map(rd, c, w, "cell_of"),
        cell_tree=tuple((e[0], e[1]) for e in tree),
        pubend_host=_str_map(rd, c, w, "pubend_host"),
        merged=tuple(merged),
        roles=roles,
        min_repetition_us=rd.int_(c, w, "min_repetition_us"),
        matches=matches,
        logged=_logged,
        logged_batch=_logged_batch,
        payload_attributes=_payload_attributes,
        aet_us=_positive_or_none(rd, c, w, "aet_us"),
        ack_expected_period_us=_positive_or_none(rd, c, w, "ack_expected_period_us"),
        ack_delay_us=_non_negative_or_none(rd, c, w, "ack_delay_us"),
        links=_links_in(rd, c),
    )


def _links_in(rd: _Reader, c: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    links = c.get("links", [])
    if not isinstance(links, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(type(x) is str for x in e) for e in links
    ):
        raise rd.fail("context.links must be a list of [broker, broker] pairs")
    return tuple(sorted((min(e), max(e)) for e in links))


def _positive_or_none(rd: _Reader, c: dict[str, Any], w: str, key: str) -> int | None:
    v = rd.opt_int(c, w, key)
    if v is not None and v <= 0:
        raise rd.fail(f"{w}.{key} must be a positive integer (µs) or absent, not {v}")
    return v


def _non_negative_or_none(rd: _Reader, c: dict[str, Any], w: str, key: str) -> int | None:
    v = rd.opt_int(c, w, key)
    if v is not None and v < 0:
        raise rd.fail(f"{w}.{key} must be a non-negative integer (µs) or absent, not {v}")
    return v


def _logged(persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
    v = persist.value
    if isinstance(v, LoggedMessage):
        return (v.pubend, v.tick, v.attributes)
    return None


def _logged_batch(persist: Persist) -> tuple[tuple[str, int, Mapping[str, Any]], ...]:
    v = persist.value
    if isinstance(v, LoggedBatch):
        return tuple((m.pubend, m.tick, m.attributes) for m in v.messages)
    got = _logged(persist)
    return () if got is None else (got,)


def _logged_out(where: str, got: tuple[str, int, Mapping[str, Any]]) -> dict[str, Any]:
    pubend, tick, attributes = got
    return {"pubend": pubend, "tick": tick, "attributes": _attributes_out(where, attributes)}


def _logged_in(rd: _Reader, w: str, got: Any) -> LoggedMessage:
    lg = rd.obj(w, got)
    return LoggedMessage(
        pubend=rd.str_(lg, w, "pubend"),
        tick=rd.int_(lg, w, "tick"),
        attributes=rd.attributes(lg, w, "attributes"),
    )


def _payload_attributes(payload: Any) -> Mapping[str, Any] | None:
    return payload.attributes if isinstance(payload, Payload) else None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open("rb") as f, contextlib.ExitStack() as stack:
            zipped = f.read(2) == b"\x1f\x8b"
            f.seek(0)
            src: IO[bytes] = (
                stack.enter_context(cast(IO[bytes], gzip.GzipFile(fileobj=f, mode="rb")))
                if zipped
                else f
            )
            fh = stack.enter_context(io.TextIOWrapper(src, encoding="utf-8"))
            for i, line in enumerate(fh, start=1):
                if line.strip():
                    yield i, line
    except UnicodeDecodeError as exc:
        raise TraceFileError(f"{path}: not UTF-8 text ({exc})") from None
    except (OSError, EOFError) as exc:  # a corrupt or truncated gzip stream
        raise TraceFileError(f"{path}: cannot be read as gzip ({exc})") from None


def read_trace(path: str | os.PathLike[str], *, matches: Callable[[str, Any], bool]) -> TraceFile:
    """Read a ``gapless-trace`` file. ``matches(filter_text, attributes)`` evaluates a
    subscription's filter — the ``spec`` reference evaluator
    (``gapless.spec.filters.reference_matcher()``; this layer imports only ``impl``, so the
    caller passes it in); a filter it refuses (``ValueError``) is reported with its
    subscription."""
    p = _existing(path)
    it = _lines(p)
    rd, text, header, proto = _header(p, it)
    version = header.get("version")
    if version not in _READABLE:
        raise rd.fail(
            f"version {version!r} is not supported; allowed: {', '.join(map(str, _READABLE))}"
        )
    digest = hashlib.sha256(_line_bytes(text))
    context = _context_in(rd, rd.obj("context", rd.get(header, "header", "context")), matches)
    for s in context.subscriptions:
        try:
            matches(s.filter, {})
        except ValueError as exc:
            raise rd.fail(
                f"subscription {s.name!r}: filter {s.filter!r} is invalid: {exc}"
            ) from None
    live_end = header.get("live_end", True)
    if type(live_end) is not bool:
        raise rd.fail(f"live_end must be true or false, not {live_end!r}")
    meta = rd.obj("meta", header.get("meta", {}))
    records: list[TraceRecord] = []
    last_seq = -1
    last_time = 0
    ended = False
    for ln, text in it:
        rd = _Reader(ln)
        r = rd.obj("a record", _parse(rd, text))
        if version >= 2 and set(r) == {"end"}:
            _check_end(rd, r["end"], len(records), digest.hexdigest())
            after = next(it, None)
            if after is not None:
                raise TraceFileError(f"line {after[0]}: a line after the end record")
            ended = True
            break
        if version >= 2:
            digest.update(_line_bytes(text))
        seq = rd.int_(r, "record", "seq")
        time = rd.int_(r, "record", "time")
        if seq <= last_seq:
            raise rd.fail(f"seq {seq} does not follow seq {last_seq}; records are in seq order")
        if time < last_time:
            raise rd.fail(f"time {time} is before the previous record's time {last_time}")
        kind = rd.str_(r, "record", "kind")
        if kind not in RECORD_KINDS:
            raise rd.fail(f"kind {kind!r} is not one of {sorted(RECORD_KINDS)}")
        detail = _detail_in(rd, kind, rd.obj("detail", rd.get(r, "record", "detail")))
        records.append(
            TraceRecord(
                seq=seq, time=time, node=rd.str_(r, "record", "node"), kind=kind, detail=detail
            )
        )
        last_seq, last_time = seq, time
    if version >= 2 and not ended:
        raise TraceFileError(
            f"{p}: incomplete: no end record after {len(records)} records; the file was cut "
            "short (a truncated trace is refused, not judged: a prefix of a run would read as "
            "a liveness violation)"
        )
    return TraceFile(
        context=context,
        records=tuple(records),
        live_end=live_end,
        meta=meta,
        complete=True if version >= 2 else None,
        protocol=proto,
    )


def _line_bytes(text: str) -> bytes:
    return text.rstrip("\r\n").encode("utf-8") + b"\n"


def _check_end(rd: _Reader, end: Any, records: int, digest: str) -> None:
    """The end record's count and digest agree with the lines read."""
    end = rd.obj("end", end)
    said = rd.int_(end, "end", "records")
    if said != records:
        raise rd.fail(
            f"the end record says {said} records, the file holds {records}; the file was "
            "cut or edited"
        )
    if rd.str_(end, "end", "sha256") != digest:
        raise rd.fail(
            "the end record's sha256 does not match the lines before it; the file was edited "
            "or corrupted"
        )


def read_protocol(path: str | os.PathLike[str]) -> str:
    """The protocol a trace file's header names (``"gd"`` when it names none), read from
    the header line alone; a file that is not a trace raises :class:`TraceFileError`."""
    p = _existing(path)
    return _header(p, _lines(p))[3]


def _existing(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.is_file():
        raise TraceFileError(f"{p}: no such trace file")
    return p


def _header(p: Path, it: Iterator[tuple[int, str]]) -> tuple[_Reader, str, dict[str, Any], str]:
    """The header line of a trace file (its reader, text, object and protocol): a trace's
    format, and a protocol name (``"gd"`` when the header names none)."""
    first = next(it, None)
    if first is None:
        raise TraceFileError(f"{p}: empty file; a trace starts with its header line")
    ln, text = first
    rd = _Reader(ln)
    header = rd.obj("the header", _parse(rd, text))
    if header.get("format") != FORMAT:
        raise rd.fail(f"format {header.get('format')!r} is not {FORMAT!r}")
    proto = header.get("protocol", "gd")
    if type(proto) is not str or not proto:
        raise rd.fail(f"protocol must be a protocol name, not {proto!r}")
    return rd, text, header, proto


def _parse(rd: _Reader, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise rd.fail(f"not JSON ({exc.msg} at column {exc.colno})") from None


def check_trace_file(
    path: str | os.PathLike[str],
    names: Iterable[str] = (),
    *,
    matches: Callable[[str, Any], bool],
    live_end: bool | None = None,
) -> tuple[TraceFile, Violation | None]:
    """Read ``path`` (see :func:`read_trace` for ``matches``) and judge it with the invariants
    ``names`` (default: all); liveness at the end when ``live_end`` (default: the file's header
    says so). Returns the file read and the first violation, or None."""
    chosen = tuple(names)
    unknown = [n for n in chosen if n not in INVARIANTS]
    if unknown:
        raise ValueError(f"unknown invariant(s) {unknown}; allowed: {', '.join(INVARIANTS)}")
    tf = read_trace(path, matches=matches)
    end = tf.live_end if live_end is None else live_end
    return tf, check_trace(tf.context, tf.records, chosen, live_end=end)
