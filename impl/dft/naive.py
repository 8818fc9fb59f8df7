"""The naive baseline: reverse-path forwarding with store-and-forward on link failure
[DFT §I, "Challenge of dealing with link failures"].

Theory of operation
-------------------
The scheme §I shows to lose publications. Subscriptions flood the primary tree; each broker
records the neighbour it received a subscription from and forwards later matching
publications back along that reverse path [DFT §I]. A broker only talks to its primary
neighbours. When the link to a neighbour is down, a subscription sent over it is lost (the
neighbour never learns it), and publications bound for it are stored and sent once the link
is back — the "preserves p1 and p3 for future transfer" of §I. Nothing else: no
confirmations, no tags, no bypassing. On Figure 1's network this delivers p1, p3 to S2
without p2 — the gap the δ-fault-tolerant protocol exists to prevent.

It speaks the same messages as the DFT broker (:class:`~gapless.impl.dft.messages.SubMsg`,
:class:`~gapless.impl.dft.messages.PubMsg`) so the same invariants judge both.
"""

from __future__ import annotations

from typing import final

import attrs
from pyrsistent import PMap, PSet, PVector, pmap, pset, pvector

from gapless.impl.dft.messages import PubMsg, SubMsg
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Deliver, Effect, Rejected, Send
from gapless.impl.filters import parse_filter
from gapless.impl.inputs import Connect, Input, LinkChanged, Publish, Receive

__all__ = ["NaiveState", "handle", "new_naive"]

Step = tuple["NaiveState", tuple[Effect, ...]]


@final
@attrs.frozen(kw_only=True)
class NaiveState:
    """A naive broker: reachable primary neighbours ``up``, subscriptions ``srt`` (sid ->
    (sub, the neighbour it came from or None)), per-neighbour stored publications."""

    me: str
    tree: PrimaryTree
    up: PSet[str]
    srt: PMap[str, tuple[SubMsg, str | None]] = attrs.field(factory=pmap)
    outbox: PMap[str, PVector[PubMsg]] = attrs.field(factory=pmap)
    published: int = 0
    local: PMap[str, tuple[str, int]] = attrs.field(factory=pmap)


def new_naive(me: str, tree: PrimaryTree, reachable: bool = True) -> NaiveState:
    """A naive broker of ``tree``; ``reachable``: its primary links start up."""
    return NaiveState(me=me, tree=tree, up=pset(tree.neighbours(me)) if reachable else pset())


def _flood(state: NaiveState, sub: SubMsg, skip: str | None) -> tuple[Effect, ...]:
    msg = attrs.evolve(sub, trail=(*sub.trail, state.me))
    return tuple(
        Send(to=x, msg=msg) for x in state.tree.neighbours(state.me) if x != skip and x in state.up
    )


def _on_sub(state: NaiveState, sender: str | None, sub: SubMsg) -> Step:
    if sub.sid in state.srt:
        return state, ()
    state = attrs.evolve(state, srt=state.srt.set(sub.sid, (sub, sender)))
    return state, _flood(state, sub, sender)


def _forward(state: NaiveState, sender: str | None, msg: PubMsg) -> Step:
    effects: list[Effect] = []
    hops: set[str] = set()
    for sid in sorted(state.srt):
        sub, hop = state.srt[sid]
        if not parse_filter(sub.filter).matches(msg.attributes):
            continue
        if hop is None and sid in state.local:
            who, conn = state.local[sid]
            effects.append(
                Deliver(
                    subscriber=who,
                    pubend=msg.source,
                    tick=msg.number,
                    payload=msg.attributes,
                    connection=conn,
                )
            )
        elif hop is not None and hop != sender:
            hops.add(hop)
    out = attrs.evolve(msg, trail=(*msg.trail, state.me))
    outbox = state.outbox
    for h in sorted(hops):
        if h in state.up:
            effects.append(Send(to=h, msg=out))
        else:
            outbox = outbox.set(h, outbox.get(h, pvector()).append(out))
    return attrs.evolve(state, outbox=outbox), tuple(effects)


def _on_link(state: NaiveState, inp: LinkChanged) -> Step:
    x = inp.neighbour
    if x not in state.tree.neighbours(state.me) or (x in state.up) == inp.up:
        return state, ()
    if not inp.up:
        return attrs.evolve(state, up=state.up.remove(x)), ()
    stored = state.outbox.get(x, pvector())
    state = attrs.evolve(state, up=state.up.add(x), outbox=state.outbox.discard(x))
    return state, tuple(Send(to=x, msg=m) for m in stored)


def handle(state: NaiveState, inp: Input, now: int) -> Step:
    """One step of a naive broker."""
    if isinstance(inp, Receive):
        if isinstance(inp.msg, SubMsg):
            return _on_sub(state, inp.sender, inp.msg)
        if isinstance(inp.msg, PubMsg):
            return _forward(state, inp.sender, inp.msg)
        return state, (Rejected(reason=f"{state.me}: unknown message type", input=inp),)
    if isinstance(inp, LinkChanged):
        return _on_link(state, inp)
    if isinstance(inp, Publish):
        number = state.published + 1
        msg = PubMsg(source=state.me, number=number, attributes=inp.attributes)
        return _forward(attrs.evolve(state, published=number), None, msg)
    if isinstance(inp, Connect):
        sid = f"{inp.subscriber}/{inp.connection}"
        state = attrs.evolve(state, local=state.local.set(sid, (inp.subscriber, inp.connection)))
        return _on_sub(state, None, SubMsg(sid=sid, source=state.me, filter=inp.filter))
    return state, ()
