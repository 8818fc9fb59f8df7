"""Overlay partitions: pids, the partition table within DPT, partition info, tags [DFT §III-IV].

Theory of operation
-------------------
When an active session of broker X to F breaks because F became unreachable, X is the
*partition detector* of a new partition whose *pnodes* are the primary path from X's
neighbour to F; its id is ``(X, i, pnodes)`` with i X's next counter value [DFT §III, Figure 4:
the pids ``(B2, 1, <B3>)``, ``(B2, 2, <B3, B4>)`` arise as B2's active sessions to B3, then B4,
fail]. The detector adds the pid to its partition table (PT) and tells its established
sessions with partition-information messages; a receiver within DPT of the detector adds it
and passes it on to its own established sessions within DPT [DFT §IV]; farther brokers drop
it. Pids stay in the table until recovery removes them [DFT §VIII-A step (v)]
(:mod:`gapless.impl.dft.healing`).

Tags [DFT §III, §V, §VI]:

* a subscription sent to a broker beyond a known partition is tagged with its pid
  (:func:`subscription_tags`, Figure 5 lines 21-23);
* a detector tags the confirmation of a subscription with each of its partitions that lie
  downstream, i.e. off the subscription's path SPath (:func:`confirmation_tags`, Figure 5
  lines 33-35): their nodes have not confirmed it;
* a publication whose source is on or beyond a known partition is tagged with its pid
  (:func:`publication_tags`, Figure 8 lines 11-12).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from gapless.impl.dft.messages import PartitionInfo, Pid, SubMsg
from gapless.impl.dft.state import BrokerState
from gapless.impl.effects import Effect, Send

__all__ = [
    "confirmation_tags",
    "detect",
    "known_within",
    "on_partition_info",
    "publication_tags",
    "subscription_tags",
]


def _announce(state: BrokerState, pid: Pid, skip: str | None) -> tuple[Effect, ...]:
    dpt = state.policy.dpt(state.config)
    tree = state.tree
    return tuple(
        Send(to=x, msg=PartitionInfo(pid=pid))
        for x in sorted(state.established)
        if x != skip and tree.distance(x, pid.detector) <= dpt
    )


def detect(state: BrokerState, lost: Iterable[str]) -> tuple[BrokerState, tuple[Effect, ...]]:
    """New partitions for the active sessions in ``lost`` whose broker became unreachable
    (not merely shadowed by a nearer broker coming back) [DFT §III, §IV]."""
    effects: list[Effect] = []
    pt, counter = state.pt, state.counter
    for f in sorted(lost):
        if f in state.established:
            continue
        counter += 1
        pid = Pid(detector=state.me, counter=counter, pnodes=state.tree.path(state.me, f)[1:])
        pt = pt.add(pid)
        effects.extend(_announce(state, pid, None))
    if counter == state.counter:
        return state, ()
    return attrs.evolve(state, pt=pt, counter=counter), tuple(effects)


def on_partition_info(
    state: BrokerState, sender: str, msg: PartitionInfo
) -> tuple[BrokerState, tuple[Effect, ...]]:
    """Keep ``msg.pid`` when the detector is within DPT and pass it on [DFT §IV]."""
    pid = msg.pid
    if (
        pid in state.pt
        or pid in state.healed
        or state.tree.distance(state.me, pid.detector) > state.policy.dpt(state.config)
    ):
        return state, ()
    return attrs.evolve(state, pt=state.pt.add(pid)), _announce(state, pid, sender)


def known_within(state: BrokerState, x: str) -> tuple[Effect, ...]:
    """Partition information for ``x``, a broker this broker just activated a session to:
    every pid of its table whose detector is within DPT of ``x`` [DFT §IV]. Our addition:
    a broker that restarted (its table is soft state) or joined after a partition formed
    learns the pids it must tag with from its sync-points, before their transfers
    [DFT §VIII-A]; else its table lacks them and, DPT brokers all restarted on a
    publication's path, an untagged publication from a partition reaches a subscription
    that excluded it (``tests/dft/test_dft4_tables.py``)."""
    if not state.policy.relearn_partitions or not state.pt:
        return ()
    dpt = state.policy.dpt(state.config)
    tree = state.tree
    return tuple(
        Send(to=x, msg=PartitionInfo(pid=p))
        for p in sorted(state.pt, key=lambda p: (p.detector, p.counter))
        if p.detector in tree and tree.distance(x, p.detector) <= dpt
    )


def subscription_tags(state: BrokerState, sub: SubMsg, to: str) -> frozenset[Pid]:
    """``sub``'s tags when sent to ``to``: plus every known pid ``to`` is beyond [Figure 5
    lines 21-23] — when this hop crosses the partition, i.e. this broker is not itself on
    or beyond it. A subscription coming *from* beyond a partition towards its detector is
    not tagged: at a pnode the tag would make it an island copy (CheckSubTags, accepted and
    never confirmed), the pnode's sender would wait for a confirmation that never comes,
    and the pnode's acceptance would be invisible to the invariants (the random search of
    dft4 found exactly that, δ = 2: ``tests/dft/test_dft4_replays.py``)."""
    tree, me = state.tree, state.me
    extra = frozenset(
        p
        for p in state.pt
        if tree.beyond(p.detector, p.pnodes, to) and not tree.on_or_beyond(p.detector, p.pnodes, me)
    )
    return sub.tags | extra if extra else sub.tags


def confirmation_tags(state: BrokerState, sub: SubMsg) -> frozenset[Pid]:
    """The pids this broker detected whose nodes lie off ``sub``'s path: they did not
    confirm it [Figure 5 lines 33-35, DFT §V-C]."""
    if not state.policy.tag_confirmations:
        return frozenset()
    tree, me = state.tree, state.me
    spath = set(tree.path(sub.source, me)[:-1])
    return frozenset(p for p in state.pt if p.detector == me and not spath.intersection(p.pnodes))


_NO_TAGS: frozenset[Pid] = frozenset()
_TAGS_MAX = 65536
_tags_memo: dict[tuple[int, str], tuple[object, object, frozenset[Pid]]] = {}


def publication_tags(state: BrokerState, source: str) -> frozenset[Pid]:
    """The known pids ``source`` is on or beyond [Figure 8 lines 11-12]. Asked for every
    publication a broker processes: an empty table answers at once, and the answer is
    memoised by the identity of the (immutable) table and tree — invisible, the same
    answers (iterating a ``PSet`` walks its hash buckets in Python)."""
    pt, tree = state.pt, state.tree
    if not pt:
        return _NO_TAGS
    hit = _tags_memo.get((id(pt), source))
    if hit is not None and hit[0] is pt and hit[1] is tree:
        return hit[2]
    tags = frozenset(p for p in pt if tree.on_or_beyond(p.detector, p.pnodes, source))
    if len(_tags_memo) >= _TAGS_MAX:
        _tags_memo.clear()
    _tags_memo[(id(pt), source)] = (pt, tree, tags)
    return tags
