"""Subscription propagation with confirmations, as Figure 5 [DFT §V].

Theory of operation
-------------------
A broker B processes arrived subscriptions in order [DFT §V-A]:

* :func:`on_sub` (ProcessArrivedSub, lines 1-10): a copy tagged with a partition B is on is
  an island copy — accepted at once and passed over active sessions to the other nodes of
  that partition (CheckSubTags, lines 39-46, §V-B). Otherwise Out_s(B) is B's active
  sessions downstream of the subscription's path whose hop keeps its propagation legitimate
  [DFT §VII]; with Out_s empty (an edge broker) s is
  accepted and confirmed at once (line 5); else s goes to every X in Out_s
  (:func:`send_sub`, SendSubTo, lines 19-25: tagged with every known pid X is beyond).
* :func:`on_sub_confirm` (lines 12-17): the sender leaves Out_s, its tags join s's; with
  Out_s empty B accepts s and confirms.
* :func:`_accept` (AcceptAndConfirm, lines 27-37): s enters the SRT (at its source, with
  the confirmation tags, §V-C, and there the entry is written to stable storage —
  ``Persist(("accepted", sid), tags)`` — which is how a trace shows when a subscription was
  accepted and with which tags); for each pid s was tagged with, a copy goes to the active
  sessions on pid.pnodes (the island, §V-B); the confirmation to every sender carries the
  gathered tags plus the barriers B detected off s's path (lines 33-35).
* :func:`reroute` (OnSessionActivated, lines 48-55): after the active sessions change, an
  unconfirmed s drops from Out_s the brokers no longer active, adds the newly active brokers
  that bypass them or lie before them on their path (and sends s there); a broker dropped
  with nothing to replace it is a barrier, and s no longer waits for it (§V-C).

A duplicate arrival (s already pending or accepted) adds its sender to the senders, or is
confirmed at once — unless s was accepted here only as an island or upstream copy and this
copy travels its primary path (a partial recovery's transfer): then it is processed in full,
the earlier entry serving meanwhile. Subscription ids are unique (assigned by the
subscriber [DFT §V]), so duplicates are recognised by id.
"""

from __future__ import annotations

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.dft.messages import Pid, SubConfirm, SubMsg
from gapless.impl.dft.partitions import confirmation_tags, subscription_tags
from gapless.impl.dft.routing import downstream, legitimate
from gapless.impl.dft.state import Accepted, BrokerState, PendingSub, evolve
from gapless.impl.effects import Effect, Persist, Send

__all__ = ["on_sub", "on_sub_confirm", "onward", "reroute", "send_sub"]

Step = tuple[BrokerState, tuple[Effect, ...]]


def send_sub(state: BrokerState, sub: SubMsg, to: str) -> Send:
    """SendSubTo (lines 19-25)."""
    tags = subscription_tags(state, sub, to)
    return Send(to=to, msg=attrs.evolve(sub, trail=(*sub.trail, state.me), tags=tags))


def _check_sub_tags(state: BrokerState, sender: str | None, sub: SubMsg) -> Step | None:
    """CheckSubTags (lines 39-46): an island copy is accepted and passed to the island."""
    mine = [p for p in sub.tags if state.me in p.pnodes]
    if not mine:
        return None
    if sub.sid in state.srt:
        return state, ()
    state = evolve(state, srt=state.srt.set(sub.sid, Accepted(sub=sub, stamp=state.stamp)))
    return state, _island_copies(state, sub, mine, skip=sender)


def _island_copies(
    state: BrokerState, sub: SubMsg, pids: list[Pid], skip: str | None
) -> tuple[Effect, ...]:
    targets = sorted({x for p in pids for x in p.pnodes if x in state.active and x != skip})
    copy = attrs.evolve(sub, trail=(*sub.trail, state.me), island=True)
    return tuple(Send(to=x, msg=copy) for x in targets)


def onward(state: BrokerState, sub: SubMsg, x: str) -> bool:
    """Is active session ``x`` downstream for ``sub``, and is the hop legitimate [DFT §VII]?"""
    tree, me = state.tree, state.me
    return downstream(tree, me, sub.source, x) and legitimate(
        tree, sub.trail, me, x, state.config.delta
    )


def on_sub(state: BrokerState, sender: str | None, sub: SubMsg) -> Step:
    """ProcessArrivedSub (lines 1-10); ``sender`` is None for a local subscriber's own."""
    checked = _check_sub_tags(state, sender, sub)
    if checked is not None:
        return checked
    sid = sub.sid
    if sid in state.pending:
        if sender is None:
            return state, ()
        p = state.pending[sid]
        return evolve(
            state, pending=state.pending.set(sid, attrs.evolve(p, senders=p.senders | {sender}))
        ), ()
    if sid in state.srt and (sub.island or state.srt[sid].full):
        if sender is None:
            return state, ()
        entry = state.srt[sid]
        return state, (
            Send(to=sender, msg=SubConfirm(sid=sid, tags=entry.conf_tags, stamp=entry.stamp)),
        )
    outs = frozenset(x for x in state.active if onward(state, sub, x))
    senders = frozenset() if sender is None else frozenset({sender})
    if not outs:
        return _accept(state, sub, senders, frozenset())
    pending = PendingSub(sub=sub, outs=outs, senders=senders)
    state = evolve(
        state,
        pending=state.pending.set(sid, pending),
        pending_order=state.pending_order.append(sid),
    )
    return state, tuple(send_sub(state, sub, x) for x in sorted(outs))


def on_sub_confirm(state: BrokerState, sender: str, msg: SubConfirm) -> Step:
    """OnSubConfirmationReceive (lines 12-17)."""
    p = state.pending.get(msg.sid)
    if p is None or sender not in p.outs:
        return state, ()
    outs = p.outs - {sender}
    tags = p.conf_tags | msg.tags
    after = p.after if msg.stamp is None else p.after.set(sender, msg.stamp)
    if outs and state.policy.wait_for_all_confirmations:
        p = attrs.evolve(p, outs=outs, conf_tags=tags, after=after)
        return evolve(state, pending=state.pending.set(msg.sid, p)), ()
    return _accept(_unpend(state, msg.sid), p.sub, p.senders, tags, after)


def _unpend(state: BrokerState, sid: str) -> BrokerState:
    return evolve(
        state,
        pending=state.pending.remove(sid),
        pending_order=state.pending_order.remove(sid),
    )


def _accept(
    state: BrokerState,
    sub: SubMsg,
    senders: frozenset[str],
    gathered: frozenset[Pid],
    after: PMap[str, int] | None = None,
) -> Step:
    """AcceptAndConfirm (lines 27-37). The entry keeps this broker's stamp counter and
    ``after``, the confirmers' (spec/dft.md "Releases after recovery"); the confirmations
    carry the counter."""
    tags = gathered | confirmation_tags(state, sub)
    entry = Accepted(sub=sub, conf_tags=tags, stamp=state.stamp, after=after or pmap())
    state = evolve(state, srt=state.srt.set(sub.sid, entry))
    effects = list(_island_copies(state, sub, sorted(sub.tags), skip=None))
    if sub.sid in state.local:
        effects.append(Persist(key=("accepted", sub.sid), value=tags))
    confirm = SubConfirm(sid=sub.sid, tags=tags, stamp=state.stamp)
    effects += [Send(to=x, msg=confirm) for x in sorted(senders)]
    return state, tuple(effects)


def reroute(state: BrokerState, gained: frozenset[str]) -> Step:
    """OnSessionActivated (lines 48-55) for every unconfirmed subscription, in order."""
    effects: list[Effect] = []
    tree, me = state.tree, state.me
    for sid in list(state.pending_order):
        p = state.pending[sid]
        removed = p.outs - state.active
        if not removed:
            continue
        added = frozenset(
            x
            for x in gained
            if onward(state, p.sub, x)
            and any(x in tree.path(me, y) or y in tree.path(me, x) for y in removed)
        )
        outs = (p.outs - removed) | added
        effects += [send_sub(state, p.sub, x) for x in sorted(added)]
        if outs:
            p = attrs.evolve(p, outs=outs)
            state = evolve(state, pending=state.pending.set(sid, p))
        else:
            state, more = _accept(_unpend(state, sid), p.sub, p.senders, p.conf_tags, p.after)
            effects += more
    return state, tuple(effects)
