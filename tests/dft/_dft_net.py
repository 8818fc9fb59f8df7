"""A tiny deterministic network loop for the DFT roles (tests only).

Brokers are pure roles (:mod:`gapless.impl.dft.role`); each ordered pair of brokers has a FIFO
queue (a session's FIFO delivery [DFT §II]). A broker can reach another when both are alive
and the link between them (overlay sessions are direct connections) has not failed; a failure
loses every message in flight on the link. After every fault the failure detectors of the
live brokers are told of every reachability change in their neighbourhood (LinkChanged).
:meth:`Net.drain` delivers queued messages round-robin over the queues in sorted order until
none is left. Everything observable is recorded as the kit's ``TraceRecord`` values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.messages import wire
from gapless.impl.dft.role import Role, crash, handle, new_role
from gapless.impl.dft.state import BrokerState
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Deliver, Effect, Persist, Rejected, Send
from gapless.impl.inputs import Connect, Disconnect, Input, LinkChanged, Publish, Receive, Restart
from gapless.impl.trace import Dropped, Fault, Published, Received, Sent, TraceRecord, Wire

__all__ = ["Net", "figure1"]

_WIRE = Wire(kind="other")


def figure1() -> PrimaryTree:
    """Figure 1's network: B1-B2, B2-B3 (S1), B2-B4 (S2); P publishes at B1 [DFT §I]."""
    return PrimaryTree.build([("B1", None), ("B2", "B1"), ("B3", "B2"), ("B4", "B2")])


class Net:
    """Brokers of ``tree`` running ``policy``, with faults, FIFO queues and a trace."""

    def __init__(
        self, tree: PrimaryTree, config: DFTConfig | None = None, policy: DFTPolicy = PAPER_POLICY
    ) -> None:
        self.tree = tree
        self.config = config or DFTConfig()
        self.states: dict[str, Role] = {
            b: new_role(b, tree, self.config, policy) for b in tree.order
        }
        self.hood = {b: tree.neighbourhood(b, self.config.big_delta) for b in tree.order}
        self.alive: set[str] = set(tree.order)
        self.failed: set[frozenset[str]] = set()
        self.view = {(b, x): True for b in tree.order for x in self.hood[b]}
        self.queues: dict[tuple[str, str], deque[Any]] = {}
        self.records: list[TraceRecord] = []
        self.time = 0
        self.published: dict[str, int] = {}
        self.hosts: dict[str, str] = {}
        self.steps = 0

    # ---- recording -------------------------------------------------------------------
    def _record(self, node: str, kind: str, detail: Any) -> None:
        self.records.append(
            TraceRecord(seq=len(self.records), time=self.time, node=node, kind=kind, detail=detail)
        )

    def reachable(self, a: str, b: str) -> bool:
        return a in self.alive and b in self.alive and frozenset((a, b)) not in self.failed

    # ---- stepping ----------------------------------------------------------------------
    def step(self, node: str, inp: Input) -> None:
        self.time += 1
        self.steps += 1
        self.states[node], effects = handle(self.states[node], inp, self.time)
        self._apply(node, effects)

    def _apply(self, node: str, effects: Iterable[Effect]) -> None:
        for e in effects:
            if isinstance(e, Send):
                w = wire(e.msg) or _WIRE
                if self.reachable(node, e.to):
                    self._record(node, "send", Sent(to=e.to, msg=e.msg, wire=w))  # type: ignore[arg-type]
                    self.queues.setdefault((node, e.to), deque()).append(e.msg)
                else:
                    d = Dropped(sender=node, to=e.to, msg=e.msg, wire=w, reason="unreachable")  # type: ignore[arg-type]
                    self._record(node, "drop", d)
            elif isinstance(e, Deliver):
                self._record(node, "deliver", e)
            elif isinstance(e, Persist):
                self._record(node, "persist", e)
            elif isinstance(e, Rejected):
                self._record(node, "rejected", e)

    def drain(self, limit: int = 200_000, rounds: int | None = None) -> int:
        """Deliver queued messages until none is left (or for ``rounds`` rounds, each
        delivering the head of every non-empty queue); the number delivered."""
        n = 0
        while rounds is None or rounds > 0:
            if rounds is not None:
                rounds -= 1
            keys = sorted(k for k, q in self.queues.items() if q)
            if not keys:
                return n
            for a, b in keys:
                msg = self.queues[(a, b)].popleft()
                n += 1
                if n > limit:
                    raise RuntimeError("drain: no quiescence")
                self._record(b, "receive", Received(sender=a, msg=msg, wire=wire(msg) or _WIRE))  # type: ignore[arg-type]
                self.step(b, Receive(sender=a, msg=msg))
        return n

    # ---- client actions ---------------------------------------------------------------
    def subscribe(self, broker: str, subscriber: str, flt: str) -> None:
        inp = Connect(subscriber=subscriber, filter=flt)
        self.hosts[subscriber] = broker
        self._record(broker, "connect", inp)
        self.step(broker, inp)

    def publish(self, broker: str, **attributes: Any) -> None:
        n = self.published.get(broker, 0) + 1
        self.published[broker] = n
        self._record(broker, "publish", Published(pubend=broker, index=n, attributes=attributes))
        self.step(broker, Publish(pubend=broker, attributes=attributes))

    # ---- faults -----------------------------------------------------------------------
    def _lose_in_flight(self, pairs: Iterable[tuple[str, str]]) -> None:
        for a, b in pairs:
            q = self.queues.pop((a, b), None)
            for msg in q or ():
                d = Dropped(sender=a, to=b, msg=msg, wire=wire(msg) or _WIRE, reason="link down")  # type: ignore[arg-type]
                self._record(a, "drop", d)

    def _detect(self) -> None:
        for b in sorted(self.alive):
            for x in sorted(self.hood[b]):
                up = self.reachable(b, x)
                if self.view[(b, x)] != up:
                    self.view[(b, x)] = up
                    inp = LinkChanged(neighbour=x, up=up)
                    self._record(b, "link", inp)
                    self.step(b, inp)

    def fail_link(self, a: str, b: str) -> None:
        self.failed.add(frozenset((a, b)))
        self._record(a, "fault", Fault(kind="link_fail", target=f"{a}|{b}"))
        self._lose_in_flight([(a, b), (b, a)])
        self._detect()

    def heal_link(self, a: str, b: str) -> None:
        self.failed.discard(frozenset((a, b)))
        self._record(a, "fault", Fault(kind="link_heal", target=f"{a}|{b}", phase="end"))
        self._detect()

    def crash(self, b: str) -> None:
        self.alive.discard(b)
        self._record(b, "fault", Fault(kind="crash", target=b))
        for sub in sorted(s for s, h in self.hosts.items() if h == b):
            self._record(b, "disconnect", Disconnect(subscriber=sub))  # its clients are cut off
            del self.hosts[sub]
        self._lose_in_flight([k for k in self.queues if b in k])
        self.states[b] = crash(self.states[b])
        self.view.update({(b, x): False for x in self.hood[b]})
        self._detect()

    def restart(self, b: str) -> None:
        """``b`` restarts after a crash (stable storage kept): its failure detector and its
        neighbours' report it reachable again [DFT §VIII-B]."""
        self.alive.add(b)
        self._record(b, "fault", Fault(kind="restart", target=b, phase="end"))
        self.step(b, Restart())
        for x in sorted(self.hood[b]):  # as the world does: every neighbour, up or down
            up = self.reachable(b, x)
            self.view[(b, x)] = up
            inp = LinkChanged(neighbour=x, up=up)
            self._record(b, "link", inp)
            self.step(b, inp)
        self._detect()

    # ---- reading ----------------------------------------------------------------------
    def delivered(self, subscriber: str) -> list[tuple[str, int]]:
        """``(pubend, tick)`` delivered to ``subscriber``, in order."""
        return [
            (r.detail.pubend, r.detail.tick)
            for r in self.records
            if r.kind == "deliver" and r.detail.subscriber == subscriber
        ]

    def broker(self, b: str) -> BrokerState:
        s = self.states[b]
        assert isinstance(s, BrokerState)
        return s
