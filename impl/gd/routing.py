"""Cells, link bundles and link status: where a broker sends what [GD §3.1].

Theory of operation
-------------------
A cell is a virtual broker made of several physical ones joined by a link bundle [GD §3.1].
Towards a downstream cell a broker picks, among the cell's brokers it has an up link to, the
one at position ``number(P) % len(cell)`` of the sorted list (next ones if that link is down,
or if that broker's last :class:`~gapless.impl.gd.messages.LinkStatus` says it cannot reach
the cell's own downstream cells); with no up link to the cell it routes *sideways* through a
cell neighbour whose status reaches the cell (``for_cell``) — :func:`route` — unless the
knowledge itself came sideways: one sideways hop, never back into the cell. Acks and nacks go
to the broker that last sent knowledge of that pubend, or to every broker of the upstream cell
with an up link when that is unknown or down — :func:`upstream`. Every broker sends its
neighbours the cells it reaches every ``link_status_period_us`` (:func:`on_status_timer`) and
learns of link failures and heals from the world (:func:`on_link_changed`).

Every role uses this module, best effort [GD §4.1] included; it assumes nothing about
streams beyond ``last_sender``.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from gapless.impl import ticksets as R
from gapless.impl.effects import Send, SetTimer
from gapless.impl.gd.messages import LinkStatus, Nack
from gapless.impl.gd.state import (
    BestEffortIB,
    BestEffortPHB,
    BestEffortSHB,
    GDNode,
    IBState,
    NodeState,
    PHBState,
    SHBState,
    Stream,
    evolve,
)
from gapless.impl.gd.step import Step, timer_key
from gapless.impl.inputs import LinkChanged

__all__ = [
    "on_link_changed",
    "on_link_status",
    "on_status_timer",
    "reach",
    "route",
    "send_nacks",
    "send_status",
    "send_up",
    "upstream",
]

#: A broker of any role; a handler returns the same role's state.
N = TypeVar("N", PHBState, IBState, SHBState, BestEffortPHB, BestEffortIB, BestEffortSHB)

#: How many answers :func:`route` keeps before it starts again (a memo, bounded).
ROUTE_MEMO_SIZE: Final = 65_536

# route is a pure function of (ctx, links_down, status, p, cell); links and status change
# rarely, so the last answer per (pubend, cell) is kept in the node's context (one run) with
# the values it was computed from (a transparent memo: identity-checked inputs, same result).


def route(
    st: NodeState, p: str, cell: str, *, came_sideways: bool = False
) -> tuple[str, str | None] | None:
    """``(broker, for_cell)`` to send ``p``'s knowledge towards downstream ``cell`` [GD §3.1]
    (``for_cell`` set: sideways through a cell neighbour); None when no link leads there.

    ``came_sideways``: the knowledge came from a cell neighbour, so it goes down one of this
    broker's own links into ``cell`` or nowhere — one sideways hop ("via another broker in its
    cell that has not lost connectivity" [GD §3.1]); sent sideways again it would only return
    into this cell, back and forth while both brokers lack the link (policy
    ``sideways_once``)."""
    got = _route(st, p, cell)
    if came_sideways and got is not None and got[1] is not None and st.ctx.policy.sideways_once:
        return None
    return got


def _route(st: NodeState, p: str, cell: str) -> tuple[str, str | None] | None:
    routes = st.ctx.memo["routes"]
    key = (p, cell)
    hit = routes.get(key)
    if hit is not None and hit[0] is st.links_down and hit[1] is st.status:
        got: tuple[str, str | None] | None = hit[2]
        return got
    got = _route_now(st, p, cell)
    if len(routes) >= ROUTE_MEMO_SIZE:
        routes.clear()
    routes[key] = (st.links_down, st.status, got)
    return got


def _route_now(st: NodeState, p: str, cell: str) -> tuple[str, str | None] | None:
    ctx = st.ctx
    brokers = ctx.cell_brokers[cell]
    neighbours = ctx.neighbours
    avoid = ctx.policy.route_around_down_links
    linked = [b for b in brokers if b in neighbours and (b not in st.links_down or not avoid)]
    if linked:
        n = len(brokers)
        k = ctx.numbers[p]
        order = [brokers[(k + i) % n] for i in range(n)]
        needed = ctx.grandchildren.get((p, cell), ())
        fallback = None
        for b in order:
            if b not in linked:
                continue
            if fallback is None:
                fallback = b
            reach = st.status.get(b)
            if reach is None or all(c in reach for c in needed):
                return (b, None)
        return (fallback, None) if fallback is not None else None
    for nb in ctx.cell_neighbours:
        if nb in st.links_down:
            continue
        reach = st.status.get(nb)
        if reach is None or cell in reach:
            return (nb, cell)
    return None


def upstream(st: GDNode, s: Stream, p: str) -> tuple[str, ...]:
    """Where acks and nacks of ``p`` go [GD §3.1]: the last sender, else every up broker of
    the upstream cell."""
    ctx = st.ctx
    up_cell = ctx.parent.get(p)
    if up_cell is None:
        return ()
    if s.last_sender is not None and s.last_sender not in st.links_down:
        return (s.last_sender,)
    return tuple(
        b for b in ctx.cell_brokers[up_cell] if b in ctx.neighbours and b not in st.links_down
    )


def send_up(st: GDNode, s: Stream, msg: Any, step: Step) -> None:
    """Send an ack or nack of ``msg.pubend`` upstream [GD §3.1]."""
    for b in upstream(st, s, msg.pubend):
        step.out.append(Send(to=b, msg=msg))


def send_nacks(st: GDNode, s: Stream, p: str, rs: R.TickSet, repeat: bool, step: Step) -> None:
    """Nack ``rs`` upstream in chunks of at most ``nack_chunk_us`` ticks [GD §3.2, §4.2]."""
    for lo, hi in R.chunks(rs, st.ctx.config.nack_chunk_us):
        send_up(st, s, Nack(pubend=p, start=lo, end=hi, retransmission=repeat), step)


def reach(st: NodeState) -> tuple[str, ...]:
    """The other cells this broker has an up link to, sorted (its link status [GD §3.1])."""
    ctx = st.ctx
    cell_of = ctx.topology.cell_of
    return tuple(
        sorted(
            {
                cell_of(n)
                for n in ctx.neighbours
                if n not in st.links_down and cell_of(n) != ctx.cell
            }
        )
    )


def send_status(st: NodeState, step: Step) -> None:
    """Tell every neighbour with an up link which cells this broker reaches [GD §3.1]."""
    msg = LinkStatus(reach=reach(st))
    for n in st.ctx.neighbours:
        if n not in st.links_down:
            step.out.append(Send(to=n, msg=msg))


def rearm_status(st: NodeState, step: Step) -> None:
    """Arm the next link-status round [GD §3.1]."""
    step.out.append(
        SetTimer(
            key=timer_key(st.epoch, "status"), at=step.now + st.ctx.config.link_status_period_us
        )
    )


def on_status_timer(state: N, args: tuple[Any, ...], step: Step) -> N:
    """The link-status period expired: send the link status and re-arm [GD §3.1]."""
    send_status(state, step)
    rearm_status(state, step)
    return state


def on_link_status(state: N, sender: str, msg: LinkStatus, step: Step) -> N:
    """A neighbour's link status: the cells it reaches, for routing [GD §3.1]."""
    got = tuple(msg.reach)
    if state.status.get(sender) == got:
        return state
    return evolve(state, status=state.status.set(sender, got))


def on_link_changed(state: N, inp: LinkChanged, step: Step) -> N:
    """A link to ``inp.neighbour`` went down or came back [GD §3.1]; a down link forgets the
    neighbour's link status (a broker with streams also forgets it as last sender:
    :func:`gapless.impl.gd.istream.on_link_changed`)."""
    n = inp.neighbour
    if n not in state.ctx.neighbours:
        return state
    if inp.up:
        if n not in state.links_down:
            return state
        return evolve(state, links_down=state.links_down.remove(n))
    if n in state.links_down:
        return state
    st = evolve(state, links_down=state.links_down.add(n), status=state.status.discard(n))
    return st
