"""A tiny best-effort flooding protocol used to test the world without the GD roles.

PHB: logs each published message (Persist), then floods it down the cell tree; IB: forwards;
SHB: delivers to connected subscribers (dropping duplicates). No acks, nacks or timers — so it
loses messages under faults, which the liveness invariant must catch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import networkx as nx
from pyrsistent import PMap, pmap

from gapless.impl.effects import Deliver, Effect, Persist, Send, SetTimer
from gapless.impl.inputs import (
    Connect,
    Disconnect,
    Input,
    Persisted,
    Publish,
    Receive,
    Restart,
    TimerFired,
)
from gapless.impl.trace import Wire
from gapless.models.topology import cell_members, cell_of, downstream_cells
from gapless.models.workload import PublishEvent


@attrs.frozen
class Data:
    pubend: str
    tick: int
    attributes: PMap[str, Any]


@attrs.frozen
class Ack:
    pubend: str
    upto: int


@attrs.frozen
class ToyState:
    name: str
    role: str
    down: tuple[str, ...]
    up: tuple[str, ...]
    subs: PMap[str, int] = attrs.field(factory=pmap)
    seen: PMap[str, int] = attrs.field(factory=pmap)
    log: PMap[tuple[str, int], PMap[str, Any]] = attrs.field(factory=pmap)
    pending: PMap[Any, Any] = attrs.field(factory=pmap)


class ToyBinding:
    status_period_us = 0
    min_repetition_us = 100_000

    def __init__(self, graph: nx.Graph, *, ack: bool = True, tick_timer: bool = False) -> None:
        self.graph = graph
        self.ack = ack
        self.tick_timer = tick_timer

    def initial_states(self) -> dict[str, Any]:
        out = {}
        for n, d in sorted(self.graph.nodes(data=True)):
            cell = cell_of(self.graph, n)
            down = tuple(cell_members(self.graph, c)[0] for c in downstream_cells(self.graph, cell))
            up = tuple(
                sorted(
                    m
                    for u, dd in self.graph.graph["cell_tree"]
                    if dd == cell
                    for m in cell_members(self.graph, u)
                )
            )
            out[n] = ToyState(name=n, role=d["role"], down=down, up=up)
        return out

    def handle(self, s: ToyState, inp: Input, now: int) -> tuple[ToyState, tuple[Effect, ...]]:
        if isinstance(inp, Publish):
            tick = now * 8 + sorted(p for p, _ in self.graph.graph["pubends"]).index(inp.pubend)
            key = ("log", inp.pubend, tick)
            return attrs.evolve(s, pending=s.pending.set(key, inp.attributes)), (
                Persist(key=key, value=(inp.pubend, tick, inp.attributes), delay=100_000),
            )
        if isinstance(inp, Persisted):
            _, pubend, tick = inp.key
            a = s.pending[inp.key]
            s = attrs.evolve(s, pending=s.pending.remove(inp.key), log=s.log.set((pubend, tick), a))
            msg = Data(pubend=pubend, tick=tick, attributes=a)
            effs: list[Effect] = [Send(to=d, msg=msg) for d in s.down]
            if self.tick_timer:
                effs.append(SetTimer(key=("t", tick), at=now + 10))
            return s, tuple(effs)
        if isinstance(inp, Receive) and isinstance(inp.msg, Data):
            m = inp.msg
            if s.role == "shb":
                if s.seen.get(m.pubend, -1) >= m.tick:
                    return s, ()
                s = attrs.evolve(s, seen=s.seen.set(m.pubend, m.tick))
                effs = [
                    Deliver(
                        subscriber=sub,
                        pubend=m.pubend,
                        tick=m.tick,
                        payload=m.attributes,
                        connection=c,
                    )
                    for sub, c in sorted(s.subs.items())
                ]
                if self.ack:
                    effs.extend(Send(to=u, msg=Ack(pubend=m.pubend, upto=m.tick)) for u in s.up)
                return s, tuple(effs)
            return s, tuple(Send(to=d, msg=m) for d in s.down)
        if isinstance(inp, Receive) and isinstance(inp.msg, Ack):
            if s.role == "phb":
                return s, ()
            return s, tuple(Send(to=u, msg=inp.msg) for u in s.up)
        if isinstance(inp, Connect):
            return attrs.evolve(s, subs=s.subs.set(inp.subscriber, inp.connection)), ()
        if isinstance(inp, Disconnect):
            return attrs.evolve(s, subs=s.subs.discard(inp.subscriber)), ()
        if isinstance(inp, TimerFired):
            return attrs.evolve(s, pending=s.pending.set(("fired", inp.key), now)), ()
        if isinstance(inp, Restart):
            return s, ()
        return s, ()

    def crash(self, s: ToyState) -> ToyState:
        return attrs.evolve(s, subs=pmap(), seen=pmap(), pending=pmap())

    def publish_input(self, ev: PublishEvent) -> Publish:
        return Publish(pubend=ev.pubend, attributes=ev.attributes, size=ev.size)

    def wire(self, msg: Any) -> Wire:
        if isinstance(msg, Data):
            return Wire(kind="data", pubend=msg.pubend, data_ticks=(msg.tick,))
        if isinstance(msg, Ack):
            return Wire(kind="ack", pubend=msg.pubend, upto=msg.upto)
        return Wire(kind="other")

    def logged(self, p: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        pubend, tick, a = p.value
        return pubend, tick, a

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        return payload  # type: ignore[no-any-return]

    def coverage(self, before: Any, after: Any, inp: Input) -> Iterable[str]:
        return (f"toy:{type(inp).__name__}",)


def true_only(flt: str, attributes: Mapping[str, Any]) -> bool:
    assert flt == "true", flt
    return True
