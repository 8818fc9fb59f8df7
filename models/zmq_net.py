"""A deterministic network for the ZeroMQ forwarding roles, recording a trace.

Every edge is a pair of FIFO connections with a fixed latency (TCP's order within one
connection, nothing across connections). An edge that goes down loses what is in flight (the
connection's lifetime ends); when it comes back both ends are told (``LinkChanged``) and a new
lifetime starts. A device restart takes all its edges down, resets it
(``gapless.impl.zmq.device.restart``) and brings them up again. Applications act through
scheduled inputs. Same script, same trace.

Records are ``gapless.impl.trace.TraceRecord`` values with the details of
``gapless.impl.zmq.records``; :func:`run_script` returns them with the final states.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from gapless.impl.effects import Deliver, Effect, Rejected, Send
from gapless.impl.inputs import LinkChanged, Receive
from gapless.impl.trace import Fault, TraceRecord
from gapless.impl.zmq import NodeState, handle
from gapless.impl.zmq.device import DeviceState, restart
from gapless.impl.zmq.messages import Install, Notify, Post, Subscribe, Unsubscribe, wire
from gapless.impl.zmq.policy import PAPER_POLICY, XpubOptions, ZmqPolicy
from gapless.impl.zmq.pub import PubState
from gapless.impl.zmq.records import (
    AppChange,
    LinkEvent,
    Posted,
    WireReceived,
    WireSent,
    ZmqTopology,
)
from gapless.impl.zmq.sub import SubState
from gapless.impl.zmq.xpub import XpubHalf

__all__ = ["Action", "ZmqNet", "build_states", "run_script"]

Action = tuple[Any, ...]
"""``("app", node, input)``, ``("link", up, down, is_up)`` or ``("restart", device)``."""


def build_states(
    topo: ZmqTopology,
    policy: ZmqPolicy = PAPER_POLICY,
    options: Mapping[str, XpubOptions] | None = None,
) -> dict[str, NodeState]:
    """Initial states for ``topo``: XPUB endpoints, devices and SUBs (XSUBs when
    ``unfiltered``); ``options`` per XPUB-side node."""
    options = options or {}
    states: dict[str, NodeState] = {}
    for name in topo.publishers + topo.devices:
        mcast = frozenset(e.down for e in topo.children(name) if e.multicast)
        half = XpubHalf(options=options.get(name, XpubOptions()), multicast=mcast)
        if name in topo.publishers:
            states[name] = PubState(name=name, half=half, policy=policy)
    for name in topo.devices:
        ups = tuple(e.up for e in topo.edges if e.down == name)
        mcast_up = frozenset(e.up for e in topo.edges if e.down == name and e.multicast)
        down_mcast = frozenset(e.down for e in topo.children(name) if e.multicast)
        half = XpubHalf(options=options.get(name, XpubOptions()), multicast=down_mcast)
        states[name] = DeviceState(
            name=name, upstream=ups, multicast=mcast_up, half=half, policy=policy
        )
    for name in topo.subscribers:
        ups = tuple(e.up for e in topo.edges if e.down == name)
        mcast_up = frozenset(e.up for e in topo.edges if e.down == name and e.multicast)
        states[name] = SubState(
            name=name,
            upstream=ups,
            multicast=mcast_up,
            filter=name not in topo.unfiltered,
            policy=policy,
        )
    return states


@attrs.define
class ZmqNet:
    """The running network (mutable; see module doc)."""

    topo: ZmqTopology
    states: dict[str, NodeState]
    latency: int = 1_000
    now: int = 0
    records: list[TraceRecord] = attrs.field(factory=list)
    lifetimes: dict[tuple[str, str], int] = attrs.field(factory=dict)
    _queue: list[tuple[int, int, Action]] = attrs.field(factory=list)
    _seq: int = 0

    def at(self, time: int, action: Action) -> None:
        """Schedule ``action`` at virtual time ``time`` (µs)."""
        self._seq += 1
        heapq.heappush(self._queue, (time, self._seq, action))

    def record(self, node: str, kind: str, detail: Any) -> None:
        self.records.append(
            TraceRecord(seq=len(self.records), time=self.now, node=node, kind=kind, detail=detail)
        )

    def run(self) -> None:
        """Run until nothing is left to do."""
        while self._queue:
            time, _, action = heapq.heappop(self._queue)
            self.now = time
            self._act(action)

    def _act(self, action: Action) -> None:
        kind = action[0]
        if kind == "app":
            self._app(action[1], action[2])
        elif kind == "link":
            self._link(action[1], action[2], action[3])
        elif kind == "deliver":
            self._arrive(action[1], action[2], action[3], action[4])
        elif kind == "restart":
            self._restart(action[1])

    def _step(self, node: str, inp: object) -> None:
        state, effects = handle(self.states[node], inp, self.now)
        self.states[node] = state
        self._effects(node, effects)

    def _app(self, node: str, inp: object) -> None:
        if isinstance(inp, Subscribe | Unsubscribe):
            change = AppChange(subscribe=isinstance(inp, Subscribe), topic=inp.topic, kind=inp.kind)
            self.record(node, "subscribe", change)
        self._step(node, inp)
        if isinstance(inp, Post):
            state = self.states[node]
            assert isinstance(state, PubState)
            self.record(node, "publish", Posted(seq=state.seq, payload=inp.payload))

    def _effects(self, node: str, effects: Iterable[Effect | Notify]) -> None:
        for eff in effects:
            if isinstance(eff, Send):
                self.record(node, "send", WireSent(to=eff.to, wire=wire(eff.msg)))
                key = _edge_key(self.topo, node, eff.to)
                life = self.lifetimes.get(key, 0)
                self.at(self.now + self.latency, ("deliver", node, eff.to, eff.msg, life))
            elif isinstance(eff, Deliver):
                self.record(node, "deliver", eff)
            elif isinstance(eff, Notify):
                self.record(node, "notify", eff)
                state = self.states[node]
                if isinstance(state, PubState) and state.half.options.manual:
                    # the publisher's application installs what its peer asked for
                    m = eff.message
                    self._step(node, Install(peer=eff.peer, topic=m.topic, subscribe=m.subscribe))
            elif isinstance(eff, Rejected):
                self.record(node, "rejected", eff)

    def _arrive(self, sender: str, to: str, msg: Any, life: int) -> None:
        key = _edge_key(self.topo, sender, to)
        if life != self.lifetimes.get(key, 0) or life % 2 == 0:
            return  # the connection it was sent on is gone
        self.record(to, "receive", WireReceived(sender=sender, wire=wire(msg)))
        self._step(to, Receive(sender=sender, msg=msg))

    def _link(self, up: str, down: str, is_up: bool) -> None:
        key = (up, down)
        life = self.lifetimes.get(key, 0)
        if (life % 2 == 1) == is_up:
            return
        self.lifetimes[key] = life + 1  # odd: up, even: down
        self.record(up, "link", LinkEvent(up_node=up, down_node=down, up=is_up))
        self._step(up, LinkChanged(neighbour=down, up=is_up))
        self._step(down, LinkChanged(neighbour=up, up=is_up))

    def _restart(self, node: str) -> None:
        state = self.states[node]
        if not isinstance(state, DeviceState):
            return
        self.record(node, "fault", Fault(kind="restart", target=node))
        edges = [
            e
            for e in self.topo.edges
            if node in (e.up, e.down) and self.lifetimes.get((e.up, e.down), 0) % 2 == 1
        ]  # the edges that were up come back; those that were down stay down
        for e in edges:
            self._link(e.up, e.down, False)
        self.states[node] = restart(self.states[node])  # type: ignore[arg-type]
        for e in edges:
            self._link(e.up, e.down, True)


def _edge_key(topo: ZmqTopology, a: str, b: str) -> tuple[str, str]:
    return (a, b) if topo.edge(a, b) is not None else (b, a)


def run_script(
    topo: ZmqTopology,
    script: Iterable[tuple[int, Action]],
    policy: ZmqPolicy = PAPER_POLICY,
    options: Mapping[str, XpubOptions] | None = None,
    latency: int = 1_000,
) -> ZmqNet:
    """Build the network, bring every edge up at time 0, run ``script``; the finished net."""
    net = ZmqNet(topo=topo, states=build_states(topo, policy, options), latency=latency)
    for e in topo.edges:
        net.at(0, ("link", e.up, e.down, True))
    for time, action in script:
        net.at(time, action)
    net.run()
    return net
