"""The δ-fault-tolerant broker role: one ``handle(state, input, now)`` for every input
[DFT §II-VII].

Theory of operation
-------------------
A dispatch table from input type (and, for ``Receive``, message type) to the handler that
implements the paper's procedure:

==========================  =====================================================  ==========
input                       handler                                                paper
==========================  =====================================================  ==========
LinkChanged                 sessions.on_link_changed (failure detector)            §II, §IV
Receive(SubMsg)             subscriptions.on_sub (ProcessArrivedSub)               Figure 5
Receive(SubConfirm)         recovery.on_sub_confirm (subscriptions', or a sync's)  Figure 5
Receive(SyncStart)          recovery.on_sync_start (steps i-ii)                    §VIII-A
Receive(SyncSummary)        recovery.on_sync_summary (step iii)                    §VIII-A
Receive(SyncTransfer)       recovery.on_sync_transfer (step iv)                    §VIII-A
Receive(PubMsg)             publications.on_pub (OnPubReceive)                     Figure 8
Receive(PubConfirm)         publications.on_pub_confirm                            Figure 8
Receive(PartitionInfo)      partitions.on_partition_info                           §IV
Receive(PartitionHealed)    healing.on_healed (step v)                             §VIII-A
Receive(RecoveryNotifier)   healing.on_notifier (step iv, p_rec)                   §VIII-A
Publish                     publications.on_publish (a local publisher)            §VI
Connect                     a local subscriber issues subscription ``sub/conn``    §V
Disconnect                  its subscriptions stop being delivered                 —
Restart                     ask its sessions for partial recoveries                §VIII-B
==========================  =====================================================  ==========

A message of an unknown type, or a ``Publish`` for another broker, is a ``Rejected``
effect (network input never raises). Any other input is ignored (same state, no effects).
Time is not used: the protocol is driven by its inputs only. A crash loses the soft state:
:func:`crash` returns a broker with only what stable storage keeps [DFT §VIII-B] — the tree
and its neighbourhood, its incarnation number (one more) and the count of its local
publications — not yet restored: its neighbours bring it back by partial recoveries
(:mod:`gapless.impl.dft.recovery`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from pyrsistent import pmap, pset, pvector

from gapless.impl.dft import healing, partitions, publications, recovery, subscriptions
from gapless.impl.dft.messages import (
    PartitionHealed,
    PartitionInfo,
    PubConfirm,
    PubMsg,
    RecoveryNotifier,
    SubConfirm,
    SubMsg,
    SyncStart,
    SyncSummary,
    SyncTransfer,
)
from gapless.impl.dft.sessions import on_link_changed
from gapless.impl.dft.state import BrokerState, SyncState, new_broker
from gapless.impl.effects import Effect, Rejected, Send
from gapless.impl.inputs import (
    Connect,
    Disconnect,
    Input,
    LinkChanged,
    Publish,
    Receive,
    Restart,
)

__all__ = ["crash", "handle", "on_connect", "on_disconnect", "on_receive"]

Step = tuple[BrokerState, tuple[Effect, ...]]

_RECEIVE: dict[type, Callable[[BrokerState, str, Any], Step]] = {
    SubMsg: subscriptions.on_sub,
    SubConfirm: recovery.on_sub_confirm,
    PubMsg: publications.on_pub,
    PubConfirm: publications.on_pub_confirm,
    PartitionInfo: partitions.on_partition_info,
    PartitionHealed: healing.on_healed,
    RecoveryNotifier: healing.on_notifier,
    SyncStart: recovery.on_sync_start,
    SyncSummary: recovery.on_sync_summary,
    SyncTransfer: recovery.on_sync_transfer,
}


def on_receive(state: BrokerState, inp: Receive) -> Step:
    """A message from another broker."""
    handler = _RECEIVE.get(type(inp.msg))
    if handler is None:
        return state, (Rejected(reason=f"{state.me}: unknown message type", input=inp),)
    return handler(state, inp.sender, inp.msg)


def on_connect(state: BrokerState, inp: Connect) -> Step:
    """A local subscriber subscribes: subscription ``subscriber/connection`` [DFT §V]."""
    sid = f"{inp.subscriber}/{inp.connection}"
    if sid in state.local:
        return state, ()
    state = attrs.evolve(state, local=state.local.set(sid, (inp.subscriber, inp.connection)))
    sub = SubMsg(sid=sid, source=state.me, filter=inp.filter)
    return subscriptions.on_sub(state, None, sub)


def on_disconnect(state: BrokerState, inp: Disconnect) -> Step:
    """A local subscriber leaves: nothing more is delivered to it."""
    gone = [sid for sid, (who, _) in state.local.items() if who == inp.subscriber]
    if not gone:
        return state, ()
    local = state.local
    for sid in gone:
        local = local.remove(sid)
    return attrs.evolve(state, local=local), ()


def _on_publish(state: BrokerState, inp: Publish) -> Step:
    if inp.pubend != state.me:
        return state, (Rejected(reason=f"{state.me}: publish for {inp.pubend}", input=inp),)
    return publications.on_publish(state, inp)


def _on_link(state: BrokerState, inp: LinkChanged) -> Step:
    return on_link_changed(state, inp)


def _on_restart(state: BrokerState, inp: Restart) -> Step:
    """The restart [DFT §VIII-B]: ask every session its crashed state counts active for a
    partial recovery (step i). The failure detector's reports follow: a session found down
    then is lost like any other — a partition this broker detects, whose pid tags what it
    accepts meanwhile [DFT §III-V]."""
    if state.restored or not state.syncing:
        return state, ()
    return state, tuple(Send(to=x, msg=SyncStart(recovering=True)) for x in sorted(state.syncing))


_HANDLERS: dict[type, Callable[[BrokerState, Any], Step]] = {
    Receive: on_receive,
    LinkChanged: _on_link,
    Publish: _on_publish,
    Connect: on_connect,
    Disconnect: on_disconnect,
    Restart: _on_restart,
}


def handle(state: BrokerState, inp: Input, now: int) -> Step:
    """One step of the broker (see the module doc's table)."""
    handler = _HANDLERS.get(type(inp))
    if handler is None:
        return state, ()
    return handler(state, inp)


def crash(state: BrokerState) -> BrokerState:
    """The broker after a crash: stable storage survives (tree, neighbourhood, incarnation,
    local publication count, its own unconfirmed publications, the partitions it detected
    and its partition counter — so it can still recover them [DFT §VIII-A] and its new
    pids stay distinct); it restarts believing its
    primary neighbours reachable and their sessions active but not yet recovered (so a
    neighbour found unreachable at the restart makes a partition, as for a running
    broker), its full recovery ahead
    [DFT §VIII-B]. Its stamps restart above those of every earlier incarnation — unless
    the ``forget-stamps`` bug restarts them at zero [DFT §VII]."""
    policy = state.policy
    fresh = new_broker(state.me, state.tree, state.config, policy)
    incarnation = state.incarnation + 1
    sync = policy.sync_on_activation
    return attrs.evolve(
        fresh,
        incarnation=incarnation,
        stamp=incarnation << 32 if policy.durable_stamps else 0,
        pt=pset(p for p in state.pt if p.detector == state.me),
        counter=state.counter,
        published=state.published,
        unsent=pvector(q for q in state.queue if q.msg.source == state.me) if sync else pvector(),
        restored=not sync,
        syncing=pmap(dict.fromkeys(fresh.active, SyncState())) if sync else pmap(),
        fwd=frozenset() if sync else fresh.fwd,
    )
