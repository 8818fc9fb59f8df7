"""The forwarding device: an XSUB facing upstream joined to an XPUB facing downstream.

Theory of operation
-------------------
[ZMQ "Subscription Forwarding"]: a device passes data from its XSUB to its XPUB and
subscriptions from its XPUB to its XSUB, so a subscription hops up the tree until it reaches
the producers. Here the XPUB half (:mod:`gapless.impl.zmq.xpub`) decides what its
application — the device's forwarding loop — is told; the loop sends it upstream:

* a subscription the XPUB reports always travels (under ``verbose`` the duplicates too, as
  libzmq's XSUB forwards every subscription);
* an unsubscription travels only when no downstream peer holds the subscription any more
  [ZMQ "Subscription Aggregation": "Only when the second consumer disconnects as well, the
  unsubscription is sent upstream"]. libzmq's XSUB instead counts the subscriptions it
  forwarded, which under ``verbose`` leaves a stale subscription upstream (``spec/zmq.md``);
* with an aggregating policy (subsumption, the N-subscription fallback) the device sends the
  difference between what it told upstream and the aggregation of what its peers hold
  (:mod:`gapless.impl.zmq.aggregation`);
* when an upstream peer (re)connects the device resends everything it holds upstream
  [ZMQ "Disconnections and Reconnections"];
* data is not filtered at the XSUB [ZMQ "Message routing & filtering"] (except from a
  uni-directional upstream, where the XPUB's routing drops what no peer wants); the XPUB
  routes it to each peer holding a match, once;
* a downstream peer on a uni-directional segment holds everything, so the device subscribes
  upstream to everything [ZMQ "Subscription Forwarding and Uni-directional Transports"];
* in manual mode the forwarding loop installs each subscription it is told for the peer it
  came from, then forwards it as above.

A restarted device (:func:`restart`) has lost every subscription; its links come back and
its peers resend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, final

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from gapless.impl.effects import Rejected, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import LinkChanged, Receive
from gapless.impl.zmq import xpub
from gapless.impl.zmq.aggregation import aggregate, diff
from gapless.impl.zmq.messages import PREFIX, Data, Subscription, ZmqEffect
from gapless.impl.zmq.policy import PAPER_POLICY, ZmqPolicy
from gapless.impl.zmq.xpub import XpubHalf

__all__ = ["DeviceState", "handle", "restart"]

Key = tuple[str, bytes]


@final
@attrs.frozen(kw_only=True)
class DeviceState:
    """A device named ``name``: its ``upstream`` peers (``multicast`` ones take no
    subscriptions), which are ``up_live``, their ``lifetimes``, the XPUB ``half`` and the set
    it has ``told`` upstream."""

    name: str
    upstream: tuple[str, ...]
    multicast: frozenset[str] = frozenset()
    half: XpubHalf = attrs.field(factory=XpubHalf)
    policy: ZmqPolicy = PAPER_POLICY
    up_live: PSet[str] = attrs.field(factory=pset)
    lifetimes: PMap[str, int] = attrs.field(factory=pmap)
    told: PSet[Key] = attrs.field(factory=pset)


def restart(state: DeviceState) -> DeviceState:
    """The device after a restart: configuration kept, every subscription and link lost."""
    half = XpubHalf(options=state.half.options, multicast=state.half.multicast)
    return DeviceState(
        name=state.name,
        upstream=state.upstream,
        multicast=state.multicast,
        half=half,
        policy=state.policy,
        lifetimes=state.lifetimes,
    )


def _upstream_sends(state: DeviceState, msgs: tuple[Subscription, ...]) -> tuple[ZmqEffect, ...]:
    targets = [p for p in state.upstream if p in state.up_live and p not in state.multicast]
    return tuple(Send(to=p, msg=m) for m in msgs for p in targets)


def _still_held(state: DeviceState, key: Key) -> bool:
    return key in xpub.held_keys(state.half) if key[0] != PREFIX else _prefix_held(state, key[1])


def _prefix_held(state: DeviceState, topic: bytes) -> bool:
    return any(isinstance(h, str) for h in state.half.trie.holders(topic))


def _forward(
    state: DeviceState, notes: tuple[Subscription, ...]
) -> tuple[DeviceState, tuple[ZmqEffect, ...]]:
    """Send upstream what the XPUB half reported (see module doc)."""
    policy = state.policy
    if policy.aggregates:
        wanted = aggregate(
            xpub.held_keys(state.half),
            subsumption=policy.subsumption,
            limit=policy.fallback_limit,
        )
        msgs = diff(state.told, wanted)
        if not msgs:
            return state, ()
        return attrs.evolve(state, told=pset(wanted)), _upstream_sends(state, msgs)
    told = state.told
    out: list[Subscription] = []
    for note in notes:
        if note.subscribe:
            told = told.add(note.key)
            out.append(note)
        elif not policy.refcount or not _still_held(state, note.key):
            told = told.discard(note.key)
            out.append(note)
    new = state if told is state.told else attrs.evolve(state, told=told)
    return new, _upstream_sends(state, tuple(out))


def _from_downstream(
    state: DeviceState, peer: str, msg: Subscription
) -> tuple[DeviceState, tuple[ZmqEffect, ...]]:
    half, notes = xpub.on_subscription(state.half, peer, msg, state.policy)
    if half.options.manual:  # the forwarding loop installs what it is told, for that peer
        for note in notes:
            half = xpub.install(half, peer, note.topic, note.subscribe)
    new = state if half is state.half else attrs.evolve(state, half=half)
    return _forward(new, notes)


def _from_upstream(state: DeviceState, msg: Data) -> tuple[DeviceState, tuple[ZmqEffect, ...]]:
    peers = xpub.route(state.half, msg)
    if state.policy.xsub_filter_first_peer_only and state.half.peers:
        first = min(state.half.peers)
        if not xpub.holds(state.half, first, msg.payload):
            return state, ()  # the planted bug: the other peers' needs are ignored
    return state, tuple(Send(to=p, msg=msg) for p in peers)


def on_receive(
    state: DeviceState, inp: Receive, now: int
) -> tuple[DeviceState, tuple[ZmqEffect, ...]]:
    """A subscription from a downstream peer, or data from an upstream one."""
    msg = inp.msg
    if isinstance(msg, Subscription) and inp.sender in state.half.peers:
        return _from_downstream(state, inp.sender, msg)
    if isinstance(msg, Data) and inp.sender in state.up_live:
        return _from_upstream(state, msg)
    return state, (Rejected(reason=f"device {state.name}: unexpected message", input=inp),)


def _upstream_link(
    state: DeviceState, peer: str, up: bool
) -> tuple[DeviceState, tuple[ZmqEffect, ...]]:
    if not up:
        if peer not in state.up_live:
            return state, ()
        return attrs.evolve(state, up_live=state.up_live.remove(peer)), ()
    if peer in state.up_live:
        return state, ()
    lifetime = state.lifetimes.get(peer, 0) + 1
    new = attrs.evolve(
        state, up_live=state.up_live.add(peer), lifetimes=state.lifetimes.set(peer, lifetime)
    )
    if peer in state.multicast or (lifetime > 1 and not state.policy.resubscribe_on_reconnect):
        return new, ()
    keys = sorted(state.told, key=lambda k: (k[1], k[0]))
    return new, tuple(
        Send(to=peer, msg=Subscription(subscribe=True, topic=t, kind=k)) for k, t in keys
    )


def on_link_changed(
    state: DeviceState, inp: LinkChanged, now: int
) -> tuple[DeviceState, tuple[ZmqEffect, ...]]:
    """An upstream peer (re)connected or went away; a downstream peer came or went."""
    peer = inp.neighbour
    if peer in state.upstream:
        return _upstream_link(state, peer, inp.up)
    if inp.up:
        half = xpub.on_peer_up(state.half, peer)
        if half is state.half:
            return state, ()
        new = attrs.evolve(state, half=half)
        welcome = half.options.welcome
        effects: tuple[ZmqEffect, ...] = ()
        if welcome is not None:
            effects = (
                Send(to=peer, msg=Data(origin=state.name, seq=0, payload=welcome, welcome=True)),
            )
        if peer in half.multicast and not _prefix_held(state, b""):
            # it holds everything now: subscribe to all upstream
            new, more = _forward(new, (Subscription(subscribe=True, topic=b""),))
            effects += more
        return new, effects
    half, notes = xpub.on_peer_down(state.half, peer, state.policy)
    if half is state.half:
        return state, ()
    return _forward(attrs.evolve(state, half=half), notes)


_Handler = Callable[[DeviceState, Any, int], tuple[DeviceState, tuple[ZmqEffect, ...]]]
_HANDLERS: dict[type, _Handler] = {Receive: on_receive, LinkChanged: on_link_changed}


def handle(state: DeviceState, inp: object, now: int) -> tuple[DeviceState, tuple[ZmqEffect, ...]]:
    """Dispatch ``inp``; a device takes only network inputs (a misuse otherwise)."""
    handler = _HANDLERS.get(type(inp))
    if handler is None:
        allowed = ", ".join(t.__name__ for t in _HANDLERS)
        raise ProtocolMisuse(f"device {state.name}: input {inp!r} not handled; allowed: {allowed}")
    return handler(state, inp, now)
