"""Best effort: the GD roles without guarantees, as a role set of their own [GD §4.1].

Theory of operation
-------------------
The paper measures guaranteed delivery against a best-effort system on the same network
[GD §4.1]: a pubend forwards each message at once (no logging), brokers forward D along the
edges whose filter matches (no accumulation, no silence), an SHB delivers on arrival; nothing
is acked, nacked or retransmitted, and no timer runs. With ``GDConfig.best_effort`` every
broker is one of the three states of this module (:class:`~gapless.impl.gd.state.BestEffortPHB`,
:class:`~gapless.impl.gd.state.BestEffortIB`, :class:`~gapless.impl.gd.state.BestEffortSHB`),
each with only what it uses; their rows in the dispatch table (:mod:`gapless.impl.gd.node`)
are the inputs they accept — anything else, an ack say, is rejected. Ticks are assigned as in
guaranteed delivery [GD §2.2] and routing follows the same link bundles [GD §3.1].
"""

from __future__ import annotations

from gapless.impl.effects import Send
from gapless.impl.filters import FilterSyntaxError, parse_filter
from gapless.impl.gd.broker import knowledge_cell
from gapless.impl.gd.forwarding import from_upstream
from gapless.impl.gd.messages import Data, Knowledge
from gapless.impl.gd.pubend import check_hosted, tick_for
from gapless.impl.gd.routing import route
from gapless.impl.gd.state import BestEffortIB, BestEffortPHB, BestEffortSHB, NodeCtx, evolve
from gapless.impl.gd.step import Step
from gapless.impl.gd.subend import deliver
from gapless.impl.inputs import Connect, Disconnect, Publish, Restart

__all__ = [
    "forward",
    "ib_on_knowledge",
    "ib_on_restart",
    "phb_on_publish",
    "phb_on_restart",
    "shb_on_connect",
    "shb_on_disconnect",
    "shb_on_knowledge",
    "shb_on_restart",
]


def forward(
    ctx: NodeCtx,
    st: BestEffortPHB | BestEffortIB,
    p: str,
    d: Data,
    only_cell: str | None,
    step: Step,
) -> None:
    """Send ``d`` towards every downstream cell whose edge filter matches [GD §2.4, §4.1]."""
    for c in ctx.children.get(p, ()):
        if only_cell is not None and c != only_cell:
            continue
        if ctx.filters[(p, c)].matches(d.attributes):
            got = route(st, p, c, came_sideways=only_cell is not None)
            if got is not None:
                step.out.append(Send(to=got[0], msg=Knowledge(pubend=p, data=d, for_cell=got[1])))


def phb_on_publish(state: BestEffortPHB, inp: Publish, step: Step) -> BestEffortPHB:
    """A client publishes: the message gets its tick and goes downstream at once, unlogged
    [GD §2.2, §4.1]."""
    p = inp.pubend
    check_hosted(state, p)
    t = tick_for(state, p, step.now)
    d = Data(pubend=p, tick=t, attributes=inp.attributes, size=inp.size, published_at=step.now)
    st = evolve(state, assigned=state.assigned.set(p, t))
    forward(st.ctx, st, p, d, None, step)
    return st


def ib_on_knowledge(state: BestEffortIB, sender: str, msg: Knowledge, step: Step) -> BestEffortIB:
    """A data message from upstream is forwarded along matching edges, one that came sideways
    only down this broker's own link (one sideways hop) [GD §3.1, §4.1]."""
    ok, only_cell = knowledge_cell(state.ctx, sender, msg, step)
    if ok and msg.data is not None:
        forward(state.ctx, state, msg.pubend, msg.data, only_cell, step)
    return state


def shb_on_knowledge(
    state: BestEffortSHB, sender: str, msg: Knowledge, step: Step
) -> BestEffortSHB:
    """A data message from upstream is delivered on arrival [GD §2.3, §4.1]."""
    ctx = state.ctx
    p = msg.pubend
    if p not in ctx.pubends or not from_upstream(ctx, sender, p, "knowledge of", step):
        return state
    if msg.data is not None:
        deliver(state, state.index, p, msg.data, step)
    return state


def shb_on_connect(state: BestEffortSHB, inp: Connect, step: Step) -> BestEffortSHB:
    """A subscriber connects [GD §2.3, §4.1]; a bad filter is rejected."""
    try:
        f = parse_filter(inp.filter)
    except FilterSyntaxError as err:
        step.reject(f"bad filter: {err}")
        return state
    st = shb_on_disconnect(state, Disconnect(subscriber=inp.subscriber), step)
    return evolve(
        st,
        index=st.index.add(inp.subscriber, f),
        connections=st.connections.set(inp.subscriber, inp.connection),
    )


def shb_on_disconnect(state: BestEffortSHB, inp: Disconnect, step: Step) -> BestEffortSHB:
    """A subscriber disconnects; its connection ends [GD §2.3, §4.1]."""
    sub = inp.subscriber
    if sub not in state.connections:
        return state
    return evolve(state, index=state.index.remove(sub), connections=state.connections.remove(sub))


def phb_on_restart(state: BestEffortPHB, inp: Restart, step: Step) -> BestEffortPHB:
    """Boot or restart: nothing to recover, no timer [GD §4.1]."""
    return BestEffortPHB(ctx=state.ctx, up=True, epoch=state.epoch + 1)


def ib_on_restart(state: BestEffortIB, inp: Restart, step: Step) -> BestEffortIB:
    """Boot or restart: nothing to recover, no timer [GD §4.1]."""
    return BestEffortIB(ctx=state.ctx, up=True, epoch=state.epoch + 1)


def shb_on_restart(state: BestEffortSHB, inp: Restart, step: Step) -> BestEffortSHB:
    """Boot or restart: no subscriber is connected, no timer [GD §4.1]."""
    return BestEffortSHB(ctx=state.ctx, up=True, epoch=state.epoch + 1)
