"""DFT trace files: a δ-fault-tolerant run's observable trace as JSON Lines, judged offline by
the DFT invariants [DFT §I-VII].

Format ``gapless-trace``, version 2, ``"protocol": "dft"`` (UTF-8, one JSON object per line):

* line 1, the header: ``{"format": "gapless-trace", "version": 2, "protocol": "dft",
  "context": {...}, "meta": {...}}``; ``context`` is what the invariants know besides the
  trace (:class:`~gapless.invariants.dft.DFTContext`): ``joins`` (the primary tree as
  ``[broker, attach_to]`` in join order, ``attach_to`` null for the first), ``delta``,
  ``grace_us``, ``reports_acceptance`` and ``late`` (the brokers that join during the run;
  optional, absent in files written before dft8: none);
* every other line, one record ``{"seq", "time", "node", "kind", "detail"}``, ``kind`` one of

  - ``connect``: ``{"subscriber", "filter", "connection"}``; ``disconnect``:
    ``{"subscriber"}``;
  - ``publish``: ``{"pubend", "index", "attributes", "size"}``;
  - ``persist``: ``{"key", "value"}`` — a subscription's acceptance at its source,
    ``key`` ``["accepted", sid]``, ``value`` its confirmation tags (a list of pids
    ``{"detector", "counter", "pnodes"}``);
  - ``send``: ``{"to", "msg"}``; ``receive``: ``{"sender", "msg"}`` — ``msg`` is the whole
    message (the invariants read trails and tags), ``{"type": "SubMsg" | "SubConfirm" |
    "PubMsg" | "PubConfirm" | "PartitionInfo" | "PartitionHealed" | "RecoveryNotifier" |
    "SyncStart" | "SyncSummary" | "SyncTransfer", ...its fields}``; a subscription's
    acceptance may be written again at its source when a partition recovers (its new tags);
  - ``deliver``: ``{"subscriber", "connection", "pubend", "tick", "attributes"}``;
  - ``fault``: ``{"kind", "target", "phase"}``;
* the last line, the end record ``{"end": {"records": N, "sha256": HEX}}`` — the envelope
  every ``gapless-trace`` file shares (:mod:`gapless.invariants.trace_envelope`, which writes
  and reads it here): a file without it was cut short and is refused, never judged; a count
  or digest that disagrees is refused too.

Other record kinds (drops, link reports, rejections) are not written: the invariants do not
read them. ``gapless simulate --scenario dft-gap-s1 --trace FILE`` writes one;
``gapless check FILE`` judges it (:func:`trace_check`). A malformed file raises
:class:`~gapless.invariants.tracefile.TraceFileError` naming the line and what is wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Set
from typing import Any, Final, final

import attrs
import cattrs
from pyrsistent import PMap, pmap

from gapless.impl.dft.arrivals import Arrival
from gapless.impl.dft.messages import (
    DFTWire,
    PartitionHealed,
    PartitionInfo,
    Pid,
    PubConfirm,
    PubMsg,
    RecoveryNotifier,
    SubConfirm,
    SubMsg,
    SyncStart,
    SyncSummary,
    SyncTransfer,
    wire,
)
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Deliver, Persist
from gapless.impl.inputs import Connect, Disconnect
from gapless.impl.trace import Fault, Published, Received, Sent, TraceRecord
from gapless.invariants.dft import DFT_INVARIANTS, DFTContext, check_dft_trace
from gapless.invariants.trace_envelope import read_envelope, write_envelope
from gapless.invariants.tracefile import FORMAT, TraceFileError
from gapless.invariants.violation import Violation

__all__ = ["PROTOCOL", "DFTTraceFile", "read_dft_trace", "trace_check", "write_dft_trace"]

PROTOCOL: Final = "dft"
VERSION: Final = 2
KEPT: Final = ("connect", "disconnect", "publish", "persist", "send", "receive", "deliver", "fault")
_MESSAGES: Final[Mapping[str, type]] = {
    t.__name__: t
    for t in (
        SubMsg,
        SubConfirm,
        PubMsg,
        PubConfirm,
        PartitionInfo,
        PartitionHealed,
        RecoveryNotifier,
        SyncStart,
        SyncSummary,
        SyncTransfer,
        Arrival,
    )
}

_OTHER: Final = DFTWire(kind="other", key=None)
"""The wire summary of a message the invariants do not read (the binding's, too)."""

_conv = cattrs.Converter(unstruct_collection_overrides={Set: list})
_conv.register_unstructure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, PMap), lambda m: dict(m)
)
_conv.register_structure_hook_func(
    lambda t: t is PMap or getattr(t, "__origin__", None) is PMap, lambda v, _t: pmap(v)
)
_conv.register_unstructure_hook(
    frozenset, lambda s: sorted((_conv.unstructure(x) for x in s), key=json.dumps)
)


@final
@attrs.frozen(kw_only=True)
class DFTTraceFile:
    """A read DFT trace: the invariants' ``context`` (``matches`` as given to the reader),
    its ``records`` and ``meta``; ``complete`` is always True (the end record was checked)
    and ``live_end`` False (DFT's liveness is the bounded guarantee, judged in the trace)."""

    context: DFTContext
    records: tuple[TraceRecord, ...]
    meta: Mapping[str, Any]
    complete: bool = True
    live_end: bool = False


# ---------------------------------------------------------------------------- writing
def _msg_out(msg: Any) -> dict[str, Any]:
    name = type(msg).__name__
    if name not in _MESSAGES:
        raise TraceFileError(f"cannot write a message of type {name}: not a DFT message")
    out: dict[str, Any] = {"type": name, **_conv.unstructure(msg)}
    return out


def _detail_out(r: TraceRecord) -> dict[str, Any] | None:
    d, k = r.detail, r.kind
    if k == "connect":
        return {"subscriber": d.subscriber, "filter": d.filter, "connection": d.connection}
    if k == "disconnect":
        return {"subscriber": d.subscriber}
    if k == "publish":
        return {
            "pubend": d.pubend,
            "index": d.index,
            "attributes": dict(d.attributes),
            "size": d.size,
        }
    if k == "persist":
        if not (isinstance(d.key, tuple) and d.key[:1] == ("accepted",)):
            return None
        return {"key": list(d.key), "value": _conv.unstructure(frozenset(d.value))}
    if k == "send":
        return {"to": d.to, "msg": _msg_out(d.msg)}
    if k == "receive":
        return {"sender": d.sender, "msg": _msg_out(d.msg)}
    if k == "deliver":
        if not isinstance(d, Deliver):
            raise TraceFileError(f"record {r.seq}: a DFT deliver record is one Deliver")
        attributes = dict(d.payload) if isinstance(d.payload, Mapping) else {}
        return {
            "subscriber": d.subscriber,
            "connection": d.connection,
            "pubend": d.pubend,
            "tick": d.tick,
            "attributes": attributes,
        }
    return {"kind": d.kind, "target": d.target, "phase": d.phase}  # fault


def write_dft_trace(
    path: str | os.PathLike[str],
    context: DFTContext,
    records: Iterable[TraceRecord],
    *,
    meta: Mapping[str, Any] | None = None,
) -> int:
    """Write ``records`` (those of :data:`KEPT` kinds the invariants read) and ``context``
    to ``path``, atomically; the number of records written."""
    tree = context.tree
    header = {
        "format": FORMAT,
        "version": VERSION,
        "protocol": PROTOCOL,
        "context": {
            "joins": [[b, tree.parent[b]] for b in tree.order],
            "delta": context.delta,
            "grace_us": context.grace,
            "reports_acceptance": context.reports_acceptance,
            "late": sorted(context.late),
        },
        "meta": dict(meta or {}),
    }
    rows = []
    for r in records:
        if r.kind not in KEPT:
            continue
        detail = _detail_out(r)
        if detail is None:
            continue
        rows.append(
            {"seq": r.seq, "time": r.time, "node": r.node, "kind": r.kind, "detail": detail}
        )
    return write_envelope(path, header, rows)


# ---------------------------------------------------------------------------- reading
def _fail(line: int, message: str) -> TraceFileError:
    return TraceFileError(f"line {line}: {message}")


def _msg_in(line: int, m: Any) -> Any:
    if not isinstance(m, dict) or m.get("type") not in _MESSAGES:
        raise _fail(line, f"msg must be an object with type one of {sorted(_MESSAGES)}")
    fields = {k: v for k, v in m.items() if k != "type"}
    try:
        return _conv.structure(fields, _MESSAGES[m["type"]])
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
        raise _fail(line, f"msg of type {m['type']}: {exc}") from None


def _detail_in(line: int, kind: str, d: dict[str, Any]) -> Any:
    if kind == "connect":
        return Connect(subscriber=d["subscriber"], filter=d["filter"], connection=d["connection"])
    if kind == "disconnect":
        return Disconnect(subscriber=d["subscriber"])
    if kind == "publish":
        return Published(
            pubend=d["pubend"], index=d["index"], attributes=d["attributes"], size=d["size"]
        )
    if kind == "persist":
        value = _conv.structure(d["value"], frozenset[Pid])
        return Persist(key=tuple(d["key"]), value=value)
    if kind in ("send", "receive"):
        msg = _msg_in(line, d["msg"])
        w = wire(msg) or _OTHER  # an Arrival [DFT §I]: no wire summary of its own
        if kind == "send":
            return Sent(to=d["to"], msg=msg, wire=w)  # type: ignore[arg-type]  # a DFTWire
        return Received(sender=d["sender"], msg=msg, wire=w)  # type: ignore[arg-type]
    if kind == "deliver":
        return Deliver(
            subscriber=d["subscriber"],
            connection=d["connection"],
            pubend=d["pubend"],
            tick=d["tick"],
            payload=pmap(d["attributes"]),
        )
    if kind == "fault":
        return Fault(kind=d["kind"], target=d["target"], phase=d["phase"])
    raise _fail(line, f"kind {kind!r} is not one of {', '.join(KEPT)}")


def _context_in(c: Any, matches: Callable[[str, Any], bool]) -> DFTContext:
    if not isinstance(c, dict):
        raise _fail(1, "context must be an object")
    try:
        joins = [(str(b), None if p is None else str(p)) for b, p in c["joins"]]
        return DFTContext(
            tree=PrimaryTree.build(joins),
            delta=int(c["delta"]),
            matches=matches,
            grace=int(c["grace_us"]),
            reports_acceptance=bool(c["reports_acceptance"]),
            late=frozenset(str(b) for b in c.get("late", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(
            1, f"context: {exc!r}; needs joins, delta, grace_us, reports_acceptance"
        ) from None


def read_dft_trace(
    path: str | os.PathLike[str], *, matches: Callable[[str, Any], bool]
) -> DFTTraceFile:
    """Read a DFT trace file (see the module doc); ``matches`` evaluates filters. The
    envelope (header, end record, truncation) is :func:`read_envelope`'s: files written
    before the DFT writer used it (a header with ``", "`` separators) read the same."""
    envelope = read_envelope(path, protocol=PROTOCOL, versions=(VERSION,))
    records = []
    for i, r in envelope.rows:
        try:
            detail = _detail_in(i, r["kind"], r["detail"])
            records.append(
                TraceRecord(
                    seq=int(r["seq"]),
                    time=int(r["time"]),
                    node=str(r["node"]),
                    kind=r["kind"],
                    detail=detail,
                )
            )
        except (KeyError, TypeError, ValueError, cattrs.BaseValidationError) as exc:
            if isinstance(exc, TraceFileError):
                raise
            raise _fail(i, f"malformed record: {exc!r}") from None
    header = envelope.header
    return DFTTraceFile(
        context=_context_in(header.get("context"), matches),
        records=tuple(records),
        meta=header.get("meta", {}),
    )


def trace_check(
    path: str | os.PathLike[str],
    names: Iterable[str] = (),
    *,
    matches: Callable[[str, Any], bool],
    live_end: bool | None = None,
) -> tuple[DFTTraceFile, Violation | None]:
    """Read ``path`` and judge it with the DFT invariants ``names`` (default: all);
    ``live_end`` is accepted for the registry's signature (DFT judges its bounded guarantee
    inside the trace). Unknown invariant names raise ``ValueError``."""
    chosen = tuple(names)
    unknown = [n for n in chosen if n not in DFT_INVARIANTS]
    if unknown:
        raise ValueError(f"unknown invariant(s) {unknown}; allowed: {', '.join(DFT_INVARIANTS)}")
    tf = read_dft_trace(path, matches=matches)
    violation, _ = check_dft_trace(tf.records, tf.context, chosen)
    return tf, violation
