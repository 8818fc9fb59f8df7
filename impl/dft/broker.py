"""The δ-fault-tolerant broker role: one ``handle(state, input, now)`` for every input
[DFT §II-VII].

Theory of operation
-------------------
A dispatch table from input type (and, for ``Receive``, message type) to the handler that
implements the paper's procedure:

========================  =====================================================  ==========
input                     handler                                                paper
========================  =====================================================  ==========
LinkChanged               sessions.on_link_changed (failure detector)            §II, §IV
Receive(SubMsg)           subscriptions.on_sub (ProcessArrivedSub)               Figure 5
Receive(SubConfirm)       subscriptions.on_sub_confirm                           Figure 5
Receive(PubMsg)           publications.on_pub (OnPubReceive)                     Figure 8
Receive(PubConfirm)       publications.on_pub_confirm                            Figure 8
Receive(PartitionInfo)    partitions.on_partition_info                           §IV
Publish                   publications.on_publish (a local publisher)            §VI
Connect                   a local subscriber issues subscription ``sub/conn``    §V
Disconnect                its subscriptions stop being delivered                 —
========================  =====================================================  ==========

A message of an unknown type, or a ``Publish`` for another broker, is a ``Rejected``
effect (network input never raises). Any other input is ignored (same state, no effects).
Time is not used: the protocol is driven by its inputs only. A crash loses the soft state;
full recovery of a restarted broker [DFT §VIII-B] is not modelled yet (``spec/dft.md``), so
:func:`crash` returns a broker with the tree and its neighbourhood (stable storage
[DFT §VIII-B]) and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from gapless.impl.dft import partitions, publications, subscriptions
from gapless.impl.dft.messages import PartitionInfo, PubConfirm, PubMsg, SubConfirm, SubMsg
from gapless.impl.dft.sessions import on_link_changed
from gapless.impl.dft.state import BrokerState, new_broker
from gapless.impl.effects import Effect, Rejected
from gapless.impl.inputs import Connect, Disconnect, Input, LinkChanged, Publish, Receive

__all__ = ["crash", "handle", "on_connect", "on_disconnect", "on_receive"]

Step = tuple[BrokerState, tuple[Effect, ...]]

_RECEIVE: dict[type, Callable[[BrokerState, str, Any], Step]] = {
    SubMsg: subscriptions.on_sub,
    SubConfirm: subscriptions.on_sub_confirm,
    PubMsg: publications.on_pub,
    PubConfirm: publications.on_pub_confirm,
    PartitionInfo: partitions.on_partition_info,
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


_HANDLERS: dict[type, Callable[[BrokerState, Any], Step]] = {
    Receive: on_receive,
    LinkChanged: _on_link,
    Publish: _on_publish,
    Connect: on_connect,
    Disconnect: on_disconnect,
}


def handle(state: BrokerState, inp: Input, now: int) -> Step:
    """One step of the broker (see the module doc's table)."""
    handler = _HANDLERS.get(type(inp))
    if handler is None:
        return state, ()
    return handler(state, inp)


def crash(state: BrokerState) -> BrokerState:
    """The broker after a crash: its tree and neighbourhood survive, nothing is reachable."""
    return new_broker(state.me, state.tree, state.config, state.policy, reachable=False)
