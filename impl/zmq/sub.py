"""SUB and XSUB endpoints: the subscribing ends.

Theory of operation
-------------------
A SUB (or XSUB) socket counts its subscriptions per ``(kind, topic)`` as libzmq's ``trie_t``
does; it sends every subscription to each upstream peer it is connected to (a subscriber with
several publishers sends to each [ZMQ "Issues"]) and an unsubscription only when the count
falls to zero. When an upstream peer (re)connects it resends every live subscription, in trie
order [ZMQ "Disconnections and Reconnections"]. A SUB filters what arrives by its own
subscriptions, because an unsubscription takes time to reach the producer and messages keep
flowing meanwhile [ZMQ "Message routing & filtering"]; an XSUB does not filter, except data
from a uni-directional (multicast) upstream, to which it sends no subscriptions at all [ZMQ
"Subscription Forwarding and Uni-directional Transports"].

Each delivered message is a ``Deliver`` whose ``connection`` is the number of the link's
lifetime it arrived on (1 for the first connection), so "exactly once per connection
lifetime" can be judged from the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from gapless.impl.effects import Deliver, Rejected, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import LinkChanged, Receive
from gapless.impl.zmq.messages import Data, Subscribe, Subscription, Unsubscribe, ZmqEffect
from gapless.impl.zmq.policy import PAPER_POLICY, ZmqPolicy

__all__ = ["MATCHERS", "SubState", "accepts", "handle", "sub_matches"]

MATCHERS: Final[Mapping[str, Callable[[bytes, bytes], bool]]] = {
    "prefix": lambda topic, payload: payload.startswith(topic),
    "suffix": lambda topic, payload: payload.endswith(topic),
}
"""The matching kinds a subscribing end knows [ZMQ "Different Matching Algorithms"]."""


def sub_matches(kind: str, topic: bytes, payload: bytes) -> bool:
    """``payload`` matches the subscription ``(kind, topic)``; an unknown kind matches all."""
    matcher = MATCHERS.get(kind)
    return True if matcher is None else matcher(topic, payload)


@final
@attrs.frozen(kw_only=True)
class SubState:
    """A SUB (``filter=True``) or XSUB endpoint named ``name`` connecting to ``upstream``;
    ``multicast`` upstream peers are uni-directional segments; ``counts`` its subscriptions;
    ``live`` the connected upstream peers; ``lifetimes`` each peer's connection number."""

    name: str
    upstream: tuple[str, ...]
    filter: bool = True
    multicast: frozenset[str] = frozenset()
    policy: ZmqPolicy = PAPER_POLICY
    counts: PMap[tuple[str, bytes], int] = attrs.field(factory=pmap)
    live: PSet[str] = attrs.field(factory=pset)
    lifetimes: PMap[str, int] = attrs.field(factory=pmap)


def accepts(state: SubState, payload: bytes) -> bool:
    """Some live subscription of ``state`` matches ``payload``."""
    return any(sub_matches(kind, topic, payload) for kind, topic in state.counts)


def _to_upstream(state: SubState, msg: Subscription) -> tuple[ZmqEffect, ...]:
    return tuple(
        Send(to=p, msg=msg) for p in state.upstream if p in state.live and p not in state.multicast
    )


def on_subscribe(
    state: SubState, inp: Subscribe, now: int
) -> tuple[SubState, tuple[ZmqEffect, ...]]:
    """The application subscribes: count it, send it upstream (always, as libzmq does)."""
    key = (inp.kind, inp.topic)
    new = attrs.evolve(state, counts=state.counts.set(key, state.counts.get(key, 0) + 1))
    return new, _to_upstream(new, Subscription(subscribe=True, topic=inp.topic, kind=inp.kind))


def on_unsubscribe(
    state: SubState, inp: Unsubscribe, now: int
) -> tuple[SubState, tuple[ZmqEffect, ...]]:
    """The application unsubscribes: upstream hears of it when the count reaches zero."""
    key = (inp.kind, inp.topic)
    count = state.counts.get(key, 0)
    if count == 0:
        return state, ()
    if count > 1:
        return attrs.evolve(state, counts=state.counts.set(key, count - 1)), ()
    new = attrs.evolve(state, counts=state.counts.remove(key))
    return new, _to_upstream(new, Subscription(subscribe=False, topic=inp.topic, kind=inp.kind))


def on_link_changed(
    state: SubState, inp: LinkChanged, now: int
) -> tuple[SubState, tuple[ZmqEffect, ...]]:
    """An upstream peer connected (resend every subscription) or went away."""
    peer = inp.neighbour
    if peer not in state.upstream:
        return state, (Rejected(reason=f"{state.name}: {peer!r} is not upstream", input=inp),)
    if not inp.up:
        if peer not in state.live:
            return state, ()
        return attrs.evolve(state, live=state.live.remove(peer)), ()
    if peer in state.live:
        return state, ()
    lifetime = state.lifetimes.get(peer, 0) + 1
    new = attrs.evolve(
        state, live=state.live.add(peer), lifetimes=state.lifetimes.set(peer, lifetime)
    )
    if peer in state.multicast or (lifetime > 1 and not state.policy.resubscribe_on_reconnect):
        return new, ()
    keys = sorted(state.counts, key=lambda k: (k[1], k[0]))
    return new, tuple(
        Send(to=peer, msg=Subscription(subscribe=True, topic=t, kind=k)) for k, t in keys
    )


def on_receive(state: SubState, inp: Receive, now: int) -> tuple[SubState, tuple[ZmqEffect, ...]]:
    """Data from upstream: filtered at a SUB (and from a multicast peer), then delivered."""
    msg = inp.msg
    if not isinstance(msg, Data) or inp.sender not in state.live:
        return state, (Rejected(reason=f"{state.name}: unexpected message", input=inp),)
    filtering = (state.filter and state.policy.filter_at_sub) or inp.sender in state.multicast
    if filtering and not accepts(state, msg.payload):
        return state, ()
    deliver = Deliver(
        subscriber=state.name,
        pubend=msg.origin,
        tick=msg.seq,
        payload=msg.payload,
        connection=state.lifetimes[inp.sender],
    )
    return state, (deliver,)


_Handler = Callable[[SubState, Any, int], tuple[SubState, tuple[ZmqEffect, ...]]]
_HANDLERS: dict[type, _Handler] = {
    Subscribe: on_subscribe,
    Unsubscribe: on_unsubscribe,
    LinkChanged: on_link_changed,
    Receive: on_receive,
}


def handle(state: SubState, inp: object, now: int) -> tuple[SubState, tuple[ZmqEffect, ...]]:
    """Dispatch ``inp`` to its handler; an input type a SUB does not take is a misuse."""
    handler = _HANDLERS.get(type(inp))
    if handler is None:
        allowed = ", ".join(t.__name__ for t in _HANDLERS)
        raise ProtocolMisuse(f"SUB {state.name}: input {inp!r} not handled; allowed: {allowed}")
    return handler(state, inp, now)
