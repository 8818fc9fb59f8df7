"""Durable-subscription trace files: a run's ``dur_*`` records as JSON Lines, judged offline by
the four durable invariants [DUR §2-4] with the verdict the online checker gives.

Format ``gapless-trace``, version 3, ``"protocol": "durable"`` (the envelope of
:mod:`gapless.invariants.trace_envelope`: a header, the records, an end record with the count
and SHA-256; a file cut short is refused). Version 3 is the version whose records are the
durable protocol's observable facts — gaps, CT acknowledgements, release reports and L steps;
versions 1 and 2 (guaranteed delivery's, and the DFT, GES and ZeroMQ files) are unchanged and
still read by their own readers, which ``gapless check`` picks by the header's protocol.

* line 1, the header: ``{"format": "gapless-trace", "version": 3, "protocol": "durable",
  "live_end": BOOL, "context": {...}, "meta": {...}}``; ``context`` is what the invariants
  know besides the trace: ``subscriptions`` (``[name, shb, filter]``), ``roles`` (broker ->
  ``phb`` | ``ib`` | ``shb``), ``cell_tree`` (``[parent, child]`` edges) and ``pubend_host``;
  ``live_end`` says the run healed and drained, so no-loss is judged at the end, at
  ``end`` (``{"seq", "time"}``: where the run stopped, as the online checker's end record);
* every other line, one record ``{"seq", "time", "node", "kind", "detail"}``, ``kind`` a key
  of :data:`~gapless.impl.durable.records.DURABLE_RECORDS` and ``detail`` its fields:

  - ``dur_event``: ``{"pubend", "tick", "attributes"}``;
  - ``dur_join``: ``{"subscriber", "shb", "filter", "ct"}``; ``dur_leave``: ``{"subscriber"}``;
  - ``dur_connect``: ``{"subscriber", "shb", "ct", "catchup"}`` (``catchup`` a sorted list of
    pubends); ``dur_disconnect``: ``{"subscriber", "shb"}``; ``dur_switchover``:
    ``{"subscriber", "pubend"}``;
  - ``dur_message``: ``{"subscriber", "shb", "message"}``, ``message`` ``{"type": "event" |
    "silence" | "gap", "pubend", "t0", "t"}`` and, for an event, ``"attributes"`` (the
    event's payload object is not written: no invariant reads it);
  - ``dur_ack``: ``{"subscriber", "shb", "ct"}``; ``dur_report``: ``{"node", "pubend",
    "released", "delivered"}``; ``dur_release``: ``{"pubend", "through", "tr", "td",
    "clock", "max_retain"}``; ``dur_crash``: ``{"shb"}``;

  a CT is an object ``{pubend: tick}``.

A simulated run's world records carry these facts inside ``deliver``, ``persist`` and
``disconnect`` records (:mod:`gapless.invariants.durable.online`); the writer stores the
``dur_*`` records they carry, in order, and nothing else, so the judge reads the same sequence
online and from the file. ``gapless simulate --scenario dur-... --trace FILE`` and ``gapless
fuzz``/``replay`` write one; ``gapless check FILE`` judges it (:func:`trace_check`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, final

import attrs
from pyrsistent import pmap

from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.messages import EventMessage, GapMessage, SilenceMessage
from gapless.impl.durable.records import DURABLE_RECORDS
from gapless.impl.effects import Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.trace import TraceRecord
from gapless.invariants.checker import Checker
from gapless.invariants.durable import INVARIANTS, PLUGINS
from gapless.invariants.durable.online import durable_record
from gapless.invariants.plugin import CheckContext, SubscriptionInfo
from gapless.invariants.trace_envelope import read_envelope, write_envelope
from gapless.invariants.tracefile import FORMAT, TraceFileError
from gapless.invariants.violation import Violation

__all__ = [
    "PROTOCOL",
    "VERSION",
    "DurableTraceFile",
    "read_durable_trace",
    "trace_check",
    "write_durable_trace",
]

PROTOCOL: Final = "durable"
VERSION: Final = 3
_MESSAGES: Final[dict[str, type]] = {
    "event": EventMessage,
    "silence": SilenceMessage,
    "gap": GapMessage,
}
_TYPE_OF: Final = {cls: name for name, cls in _MESSAGES.items()}


@final
@attrs.frozen(kw_only=True)
class DurableTraceFile:
    """A read durable trace: the invariants' ``context`` (``matches`` as given to the
    reader), its ``dur_*`` ``records``, ``meta``, and ``live_end`` (judge no-loss at the end);
    ``complete`` is always True (the end record was checked)."""

    context: CheckContext
    records: tuple[TraceRecord, ...]
    meta: Mapping[str, Any]
    live_end: bool
    end: tuple[int, int] | None = None
    complete: bool = True


# ---------------------------------------------------------------------------- writing
def _value_out(name: str, value: Any) -> Any:
    if type(value) is CheckpointToken:
        return value.as_dict()
    if isinstance(value, frozenset):
        return sorted(value)
    if name == "attributes":
        return dict(value)
    if type(value) in _TYPE_OF:
        out = {"type": _TYPE_OF[type(value)], "pubend": value.pubend, "t0": value.t0, "t": value.t}
        if type(value) is EventMessage:
            out["attributes"] = dict(value.attributes or {})
        return out
    return value


def _detail_out(detail: Any) -> dict[str, Any]:
    return {f.name: _value_out(f.name, getattr(detail, f.name)) for f in attrs.fields(type(detail))}


def _context_out(ctx: CheckContext) -> dict[str, Any]:
    return {
        "subscriptions": [[s.name, s.shb, s.filter] for s in ctx.subscriptions],
        "roles": dict(sorted(ctx.roles.items())),
        "cell_tree": [list(e) for e in ctx.cell_tree],
        "pubend_host": dict(sorted(ctx.pubend_host.items())),
    }


def durable_records(records: Iterable[TraceRecord]) -> Iterable[TraceRecord]:
    """The ``dur_*`` records a run's records carry (world records are converted; records that
    are already ``dur_*`` pass through), in order."""
    for r in records:
        if r.kind in DURABLE_RECORDS:
            yield r
            continue
        d = durable_record(r)
        if d is not None:
            yield d


def write_durable_trace(
    path: str | os.PathLike[str],
    context: CheckContext,
    records: Iterable[TraceRecord],
    *,
    live_end: bool,
    end: tuple[int, int] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> int:
    """Write the ``dur_*`` records ``records`` carry, and ``context``, to ``path`` atomically;
    ``end`` is ``(seq, time)`` of the run's end (module doc). The number of records
    written."""
    header = {
        "format": FORMAT,
        "version": VERSION,
        "protocol": PROTOCOL,
        "live_end": live_end,
        "end": None if end is None else {"seq": end[0], "time": end[1]},
        "context": _context_out(context),
        "meta": dict(meta or {}),
    }
    rows = (
        {
            "seq": r.seq,
            "time": r.time,
            "node": r.node,
            "kind": r.kind,
            "detail": _detail_out(r.detail),
        }
        for r in durable_records(records)
    )
    return write_envelope(path, header, rows)


# ---------------------------------------------------------------------------- reading
def _fail(line: int, message: str) -> TraceFileError:
    return TraceFileError(f"line {line}: {message}")


def _message_in(line: int, m: Any) -> Any:
    if not isinstance(m, dict) or m.get("type") not in _MESSAGES:
        raise _fail(line, f"message must be an object with type one of {sorted(_MESSAGES)}")
    pubend, t0, t = m["pubend"], m["t0"], m["t"]
    if m["type"] == "event":
        attributes = pmap(m.get("attributes") or {})
        return EventMessage(pubend=pubend, t0=t0, t=t, payload=None, attributes=attributes)
    return _MESSAGES[m["type"]](pubend=pubend, t0=t0, t=t)


def _value_in(line: int, name: str, value: Any) -> Any:
    if name == "ct":
        if not isinstance(value, dict):
            raise _fail(line, f"ct must be an object {{pubend: tick}}, not {value!r}")
        return CheckpointToken.of(value)
    if name == "catchup":
        return frozenset(value)
    if name == "message":
        return _message_in(line, value)
    return value


def _detail_in(line: int, kind: str, d: Any) -> Any:
    cls = DURABLE_RECORDS.get(kind)
    if cls is None:
        raise _fail(line, f"kind {kind!r} is not one of {', '.join(DURABLE_RECORDS)}")
    if not isinstance(d, dict):
        raise _fail(line, f"{kind}: detail must be an object")
    names = {f.name for f in attrs.fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise _fail(line, f"{kind}: unknown field(s) {unknown}; allowed: {sorted(names)}")
    return cls(**{k: _value_in(line, k, v) for k, v in d.items()})


def _record_in(line: int, r: Mapping[str, Any]) -> TraceRecord:
    try:
        kind = r["kind"]
        return TraceRecord(
            seq=int(r["seq"]),
            time=int(r["time"]),
            node=str(r["node"]),
            kind=kind,
            detail=_detail_in(line, kind, r["detail"]),
        )
    except TraceFileError:
        raise
    except (KeyError, TypeError, ValueError, ProtocolMisuse) as exc:
        raise _fail(line, f"malformed record: {exc!r}") from None


def _no_log(_persist: Persist) -> None:
    return None


def _no_attributes(_payload: Any) -> None:
    return None


def _context_in(c: Any, matches: Callable[[str, Any], bool]) -> CheckContext:
    if not isinstance(c, dict):
        raise _fail(1, "context must be an object")
    try:
        roles = {str(k): str(v) for k, v in c["roles"].items()}
        return CheckContext(
            subscriptions=tuple(
                SubscriptionInfo(name=str(n), shb=str(b), filter=str(f))
                for n, b, f in c["subscriptions"]
            ),
            cell_of={n: n for n in roles},
            cell_tree=tuple((str(a), str(b)) for a, b in c["cell_tree"]),
            pubend_host={str(k): str(v) for k, v in c["pubend_host"].items()},
            merged=(),
            roles=roles,
            min_repetition_us=0,
            matches=matches,
            logged=_no_log,
            payload_attributes=_no_attributes,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _fail(
            1, f"context: {exc!r}; needs subscriptions, roles, cell_tree, pubend_host"
        ) from None


def read_durable_trace(
    path: str | os.PathLike[str], *, matches: Callable[[str, Any], bool]
) -> DurableTraceFile:
    """Read a durable trace file (module doc); ``matches`` evaluates filters."""
    env = read_envelope(path, protocol=PROTOCOL, versions=(VERSION,))
    live_end = env.header.get("live_end")
    if type(live_end) is not bool:
        raise _fail(1, f"live_end must be true or false, not {live_end!r}")
    end = env.header.get("end")
    at: tuple[int, int] | None = None
    if end is not None:
        if (
            not isinstance(end, dict)
            or type(end.get("seq")) is not int
            or (type(end.get("time")) is not int)
        ):
            raise _fail(1, f'end must be null or {{"seq": int, "time": int}}, not {end!r}')
        at = (end["seq"], end["time"])
    return DurableTraceFile(
        context=_context_in(env.header.get("context"), matches),
        records=tuple(_record_in(line, r) for line, r in env.rows),
        meta=dict(env.header.get("meta") or {}),
        live_end=live_end,
        end=at,
    )


def judge(
    ctx: CheckContext,
    records: Iterable[TraceRecord],
    names: Iterable[str],
    *,
    live_end: bool,
    end: tuple[int, int] | None = None,
) -> Violation | None:
    """The first violation of the durable invariants ``names`` (all when empty) over
    ``dur_*`` ``records``; no-loss judged at the end (``end``: its ``(seq, time)``, by default
    just after the last record) when ``live_end``."""
    checker = Checker(ctx, tuple(names), plugins=PLUGINS)
    last: TraceRecord | None = None
    for r in records:
        last = r
        if checker.observe(r):
            return checker.violation
    if not live_end:
        return None
    seq, time = end or ((0, 0) if last is None else (last.seq + 1, last.time))
    return checker.finish(TraceRecord(seq=seq, time=time, node="-", kind="fault", detail="end"))


def trace_check(
    path: str | os.PathLike[str],
    names: Iterable[str] = (),
    *,
    matches: Callable[[str, Any], bool],
    live_end: bool | None = None,
) -> tuple[DurableTraceFile, Violation | None]:
    """Read ``path`` and judge it with the durable invariants ``names`` (default: all); no-loss
    at the end when ``live_end`` (default: the file's header says so). Unknown invariant
    names raise ``ValueError``."""
    chosen = tuple(names)
    unknown = [n for n in chosen if n not in INVARIANTS]
    if unknown:
        raise ValueError(f"unknown invariant(s) {unknown}; allowed: {', '.join(INVARIANTS)}")
    tf = read_durable_trace(path, matches=matches)
    end = tf.live_end if live_end is None else live_end
    return tf, judge(tf.context, tf.records, chosen, live_end=end, end=tf.end)
