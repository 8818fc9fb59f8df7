"""The DFT broker's state: sessions, partition table, SRT, pending subscriptions, queue.

Theory of operation
-------------------
One frozen value per broker [DFT §II-VIII]; the handlers in
:mod:`gapless.impl.dft.sessions`, :mod:`~gapless.impl.dft.subscriptions` and
:mod:`~gapless.impl.dft.publications` return changed copies. Field by field:

* ``tree``, ``hood`` — the primary tree (routing layer) and this broker's Δ-neighbourhood,
  the only brokers it may open sessions to [DFT §I, §IV].
* ``established`` — the neighbourhood brokers its failure detector reports reachable, i.e.
  established sessions S(B, X); ``active`` — those with no other established broker on the
  primary path to them: one active session per primary path [DFT §II, Figure 3].
* ``pt`` — the partition table: pids whose detector is within DPT [DFT §IV]; ``counter`` —
  the last partition counter this broker assigned as a detector [DFT §III]; ``healed`` —
  pids removed on recovery, so a late partition-information message does not bring one
  back [DFT §VIII-A step (v)].
* ``srt`` — accepted subscriptions, with, at their source broker, the confirmation tags
  [DFT §V]; ``pending`` — subscriptions awaiting confirmations (Out_s, senders, tags
  gathered from confirmations) in arrival order.
* ``queue`` — the FIFO of publications not yet confirmed downstream [DFT §VI], each with
  the hops it was sent to and the subscription sources each hop serves.
* ``seen`` and ``stamp`` — duplicate detection [DFT §VII] (per forwarder and epoch, the
  stamps seen: :class:`gapless.impl.dft.seqvec.Seen`); ``published`` — the count of
  publications issued at this broker (their per-source numbers).
* ``local`` — this broker's subscribers: sid -> (subscriber, connection); ``excluded``
  — per (sid, source), the newest publication number excluded there by its tags.
* Recovery [DFT §VIII] (:mod:`gapless.impl.dft.recovery`): ``syncing`` — the brokers this
  broker is sync-point for, whose partial recovery is not over; ``fwd`` — the active
  sessions publications may use: those over the established sessions minus ``syncing``
  (publications go to a newly activated session only "after recovery", Figure 8 l. 40);
  ``incarnation`` — how many times this broker restarted (stable storage); ``restored`` —
  False from a restart until its full recovery is over; ``synced_from`` — the sync-points
  whose transfer it has received since the restart; ``held`` — publications that arrived
  (or were published here) before then, processed once it is restored; ``unsent`` — its
  own publications that were unconfirmed at the crash (stable storage), re-sent first.
* ``arrivals`` — the joins during the run this broker knows of, ``(broker, attach_to)``
  in order (kept with the tree on stable storage), passed on to brokers that may lack
  them [DFT §I] (:mod:`gapless.impl.dft.joins`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, PSet, PVector, pmap, pset, pvector

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.messages import Pid, PubMsg, SubMsg
from gapless.impl.dft.seqvec import Seen
from gapless.impl.dft.tree import PrimaryTree

__all__ = [
    "Accepted",
    "BrokerState",
    "PendingSub",
    "QueuedPub",
    "SyncState",
    "evolve",
    "new_broker",
]


@final
@attrs.frozen(kw_only=True)
class Accepted:
    """An SRT entry: the subscription and, at its source, the confirmation tags [DFT §V-C]."""

    sub: SubMsg
    conf_tags: frozenset[Pid] = frozenset()
    #: Accepted from a partial recovery's upstream transfer, without being propagated
    #: downstream [DFT §VIII-A]: like an island copy, not a full acceptance.
    upstream: bool = False
    #: This broker's stamp counter when it accepted: sent with every confirmation of it.
    stamp: int = 0
    #: Per broker whose confirmation it waited for, that broker's ``stamp`` (our addition,
    #: spec/dft.md "Releases after recovery"): a publication from it stamped at or below
    #: is not matched for this subscription.
    after: PMap[str, int] = attrs.field(factory=pmap)

    @property
    def full(self) -> bool:
        """Accepted after propagation (Figure 5), not as an island or upstream copy."""
        return not (self.upstream or self.sub.island)


@final
@attrs.frozen(kw_only=True)
class PendingSub:
    """A subscription waiting for the confirmations of ``outs`` [Figure 5]."""

    sub: SubMsg
    outs: frozenset[str]
    senders: frozenset[str]
    conf_tags: frozenset[Pid] = frozenset()
    #: The confirmations' ``stamp`` so far, per confirming broker (:class:`Accepted`).
    after: PMap[str, int] = attrs.field(factory=pmap)


@final
@attrs.frozen(kw_only=True)
class QueuedPub:
    """A queued publication [Figure 8]: ``msg`` as tagged here, its ``stamp`` here, the
    brokers it came from, and ``hops``: each hop of Out_p -> the sources it serves."""

    msg: PubMsg
    stamp: int
    senders: frozenset[str]
    hops: PMap[str, frozenset[str]]


@final
@attrs.frozen(kw_only=True)
class SyncState:
    """This broker as sync-point for one recovering broker [DFT §VIII-A]: ``known`` — the
    sids the recovering broker reported or was sent; ``waiting`` — those sent and not yet
    confirmed; ``summarised`` — whether the summary (step ii) has arrived; ``tags`` — per
    subscription confirmed, the tags of the recovering broker's confirmation (T', step
    iv)."""

    known: frozenset[str] = frozenset()
    waiting: frozenset[str] = frozenset()
    summarised: bool = False
    tags: PMap[str, frozenset[Pid]] = attrs.field(factory=pmap)


@final
@attrs.frozen(kw_only=True)
class BrokerState:
    """One DFT broker (see the module doc)."""

    me: str
    config: DFTConfig
    policy: DFTPolicy
    tree: PrimaryTree
    hood: frozenset[str]
    established: frozenset[str] = frozenset()
    active: frozenset[str] = frozenset()
    pt: PSet[Pid] = attrs.field(factory=pset)
    counter: int = 0
    healed: PSet[Pid] = attrs.field(factory=pset)
    srt: PMap[str, Accepted] = attrs.field(factory=pmap)
    pending: PMap[str, PendingSub] = attrs.field(factory=pmap)
    pending_order: PVector[str] = attrs.field(factory=pvector)
    queue: PVector[QueuedPub] = attrs.field(factory=pvector)
    seen: PMap[tuple[str, int], Seen] = attrs.field(factory=pmap)
    stamp: int = 0
    published: int = 0
    local: PMap[str, tuple[str, int]] = attrs.field(factory=pmap)
    excluded: PMap[tuple[str, str], int] = attrs.field(factory=pmap)
    syncing: PMap[str, SyncState] = attrs.field(factory=pmap)
    fwd: frozenset[str] = frozenset()
    incarnation: int = 0
    restored: bool = True
    synced_from: frozenset[str] = frozenset()
    held: PVector[tuple[str | None, PubMsg]] = attrs.field(factory=pvector)
    unsent: PVector[QueuedPub] = attrs.field(factory=pvector)
    arrivals: PVector[tuple[str, str]] = attrs.field(factory=pvector)


def new_broker(
    me: str,
    tree: PrimaryTree,
    config: DFTConfig | None = None,
    policy: DFTPolicy = PAPER_POLICY,
    reachable: bool = True,
) -> BrokerState:
    """A broker that has joined ``tree`` and learned its Δ-neighbourhood [DFT §I]. With
    ``reachable`` its failure detector starts with the whole neighbourhood reachable (the
    failure-free start: the active sessions are the primary links); otherwise with nothing
    established."""
    cfg = config or DFTConfig()
    hood = tree.neighbourhood(me, cfg.big_delta)
    est = hood if reachable else frozenset()
    act = frozenset(tree.neighbours(me)) if reachable else frozenset()
    return BrokerState(
        me=me,
        config=cfg,
        policy=policy,
        tree=tree,
        hood=hood,
        established=est,
        active=act,
        fwd=act,
    )


_FIELDS: Final = tuple(a.name for a in attrs.fields(BrokerState))
_KNOWN: Final = frozenset(_FIELDS)
_set = object.__setattr__


def evolve(state: BrokerState, **changes: Any) -> BrokerState:
    """``attrs.evolve(state, **changes)`` for the forwarding hot path, about twice as fast:
    :class:`BrokerState` has no converters, validators or post-init hook
    (``tests/dft/test_dft6_perf.py`` checks), so its slots copied with ``changes`` written
    over them are the same value. An unknown field is a ``TypeError``, as for attrs."""
    if not _KNOWN.issuperset(changes):
        unknown = ", ".join(sorted(set(changes) - _KNOWN))
        raise TypeError(f"evolve: BrokerState has no field(s) {unknown}")
    new = _copy(state)
    for name, value in changes.items():
        _set(new, name, value)
    return new


def _make_copy() -> Callable[[BrokerState], BrokerState]:
    """A copy of a :class:`BrokerState` with every slot read and written by its name in
    straight-line code (generated once from the fields): no ``getattr`` by string per slot,
    the same value as the loop it replaces (``tests/dft/test_dft6_perf.py``)."""
    lines = ["def _copy(state):", "    new = _new(_cls)"]
    lines += [f"    _set(new, {name!r}, state.{name})" for name in _FIELDS]
    lines.append("    return new")
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": BrokerState, "_set": _set}
    exec("\n".join(lines), scope)  # the field names come from attrs.fields, not input
    made: Callable[[BrokerState], BrokerState] = scope["_copy"]
    return made


_copy: Final = _make_copy()
