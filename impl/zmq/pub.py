"""PUB and XPUB endpoints: the producing ends.

Theory of operation
-------------------
A PUB or XPUB endpoint publishes its application's messages (``Post``), numbering them, to
every live peer holding a matching prefix, once per peer [ZMQ "Message routing &
filtering"]. It keeps its peers' subscriptions in the XPUB half
(:mod:`gapless.impl.zmq.xpub`). An XPUB also hands its application each subscription change
the half reports (``Notify``) — the hook a producer uses to skip work nobody wants, or a
bridge to forward subscriptions elsewhere [ZMQ "Plugging into the Subscription
Mechanism"]; a PUB keeps them to itself. A welcome message, when set, is sent to each peer as
it connects. In manual mode the application installs subscriptions with ``Install``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, final

import attrs

from gapless.impl.effects import Rejected, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import LinkChanged, Receive
from gapless.impl.zmq import xpub
from gapless.impl.zmq.messages import Data, Install, Notify, Post, Subscription, ZmqEffect
from gapless.impl.zmq.policy import PAPER_POLICY, ZmqPolicy
from gapless.impl.zmq.xpub import XpubHalf

__all__ = ["PubState", "handle"]


@final
@attrs.frozen(kw_only=True)
class PubState:
    """A PUB (``notify_app=False``) or XPUB endpoint named ``name``; ``seq`` counts what it
    has published."""

    name: str
    half: XpubHalf = attrs.field(factory=XpubHalf)
    notify_app: bool = True
    policy: ZmqPolicy = PAPER_POLICY
    seq: int = 0


def _notes(state: PubState, peer: str, notes: tuple[Subscription, ...]) -> tuple[ZmqEffect, ...]:
    if not state.notify_app:
        return ()
    return tuple(Notify(peer=peer, message=n) for n in notes)


def on_post(state: PubState, inp: Post, now: int) -> tuple[PubState, tuple[ZmqEffect, ...]]:
    """Publish ``inp.payload`` to every peer that holds a matching prefix."""
    seq = state.seq + 1 if inp.seq is None else inp.seq
    msg = Data(origin=state.name, seq=seq, payload=inp.payload)
    sends = tuple(Send(to=p, msg=msg) for p in xpub.route(state.half, msg))
    return attrs.evolve(state, seq=seq), sends


def on_receive(state: PubState, inp: Receive, now: int) -> tuple[PubState, tuple[ZmqEffect, ...]]:
    """A subscription message from a downstream peer."""
    msg = inp.msg
    if not isinstance(msg, Subscription) or inp.sender not in state.half.peers:
        return state, (Rejected(reason=f"{state.name}: unexpected message", input=inp),)
    half, notes = xpub.on_subscription(state.half, inp.sender, msg, state.policy)
    new = state if half is state.half else attrs.evolve(state, half=half)
    return new, _notes(state, inp.sender, notes)


def on_link_changed(
    state: PubState, inp: LinkChanged, now: int
) -> tuple[PubState, tuple[ZmqEffect, ...]]:
    """A peer connected (welcome it) or went away (drop its subscriptions)."""
    peer = inp.neighbour
    if inp.up:
        half = xpub.on_peer_up(state.half, peer)
        if half is state.half:
            return state, ()
        welcome = state.half.options.welcome
        effects: tuple[ZmqEffect, ...] = ()
        if welcome is not None:
            msg = Data(origin=state.name, seq=0, payload=welcome, welcome=True)
            effects = (Send(to=peer, msg=msg),)
        return attrs.evolve(state, half=half), effects
    half, notes = xpub.on_peer_down(state.half, peer, state.policy)
    if half is state.half:
        return state, ()
    return attrs.evolve(state, half=half), _notes(state, peer, notes)


def on_install(state: PubState, inp: Install, now: int) -> tuple[PubState, tuple[ZmqEffect, ...]]:
    """The manual-mode application installs or removes a subscription for a peer."""
    if not state.half.options.manual:
        raise ProtocolMisuse(f"XPUB {state.name}: Install needs the manual option; got {inp!r}")
    half = xpub.install(state.half, inp.peer, inp.topic, inp.subscribe)
    return (state if half is state.half else attrs.evolve(state, half=half)), ()


_Handler = Callable[[PubState, Any, int], tuple[PubState, tuple[ZmqEffect, ...]]]
_HANDLERS: dict[type, _Handler] = {
    Post: on_post,
    Receive: on_receive,
    LinkChanged: on_link_changed,
    Install: on_install,
}


def handle(state: PubState, inp: object, now: int) -> tuple[PubState, tuple[ZmqEffect, ...]]:
    """Dispatch ``inp`` to its handler; an input type a PUB does not take is a misuse."""
    handler = _HANDLERS.get(type(inp))
    if handler is None:
        allowed = ", ".join(t.__name__ for t in _HANDLERS)
        raise ProtocolMisuse(f"PUB {state.name}: input {inp!r} not handled; allowed: {allowed}")
    return handler(state, inp, now)
