"""Publication forwarding, as Figure 8 [DFT §VI], with duplicate detection [DFT §VII].

Theory of operation
-------------------
Forwarding has five steps: queueing, barrier checking, matching, routing and cleanup
[DFT §VI]. At broker B, :func:`on_pub` (OnPubReceive, lines 1-18):

* *queueing* — a duplicate (by sequence vector, :mod:`gapless.impl.dft.seqvec`) whose
  processing completed is confirmed to its sender at once; one still queued gains the sender
  as another sender (lines 2-8) — and, if the entry waits for a target, the copy's own path
  (it may allow a legitimate hop the first copy's did not; our addition). A new
  publication is appended to B's FIFO queue (line 10) and stamped.
* *barrier checking* — p is tagged with every pid in B's PT whose pnodes its source is on or
  beyond (lines 11-12).
* *matching* — Match_p(B): the accepted subscriptions p matches (line 13). For a local one
  (its source is B), p is delivered only if p's tags and the subscription's confirmation tags
  are disjoint (CheckLocalSubs, lines 32-38); otherwise it is excluded from that subscriber's
  reliable flow (never delivered, never waited for). A subscription whose confirmation from
  the sender carried a stamp at or above the sender's stamp of p (the sender processed p
  before accepting it, and p reached B late: released after a recovery, or held here), or
  that p's ``not_for`` names, is not matched [DFT §VI (ii); ``spec/dft.md``, "Releases after
  recovery"].
* *routing* — for each other matching subscription, the active session on the primary path
  towards its source joins Out_p(B), and p is sent there (lines 15-18, SendPub lines 28-31:
  the sequence vector is extended first). With no active session on that path (a barrier),
  or only one that would make p's propagation illegitimate [DFT §VII], the neighbour towards
  the source stays in Out_p, and p waits for it.
* *recovery* — publications use ``state.fwd``: the active sessions minus those whose partial
  recovery is not over (Figure 8's OnSessionActivated runs "upon activation of a session to X
  *and after recovery*"); a restarted broker holds what arrives until its full recovery is
  over [DFT §VIII] (:mod:`gapless.impl.dft.recovery`).
* *cleanup* — :func:`on_pub_confirm` (lines 19-27): each confirmation removes its sender
  from Out_p; with Out_p empty p leaves the queue and B confirms to every sender.

:func:`reroute` (OnSessionActivated, lines 39-48) runs when B's active sessions change: every
hop of Out_p that is no longer (or not yet) active hands its subscription sources to the
active session now on the path to each (sending p there); a source with no such session keeps
p waiting on the old hop — in particular a broker with local matching subscribers is never
removed from Out_p (lines 46-48: "crucial to prevent publication loss").

Per-source FIFO per target (our addition, ``spec/dft.md``): while an older publication of the
same source waits for a target, a newer one waits with it instead of overtaking it on
another session — beyond δ failures a waiting publication and a newer one can otherwise
take different paths, and the subscriber would see a hole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from pyrsistent import PMap, PVector, pmap, pvector

from gapless.impl.dft.messages import PubConfirm, PubMsg
from gapless.impl.dft.partitions import publication_tags
from gapless.impl.dft.routing import legitimate, route
from gapless.impl.dft.seqvec import epoch, extend, is_duplicate, low_water, observe
from gapless.impl.dft.state import BrokerState, QueuedPub, evolve
from gapless.impl.effects import Deliver, Effect, Send
from gapless.impl.filters import parse_filter
from gapless.impl.inputs import Publish

__all__ = ["on_pub", "on_pub_confirm", "on_publish", "replay", "reroute", "resend"]

Step = tuple[BrokerState, tuple[Effect, ...]]
Hops = PMap[str, frozenset[str]]


def _outgoing(state: BrokerState, q: QueuedPub, to: str, low: int) -> Send:
    """SendPub (lines 28-31): extend the sequence vector (``low``: the low-water mark,
    :func:`~gapless.impl.dft.seqvec.low_water`), then send."""
    tree = state.tree
    vec = extend(
        q.msg.seqvec,
        state.me,
        q.stamp,
        low,
        lambda y: tree.distance(y, to),
        state.policy.dseq(state.config),
    )
    m = q.msg  # built directly: attrs.evolve's per-call field lookup is the hot path's cost
    msg = PubMsg(
        source=m.source,
        number=m.number,
        attributes=m.attributes,
        trail=(*m.trail, state.me),
        seqvec=vec,
        tags=m.tags,
        not_for=m.not_for,
    )
    return Send(to=to, msg=msg)


def on_publish(state: BrokerState, inp: Publish) -> Step:
    """A local publisher's publication: numbered, then processed like an arrival."""
    number = state.published + 1
    msg = PubMsg(source=state.me, number=number, attributes=inp.attributes)
    state = evolve(state, published=number)
    if not state.restored:
        return evolve(state, held=state.held.append((None, msg))), ()
    return _process(state, None, msg)


def on_pub(state: BrokerState, sender: str, msg: PubMsg) -> Step:
    """OnPubReceive (lines 1-18). A restarted broker whose full recovery is not over holds
    the publication until it is (its SRT is still being rebuilt) [DFT §VIII-B]."""
    if not state.restored:
        return evolve(state, held=state.held.append((sender, msg))), ()
    if is_duplicate(state.seen, msg.seqvec):
        i = _find(state.queue, msg.key)
        if i is not None:
            return _another_copy(state, i, state.queue[i], sender, msg)
        return state, (Send(to=sender, msg=PubConfirm(key=msg.key)),)
    return _process(state, sender, msg, seen=observe(state.seen, msg.seqvec))


def replay(state: BrokerState, sender: str | None, msg: PubMsg) -> Step:
    """A held publication, once a restarted broker is restored [DFT §VIII-B]: a local one
    (``sender`` None) is processed, a received one handled as on arrival."""
    if sender is None:
        return _process(state, None, msg)
    return on_pub(state, sender, msg)


def resend(state: BrokerState, q: QueuedPub) -> Step:
    """One of this broker's own publications that was unconfirmed when it crashed (kept on
    stable storage with its stamp), processed again once it is restored: brokers that had
    a copy recognise the stamp as a duplicate [DFT §VII]."""
    return _process(state, None, q.msg, stamp=q.stamp)


def _another_copy(state: BrokerState, i: int, q: QueuedPub, sender: str, msg: PubMsg) -> Step:
    """A duplicate of queued entry ``i``: its sender is another sender (line 8). If ``q``
    waits for some target, the new copy's path may allow a legitimate hop the first copy's
    did not: adopt its trail (and its stamps) and route the waiting targets again."""
    q = attrs.evolve(q, senders=q.senders | {sender})
    waiting = [h for h in q.hops if h not in state.fwd]
    if not waiting or msg.trail == q.msg.trail:
        return evolve(state, queue=_replaced(state.queue, i, q)), ()
    stamps = {y: (n, low) for y, n, low in (*q.msg.seqvec, *msg.seqvec)}
    near = sorted(stamps, key=lambda y: -state.tree.distance(y, state.me))
    vec = tuple((y, *stamps[y]) for y in near)
    q = attrs.evolve(q, msg=attrs.evolve(q.msg, trail=msg.trail, seqvec=vec))
    targets = {z for h in waiting for z in q.hops[h]}
    base = pmap({h: zs for h, zs in q.hops.items() if h in state.fwd})
    q, sends = _assign(state, q, targets, base, list(state.queue)[:i])
    return evolve(state, queue=_replaced(state.queue, i, q)), tuple(sends)


def _local_deliveries(state: BrokerState, msg: PubMsg, sid: str) -> Step:
    """CheckLocalSubs (lines 32-38) for one matching local subscription. A publication
    not newer than one of the same source already excluded for ``sid`` is excluded too
    (our addition): after a partition recovers, an old publication that waited elsewhere
    must not resume a flow behind a newer one that was excluded."""
    who = state.local.get(sid)
    if who is None:
        return state, ()
    key = (sid, msg.source)
    if msg.number <= state.excluded.get(key, 0):
        return state, ()
    if state.policy.check_tags_on_delivery and state.srt[sid].conf_tags & msg.tags:
        return evolve(state, excluded=state.excluded.set(key, msg.number)), ()
    sub, conn = who
    return state, (
        Deliver(
            subscriber=sub,
            pubend=msg.source,
            tick=msg.number,
            payload=msg.attributes,
            connection=conn,
        ),
    )


def _process(
    state: BrokerState,
    sender: str | None,
    msg: PubMsg,
    stamp: int | None = None,
    seen: PMap[tuple[str, int], Any] | None = None,
) -> Step:
    """Lines 9-18: queue, tag, match, deliver locally, route; stamped with the next stamp,
    or ``stamp`` for a publication of this broker's re-sent after a restart; ``seen``, the
    sequence vectors after this copy (OnPubReceive's), is written with the rest of the
    step. Matching reads the SRT through its index (:func:`_srt_index`): each distinct
    filter is evaluated once, and the sources towards which p travels are read per
    neighbour, not per entry."""
    me = state.me
    tags = publication_tags(state, msg.source)
    if not tags <= msg.tags:
        msg = attrs.evolve(msg, tags=msg.tags | tags)
    effects: list[Effect] = []
    targets: set[str] = set()
    back = None if msg.source == me else state.tree.next_hop(me, msg.source)
    unowed = _unowed(state, sender, msg)
    if unowed != msg.not_for:
        msg = attrs.evolve(msg, not_for=unowed)
    hit_locals: list[str] = []
    groups: dict[str, frozenset[str]] | None = None  # the targets per neighbour towards them
    if unowed:
        hit_locals = _match_except(state, msg, unowed, back, targets)
    else:
        groups = {}
        for text, local, by_hop in _srt_index(state):
            if not parse_filter(text).matches(msg.attributes):
                continue
            hit_locals += local
            for hop, sources in by_hop:
                if hop != back:  # toward [DFT §VI]
                    got = groups.get(hop)
                    groups[hop] = sources if got is None else got | sources
    for sid in sorted(hit_locals):
        state, local_effects = _local_deliveries(state, msg, sid)
        effects += local_effects
    changes: dict[str, Any] = {} if seen is None else {"seen": seen}
    if stamp is None:
        stamp = changes["stamp"] = state.stamp + 1
    senders = frozenset() if sender is None else frozenset({sender})
    q = QueuedPub(msg=msg, stamp=stamp, senders=senders, hops=pmap())
    q, sends = _assign(state, q, targets, pmap(), state.queue, changes.get("stamp"), groups)
    effects += sends
    if not q.hops:
        if changes:
            state = evolve(state, **changes)
        return state, (*effects, *_confirm(q))
    return evolve(state, queue=_appended(state.queue, q), **changes), tuple(effects)


def _unowed(state: BrokerState, sender: str | None, msg: PubMsg) -> frozenset[str]:
    """The subscriptions ``msg`` must not be matched for here (spec/dft.md "Releases after
    recovery"): those named upstream (``msg.not_for``), and those whose confirmation from
    ``sender`` carried a stamp at or above ``sender``'s stamp of ``msg`` in the same epoch
    — ``sender`` processed ``msg`` before it accepted them, and sent it only later (it
    waited there, or here until this broker was restored), so neither ``sender`` nor,
    before it, the source had accepted them when forwarding it: the safety condition
    fails [DFT §VI (ii)]. A copy sent at once never needs this: on the session it came
    by it precedes ``sender``'s confirmation, so this broker had not accepted them yet
    [DFT §II, FIFO sessions]."""
    if sender is None or not state.policy.match_after_acceptance:
        return msg.not_for
    n = next((stamp for y, stamp, _ in msg.seqvec if y == sender), None)
    newest = _newest(state).get(sender)
    if n is None or newest is None or n > newest:
        return msg.not_for
    late = [
        sid
        for sid, entry in state.srt.items()
        if (a := entry.after.get(sender)) is not None and n <= a and epoch(a) == epoch(n)
    ]
    return msg.not_for.union(late) if late else msg.not_for


_newest_memo: dict[int, tuple[object, dict[str, int]]] = {}


def _newest(state: BrokerState) -> dict[str, int]:
    """Per confirming broker, the highest ``stamp`` its confirmations of the SRT's entries
    carried, memoised by the (immutable) SRT's identity: a publication stamped above it
    by that broker is owed every match (the common case, one lookup)."""
    srt = state.srt
    hit = _newest_memo.get(id(srt))
    if hit is not None and hit[0] is srt:
        return hit[1]
    newest: dict[str, int] = {}
    for entry in srt.values():
        for x, a in entry.after.items():
            if a > newest.get(x, -1):
                newest[x] = a
    if len(_newest_memo) >= _INDEX_MAX:
        _newest_memo.clear()
    _newest_memo[id(srt)] = (srt, newest)
    return newest


def _match_except(
    state: BrokerState, msg: PubMsg, unowed: frozenset[str], back: str | None, targets: set[str]
) -> list[str]:
    """Matching (line 13) entry by entry, leaving out ``unowed``: the local matching
    subscriptions' ids are returned, the other sources added to ``targets``."""
    me, tree = state.me, state.tree
    local: list[str] = []
    for sid, entry in state.srt.items():
        sub = entry.sub
        if sid in unowed or not parse_filter(sub.filter).matches(msg.attributes):
            continue
        if sub.source == me:
            local.append(sid)
        elif tree.next_hop(me, sub.source) != back:
            targets.add(sub.source)
    return local


#: Per filter: its text, the local subscriptions' ids, and per neighbour of the broker the
#: sources of the other subscriptions whose primary path leaves through that neighbour.
SrtIndex = tuple[tuple[str, tuple[str, ...], tuple[tuple[str, frozenset[str]], ...]], ...]
_INDEX_MAX = 4096
_index_memo: dict[tuple[int, str], tuple[object, object, SrtIndex]] = {}


def _srt_index(state: BrokerState) -> SrtIndex:
    """The SRT grouped by filter, then by the neighbour towards each subscription's source
    (see :data:`SrtIndex`). A publication then costs one evaluation per distinct filter and
    one set union per neighbour, not a walk of every entry [DFT §VI lines 13-16]. The SRT and
    the tree are immutable values, so the index is memoised by their identity: invisible
    (same answers), rebuilt only when the SRT changes."""
    srt, tree, me = state.srt, state.tree, state.me
    hit = _index_memo.get((id(srt), me))
    if hit is not None and hit[0] is srt and hit[1] is tree:
        return hit[2]
    groups: dict[str, tuple[list[str], dict[str, set[str]]]] = {}
    for sid, entry in srt.items():
        sub = entry.sub
        local, by_hop = groups.setdefault(sub.filter, ([], {}))
        if sub.source == me:
            local.append(sid)
        else:
            by_hop.setdefault(tree.next_hop(me, sub.source), set()).add(sub.source)
    index: SrtIndex = tuple(
        (text, tuple(sorted(local)), tuple((h, frozenset(zs)) for h, zs in sorted(by_hop.items())))
        for text, (local, by_hop) in sorted(groups.items())
    )
    if len(_index_memo) >= _INDEX_MAX:
        _index_memo.clear()
    _index_memo[(id(srt), me)] = (srt, tree, index)
    return index


def _held(state: BrokerState, older: Iterable[QueuedPub], source: str) -> dict[str, str]:
    """Per target, the hop an older queued publication of ``source`` waits on for it (a hop
    with no active session; the oldest such publication's, its first such hop): a newer one
    must not overtake it."""
    held: dict[str, str] = {}
    fwd = state.fwd
    for o in older:
        if o.msg.source == source:
            for h, zs in _hop_items(o):
                if h not in fwd:
                    # only targets no older entry holds yet: one C-level difference, not a
                    # Python walk of every waiting entry's targets (dft10: at a barrier each
                    # entry waits for the whole subtree behind it)
                    for z in zs.difference(held) if held else zs:
                        held[z] = h
    return held


_ITEMS_MAX = 1 << 18
_items_memo: dict[int, tuple[QueuedPub, tuple[tuple[str, frozenset[str]], ...]]] = {}


def _hop_items(q: QueuedPub) -> tuple[tuple[str, frozenset[str]], ...]:
    """``q.hops.items()`` in its iteration order, memoised by the (immutable) entry's
    identity: :func:`_held` reads every older entry of a source for every publication of
    it, and a long-waiting entry is read thousands of times (iterating a ``PMap`` walks its
    hash buckets in Python)."""
    hit = _items_memo.get(id(q))
    if hit is not None and hit[0] is q:
        return hit[1]
    items = tuple(q.hops.items())
    if len(_items_memo) >= _ITEMS_MAX:
        _items_memo.clear()
    _items_memo[id(q)] = (q, items)
    return items


def _assign(
    state: BrokerState,
    q: QueuedPub,
    targets: Iterable[str],
    base: Hops,
    older: Iterable[QueuedPub],
    counter: int | None = None,
    groups: Mapping[str, frozenset[str]] | None = None,
) -> tuple[QueuedPub, list[Effect]]:
    """Out_p for ``targets`` (subscription sources), on top of ``base`` (hops ``q`` was
    already sent to over a live session): each source gets the active session towards it
    (``q`` is sent there unless it already was), else it waits on its old hop in ``q``,
    else on the neighbour towards it. While an ``older`` publication of the same source
    waits for a target, ``q`` waits with it (per-source FIFO per target). When the
    neighbour towards a source is itself a usable session, that is the route
    (:func:`~gapless.impl.dft.routing.route`), legitimate or not alike for every source
    behind it: decided once per neighbour. ``counter``: the broker's stamp counter when the
    caller has drawn ``q``'s stamp and not yet written it to ``state``. ``groups``: the
    targets already grouped by the neighbour towards each (``targets`` is then ignored).

    The sources are taken per neighbour, not one by one (dft10: at 500 brokers a broker
    routes each publication to ~500 sources): every source behind a usable, legitimate
    neighbour that no older publication holds goes there as a group (set operations); the
    others are routed one by one. The result is that of routing the sources one by one in
    sorted order: a hop is added to ``hops`` and sent to (if it is usable and not in
    ``base``) at the smallest source routed to it; a hop first reached by a source that
    waits (:func:`_waiting_hop`) is not sent to."""
    tree, me, fwd = state.tree, state.me, state.fwd
    trail, delta = q.msg.trail, state.config.delta
    if groups is None:
        by_first: dict[str, set[str]] = {}
        for z in targets:
            by_first.setdefault(tree.next_hop(me, z), set()).add(z)
        groups = {h: frozenset(zs) for h, zs in by_first.items()}
    held = _held(state, older, q.msg.source)
    #: per hop: the smallest source routed to it, whether that source's route sends, and
    #: every source routed to it
    first_at: dict[str, tuple[str, bool]] = {}
    members: dict[str, list[Iterable[str]]] = {}

    def reach(r: str, z: str, sends: bool, zs: Iterable[str]) -> None:
        got = first_at.get(r)
        if got is None or z < got[0]:
            first_at[r] = (z, sends)
        members.setdefault(r, []).append(zs)

    for first, zs in groups.items():
        one_by_one: Iterable[str] = zs
        if first in fwd and legitimate(tree, trail, me, first, delta):
            fast = zs.difference(held) if held else zs
            if fast:
                reach(first, min(fast), True, fast)
            one_by_one = zs.intersection(held) if held else ()
        for z in one_by_one:
            r = held.get(z)
            if r is None and first not in fwd:  # usable but illegitimate: r stays None
                r = route(tree, me, fwd, z, trail, delta)
            if r is None:
                r = _waiting_hop(state, q.hops, z)
                if r is not None:
                    reach(r, z, False, (z,))
            else:
                reach(r, z, True, (z,))
    hops: dict[str, frozenset[str]] = dict(base)
    sends: list[Effect] = []
    low: int | None = None  # the low-water mark of q's copies: the same for every hop
    for r, (_, sendable) in sorted(first_at.items(), key=lambda kv: kv[1][0]):
        if sendable and r in fwd and r not in hops:
            if low is None:
                current = state.stamp if counter is None else counter
                low = low_water(q.stamp, _columns(state.queue)[1], current)
            sends.append(_outgoing(state, q, r, low))
        hops[r] = frozenset().union(hops.get(r, ()), *members[r])
    return QueuedPub(msg=q.msg, stamp=q.stamp, senders=q.senders, hops=pmap(hops)), sends


def _waiting_hop(state: BrokerState, old: Hops, z: str) -> str | None:
    """Where p waits for unreachable source ``z``: its old hop, else the neighbour towards
    it. The ``drop-local-target`` bug gives up on a hop that is ``z`` itself, the broker of
    the matching local subscriber [Figure 8 lines 46-48]."""
    hop = next((h for h, zs in old.items() if z in zs), None)
    if hop is None:
        hop = state.tree.next_hop(state.me, z)
    if hop == z and not state.policy.keep_local_targets:
        return None
    return hop


def _confirm(q: QueuedPub) -> tuple[Effect, ...]:
    """CleanupAndConfirmPub (lines 24-27), the confirmations."""
    return tuple(Send(to=x, msg=PubConfirm(key=q.msg.key)) for x in sorted(q.senders))


def _find(queue: PVector[QueuedPub], key: tuple[str, int]) -> int | None:
    """The index of the first entry of publication ``key`` in ``queue``, if any: the queue
    of a broker before a barrier grows with every publication that waits there, and this
    runs for every confirmation, so the keys are searched as one tuple
    (:func:`_columns`)."""
    probe: Any = key  # from the network: a malformed key matches nothing, never raises
    try:
        return _columns(queue)[0].index(probe)
    except ValueError:
        return None


#: Per queue (by identity, checked): its entries' keys and stamps, in queue order.
_QUEUE_MAX = 8192
_queue_memo: dict[int, tuple[PVector[QueuedPub], tuple[Any, ...], tuple[int, ...]]] = {}


def _columns(queue: PVector[QueuedPub]) -> tuple[tuple[Any, ...], tuple[int, ...]]:
    """``queue``'s keys and stamps, memoised by the (immutable) queue's identity and
    carried over (:func:`_appended`, :func:`_replaced`, :func:`_deleted`) to the queue a
    step derives from it: invisible (the same answers), and a search of a long queue is a
    C-level ``tuple.index`` or ``min``."""
    hit = _queue_memo.get(id(queue))
    if hit is not None and hit[0] is queue:
        return hit[1], hit[2]
    keys = tuple(q.msg.key for q in queue)
    stamps = tuple(q.stamp for q in queue)
    _remember(queue, keys, stamps)
    return keys, stamps


def _remember(queue: PVector[QueuedPub], keys: tuple[Any, ...], stamps: tuple[int, ...]) -> None:
    if len(_queue_memo) >= _QUEUE_MAX:
        _queue_memo.clear()
    _queue_memo[id(queue)] = (queue, keys, stamps)


def _carried(old: PVector[QueuedPub], new: PVector[QueuedPub], keys: Any, stamps: Any) -> None:
    """``new``, derived from ``old`` by one step, gets ``keys`` and ``stamps`` as its
    columns; ``old``'s are forgotten (superseded)."""
    _queue_memo.pop(id(old), None)
    _remember(new, keys, stamps)


def _appended(old: PVector[QueuedPub], q: QueuedPub) -> PVector[QueuedPub]:
    """``old`` with ``q`` appended, its columns carried over (:func:`_columns`)."""
    keys, stamps = _columns(old)
    new = old.append(q)
    _carried(old, new, (*keys, q.msg.key), (*stamps, q.stamp))
    return new


def _replaced(old: PVector[QueuedPub], i: int, q: QueuedPub) -> PVector[QueuedPub]:
    """``old`` with entry ``i`` replaced by ``q`` (the same publication and stamp)."""
    keys, stamps = _columns(old)
    new = old.set(i, q)
    _carried(old, new, keys, stamps)
    return new


def _deleted(old: PVector[QueuedPub], i: int) -> PVector[QueuedPub]:
    """``old`` without entry ``i``."""
    keys, stamps = _columns(old)
    new = old.delete(i)
    _carried(old, new, keys[:i] + keys[i + 1 :], stamps[:i] + stamps[i + 1 :])
    return new


def on_pub_confirm(state: BrokerState, sender: str, msg: PubConfirm) -> Step:
    """OnPubConfirmationReceive (lines 19-23)."""
    i = _find(state.queue, msg.key)
    if i is None:
        return state, ()
    q = state.queue[i]
    if sender not in q.hops:
        return state, ()
    q = QueuedPub(msg=q.msg, stamp=q.stamp, senders=q.senders, hops=q.hops.remove(sender))
    if q.hops:
        return evolve(state, queue=_replaced(state.queue, i, q)), ()
    return evolve(state, queue=_deleted(state.queue, i)), _confirm(q)


def reroute(state: BrokerState, before: frozenset[str]) -> Step:
    """OnSessionActivated (lines 39-48) for every unconfirmed publication, in queue order;
    ``before`` is the set of sessions publications could use (``fwd``) before the change.
    Hops still usable keep their copy; the sources of every other hop are routed afresh."""
    live = before & state.fwd
    effects: list[Effect] = []
    kept: list[QueuedPub] = []
    changed = False
    for q in state.queue:
        stale = [h for h in q.hops if h not in live]
        if not stale:
            kept.append(q)
            continue
        changed = True
        targets = {z for h in stale for z in q.hops[h]}
        base = pmap({h: zs for h, zs in q.hops.items() if h in live})
        q2, sends = _assign(state, q, targets, base, kept)
        effects += sends
        if q2.hops:
            kept.append(q2)
        else:
            effects += _confirm(q2)
    if not changed:
        return state, ()
    return evolve(state, queue=pvector(kept)), tuple(effects)
