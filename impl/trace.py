"""Trace records, the stable trace digest and run counters (shared by invariants and models).

Theory of operation
-------------------
A run of the simulated world (``gapless.models``) is recorded as a sequence of
:class:`TraceRecord` values ``(seq, time, node, kind, detail)``: virtual time in µs, the node
the record happened at, a kind from :data:`RECORD_KINDS` and a detail value (an effect, an
input or one of the small detail classes below). Invariants (``gapless.invariants``) judge
*only* these records — what was published, what went on the wire, what was persisted and
delivered, and which faults happened — never a role's internal state (DESIGN.md).

The digest (:class:`TraceDigest`) is a sha256 over a canonical byte encoding of every record
(:func:`canonical`). The encoding never depends on hash order (mappings and sets are sorted
by their encodings), on object addresses, or on ``PYTHONHASHSEED``, so one run gives one
digest in any process. Floats are encoded by ``repr`` (exact and stable across CPython).

Counters (:class:`Counters`) summarise a run for campaigns: messages published and delivered,
nacks and their total range, retransmissions and the latency percentiles. Message kinds are
read from the :class:`Wire` summary that the world attaches to every sent message.

This module is pure: no clock, no I/O, no randomness.

>>> d = TraceDigest()
>>> f = Fault(kind="crash", target="p1")
>>> d.add(TraceRecord(seq=0, time=5, node="p1", kind="fault", detail=f))
>>> len(d.hexdigest())
64
>>> canonical({"b": 1, "a": (True, None)}) == canonical({"a": (True, None), "b": 1})
True
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, PSet, pmap

from gapless.impl.effects import Deliver, DeliverCohort, Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Persisted, as_pmap

__all__ = [
    "DIGEST_VERSION",
    "RECORD_KINDS",
    "WIRE_KINDS",
    "Counters",
    "CountersBuilder",
    "Dropped",
    "Fault",
    "Malformed",
    "Published",
    "Received",
    "Sent",
    "TraceDigest",
    "TraceRecord",
    "Wire",
    "as_pmap",
    "canonical",
    "count",
    "percentile",
    "trace_digest",
]

DIGEST_VERSION: Final = 4
"""The version of the trace digest's input. Digests compare only within one version.

* 1 — the records of a run, including ``coverage`` records (the lattice-transition labels a
  step reported);
* 2 — coverage labels left the trace (they are counted beside it), so a change of a role's
  internals that changes nothing observable cannot change a digest; ``Deliver`` carries its
  ``kind`` and ``Connect`` its ``resume`` token;
* 3 — only primary values are digested: a ``Sent`` or ``Dropped`` whose ``msg`` is known
  digests the message and not its ``Wire`` summary (the binding derives the summary from the
  message, so it adds nothing to a cross-run fingerprint; issue 17). A record read back
  from a trace file (``msg`` None) digests its summary instead.
* 4 — the same encoding; GD's records changed on purpose: a GD broker has one ack timer, not
  one per pubend (issue 17), so its timed acks go up at other times. Every verdict is the
  same; a version-3 GD counterexample replays as "older version", not as a mismatch.
"""

RECORD_KINDS: Final = frozenset(
    {
        "publish",  # a client handed a pubend a message (detail: Published)
        "persist",  # a node asked stable storage to write (detail: effects.Persist)
        "persisted",  # the write completed and the node was told (detail: inputs.Persisted)
        "send",  # a node emitted a Send (detail: Sent)
        "receive",  # a message arrived at a node (detail: Received)
        "drop",  # the network lost a message (detail: Dropped)
        "deliver",  # a node handed a message to a subscriber (detail: effects.Deliver)
        "timer",  # a timer fired at a node (detail: inputs.TimerFired)
        "fault",  # a fault started or ended (detail: Fault)
        "connect",  # a subscriber connected (detail: inputs.Connect)
        "disconnect",  # a subscriber disconnected (detail: inputs.Disconnect)
        "link",  # a node was told a link changed (detail: inputs.LinkChanged)
        "rejected",  # a node rejected a network input (detail: effects.Rejected)
        "malformed",  # a step left a role value out of canonical form (detail: Malformed)
        "coverage",  # digest version 1 only: a coverage label (now counted beside the trace)
    }
)

WIRE_KINDS: Final = frozenset({"data", "silence", "ack", "nack", "ack_expected", "status", "other"})


@final
@attrs.frozen(kw_only=True)
class Wire:
    """What a message on the wire says, in protocol-neutral terms [GD §3.1, §3.2].

    * ``kind`` — one of :data:`WIRE_KINDS`;
    * ``pubend`` — the stream the message is about (``None`` for link status);
    * ``data_ticks`` — the D ticks a knowledge message carries;
    * ``final_ranges`` — the inclusive F/silence ranges a knowledge message carries;
    * ``nack_ranges`` — the inclusive ranges a nack asks for;
    * ``upto`` — the T of ``ack(T)`` / ``AckExpected(T)``;
    * ``retransmission`` — a retransmitted (not first-time) knowledge message.
    """

    kind: str
    pubend: str | None = None
    data_ticks: tuple[int, ...] = ()
    final_ranges: tuple[tuple[int, int], ...] = ()
    nack_ranges: tuple[tuple[int, int], ...] = ()
    upto: int | None = None
    retransmission: bool = False


@final
@attrs.frozen(kw_only=True)
class Published:
    """A client handed ``pubend`` (hosted at the record's node) its ``index``-th message."""

    pubend: str
    index: int
    attributes: PMap[str, Any] = attrs.field(factory=pmap, converter=as_pmap)
    size: int = 100


@final
@attrs.frozen(kw_only=True)
class Sent:
    """The record's node emitted ``Send(to, msg)``; ``wire`` is the message's summary."""

    to: str
    msg: Any
    wire: Wire


@final
@attrs.frozen(kw_only=True)
class Received:
    """``msg`` from ``sender`` arrived at the record's node."""

    sender: str
    msg: Any
    wire: Wire


@final
@attrs.frozen(kw_only=True)
class Dropped:
    """The network lost ``msg`` on the link ``sender -> to`` (``reason``: loss, link down,
    stall, node down)."""

    sender: str
    to: str
    msg: Any
    wire: Wire
    reason: str


@final
@attrs.frozen(kw_only=True)
class Fault:
    """A fault event took effect: ``kind`` (crash, restart, link_fail, link_heal, stall,
    drop_window, ...), its ``target`` (a node, or ``"a|b"`` for a link) and ``phase``
    ("start"/"end")."""

    kind: str
    target: str
    phase: str = "start"


@final
@attrs.frozen(kw_only=True)
class Malformed:
    """A step left a value of the node's role state out of its type's canonical form:
    ``text`` names the value and what is wrong (the binding's ``malformed``)."""

    text: str


@final
@attrs.frozen(kw_only=True)
class TraceRecord:
    """One observable event of a run: ``seq`` (its position), ``time`` (µs), ``node``,
    ``kind`` (one of :data:`RECORD_KINDS`) and ``detail``."""

    seq: int
    time: int
    node: str
    kind: str
    detail: Any


# --------------------------------------------------------------------------------------------
# canonical encoding and digest
# --------------------------------------------------------------------------------------------

_MEMO_MAX: Final = 200_000
_kinds: dict[type, tuple[str, tuple[str, ...]]] = {}
# kind codes: "a" frozen attrs (memoised), "A" mutable attrs, "m" immutable mapping (memoised),
# "M" mutable mapping, "s" immutable set (memoised), "S" mutable set, "q" sequence, "o" other
_IMMUTABLE_MAPS: Final = (PMap,)
_IMMUTABLE_SETS: Final = (frozenset, PSet)


# frozen attrs types that are built afresh for every record: memoising them by identity only
# churns the memo (each instance is encoded once)
_TRANSIENT: Final = frozenset(
    {
        "Deliver",
        "Sent",
        "Received",
        "Dropped",
        "Fault",
        "Published",
        "Persist",
        "Persisted",
        "LogRecord",
    }
)


def _kind(t: type) -> tuple[str, tuple[str, ...]]:
    got = _kinds.get(t)
    if got is None:
        if issubclass(t, enum.Enum):
            got = ("e", ())
        elif issubclass(t, bool):
            got = ("B", ())
        elif issubclass(t, int):
            got = ("I", ())
        elif issubclass(t, str):
            got = ("X", ())
        elif issubclass(t, float):
            got = ("R", ())
        elif issubclass(t, bytes):
            got = ("b", ())
        elif attrs.has(t):
            names = tuple(f.name for f in attrs.fields(t))
            frozen = getattr(t.__setattr__, "__name__", "") == "_frozen_setattrs"
            got = (("t" if t.__name__ in _TRANSIENT else "a") if frozen else "A", names)
        elif issubclass(t, Mapping):
            got = ("m" if issubclass(t, _IMMUTABLE_MAPS) else "M", ())
        elif issubclass(t, AbstractSet):
            got = ("s" if issubclass(t, _IMMUTABLE_SETS) else "S", ())
        elif issubclass(t, Sequence) and not issubclass(t, (str, bytes)):
            got = ("q", ())
        else:
            got = ("o", ())
        _kinds[t] = got
    return got


_attrs_encoders: dict[type, Callable[[Any, Callable[[Any], str]], str]] = {}


def _attrs_encoder(cls: type, names: tuple[str, ...]) -> Callable[[Any, Callable[[Any], str]], str]:
    """The canonical encoder of one attrs class: ``@Name(f1=...f2=...)``, each field encoded
    inline when it is a str, int, None, bool or empty tuple and by the ``encode`` it is
    given otherwise.
    Generated once per class, one unrolled block per field (as attrs generates its own
    methods), instead of a loop over the field names for every value; field names are
    identifiers and the class name is only embedded through ``repr``."""
    if not all(n.isidentifier() for n in names):
        raise ProtocolMisuse(f"canonical: {cls.__name__} has a field that is not an identifier")
    lines = ["def enc(value, encode):"]
    for i, n in enumerate(names):
        lines += [
            f"    v = value.{n}",
            "    tv = type(v)",
            "    if tv is str:",
            f"        p{i} = f'{n}=s{{len(v)}}:{{v}}'",
            "    elif tv is int:",
            f"        p{i} = f'{n}=i{{v}};'",
            "    elif v is None:",
            f"        p{i} = '{n}=N'",
            "    elif tv is bool:",
            f"        p{i} = '{n}=T' if v else '{n}=F'",
            "    elif tv is tuple and not v:",
            f"        p{i} = '{n}=()'",
            "    else:",
            f"        p{i} = '{n}=' + encode(v)",
        ]
    joined = ", ".join(f"p{i}" for i in range(len(names)))
    lines.append(f"    return ''.join((head, {joined}, ')'))" if names else "    return head + ')'")
    scope: dict[str, Any] = {"head": f"@{cls.__name__}("}
    exec(compile("\n".join(lines), f"<canonical {cls.__name__}>", "exec"), scope)
    fn: Callable[[Any, Callable[[Any], str]], str] = scope["enc"]
    return fn


@final
class _Encoder:
    """The canonical encoder with its own identity memo: one per digest, so nothing it
    remembers outlives the run it encodes (frozen values and immutable containers are
    encoded once per run and found again by identity)."""

    __slots__ = ("encode", "memo")

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Any, str]] = {}
        self.encode: Callable[[Any], str] = self._encode

    def _encode(self, value: Any) -> str:
        # The memo first: it holds only immutable values (frozen attrs classes, immutable
        # maps and sets), each with a strong reference, so an entry whose value is this very
        # object is its text. The commonest non-primitive value in a trace (a message's
        # Data, met again in every record that shows it) is then one lookup, not a walk
        # down the type tests below.
        hit = self.memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        t = type(value)
        if t is int:
            return f"i{value};"
        if t is str:
            return f"s{len(value)}:{value}"
        if value is None:
            return "N"
        if t is bool:
            return "T" if value else "F"
        if t is tuple:
            parts = ["("]
            for v in value:
                tv = type(v)
                if tv is int:
                    parts.append(f"i{v};")
                elif tv is str:
                    parts.append(f"s{len(v)}:{v}")
                elif tv is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int:
                    parts.append(f"(i{v[0]};i{v[1]};)")  # a tick range
                else:
                    parts.append(self.encode(v))
            parts.append(")")
            return "".join(parts)
        if t is float:
            return f"f{value!r};"
        got = _kinds.get(t)
        code, names = got if got is not None else _kind(t)
        if code == "e":
            return f"e{t.__name__}.{value.name};"
        if code == "B":
            return "T" if value else "F"
        if code == "I":
            return f"i{int(value)};"
        if code == "X":
            return f"s{len(value)}:{value}"
        if code == "R":
            return f"f{float(value)!r};"
        if code == "b":
            return f"b{value.hex()};"
        memo = code in ("a", "m", "s")  # (looked up first, above)
        if code in ("a", "A", "t"):
            enc = _attrs_encoders.get(t)
            if enc is None:
                enc = _attrs_encoders[t] = _attrs_encoder(t, names)
            text = enc(value, self.encode)
        elif code in ("m", "M"):
            enc_ = self.encode
            items = sorted([(enc_(k), enc_(v)) for k, v in value.items()])
            text = "{" + "".join([f"{k}:{v}" for k, v in items]) + "}"
        elif code in ("s", "S"):
            text = "<" + "".join(sorted([self.encode(v) for v in value])) + ">"
        elif code == "q":
            text = "(" + "".join([self.encode(v) for v in value]) + ")"
        else:
            rep = repr(value)
            if " at 0x" in rep:
                raise ProtocolMisuse(
                    f"canonical: cannot encode {t.__name__} value {rep!r} stably; allowed: "
                    "None, bool, int, str, float, bytes, enums, attrs classes, mappings, sets, "
                    "sequences and values with an address-free repr"
                )
            text = f"r{t.__name__}:{rep};"
        if memo:
            if len(self.memo) >= _MEMO_MAX:
                self.memo.clear()
            self.memo[id(value)] = (value, text)
        return text

    def encode_to(self, to: Any) -> str:
        """The encoding of a cohort's ``to``, memoised by identity (the SHB reuses one tuple
        for as long as its matching subscribers and their connections stay the same)."""
        hit = self.memo.get(id(to))
        if hit is not None and hit[0] is to:
            return hit[1]
        text = self.encode(to)
        if len(self.memo) >= _MEMO_MAX:
            self.memo.clear()
        self.memo[id(to)] = (to, text)
        return text


def canonical(value: Any) -> str:
    """The canonical text encoding of ``value`` (stable across processes and hash seeds).
    Within one encoding, frozen attrs values and immutable pyrsistent containers are encoded
    once and found again by identity (they cannot change)."""
    return _Encoder().encode(value)


_DELIVER_FAST: Final = tuple(f.name for f in attrs.fields(Deliver)) == (
    "subscriber",
    "pubend",
    "tick",
    "payload",
    "connection",
    "kind",
)


_COHORT_FIELDS: Final = tuple(f.name for f in attrs.fields(DeliverCohort))
_PERSIST_FAST: Final = tuple(f.name for f in attrs.fields(Persist)) == ("key", "value", "delay")
_PERSISTED_FAST: Final = tuple(f.name for f in attrs.fields(Persisted)) == ("key",)
_SENT_FAST: Final = tuple(f.name for f in attrs.fields(Sent)) == ("to", "msg", "wire")
_DROPPED_FAST: Final = tuple(f.name for f in attrs.fields(Dropped)) == (
    "sender",
    "to",
    "msg",
    "wire",
    "reason",
)
#: records whose lines are joined before one ``sha256.update`` (fewer calls, same bytes)
_FLUSH_EVERY: Final = 256


def _encode_key3(key: Any) -> str | None:
    """``_encode`` of a ``(str, str, int)`` key (a pubend's log key), inline; None for any
    other value."""
    if type(key) is tuple and len(key) == 3:
        a, b, c = key
        if type(a) is str and type(b) is str and type(c) is int:
            return f"(s{len(a)}:{a}s{len(b)}:{b}i{c};)"
    return None


@final
class TraceDigest:
    """An incremental sha256 over the canonical encoding of trace records."""

    __slots__ = ("_buf", "_enc", "_h", "records")

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._enc = _Encoder()
        self._buf: list[str] = []
        self.records = 0

    def add(self, record: TraceRecord) -> None:
        """Fold one record into the digest."""
        self.add_fields(record.seq, record.time, record.node, record.kind, record.detail)

    def add_fields(self, seq: int, time: int, node: str, kind: str, d: Any) -> None:
        """Fold in the record with these fields (what :meth:`add` does, without building a
        :class:`TraceRecord` when nobody else reads it)."""
        _encode = self._enc.encode
        if type(d) is Deliver and _DELIVER_FAST:
            # the hot record (one per subscriber per message): the same text as _encode, built
            # inline; the payload is shared by the whole cohort and memoised
            sub, p, c, k = d.subscriber, d.pubend, d.connection, d.kind
            if type(sub) is str and type(p) is str and type(d.tick) is int and type(c) is int:
                text = (
                    f"@Deliver(subscriber=s{len(sub)}:{sub}pubend=s{len(p)}:{p}tick=i{d.tick};"
                    f"payload={_encode(d.payload)}connection=i{c};kind=s{len(k)}:{k})"
                )
            else:
                text = _encode(d)
        elif type(d) is DeliverCohort and _COHORT_FIELDS == ("pubend", "tick", "payload", "to"):
            p, t = d.pubend, d.tick
            # the pubend and tick as _encode writes a str and an int, inline
            pt = f"s{len(p)}:{p}" if type(p) is str else _encode(p)
            tt = f"i{t};" if type(t) is int else _encode(t)
            text = (
                f"@DeliverCohort(pubend={pt}tick={tt}"
                f"payload={_encode(d.payload)}to={self._enc.encode_to(d.to)})"
            )
        elif type(d) is Persist and _PERSIST_FAST and type(d.delay) is int:
            # one per published message at its pubend: the same text as _encode, inline
            key = _encode_key3(d.key)
            text = (
                _encode(d)
                if key is None
                else f"@Persist(key={key}value={_encode(d.value)}delay=i{d.delay};)"
            )
        elif type(d) is Persisted and _PERSISTED_FAST:
            key = _encode_key3(d.key)
            text = _encode(d) if key is None else f"@Persisted(key={key})"
        elif type(d) is Sent and _SENT_FAST and d.msg is not None and type(d.to) is str:
            # digest version 3: the message, not its wire summary (derived from it)
            to = d.to
            text = f"@Sent(to=s{len(to)}:{to}msg={_encode(d.msg)})"
        elif type(d) is Dropped and _DROPPED_FAST and d.msg is not None:
            text = (
                f"@Dropped(sender={_encode(d.sender)}to={_encode(d.to)}msg={_encode(d.msg)}"
                f"reason={_encode(d.reason)})"
            )
        else:
            text = _encode(d)
        buf = self._buf
        buf.append(f"{seq}|{time}|{node}|{kind}|{text}\n")
        if len(buf) >= _FLUSH_EVERY:
            self._flush()
        self.records += 1

    def _flush(self) -> None:
        """Hash the buffered lines (sha256 over their concatenation: the same bytes as one
        ``update`` per line)."""
        if self._buf:
            self._h.update("".join(self._buf).encode("utf-8"))
            self._buf.clear()

    def hexdigest(self) -> str:
        """The sha256 hex digest of the records added so far."""
        self._flush()
        return self._h.hexdigest()


def trace_digest(records: Iterable[TraceRecord]) -> str:
    """The digest of a whole recorded trace (equal to the online digest of the same run)."""
    d = TraceDigest()
    for r in records:
        d.add(r)
    return d.hexdigest()


# --------------------------------------------------------------------------------------------
# counters
# --------------------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[int], q: float) -> int | None:
    """The nearest-rank ``q``-quantile (0 < q <= 1) of ascending ``sorted_values``; None if
    empty.

    >>> percentile([1, 2, 3, 4], 0.5), percentile([1, 2, 3, 4], 0.99), percentile([], 0.5)
    (2, 4, None)
    """
    if not 0.0 < q <= 1.0:
        raise ProtocolMisuse(f"percentile: q={q!r} is outside the allowed range (0, 1]")
    if not sorted_values:
        return None
    n = len(sorted_values)
    rank = -(-int(q * n * 1_000_000) // 1_000_000)  # ceil without float drift
    return sorted_values[min(max(rank, 1), n) - 1]


@final
@attrs.frozen(kw_only=True)
class Counters:
    """Run counters for campaigns (issue 4 §1): ``published`` (messages clients handed to
    pubends), ``delivered`` (messages handed to subscribers: one per ``Deliver``, one per
    member of a ``DeliverCohort``), ``nacks`` (nack messages sent), ``nack_range_us``
    (sum of nacked tick ranges, µs), ``retransmissions`` (retransmitted knowledge messages
    sent), latency percentiles from publish to delivery (µs, None when nothing was
    delivered)."""

    published: int = 0
    delivered: int = 0
    nacks: int = 0
    nack_range_us: int = 0
    retransmissions: int = 0
    latency_p50_us: int | None = None
    latency_p99_us: int | None = None
    latency_max_us: int | None = None


def _range_len(ranges: Iterable[tuple[int, int]]) -> int:
    return sum(hi - lo + 1 for lo, hi in ranges)


@final
class CountersBuilder:
    """Counters accumulated one record at a time (the online form of :func:`count`)."""

    __slots__ = (
        "_lat",
        "_publish_time_of",
        "delivered",
        "nack_range",
        "nacks",
        "published",
        "retrans",
    )

    def __init__(self, publish_time_of: Callable[[Any], int | None]) -> None:
        self._publish_time_of = publish_time_of
        self._lat: list[int] = []
        self.published = self.delivered = self.nacks = self.nack_range = self.retrans = 0

    def add(self, r: TraceRecord) -> None:
        """Count one record."""
        k = r.kind
        if k == "publish":
            self.published += 1
        elif k == "deliver":
            d = r.detail
            if type(d) is Deliver and d.kind != "event":
                return  # a silence or gap message delivers no event [DUR §2]
            n = len(d.to) if type(d) is DeliverCohort else 1
            self.delivered += n
            t0 = self._publish_time_of(d)
            if t0 is not None:
                if n == 1:
                    self._lat.append(r.time - t0)
                else:
                    self._lat.extend([r.time - t0] * n)
        elif k == "send":
            w = r.detail.wire
            if type(w) is not Wire:  # another protocol's own summary: no nacks to count
                return
            if w.kind == "nack":
                self.nacks += 1
                self.nack_range += _range_len(w.nack_ranges)
            elif w.retransmission:
                self.retrans += 1

    def counters(self) -> Counters:
        """The counters so far."""
        lat = sorted(self._lat)
        return Counters(
            published=self.published,
            delivered=self.delivered,
            nacks=self.nacks,
            nack_range_us=self.nack_range,
            retransmissions=self.retrans,
            latency_p50_us=percentile(lat, 0.5),
            latency_p99_us=percentile(lat, 0.99),
            latency_max_us=lat[-1] if lat else None,
        )


def count(
    records: Iterable[TraceRecord],
    publish_time_of: Callable[[Any], int | None],
) -> Counters:
    """Counters over a recorded trace. ``publish_time_of(deliver)`` gives the virtual time
    a delivered message was published (None if unknown); latency is delivery time minus it."""
    b = CountersBuilder(publish_time_of)
    for r in records:
        b.add(r)
    return b.counters()
