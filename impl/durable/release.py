"""The event retention and release protocol [DUR §3, §4.1], as pure values and transitions.

Theory of operation
-------------------
Every pubend's events are logged once, at the pubend, and kept until the *release protocol*
says no durable subscriber can still need them; then the pubend turns a growing prefix of its
knowledge stream into L ticks [DUR §3]. Three kinds of node take part, one value each, one
pubend per value (a broker keeps one per pubend it carries):

* :class:`ShbRelease`, at a subscriber hosting broker [DUR §4.1]: ``latestDelivered(p)`` (the
  latest tick the constream delivered to every non-catchup subscriber and the PFS), one
  :class:`SubscriberRecord` per durable subscriber hosted here, connected or not, holding
  ``released(s, p)`` (the latest tick it acknowledged), and
  ``released(p) = min(latestDelivered(p), min_s released(s, p))``. It reports the pair
  ``(released(p), latestDelivered(p))`` upstream (:class:`ReleaseReport`) and remembers the
  highest pair it reported.
* :class:`NodeRelease`, at an intermediate broker (or the pubend's own view of its children):
  per downstream child the highest pair it reported; its own pair is the pointwise minimum over
  all its children [DUR §3] ("the minimum timestamp that all downstream SHBs have released, and
  the minimum of all latestDelivered(p)").
* :class:`PubendRelease`, at the root: ``Tr(p)`` and ``Td(p)`` (the minima over every SHB),
  the pubend's time ``T(p)``, ``maxRetain(p)`` (None: infinite, early release off) and its
  knowledge stream, whose prefix ``[0, released_through]`` is L. The L step turns tick ``t``
  into L only when ``t <= Tr(p)``, or ``t <= Td(p)`` and ``T(p) - t > maxRetain(p)`` [DUR §3,
  "PHB Controlled Policy"]. The ticks that rule allows form a prefix, so one number says which
  ticks are L; they are lowered in the verified :class:`~gapless.impl.streams.KnowledgeStream`
  by :meth:`~gapless.impl.streams.KnowledgeStream.release`.

Every pair moves up only: a report is merged by pointwise maximum, so reports that arrive late
or twice change nothing, and ``Tr(p) <= Td(p)`` holds at every node because every SHB reports
``released(p) <= latestDelivered(p)`` together, in one message (``spec/durable.md``).

Reconnect-anywhere (the paper leaves it open, [DUR §1 item 5]; designed in ``spec/durable.md``):
a subscriber that reconnects to another SHB is registered there as a *pending* record at the CT
it presents; a pending record does not count in ``released(p)``. It becomes active only once
its ``released(s, p)`` is at or above what that SHB already reported upstream (so the SHB's
reports stay below its ``released(p)``); the old SHB keeps its record, which still holds the
minimum, until the new one is active, and only then unregisters it. So ``Tr(p)`` never passes
a tick the subscriber has not acknowledged. ``gapless prove`` proves this (``release_*`` rows).

An SHB crash [DUR §4.1] loses nothing of this: ``latestDelivered(p)`` and ``released(s, p)``
live in the SHB's database. What it reported is not kept; on recovery it is taken to be
``released(p)`` (an upper bound of anything it can have reported), which keeps pending records
from activating too early.

Caller misuse (registering a subscriber twice, a negative tick) raises a typed error; network
input (an ack from an unknown subscriber, a report from a node that is not a child) yields the
same state and a :class:`~gapless.impl.effects.Rejected` effect.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable
from typing import Final, final

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from gapless.impl.durable.bigmap import ShardedMap, sharded
from gapless.impl.durable.minbag import MinBag
from gapless.impl.effects import Rejected
from gapless.impl.errors import InvalidTick, ProtocolMisuse
from gapless.impl.knowledge import D, S
from gapless.impl.streams import KnowledgeStream

__all__ = [
    "NONE",
    "AckMode",
    "NodeRelease",
    "PubendRelease",
    "ReleaseReport",
    "ShbRelease",
    "SubscriberRecord",
    "l_bound",
    "node_on_report",
    "pubend_clock",
    "pubend_on_report",
    "pubend_publish",
    "pubend_release_step",
    "shb_acknowledge",
    "shb_activate",
    "shb_crash",
    "shb_delivered",
    "shb_join",
    "shb_leave",
    "shb_register_moved",
    "shb_resume_point",
    "shb_send_report",
]

NONE: Final = -1
"""A timestamp below every tick: nothing delivered, acknowledged or released yet."""


def _tick(op: str, name: str, v: object) -> int:
    if type(v) is not int or v < NONE:
        raise InvalidTick(f"{op}: {name}={v!r}; allowed: an int >= {NONE}")
    return v


@final
@attrs.frozen(kw_only=True)
class SubscriberRecord:
    """A durable subscriber's entry at an SHB [DUR §4.1]: ``released`` is ``released(s, p)``;
    ``active`` is False while a reconnect-anywhere registration is pending."""

    released: int
    active: bool = True


def _active_bag(records: ShardedMap[str, SubscriberRecord]) -> MinBag:
    return MinBag.of(r.released for r in records.values() if r.active)


def _pending_set(records: ShardedMap[str, SubscriberRecord]) -> PSet[str]:
    return pset(s for s, r in records.items() if not r.active)


@final
@attrs.frozen(kw_only=True)
class ReleaseReport:
    """``(released, delivered)`` sent upstream by ``node`` for ``pubend`` [DUR §3]; always
    ``released <= delivered``."""

    node: str
    pubend: str
    released: int
    delivered: int


# ------------------------------------------------------------------------------ the SHB


@final
@attrs.frozen(kw_only=True)
class ShbRelease:
    """The release state of SHB ``shb`` for pubend ``pubend`` [DUR §4.1] (see module doc).

    >>> b, start = shb_join(ShbRelease(shb="b1", pubend="p1"), "s1")
    >>> b = shb_delivered(b, 106)
    >>> b, _ = shb_acknowledge(b, "s1", 100)
    >>> start, b.released(), b.latest_delivered
    (-1, 100, 106)
    >>> b, rep = shb_send_report(b)
    >>> (rep.released, rep.delivered)
    (100, 106)
    """

    shb: str
    pubend: str
    latest_delivered: int = NONE
    #: one per subscriber; a :class:`~gapless.impl.durable.bigmap.ShardedMap` (any mapping
    #: given is converted), so an ack's update costs what a shard holds, not every record
    records: ShardedMap[str, SubscriberRecord] = attrs.field(factory=ShardedMap, converter=sharded)
    reported_released: int = NONE
    reported_delivered: int = NONE
    #: the ``released(s, p)`` of the active records, as a multiset with its minimum: derived
    #: from ``records`` (built from them when not given; every step below keeps it in step),
    #: so ``released(p)`` costs O(1) and an ack O(log n), not a scan [DUR §4.1]
    active: MinBag = attrs.field(
        default=attrs.Factory(lambda self: _active_bag(self.records), takes_self=True),
        eq=False,
        repr=False,
    )
    #: the names of the pending (not yet active) records, derived from ``records``
    pending: PSet[str] = attrs.field(
        default=attrs.Factory(lambda self: _pending_set(self.records), takes_self=True),
        eq=False,
        repr=False,
    )

    def released(self) -> int:
        """``released(p) = min(latestDelivered(p), min over active s of released(s, p))``."""
        low = self.active.min()
        return self.latest_delivered if low is None else min(low, self.latest_delivered)

    def report(self) -> ReleaseReport:
        """The pair this SHB would send upstream now."""
        return ReleaseReport(
            node=self.shb,
            pubend=self.pubend,
            released=self.released(),
            delivered=self.latest_delivered,
        )


def shb_join(state: ShbRelease, sub: str) -> tuple[ShbRelease, int]:
    """A new durable subscriber: its CT for this pubend starts at ``latestDelivered(p)``, so it
    is not in catchup [DUR §4.1]; returns the new state and that starting timestamp."""
    if sub in state.records:
        raise ProtocolMisuse(
            f"shb_join: subscriber {sub!r} is already registered at {state.shb!r} for "
            f"{state.pubend!r}; allowed: a subscriber not registered here"
        )
    rec = SubscriberRecord(released=state.latest_delivered)
    new = attrs.evolve(
        state,
        records=state.records.set(sub, rec),
        active=state.active.add(rec.released),
    )
    return new, state.latest_delivered


def shb_register_moved(state: ShbRelease, sub: str, ct: int) -> ShbRelease:
    """Reconnect-anywhere: subscriber ``sub`` arrives from another SHB presenting ``CT(s, p) =
    ct``; its record here is *pending* until :func:`shb_activate` (module doc)."""
    _tick("shb_register_moved", "ct", ct)
    if sub in state.records:
        raise ProtocolMisuse(
            f"shb_register_moved: subscriber {sub!r} is already registered at {state.shb!r}; "
            "allowed: a subscriber registered at another SHB"
        )
    rec = SubscriberRecord(released=ct, active=False)
    return attrs.evolve(state, records=state.records.set(sub, rec), pending=state.pending.add(sub))


def shb_activate(state: ShbRelease) -> ShbRelease:
    """Activate every pending record whose ``released(s, p)`` is at or above what this SHB
    already reported (so no report exceeds ``released(p)``); the same state if none."""
    recs, bag, pending = state.records, state.active, state.pending
    for sub in state.pending:  # the pending records only: no scan of every subscriber
        r = recs[sub]
        if r.released >= state.reported_released:
            recs = recs.set(sub, SubscriberRecord(released=r.released))
            bag = bag.add(r.released)
            pending = pending.remove(sub)
    if recs is state.records:
        return state
    return attrs.evolve(state, records=recs, active=bag, pending=pending)


def shb_leave(state: ShbRelease, sub: str) -> ShbRelease:
    """Drop ``sub``'s record: it unsubscribed durably, or it moved and its record is active at
    the new SHB (the caller's duty, see :func:`shb_activate`)."""
    if sub not in state.records:
        raise ProtocolMisuse(
            f"shb_leave: subscriber {sub!r} is not registered at {state.shb!r} for "
            f"{state.pubend!r}; allowed: one of {sorted(state.records)}"
        )
    rec = state.records[sub]
    return attrs.evolve(
        state,
        records=state.records.remove(sub),
        active=state.active.remove(rec.released) if rec.active else state.active,
        pending=state.pending.discard(sub),
    )


def shb_acknowledge(
    state: ShbRelease, sub: str, ct: int
) -> tuple[ShbRelease, tuple[Rejected, ...]]:
    """Subscriber ``sub`` acknowledged ``CT(s, p) = ct`` [DUR §2]: ``released(s, p)`` rises to
    it. An older CT (lower than the record) changes nothing; an unknown subscriber or a
    malformed CT is rejected (network input)."""
    rec = state.records.get(sub)
    if rec is None or type(ct) is not int or ct < NONE:
        why = "unknown subscriber" if rec is None else f"malformed CT {ct!r}"
        return state, (Rejected(reason=f"ack at {state.shb!r}: {why}", input=(sub, ct)),)
    if ct <= rec.released:
        return state, ()
    new = SubscriberRecord(released=ct, active=rec.active)
    bag = state.active.replace(rec.released, ct) if rec.active else state.active
    return attrs.evolve(state, records=state.records.set(sub, new), active=bag), ()


def shb_delivered(state: ShbRelease, tick: int) -> ShbRelease:
    """The constream delivered through ``tick`` to every non-catchup subscriber and the PFS:
    ``latestDelivered(p)`` rises to it [DUR §4.1]. A lower tick returns the same state."""
    _tick("shb_delivered", "tick", tick)
    if tick <= state.latest_delivered:
        return state
    return attrs.evolve(state, latest_delivered=tick)


def shb_send_report(state: ShbRelease) -> tuple[ShbRelease, ReleaseReport]:
    """Activate what may be activated, then report ``(released(p), latestDelivered(p))``
    upstream, remembering the highest pair reported."""
    state = shb_activate(state)
    rep = state.report()
    rr = max(state.reported_released, rep.released)
    rd = max(state.reported_delivered, rep.delivered)
    if rr != state.reported_released or rd != state.reported_delivered:
        state = attrs.evolve(state, reported_released=rr, reported_delivered=rd)
    return state, rep


def shb_crash(state: ShbRelease) -> ShbRelease:
    """Crash and recovery [DUR §4.1]: latestDelivered and every record survive (database);
    what was reported is not kept and is taken to be ``released(p)`` (module doc)."""
    rr, rd = state.released(), state.latest_delivered
    if rr == state.reported_released and rd == state.reported_delivered:
        return state
    return attrs.evolve(state, reported_released=rr, reported_delivered=rd)


@final
class AckMode(enum.Enum):
    """Who keeps a subscriber's CT [DUR §2, §5.2] (``spec/durable.md``).

    * ``SUBSCRIBER`` (the default): the subscriber stores its CT in its own transaction and
      presents it when it reconnects; the SHB keeps only ``released(s, p)``;
    * ``SHB``: the SHB keeps CT(s) in its database, committed per acknowledgement (batched per
      flush by the storage adapter), and resumes the subscriber from it.
    """

    SUBSCRIBER = "subscriber"
    SHB = "shb"


def shb_resume_point(
    state: ShbRelease, sub: str, mode: AckMode, presented: int | None
) -> tuple[int | None, tuple[Rejected, ...]]:
    """Where delivery of this pubend resumes for reconnecting ``sub`` [DUR §2, §4.1]: the
    CT it presented (mode ``SUBSCRIBER``; it may be older than ``released(s, p)``, and then
    the subscriber may get gaps for what it already acknowledged), or the CT the SHB kept,
    which is ``released(s, p)`` (mode ``SHB``; a presented CT is ignored). An unknown
    subscriber, or no CT presented in mode ``SUBSCRIBER``, is rejected (network input)."""
    rec = state.records.get(sub)
    if rec is None:
        why = f"reconnect at {state.shb!r}: unknown subscriber"
        return None, (Rejected(reason=why, input=(sub, presented)),)
    if mode is AckMode.SHB:
        return rec.released, ()
    if type(presented) is not int or presented < NONE:
        why = f"reconnect at {state.shb!r}: CT {presented!r}; allowed: an int >= {NONE}"
        return None, (Rejected(reason=why, input=(sub, presented)),)
    return presented, ()


# ------------------------------------------------------------------------------ a node


@final
@attrs.frozen(kw_only=True)
class NodeRelease:
    """The release state of an intermediate node for one pubend [DUR §3]: per downstream
    child (an SHB or a node) the highest ``(released, delivered)`` pair it reported; a child
    that has not reported yet counts as ``(NONE, NONE)``."""

    node: str
    pubend: str
    children: PMap[str, tuple[int, int]]

    @classmethod
    def over(cls, node: str, pubend: str, children: Iterable[str]) -> NodeRelease:
        """A node whose downstream children are ``children`` (at least one)."""
        kids = tuple(children)
        if not kids:
            raise ProtocolMisuse(
                f"NodeRelease.over: node {node!r} has no downstream children; allowed: "
                "at least one SHB or node below it"
            )
        return cls(node=node, pubend=pubend, children=pmap(dict.fromkeys(kids, (NONE, NONE))))

    def released(self) -> int:
        """The minimum ``released`` over every child."""
        return min(r for r, _d in self.children.values())

    def delivered(self) -> int:
        """The minimum ``latestDelivered`` over every child."""
        return min(d for _r, d in self.children.values())

    def report(self) -> ReleaseReport:
        """The pair this node sends upstream."""
        return ReleaseReport(
            node=self.node, pubend=self.pubend, released=self.released(), delivered=self.delivered()
        )


def _bad_report(where: str, rep: object, known: Iterable[str]) -> str | None:
    if not isinstance(rep, ReleaseReport):
        return f"{where}: not a ReleaseReport"
    if rep.node not in known:
        return f"{where}: report from {rep.node!r}, not a child; allowed: {sorted(known)}"
    ok = type(rep.released) is int and type(rep.delivered) is int
    if not ok or rep.released < NONE or rep.released > rep.delivered:
        return f"{where}: malformed pair ({rep.released!r}, {rep.delivered!r})"
    return None


def node_on_report(
    state: NodeRelease, rep: ReleaseReport
) -> tuple[NodeRelease, tuple[Rejected, ...]]:
    """A child's report: its pair rises pointwise (late or repeated reports change nothing)."""
    why = _bad_report(f"node {state.node!r}", rep, state.children)
    if why is None and rep.pubend != state.pubend:
        why = f"node {state.node!r}: report for {rep.pubend!r}, not {state.pubend!r}"
    if why is not None:
        return state, (Rejected(reason=why, input=rep),)
    r0, d0 = state.children[rep.node]
    r1, d1 = max(r0, rep.released), max(d0, rep.delivered)
    if (r1, d1) == (r0, d0):
        return state, ()
    return attrs.evolve(state, children=state.children.set(rep.node, (r1, d1))), ()


# ------------------------------------------------------------------------------ the pubend


@final
@attrs.frozen(kw_only=True)
class PubendRelease:
    """The release state at pubend ``pubend`` [DUR §3]: ``tr``/``td`` are ``Tr(p)``/``Td(p)``,
    ``clock`` is ``T(p)``, ``max_retain`` is ``maxRetain(p)`` in ticks (None: infinite),
    ``released_through`` the last L tick (``NONE``: none) and ``knowledge`` the pubend's
    stream, L on ``[0, released_through]``."""

    pubend: str
    tr: int = NONE
    td: int = NONE
    clock: int = NONE
    max_retain: int | None = None
    released_through: int = NONE
    knowledge: KnowledgeStream = attrs.field(factory=KnowledgeStream)


def l_bound(tr: int, td: int, clock: int, max_retain: int | None) -> int:
    """The highest tick the L rule allows: ``t <= Tr``, or ``t <= Td`` and ``T - t >
    maxRetain`` [DUR §3]. Both conditions hold on a prefix of ticks, so the allowed set is
    ``[0, l_bound]`` (empty when ``l_bound == NONE``).

    >>> l_bound(tr=4, td=9, clock=20, max_retain=None), l_bound(tr=4, td=9, clock=20, max_retain=12)
    (4, 7)
    """
    bound = tr
    if max_retain is not None:
        bound = max(bound, min(td, clock - max_retain - 1))
    return max(bound, NONE)


def pubend_on_report(
    state: PubendRelease, rep: ReleaseReport, children: Iterable[str]
) -> tuple[PubendRelease, tuple[Rejected, ...]]:
    """The pubend's own minimum over its children arrived as ``rep`` (from its
    :class:`NodeRelease`): ``Tr(p)`` and ``Td(p)`` rise to it."""
    why = _bad_report(f"pubend {state.pubend!r}", rep, tuple(children))
    if why is not None:
        return state, (Rejected(reason=why, input=rep),)
    tr, td = max(state.tr, rep.released), max(state.td, rep.delivered)
    if (tr, td) == (state.tr, state.td):
        return state, ()
    return attrs.evolve(state, tr=tr, td=td), ()


def pubend_clock(state: PubendRelease, now_tick: int) -> PubendRelease:
    """``T(p)`` advances to ``now_tick`` (never back); the ticks it passes with no event are
    silence (S) in the pubend's stream [DUR §2-3]."""
    _tick("pubend_clock", "now_tick", now_tick)
    if now_tick <= state.clock:
        return state
    k = state.knowledge.accumulate(state.clock + 1, now_tick, S)
    return attrs.evolve(state, clock=now_tick, knowledge=k)


def pubend_publish(state: PubendRelease, tick: int, payload: Hashable) -> PubendRelease:
    """An event is assigned tick ``tick`` (after ``T(p)``): the ticks since ``T(p)`` are S,
    ``tick`` is D and ``T(p)`` becomes ``tick`` [DUR §2]."""
    _tick("pubend_publish", "tick", tick)
    if tick <= state.clock:
        raise ProtocolMisuse(
            f"pubend_publish: tick {tick} of {state.pubend!r} is not after T(p)={state.clock}; "
            "allowed: a tick above T(p) (ticks are assigned in increasing order)"
        )
    k = state.knowledge
    if tick - 1 > state.clock:
        k = k.accumulate(state.clock + 1, tick - 1, S)
    k = k.accumulate(tick, tick, D(payload))
    return attrs.evolve(state, clock=tick, knowledge=k)


def pubend_release_step(state: PubendRelease) -> PubendRelease:
    """The L step [DUR §3]: every tick the L rule now allows becomes L in the knowledge
    stream; the same state if none is new."""
    bound = min(l_bound(state.tr, state.td, state.clock, state.max_retain), state.clock)
    if bound <= state.released_through:
        return state
    k = state.knowledge.release(state.released_through + 1, bound)
    return attrs.evolve(state, released_through=bound, knowledge=k)
