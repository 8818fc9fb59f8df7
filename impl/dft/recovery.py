"""Recovery: partial recovery at every session activation, full recovery of a restarted
broker [DFT §VIII].

Theory of operation
-------------------
*Partial recovery* [DFT §VIII-A] starts when broker S activates a session to R: S is the
*sync-point*, R the *recovering broker*. The steps, as built here:

(i)   S sends R :class:`~gapless.impl.dft.messages.SyncStart` (:func:`start`) and, until the
      recovery is over, keeps R out of ``fwd``, the sessions publications may use: Figure 8's
      OnSessionActivated runs "upon activation of a session to X *and after recovery*". So
      publications keep their old routes (bypassing R) meanwhile.
(ii)  R answers with :class:`~gapless.impl.dft.messages.SyncSummary`, the ids in its SRT
      (:func:`on_sync_start`).
(iii) S sends, in one :class:`~gapless.impl.dft.messages.SyncTransfer`, every subscription it
      accepted that R lacks: those for which R is downstream of S by a legitimate hop, each
      as SendSubTo would send it (Figure 5, tagged with the pids R is beyond); and those
      whose source lies beyond R — S routes their publications through R, so R must know
      them even when its own neighbour towards their source is unreachable (our addition:
      the paper's upstream propagation in step (iv) covers the other direction)
      (:func:`on_sync_summary`).
(iv)  R processes each downstream one like an arrived subscription from S (Figure 5:
      propagated to its own downstream active sessions, accepted when they confirmed),
      accepts each upstream one at once (it lies on that subscription's path between its
      source and S, which accepted it), and confirms each to S (:func:`on_sync_transfer`).
      When S holds every confirmation it checks for subscriptions it accepted meanwhile
      (sends them too), then ends the recovery: R joins ``fwd`` and S's queued
      publications are rerouted (:func:`on_sub_confirm`).
(iv, v) The pids S detected that hold R have recovered: partition-recovery notifiers
      replace them in confirmation tags, and they leave the partition tables within DPT
      (:mod:`gapless.impl.dft.healing`).

*Full recovery* [DFT §VIII-B]. A crash keeps only stable storage: the tree and the
Δ-neighbourhood, the incarnation number and the count of local publications
(:func:`gapless.impl.dft.broker.crash`). The restarted broker's stamps continue above every
stamp of its earlier lives (``incarnation << 32``), so brokers that remember its old stamps
do not take its new publications for duplicates [DFT §VII]. As its neighbours come back,
each activates a session to it and acts as its sync-point; so does every broker the restarted
broker activates a session to (its SyncStart says ``recovering``: the receiver starts a sync
of its own). The restarted broker *holds* every publication that arrives, and every local
publication, until its recovery is over — every active session's sync-point has sent its
transfer and no subscription is pending — then processes them in order
(:func:`check_restored`): publications meet a complete SRT, never a half-built one. First it
re-sends its own publications that were unconfirmed at the crash, with their old stamps (our
addition: a source broker keeps them on stable storage; a publication lost in flight when
its source broker crashed would otherwise leave a hole in every flow from that source).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from pyrsistent import pmap, pvector

from gapless.impl.dft import arrivals, healing, partitions, publications, subscriptions
from gapless.impl.dft.messages import SubConfirm, SubMsg, SyncStart, SyncSummary, SyncTransfer
from gapless.impl.dft.routing import active_sessions
from gapless.impl.dft.state import Accepted, BrokerState, SyncState
from gapless.impl.effects import Effect, Send

__all__ = [
    "check_restored",
    "on_sub_confirm",
    "on_sync_start",
    "on_sync_summary",
    "on_sync_transfer",
    "start",
    "with_fwd",
]

Step = tuple[BrokerState, tuple[Effect, ...]]


def with_fwd(state: BrokerState) -> BrokerState:
    """``state`` with ``fwd`` recomputed: the active sessions over the established ones
    minus those still recovering (the same object when unchanged)."""
    if state.syncing:
        est = state.established - frozenset(state.syncing.keys())
        fwd = active_sessions(state.tree, state.me, est)
    else:
        fwd = state.active
    return state if fwd == state.fwd else attrs.evolve(state, fwd=fwd)


def start(state: BrokerState, gained: Iterable[str]) -> Step:
    """Step (i) for every newly activated session; recoveries towards brokers no longer
    active are dropped."""
    syncing = state.syncing
    for x in [x for x in syncing if x not in state.active]:
        syncing = syncing.remove(x)
    effects: list[Effect] = []
    if state.policy.sync_on_activation:
        for x in sorted(gained):
            if x not in syncing:
                syncing = syncing.set(x, SyncState())
                effects += arrivals.tell(state, x)
                effects += partitions.known_within(state, x)
                effects.append(Send(to=x, msg=SyncStart(recovering=not state.restored)))
    if syncing is state.syncing:
        return state, ()
    return attrs.evolve(state, syncing=syncing), tuple(effects)


def on_sync_start(state: BrokerState, sender: str, msg: SyncStart) -> Step:
    """Step (ii): answer with the SRT's ids and their confirmation tags — but for island
    and upstream copies: they were accepted without being propagated [DFT §V-B], so the
    sync-point transfers the subscription again and it is processed in full (our
    addition: otherwise a partition's recovery could lift a tag with the region behind
    the copy never told). A restarted
    sender asks for a sync-point: start one towards it too, if none is under way
    [DFT §VIII-B]."""
    if sender not in state.established:
        return state, ()
    full = sorted(sid for sid, a in state.srt.items() if a.full)
    tags = tuple((sid, state.srt[sid].conf_tags) for sid in full)
    summary = SyncSummary(sids=frozenset(full), tags=tags)
    effects: list[Effect] = [Send(to=sender, msg=summary)]
    if msg.recovering and sender not in state.syncing and state.policy.sync_on_activation:
        state = attrs.evolve(state, syncing=state.syncing.set(sender, SyncState()))
        state = with_fwd(state)
        effects += arrivals.tell(state, sender)
        effects += partitions.known_within(state, sender)
        effects.append(Send(to=sender, msg=SyncStart(recovering=not state.restored)))
    return state, tuple(effects)


def _missing(state: BrokerState, x: str, known: frozenset[str]) -> SyncTransfer:
    """Step (iii): the accepted subscriptions ``x`` lacks. Those ``x`` is downstream of go
    as SendSubTo sends them; those whose source lies beyond ``x`` (this broker routes their
    publications through it) go upstream, their trail cut to the brokers before ``x``. An
    island copy (accepted off its primary path, [DFT §V-B]) is not passed on: its trail is
    no primary path, and the island's other nodes had their own copies."""
    down: list[SubMsg] = []
    up: list[SubMsg] = []
    tree, me = state.tree, state.me
    for sid in sorted(state.srt):
        sub = state.srt[sid].sub
        if sid in known or sub.island or sub.source == x:
            continue
        if subscriptions.onward(state, sub, x):
            sent = subscriptions.send_sub(state, sub, x)
            assert isinstance(sent.msg, SubMsg)
            down.append(sent.msg)
        elif x in tree.path(me, sub.source):
            before = tree.path(sub.source, x)[:-1]
            up.append(attrs.evolve(sub, trail=tuple(t for t in sub.trail if t in before)))
    return SyncTransfer(subs=tuple(down), upstream=tuple(up))


def _sids(t: SyncTransfer) -> frozenset[str]:
    return frozenset(m.sid for m in (*t.subs, *t.upstream))


def on_sync_summary(state: BrokerState, sender: str, msg: SyncSummary) -> Step:
    """Step (iii): transfer what the recovering broker lacks."""
    s = state.syncing.get(sender)
    if s is None or s.summarised:
        return state, ()
    transfer = _missing(state, sender, msg.sids)
    sent = _sids(transfer)
    s = SyncState(known=msg.sids | sent, waiting=sent, summarised=True, tags=pmap(msg.tags))
    state = attrs.evolve(state, syncing=state.syncing.set(sender, s))
    effects: tuple[Effect, ...] = (Send(to=sender, msg=transfer),)
    if sent:
        return state, effects
    state, more = _complete(state, sender)
    return state, (*effects, *more)


def on_sync_transfer(state: BrokerState, sender: str, msg: SyncTransfer) -> Step:
    """Step (iv) at the recovering broker: each subscription as if it arrived from the
    sync-point (Figure 5), which is then done with this broker."""
    effects: list[Effect] = []
    for sub in msg.subs:
        state, more = subscriptions.on_sub(state, sender, sub)
        effects += more
    for sub in msg.upstream:
        if sub.sid not in state.srt and sub.sid not in state.pending:
            state = attrs.evolve(
                state,
                srt=state.srt.set(sub.sid, Accepted(sub=sub, upstream=True, stamp=state.stamp)),
            )
        stamp = state.srt[sub.sid].stamp if sub.sid in state.srt else None
        effects.append(Send(to=sender, msg=SubConfirm(sid=sub.sid, stamp=stamp)))
    if not state.restored and sender not in state.synced_from:
        state = attrs.evolve(state, synced_from=state.synced_from | {sender})
    state, more = check_restored(state)
    return state, (*effects, *more)


def on_sub_confirm(state: BrokerState, sender: str, msg: SubConfirm) -> Step:
    """A confirmation: of a pending subscription (Figure 5 l. 12-17), or of one this broker
    transferred as ``sender``'s sync-point (step iv). A subscription can be both — pending
    here (a sync's transfer from ``sender`` being propagated) and awaited from ``sender``
    by this broker's own sync of it: the confirmation is the pending one's only when
    ``sender`` is in its Out_s (else the sync waited for it forever: found with the
    stateful machine, ``tests/dft/test_dft4_replays.py``)."""
    pending = state.pending.get(msg.sid)
    if pending is not None and sender in pending.outs:
        state, effects = subscriptions.on_sub_confirm(state, sender, msg)
        state, more = check_restored(state)
        return state, (*effects, *more)
    s = state.syncing.get(sender)
    if s is None or msg.sid not in s.waiting:
        return state, ()
    s = attrs.evolve(s, waiting=s.waiting - {msg.sid}, tags=s.tags.set(msg.sid, msg.tags))
    state = attrs.evolve(state, syncing=state.syncing.set(sender, s))
    if s.waiting:
        return state, ()
    return _complete(state, sender)


def _complete(state: BrokerState, x: str) -> Step:
    """Every transferred subscription is confirmed: send those accepted meanwhile, or end
    the recovery — ``x`` joins ``fwd`` and queued publications are rerouted."""
    s = state.syncing[x]
    transfer = _missing(state, x, s.known)
    sent = _sids(transfer)
    if sent:
        s = attrs.evolve(s, known=s.known | sent, waiting=sent)
        state = attrs.evolve(state, syncing=state.syncing.set(x, s))
        return state, (Send(to=x, msg=transfer),)
    before = state.fwd
    state = with_fwd(attrs.evolve(state, syncing=state.syncing.remove(x)))
    state, healed = healing.recovered(state, x, s.tags)
    state, moved = publications.reroute(state, before)
    return state, (*healed, *moved)


def check_restored(state: BrokerState) -> Step:
    """A restarted broker's full recovery is over once every active session's sync-point
    has sent its transfer and no subscription is pending: process what it held."""
    if state.restored or not state.active or not state.active <= state.synced_from or state.pending:
        return state, ()
    held, unsent = state.held, state.unsent
    state = attrs.evolve(
        state, restored=True, synced_from=frozenset(), held=pvector(), unsent=pvector()
    )
    effects: list[Effect] = []
    for q in unsent:
        state, more = publications.resend(state, q)
        effects += more
    for sender, msg in held:
        state, more = publications.replay(state, sender, msg)
        effects += more
    state, more = healing.after_restart(state)
    return state, (*effects, *more)
