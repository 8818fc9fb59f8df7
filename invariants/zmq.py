"""Trace-only invariants of ZeroMQ subscription forwarding [ZMQ].

Theory of operation
-------------------
Each invariant is a plug-in with ``names``, ``observe(record) -> bool`` (True: it found a
violation) and ``finish() -> bool``, reporting :class:`~gapless.invariants.violation.Violation`
values in ``violations``. They read only trace records (``gapless.impl.zmq.records``): what
applications subscribed and published, what crossed each edge, what was delivered, which
links came and went. They never look at a role's state, so the same plug-ins judge the model
and a trace recorded from real libzmq.

*Settling.* Completeness, minimal traffic and consistency are judged on the quiet tail of a
drained run: the settle point is the later of the last churn record (an application
(un)subscribing, a link change, a fault) and the last subscription message to arrive
anywhere; messages published after it are judged.

* ``completeness`` — every message published after settling reaches every SUB below the
  publisher (over live links) whose live subscriptions match it, exactly once; no
  subscriber gets one message twice on one connection lifetime.
* ``minimal_traffic`` — after settling a message crosses an edge only if a subscriber below
  it matches (a uni-directional edge, an unknown matching kind and a multicast segment below
  count as "everything", as the paper states), once per edge. Under the N-subscription
  fallback the excess is counted in ``excess``, not a violation.
* ``subscription_consistency`` — after settling, the subscriptions an upstream node holds for
  a live peer (rebuilt from the messages it received on the current connection lifetime)
  equal what is live below that peer: a SUB's own subscriptions, a device's union of its live
  peers' (semantically: equal minimal covers under subsumption, everything beyond N under
  the fallback). A stale subscription after a disconnect and a missing one after a
  reconnect both break it.
* ``no_unsubscribed_delivery`` — a SUB never hands its application a message none of its
  live subscriptions matches, not even one in flight across an unsubscribe.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, final

import attrs

from gapless.impl.effects import Deliver
from gapless.impl.inputs import Connect, Disconnect
from gapless.impl.trace import Fault, Published, TraceRecord
from gapless.impl.zmq.aggregation import aggregate, minimal_cover
from gapless.impl.zmq.messages import PREFIX, ZmqWire
from gapless.impl.zmq.records import (
    AppChange,
    LinkEvent,
    Posted,
    WireReceived,
    ZmqTopology,
)
from gapless.impl.zmq.sub import sub_matches
from gapless.invariants.violation import Violation

__all__ = [
    "INVARIANTS",
    "NAMES",
    "SAFETY",
    "Completeness",
    "Ledger",
    "MinimalTraffic",
    "NoUnsubscribedDelivery",
    "SubscriptionConsistency",
    "WorldReader",
    "ZmqCheckContext",
    "ZmqChecker",
    "check",
    "check_ledger",
]

Key = tuple[str, bytes]


class Ledger:
    """What the records say so far (shared reading of a trace by every plug-in)."""

    def __init__(self, topology: ZmqTopology, up: Iterable[tuple[str, str]] = ()) -> None:
        self.topology = topology
        self.subs: dict[str, Counter[Key]] = {s: Counter() for s in topology.subscribers}
        self.live: dict[tuple[str, str], bool] = {(e.up, e.down): False for e in topology.edges}
        for edge in up:  # edges that are up before the first record
            self.live[edge] = True
        self.held: dict[tuple[str, str], set[Key]] = {k: set() for k in self.live}
        self.churn_at = -1
        self.sub_arrival_at = -1
        self.posts: list[tuple[int, str, int, bytes]] = []
        self.data_sends: list[tuple[int, str, str, str, int, bytes]] = []
        self.delivers: list[TraceRecord] = []

    def observe(self, r: TraceRecord) -> None:
        d = r.detail
        if r.kind == "subscribe" and isinstance(d, AppChange):
            self.churn_at = r.time
            counts = self.subs.setdefault(r.node, Counter())
            key = (d.kind, d.topic)
            if d.subscribe:
                counts[key] += 1
            elif counts[key] > 0:
                counts[key] -= 1
                if counts[key] == 0:
                    del counts[key]
        elif r.kind == "link" and isinstance(d, LinkEvent):
            self.churn_at = r.time
            self.live[(d.up_node, d.down_node)] = d.up
            self.held[(d.up_node, d.down_node)] = set()
        elif r.kind == "fault":
            self.churn_at = r.time
        elif r.kind == "publish" and isinstance(d, Posted):
            self.posts.append((r.time, r.node, d.seq, d.payload))
        elif r.kind == "send" and isinstance(getattr(d, "wire", None), ZmqWire):
            w = d.wire
            if w.kind == "data":
                self.data_sends.append((r.time, r.node, d.to, w.origin, w.seq, w.payload))
            elif self.margin_us is not None:  # a world trace records sends, not arrivals
                self._subscription_arrived(r.time + self.margin_us, d.to, r.node, w)
        elif r.kind == "receive" and isinstance(d, WireReceived) and d.wire.kind != "data":
            self._subscription_arrived(r.time, r.node, d.sender, d.wire)
        elif r.kind == "deliver" and isinstance(d, Deliver):
            self.delivers.append(r)

    margin_us: int | None = None
    """Set for traces that record sends but not arrivals (the simulated world's): a
    subscription message is taken to arrive this long after it is sent (the link's delay
    plus jitter); a message lost with its link belongs to a lifetime that ended."""

    def _subscription_arrived(self, time: int, node: str, sender: str, wire: ZmqWire) -> None:
        self.sub_arrival_at = max(self.sub_arrival_at, time)
        held = self.held.get((node, sender))
        if held is None:
            return
        key = (wire.match, wire.topic)
        if wire.kind == "subscribe":
            held.add(key)
        else:
            held.discard(key)

    @property
    def settle_point(self) -> int:
        """Messages published strictly after this time are judged."""
        return max(self.churn_at, self.sub_arrival_at)

    def settled_posts(self) -> list[tuple[int, str, int, bytes]]:
        return [p for p in self.posts if p[0] > self.settle_point]

    def below(self, node: str) -> list[str]:
        """``node`` and every node below it over live edges."""
        out, todo = [node], [node]
        while todo:
            n = todo.pop()
            for e in self.topology.children(n):
                if self.live[(e.up, e.down)] and e.down not in out:
                    out.append(e.down)
                    todo.append(e.down)
        return out

    def wants(self, node: str, payload: bytes) -> bool:
        """Some subscriber at or below ``node`` (over live edges) wants ``payload`` on the
        edge into ``node`` (an unknown kind, a multicast edge below: everything)."""
        for n in self.below(node):
            if any(k != PREFIX or payload.startswith(t) for k, t in self.subs.get(n, {})):
                return True
            if any(e.multicast and self.live[(e.up, e.down)] for e in self.topology.children(n)):
                return True
        return False

    def expected_below(self, node: str) -> set[Key]:
        """What ``node``'s upstream should hold for it: a subscriber's live subscriptions; a
        device's aggregation of the union of its live peers' (everything for a multicast
        peer) — the union of what is live downstream [ZMQ "Subscription Forwarding"]."""
        if node in self.topology.subscribers:
            return set(self.subs.get(node, {}))
        out: set[Key] = set()
        for e in self.topology.children(node):
            if self.live[(e.up, e.down)]:
                out |= {(PREFIX, b"")} if e.multicast else self.expected_below(e.down)
        topo = self.topology
        return set(
            aggregate(frozenset(out), subsumption=topo.subsumption, limit=topo.fallback_limit)
        )


class _Plugin:
    names: tuple[str, ...] = ()

    def __init__(self, topology: ZmqTopology, ledger: Ledger | None = None) -> None:
        """A plug-in over its own ledger, or over a shared one that its owner feeds."""
        self.own = ledger is None
        self.ledger = Ledger(topology) if ledger is None else ledger
        self.violations: list[Violation] = []

    def observe(self, r: TraceRecord) -> bool:
        if self.own:
            self.ledger.observe(r)
        return False

    def finish(self) -> bool:
        return bool(self.violations)

    def _flag(self, subject: str, message: str, time: int, events: Iterable[Any] = ()) -> None:
        self.violations.append(
            Violation(
                invariant=self.names[0],
                subject=subject,
                message=message,
                time=time,
                events=tuple(events),
            )
        )


class NoUnsubscribedDelivery(_Plugin):
    """A SUB never delivers what none of its live subscriptions matches (online)."""

    names = ("no_unsubscribed_delivery",)

    def observe(self, r: TraceRecord) -> bool:
        super().observe(r)
        d = r.detail
        topo = self.ledger.topology
        if r.kind != "deliver" or not isinstance(d, Deliver) or d.subscriber in topo.unfiltered:
            return False
        live = self.ledger.subs.get(d.subscriber, Counter())
        if any(sub_matches(k, t, d.payload) for k, t in live):
            return False
        self._flag(
            d.subscriber, f"delivered {d.payload!r} matching no live subscription", r.time, [r]
        )
        return True


class Completeness(_Plugin):
    """After settling, every matching SUB below the publisher gets each message once."""

    names = ("completeness",)

    def finish(self) -> bool:
        led = self.ledger
        ds = [r.detail for r in led.delivers]
        got = Counter((d.subscriber, d.pubend, d.tick) for d in ds)
        per_conn = Counter((d.subscriber, d.pubend, d.tick, d.connection) for d in ds)
        for (node, origin, seq, _conn), n in sorted(per_conn.items()):
            if n > 1 and seq > 0:
                self._flag(node, f"{origin}#{seq} delivered {n} times on one connection", 0)
        for time, origin, seq, payload in led.settled_posts():
            for node in led.below(origin):
                if node not in led.topology.subscribers:
                    continue
                wanted = any(sub_matches(k, t, payload) for k, t in led.subs.get(node, {}))
                if node in led.topology.unfiltered:
                    wanted = wanted or any(k != PREFIX for k, _ in led.subs.get(node, {}))
                if wanted and got[(node, origin, seq)] != 1:
                    n = got[(node, origin, seq)]
                    self._flag(node, f"{origin}#{seq} {payload!r} delivered {n} times", time)
        return bool(self.violations)


class MinimalTraffic(_Plugin):
    """After settling, data crosses an edge only towards a matching subscriber, once."""

    names = ("minimal_traffic",)

    def __init__(self, topology: ZmqTopology, ledger: Ledger | None = None) -> None:
        super().__init__(topology, ledger)
        self.excess = 0

    def finish(self) -> bool:
        led = self.ledger
        payloads = {(p[1], p[2]): p[3] for p in led.settled_posts()}
        crossings = Counter(
            (frm, to, origin, seq)
            for _, frm, to, origin, seq, _ in led.data_sends
            if (origin, seq) in payloads
        )
        for (frm, to, origin, seq), n in sorted(crossings.items()):
            edge = led.topology.edge(frm, to)
            payload = payloads[(origin, seq)]
            if n > 1:
                self._flag(to, f"{origin}#{seq} crossed {frm}->{to} {n} times", 0)
            elif edge is not None and not edge.multicast and not led.wants(to, payload):
                if led.topology.fallback_limit is not None:
                    self.excess += 1
                else:
                    self._flag(to, f"{origin}#{seq} {payload!r} sent {frm}->{to} unwanted", 0)
        return bool(self.violations)


class SubscriptionConsistency(_Plugin):
    """After settling, each upstream node holds for each live peer what is live below it."""

    names = ("subscription_consistency",)

    def finish(self) -> bool:
        led = self.ledger
        topo = led.topology
        for e in topo.edges:
            if e.multicast or not led.live[(e.up, e.down)]:
                continue
            if topo.observed is not None and e.up not in topo.observed:
                continue
            if topo.hosted and e.down in topo.subscribers:
                continue
            held = led.held[(e.up, e.down)]
            expected = led.expected_below(e.down)
            if _same(held, expected, topo.subsumption):
                continue
            stale = sorted(held - expected)
            missing = sorted(expected - held)
            self._flag(
                e.up,
                f"holds for {e.down}: stale {stale}, missing {missing}",
                led.settle_point,
            )
        return bool(self.violations)


def _same(held: set[Key], expected: set[Key], subsumption: bool) -> bool:
    if not subsumption:
        return held == expected

    def norm(keys: set[Key]) -> tuple[frozenset[bytes], frozenset[Key]]:
        prefixes = minimal_cover(t for k, t in keys if k == PREFIX)
        return prefixes, frozenset(k for k in keys if k[0] != PREFIX)

    return norm(held) == norm(expected)


INVARIANTS: tuple[type[_Plugin], ...] = (
    Completeness,
    MinimalTraffic,
    SubscriptionConsistency,
    NoUnsubscribedDelivery,
)
NAMES: Final = tuple(p.names[0] for p in INVARIANTS)
SAFETY: Final = ("no_unsubscribed_delivery",)
"""The invariant that holds at every moment, whatever the faults (the others are judged
after settling)."""


def check(
    topology: ZmqTopology, records: Sequence[TraceRecord], names: Iterable[str] | None = None
) -> list[Violation]:
    """Run the invariants (all, or those named) over ``records``; their violations."""
    return check_ledger(Ledger(topology), records, names)


def check_ledger(
    ledger: Ledger, records: Sequence[TraceRecord], names: Iterable[str] | None = None
) -> list[Violation]:
    """Run the invariants (all, or those named) over ``records`` read into ``ledger`` (a
    fresh one, set up for the trace: edges up at its start, arrival margin)."""
    wanted = set(names) if names is not None else None
    topology = ledger.topology
    plugins = [p(topology, ledger) for p in INVARIANTS if wanted is None or p.names[0] in wanted]
    for r in records:
        ledger.observe(r)
        for p in plugins:
            p.observe(r)
    out: list[Violation] = []
    for p in plugins:
        p.finish()
        out.extend(p.violations)
    return out


# --------------------------------------------------------------------------------------------
# the simulated world's generic trace (gapless.models.world), read for the ledger
# --------------------------------------------------------------------------------------------


@final
@attrs.frozen(kw_only=True)
class ZmqCheckContext:
    """What the invariants know of a world run besides its records: the ``topology``
    (oriented graph edges, then each hosted subscriber's edge from its device), the prefix
    a subscriber holds on its n-th connection (``subscription_of``: kind and topic), how a
    message's attributes
    become its payload (``payload_of``), the graph edges up at boot and the arrival
    ``margin_us``."""

    topology: ZmqTopology
    subscription_of: Callable[[str, int], tuple[str, bytes]]
    payload_of: Callable[[Mapping[str, Any]], bytes]
    graph_edges: tuple[tuple[str, str], ...]
    margin_us: int


class WorldReader:
    """Turns the world's records into the ledger's: a publish into :class:`Posted` (the
    ``index``-th message of a pubend is its ``index + 1``-th), a subscriber's connect and
    disconnect into its link and its subscription coming and going, a crash or a link
    failure into the link changes it makes."""

    def __init__(self, ctx: ZmqCheckContext) -> None:
        self.ctx = ctx
        self.down: set[str] = set()
        self.failed: Counter[frozenset[str]] = Counter()
        self.connection: dict[str, int] = {}

    def _live(self, edge: tuple[str, str]) -> bool:
        return not (set(edge) & self.down) and not self.failed[frozenset(edge)]

    def translate(self, r: TraceRecord) -> list[TraceRecord]:
        d = r.detail
        if r.kind == "publish" and isinstance(d, Published):
            payload = self.ctx.payload_of(d.attributes)
            return [_rec(r, d.pubend, "publish", Posted(seq=d.index + 1, payload=payload))]
        if r.kind in ("connect", "disconnect") and isinstance(d, Connect | Disconnect):
            up = isinstance(d, Connect)
            if isinstance(d, Connect):
                self.connection[d.subscriber] = d.connection
            kind, topic = self.ctx.subscription_of(
                d.subscriber, self.connection.get(d.subscriber, 0)
            )
            link = _rec(r, r.node, "link", LinkEvent(up_node=r.node, down_node=d.subscriber, up=up))
            change = AppChange(subscribe=up, topic=topic, kind=kind)
            sub = _rec(r, d.subscriber, "subscribe", change)
            return [link, sub] if up else [sub, link]
        if r.kind == "fault" and isinstance(d, Fault):
            return [r, *self._fault(r, d)]
        return [r]

    def _fault(self, r: TraceRecord, f: Fault) -> list[TraceRecord]:
        before = {e: self._live(e) for e in self.ctx.graph_edges}
        start = f.phase == "start"
        if f.kind == "crash":
            (self.down.add if start else self.down.discard)(f.target)
        elif f.kind == "link_fail":
            self.failed[frozenset(f.target.split("|"))] += 1 if start else -1
        out = []
        for e, was in before.items():
            now = self._live(e)
            if now != was:
                out.append(_rec(r, e[0], "link", LinkEvent(up_node=e[0], down_node=e[1], up=now)))
        return out


def _rec(r: TraceRecord, node: str, kind: str, detail: Any) -> TraceRecord:
    return TraceRecord(seq=r.seq, time=r.time, node=node, kind=kind, detail=detail)


class ZmqChecker:
    """The registry's checker for a world run: ``observe(record) -> bool`` (True: stop, a
    violation), ``finish(end)``, ``violation``, ``publish_time``, ``restrict``."""

    def __init__(self, ctx: ZmqCheckContext, names: Iterable[str] = ()) -> None:
        chosen = set(names) or set(NAMES)
        self.reader = WorldReader(ctx)
        self.ledger = Ledger(ctx.topology, up=ctx.graph_edges)
        self.ledger.margin_us = ctx.margin_us
        self.plugins = [p(ctx.topology, self.ledger) for p in INVARIANTS if p.names[0] in chosen]
        self.violation: Violation | None = None
        self._published: dict[tuple[str, int], int] = {}

    def restrict(self, names: Iterable[str]) -> None:
        """Judge only ``names`` from now on."""
        keep = set(names)
        self.plugins = [p for p in self.plugins if p.names[0] in keep]

    def observe(self, record: TraceRecord) -> bool:
        for r in self.reader.translate(record):
            self.ledger.observe(r)
            if r.kind == "publish" and isinstance(r.detail, Posted):
                self._published[(r.node, r.detail.seq)] = r.time
            for p in self.plugins:
                if p.observe(r) and self.violation is None:
                    self.violation = p.violations[0]
        return self.violation is not None

    def finish(self, end: TraceRecord) -> Violation | None:
        """Judge what is judged at the end; the first violation, if any."""
        if self.violation is None:
            for p in self.plugins:
                if p.finish() and self.violation is None:
                    self.violation = p.violations[0]
        return self.violation

    def publish_time(self, pubend: str, tick: int) -> int | None:
        """When ``pubend`` published its ``tick``-th message (for latency counters)."""
        return self._published.get((pubend, tick))
