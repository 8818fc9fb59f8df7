"""GD roles wired into a tiny deterministic network: the paper's failure scenarios end to end,
and every planted bug of the zoo visibly breaking a property the wire or the deliveries show.

The network here is a minimal stand-in (fixed link delay, scripted drops, crashes, link
changes); ``gapless.models`` is the real world. Checks judge only effects: what was logged,
sent and delivered.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from gapless.impl.effects import Deliver, DeliverCohort, Persist, Send, SetTimer, deliveries
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd import (
    PAPER_POLICY,
    Ack,
    AckExpected,
    GDConfig,
    GDPolicy,
    GDTopology,
    Knowledge,
    Nack,
    SubscriberSpec,
    crash,
    figure3,
    handle,
    initial_states,
    logged,
)
from gapless.impl.inputs import (
    Connect,
    LinkChanged,
    Persisted,
    Publish,
    Receive,
    Restart,
    TimerFired,
)
from gapless.impl.ticksets import is_canonical
from gapless.invariants.gd.forms import malformed
from gapless.spark_fuzz.zoo import ZOO, bug_names, policy_by_name
from gapless.spec.filters import reference_match

Drop = Callable[[int, str, str, Any], bool]


class Net:
    def __init__(
        self,
        topo: GDTopology,
        policy: GDPolicy = PAPER_POLICY,
        config: GDConfig | None = None,
        delay: Callable[[str, str], int] = lambda a, b: 1_000,
    ) -> None:
        self.topo = topo
        self.aet_us = (config or GDConfig()).aet_us
        self.states = initial_states(topo, config, policy)
        self.q: list[tuple[int, int, str, Any]] = []
        self.seq = 0
        self.delay = delay
        self.drop: Drop = lambda now, a, b, m: False
        self.down: set[str] = set()
        self.timers: dict[tuple[str, Any], int] = {}
        self.sent: list[tuple[int, str, str, Any]] = []
        self.delivered: list[tuple[int, str, str, int, Any]] = []
        self.logged: dict[tuple[str, int], tuple[int, Any]] = {}
        self.connected: dict[str, int] = {}
        self.persists: dict[tuple[str, Any], Persist] = {}
        self.link_log: list[tuple[int, frozenset[str], bool]] = []
        #: what a step left out of canonical form (``gapless.invariants.gd.forms.malformed``)
        self.malformed: list[str] = []
        for n in sorted(self.states):
            self.push(0, n, Restart())

    def push(self, at: int, node: str, inp: Any) -> None:
        self.seq += 1
        heapq.heappush(self.q, (at, self.seq, node, inp))

    def connect_all(self, at: int = 0) -> None:
        for s, spec in sorted(self.topo.subscribers.items()):
            self.push(at, spec.shb, Connect(subscriber=s, filter=spec.filter))
            self.connected[s] = at

    def run(self, until: int) -> None:
        while self.q and self.q[0][0] <= until:
            at, _, node, inp = heapq.heappop(self.q)
            if node in self.down and not isinstance(inp, Restart):
                continue
            if isinstance(inp, TimerFired) and self.timers.get((node, inp.key)) != at:
                continue
            if isinstance(inp, Restart):
                self.down.discard(node)
            before = self.states[node]
            st, eff = handle(before, inp, at)
            self.states[node] = st
            if st is not before:
                problem = malformed(before, st)
                if problem is not None:
                    self.malformed.append(f"{node} at {at}: {problem}")
            if isinstance(inp, Persisted) and (node, inp.key) in self.persists:
                info = logged(self.persists.pop((node, inp.key)))
                if info is not None:
                    self.logged[(info[0], info[1])] = (at, dict(info[2]))
            for e in eff:
                if isinstance(e, Send):
                    self.sent.append((at, node, e.to, e.msg))
                    if e.to not in self.down and not self.drop(at, node, e.to, e.msg):
                        self.push(
                            at + self.delay(node, e.to), e.to, Receive(sender=node, msg=e.msg)
                        )
                elif isinstance(e, SetTimer):
                    self.timers[(node, e.key)] = e.at
                    self.push(e.at, node, TimerFired(key=e.key))
                elif isinstance(e, Persist):
                    self.persists[(node, e.key)] = e
                    self.push(at + e.delay, node, Persisted(key=e.key))
                elif isinstance(e, (Deliver, DeliverCohort)):
                    for d in deliveries(e):
                        self.delivered.append((at, d.subscriber, d.pubend, d.tick, d.payload))

    def crash(self, node: str, at: int) -> None:
        self.run(at)
        self.states[node] = crash(self.states[node])
        self.down.add(node)

    def link(self, a: str, b: str, up: bool, at: int) -> None:
        self.link_log.append((at, frozenset((a, b)), up))
        self.push(at, a, LinkChanged(neighbour=b, up=up))
        self.push(at, b, LinkChanged(neighbour=a, up=up))

    # -- judging effects only --------------------------------------------------------------

    def problems(self, check_liveness: bool = True) -> list[str]:
        out: list[str] = []
        by_sub: dict[tuple[str, str], list[int]] = {}
        for at, sub, p, tick, _payload in self.delivered:
            if (p, tick) not in self.logged or self.logged[(p, tick)][0] > at:
                out.append(f"safety: {sub} got {p}@{tick} before it was logged")
            by_sub.setdefault((sub, p), []).append(tick)
        for (sub, p), ticks in sorted(by_sub.items()):
            if ticks != sorted(set(ticks)):
                out.append(f"order/duplicate: {sub} {p}")
            f = self.topo.subscribers[sub].filter
            matching = sorted(
                t for (pp, t), (_, a) in self.logged.items() if pp == p and reference_match(f, a)
            )
            if ticks:
                inside = [t for t in matching if ticks[0] <= t <= ticks[-1]]
                if inside != sorted(set(ticks)):
                    out.append(f"gapless: {sub} {p} skipped {sorted(set(inside) - set(ticks))[:3]}")
        if check_liveness:
            for sub, spec in sorted(self.topo.subscribers.items()):
                for (p, t), (at, a) in sorted(self.logged.items()):
                    wanted = at >= self.connected.get(sub, 1 << 60) and reference_match(
                        spec.filter, a
                    )
                    if wanted and t not in by_sub.get((sub, p), []):
                        out.append(f"liveness: {sub} never got {p}@{t}")
                        break
        return out

    def total_order_problems(self, subs: list[str]) -> list[str]:
        out = []
        for sub in subs:
            ticks = [t for _, s, _, t, _ in self.delivered if s == sub]
            if ticks != sorted(set(ticks)):
                out.append(f"total order: {sub}")
        return out

    def nacks(self) -> list[tuple[int, str, str, Nack]]:
        return [(t, a, b, m) for t, a, b, m in self.sent if isinstance(m, Nack)]

    def down_at(self, a: str, b: str, t: int) -> bool:
        """Whether ``net.link`` took the link a-b down before ``t`` (and not back up)."""
        state = False
        for at, ab, up in self.link_log:
            if ab == {a, b} and at < t:
                state = not up
        return state

    def conformance(self, min_rep: int) -> list[str]:
        out: list[str] = []
        for t, a, b, m in self.sent:
            if isinstance(m, (Knowledge, Nack)) and self.down_at(a, b, t):
                out.append(f"down link: {a} sent {type(m).__name__} to {b} at {t}, link down")
        last: dict[tuple[str, str, int], int] = {}
        nacked: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for t, a, b, m in self.sent:
            role = self.topo.brokers[a].role
            if isinstance(m, AckExpected) and role == "PHB" and m.upto > t - self.aet_us:
                # [GD §3.2] T = now - AET (no pubend restarts in these scenarios)
                out.append(f"AckExpected({m.upto}) from {a} at {t}: younger than AET")
            if isinstance(m, Nack):
                nacked.setdefault((b, a), []).append((m.start, m.end))
                if role == "IB":
                    for tick in (m.start, m.end):
                        key = (a, m.pubend, tick)
                        if key in last and t - last[key] < min_rep:
                            out.append(f"nack consolidation: {a} re-nacked {tick}")
                        last[key] = t
            elif (
                isinstance(m, Knowledge)
                and role == "IB"
                and self.topo.brokers[b].role == "SHB"
                and (m.retransmission or m.data is None)
            ):
                ticks = [t2 for lo, hi in m.silence for t2 in (lo, hi)]
                ticks += [m.data.tick] if m.data else []
                asked = nacked.get((a, b), [])
                if not any(lo <= x <= hi for x in ticks for lo, hi in asked):
                    kind = "retransmission" if m.retransmission else "first-time silence"
                    out.append(f"{kind} from {a} to {b}, which never nacked it")
            if (
                isinstance(m, Knowledge)
                and m.data is not None
                and self.topo.brokers[b].role == "SHB"
                and not any(
                    reference_match(spec.filter, m.data.attributes)
                    for spec in self.topo.subscribers.values()
                    if spec.shb == b
                )
            ):
                out.append(f"minimal traffic: {a} sent {b} tick {m.data.tick} no one there reads")
        return out


def make(topo: GDTopology, policy: GDPolicy = PAPER_POLICY, **cfg: Any) -> Net:
    net = Net(topo, policy, GDConfig(**cfg) if cfg else None)
    net.connect_all()
    return net


def publish(net: Net, n: int, start: int = 1_000, gap: int = 10_000, **attrs: Any) -> None:
    pubends = sorted(net.topo.pubends)
    for i in range(n):
        for k, p in enumerate(pubends):
            a = {"i": i, "k": k, **attrs}
            if callable(attrs.get("x")):
                a["x"] = attrs["x"](i)
            net.push(
                start + i * gap + k * 1_000, net.topo.pubends[p], Publish(pubend=p, attributes=a)
            )


def two_shb(filters: tuple[str, str] = ("*", "*"), pubends: int = 1) -> GDTopology:
    return GDTopology(
        brokers={"p": ("PHB", "p"), "b": ("IB", "B"), "s1": ("SHB", "s1"), "s2": ("SHB", "s2")},
        links=[("p", "b"), ("b", "s1"), ("b", "s2")],
        pubends={f"P{i}": "p" for i in range(pubends)},
        cell_edges=[("p", "B"), ("B", "s1"), ("B", "s2")],
        subscribers={
            "u1": SubscriberSpec(shb="s1", filter=filters[0]),
            "u2": SubscriberSpec(shb="s2", filter=filters[1]),
        },
    )


def drop_window(a: str, b: str, lo: int, hi: int, only: type | None = None) -> Drop:
    def drop(now: int, x: str, y: str, m: Any) -> bool:
        return {x, y} == {a, b} and lo <= now < hi and (only is None or isinstance(m, only))

    return drop


# ==========================================================================================
# the paper's failure experiments on Figure 3 [GD §4.2], shortened
# ==========================================================================================


def fig3(stall: Callable[[Net], None], seconds: int = 8) -> Net:
    net = make(figure3(pubends=4))
    publish(net, seconds * 25, gap=40_000)
    stall(net)
    net.run(seconds * 1_000_000 + 20_000_000)
    return net


def test_link_b1_s1_stalled_then_failed() -> None:
    def fault(net: Net) -> None:
        net.drop = drop_window("b1", "s1", 1_000_000, 3_500_000)
        net.run(3_500_000)
        net.link("b1", "s1", False, 3_500_000)
        net.run(6_000_000)
        net.link("b1", "s1", True, 6_000_000)

    net = fig3(fault)
    assert net.problems() == []
    assert net.conformance(GDConfig().min_repetition_us) == []
    targets = {b for _, a, b, _ in net.nacks() if a == "s1"}
    assert targets == {"b2"}  # s1's nacks go to b2 while b1-s1 is down [GD §4.2]
    assert Counter(s for _, s, *_ in net.delivered)["s1-0"] == 8 * 25 * 4


def test_b1_stalled_then_crashed_consolidates_nacks_at_b2() -> None:
    def fault(net: Net) -> None:
        net.drop = lambda now, a, b, m: a == "b1" and 1_000_000 <= now < 3_500_000
        net.crash("b1", 3_500_000)
        for x in ("p1", "b2", "s1", "s2"):
            net.push(3_500_000, x, LinkChanged(neighbour="b1", up=False))
        net.run(8_000_000)
        net.push(8_000_000, "b1", Restart())
        for x in ("p1", "b2", "s1", "s2"):
            net.link("b1", x, True, 8_000_001)

    net = fig3(fault)
    assert net.problems() == []
    assert net.conformance(GDConfig().min_repetition_us) == []
    rng = Counter[str]()
    for _, a, _, m in net.nacks():
        rng[a] += m.end - m.start + 1
    ratio = rng["b2"] / (rng["s1"] + rng["s2"])
    assert 0.4 <= ratio <= 0.6  # "about half of s1 and s2 combined" [GD §4.2]
    assert {b for _, a, b, _ in net.nacks() if a == "b2"} == {"p1"}


def test_p1_crash_then_ack_expected() -> None:
    def fault(net: Net) -> None:
        # the last messages before the crash are logged but lost on the way out
        net.drop = lambda now, a, b, m: a == "p1" and 1_800_000 <= now < 2_000_000
        net.crash("p1", 2_000_000)
        net.q = [e for e in net.q if not (e[2] == "p1" and isinstance(e[3], Publish))]
        heapq.heapify(net.q)
        net.push(4_000_000, "p1", Restart())

    net = fig3(fault)
    assert net.problems() == []
    assert [n for n in net.nacks() if 2_000_000 <= n[0] < 4_000_000] == []  # DCT = infinity
    assert [n for n in net.nacks() if n[0] >= 4_000_000]  # AckExpected made them nack


def test_two_of_four_pubends_flow_through_b1() -> None:
    net = fig3(lambda net: None, seconds=1)
    first = {
        m.pubend for _, a, b, m in net.sent if a == "p1" and b == "b1" and isinstance(m, Knowledge)
    }
    assert len(first) == 2


def test_best_effort_delivers_everything_without_faults() -> None:
    net = make(figure3(pubends=2), best_effort=True)
    publish(net, 50, gap=20_000)
    net.run(3_000_000)
    assert Counter(s for _, s, *_ in net.delivered) == {f"s{i}-0": 100 for i in range(1, 6)}
    assert {type(m).__name__ for *_, m in net.sent} == {"Knowledge"}


# ==========================================================================================
# the bug zoo: every planted bug is visible in the effects
# ==========================================================================================


def _lose_first_time(a: str, b: str, lo: int, hi: int) -> Drop:
    def drop(now: int, x: str, y: str, m: Any) -> bool:
        return (
            (x, y) == (a, b)
            and lo <= now < hi
            and isinstance(m, Knowledge)
            and not m.retransmission
        )

    return drop


def _lose_last(index: int) -> Drop:
    def drop(now: int, a: str, b: str, m: Any) -> bool:
        return (
            a == "p"
            and isinstance(m, Knowledge)
            and not m.retransmission
            and m.data is not None
            and m.data.attributes.get("i") == index
        )

    return drop


def zoo_run(policy: GDPolicy, scenario: str) -> Net:
    """Small scenarios, each the least that makes some bug visible."""
    if scenario == "loss":  # a burst lost on b-s1; s1 repairs it through b
        net = make(two_shb(), policy)
        publish(net, 60)
        net.drop = drop_window("b", "s1", 100_000, 200_000)
        net.run(3_000_000)
    elif scenario == "loss-upstream":  # a burst lost on p-b: both SHBs nack it
        net = make(two_shb(), policy)
        publish(net, 60)
        net.drop = _lose_first_time("p", "b", 100_000, 200_000)
        net.run(3_000_000)
    elif scenario == "loss-upstream-one":  # as above, but s2 subscribes to nothing
        net = make(two_shb(("*", "k == 9")), policy)
        publish(net, 60)
        net.drop = _lose_first_time("p", "b", 100_000, 200_000)
        net.run(3_000_000)
    elif scenario == "nack-loss":  # the first nacks and their answers are lost upstream
        net = make(two_shb(), policy)
        publish(net, 60)
        burst = _lose_first_time("p", "b", 100_000, 200_000)

        def drop(now: int, a: str, b: str, m: Any) -> bool:
            first_time = isinstance(m, Knowledge) and not m.retransmission
            repair = {a, b} == {"p", "b"} and 200_000 <= now < 900_000 and not first_time
            return burst(now, a, b, m) or repair

        net.drop = drop
        net.run(8_000_000)
    elif scenario == "loss-twice":  # two bursts lost on b-s1, the first one's repair too
        net = make(two_shb(), policy)
        publish(net, 60)
        first = _lose_first_time("b", "s1", 100_000, 200_000)
        second = _lose_first_time("b", "s1", 400_000, 500_000)

        def drop(now: int, a: str, b: str, m: Any) -> bool:
            first_time = isinstance(m, Knowledge) and not m.retransmission
            repair = {a, b} == {"b", "s1"} and 200_000 <= now < 900_000 and not first_time
            return first(now, a, b, m) or second(now, a, b, m) or repair

        net.drop = drop
        net.run(8_000_000)
    elif scenario == "filter":  # s1 wants x == 1 only; the IB filters the rest
        net = make(two_shb(("x == 1", "*")), policy)
        publish(net, 30, x=lambda i: i % 2)
        net.run(2_000_000)
    elif scenario == "bundle":  # p-b1, one member of the bundle p -> {b1, b2}, fails a while
        topo = GDTopology(
            brokers={"p": ("PHB", "p"), "b1": ("IB", "B"), "b2": ("IB", "B"), "s": ("SHB", "s")},
            links=[("p", "b1"), ("p", "b2"), ("b1", "b2"), ("b1", "s"), ("b2", "s")],
            pubends={"P0": "p", "P1": "p"},
            cell_edges=[("p", "B"), ("B", "s")],
            subscribers={"u": SubscriberSpec(shb="s", filter="*")},
        )
        net = make(topo, policy)
        publish(net, 40)
        net.drop = drop_window("p", "b1", 100_000, 300_000)
        net.link("p", "b1", False, 100_000)
        net.link("p", "b1", True, 300_000)
        net.run(3_000_000)
    elif scenario == "bundle-lost":  # both members of cell B lose s a while: one hop only
        net = make(_bundle(), policy)
        publish(net, 40)
        for b in ("b1", "b2"):
            net.link(b, "s", False, 100_000)
            net.link(b, "s", True, 300_000)
        net.run(3_000_000)
    elif scenario == "detour":  # b1 loses s a while, b2 keeps it: b1's share goes via b2
        net = make(_bundle(), policy)
        publish(net, 40)
        net.link("b1", "s", False, 100_000)
        net.link("b1", "s", True, 300_000)
        net.run(3_000_000)
    elif scenario == "tail":  # the last message is lost, then the publishers pause
        net = make(two_shb(), policy, aet_us=1_000_000)
        publish(net, 20)
        net.drop = _lose_last(19)
        net.run(6_000_000)
    else:  # "total": two pubends merged by tick; some of P1's knowledge is late
        topo = GDTopology(
            brokers={"p": ("PHB", "p"), "s": ("SHB", "s")},
            links=[("p", "s")],
            pubends={"P0": "p", "P1": "p"},
            cell_edges=[("p", "s")],
            subscribers={"t": SubscriberSpec(shb="s", filter="*", group="g")},
            groups={"g": ["P0", "P1"]},
        )
        net = make(topo, policy, preassign_us=5_000)
        lost = {"P1"}

        def drop(now: int, a: str, b: str, m: Any) -> bool:
            return (
                isinstance(m, Knowledge)
                and m.pubend in lost
                and 150_000 <= now < 180_000
                and not m.retransmission
            )

        net.drop = drop
        publish(net, 20)
        net.run(3_000_000)
    return net


SCENARIO: dict[str, str] = {
    "deliver-past-doubt-horizon": "loss",
    "no-nack-consolidation": "loss-upstream",
    "never-forget-curiosity": "nack-loss",
    "merge-f-while-q": "total",
    "filter-drops-d": "filter",
    "filter-passes-d": "filter",
    "ack-before-delivery": "loss",
    "ignore-ack-expected": "tail",
    "unlogged-is-published": "loss",
    "silence-to-everyone": "filter",
    "retransmit-to-all": "loss-upstream-one",
    "ack-any-downstream": "loss",
    "no-nack-repetition": "nack-loss",
    "ack-expected-now": "tail",
    "no-ack-expected": "tail",
    "route-into-down-link": "bundle",
    "sideways-again": "bundle-lost",
    "ack-waits-for-ack-expected": "filter",
    "drop-detours": "detour",
    "newest-nacked-first": "loss-twice",
}


def _bundle() -> GDTopology:
    """p -> cell B = {b1, b2} -> s, every link of the bundles present."""
    return GDTopology(
        brokers={"p": ("PHB", "p"), "b1": ("IB", "B"), "b2": ("IB", "B"), "s": ("SHB", "s")},
        links=[("p", "b1"), ("p", "b2"), ("b1", "b2"), ("b1", "s"), ("b2", "s")],
        pubends={"P0": "p", "P1": "p"},
        cell_edges=[("p", "B"), ("B", "s")],
        subscribers={"u": SubscriberSpec(shb="s", filter="*")},
    )


def sideways_again(net: Net) -> list[str]:
    """[GD §3.1] One sideways hop: first-time data a broker got only from a cell neighbour is
    never sent to a cell neighbour."""
    out: list[str] = []
    from_outside: set[tuple[str, str, int]] = set()
    cell = {n: spec.cell for n, spec in net.topo.brokers.items()}
    for _t, a, b, m in net.sent:
        if not isinstance(m, Knowledge) or m.data is None:
            continue
        key = (m.pubend, m.data.tick)
        if cell[a] != cell[b]:
            from_outside.add((b, *key))
        elif not m.retransmission and (a, *key) not in from_outside:
            out.append(f"sideways again: {a} sent {b} {key}, which it had only sideways")
    return out


def acks_late(net: Net) -> list[str]:
    """[GD §2.1.1, §3.1] An SHB acks what it delivered within the ack delay (deliveries
    whose deadline falls after the last send are not judged)."""
    delay = GDConfig().ack_delay_us
    end = max((t for t, *_ in net.sent), default=0)
    acks: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for t, a, _b, m in net.sent:
        if isinstance(m, Ack):
            acks.setdefault((a, m.pubend), []).append((t, m.upto))
    out: list[str] = []
    for at, sub, p, tick, _payload in net.delivered:
        shb = net.topo.subscribers[sub].shb
        if at + delay < end and not any(
            t <= at + delay and upto >= tick for t, upto in acks.get((shb, p), ())
        ):
            out.append(f"ack late: {shb} delivered {p}@{tick} at {at}, no ack by {at + delay}")
    return out


def detours_dropped(net: Net) -> list[str]:
    """[GD §3.1] A sideways message for a cell is sent on first-time into that cell by the
    neighbour it reached, unless that neighbour's links into the cell were down too."""
    cell = {n: spec.cell for n, spec in net.topo.brokers.items()}
    out: list[str] = []
    for t, a, b, m in net.sent:
        if not isinstance(m, Knowledge) or m.data is None or m.for_cell is None:
            continue
        into = [x for x in net.topo.brokers if cell[x] == m.for_cell]
        arrive = t + net.delay(a, b)
        if all(net.down_at(b, x, arrive + 1) for x in into):
            continue
        if not any(
            t2 >= t
            and a2 == b
            and b2 in into
            and isinstance(m2, Knowledge)
            and m2.data is not None
            and m2.data.tick == m.data.tick
            and not m2.retransmission
            for t2, a2, b2, m2 in net.sent
        ):
            out.append(f"detour dropped: {a} sent {b} {m.pubend}@{m.data.tick} for {m.for_cell}")
    return out


def out_of_form(net: Net) -> list[str]:
    """Every lattice value a broker holds after a step, and every F range set it sends, is
    in canonical form [GD §2.1, §3.1] (``canonical_state``)."""
    out = list(net.malformed)
    for t, a, b, m in net.sent:
        if isinstance(m, Knowledge) and m.silence and not is_canonical(m.silence):
            out.append(f"{a} sent {b} silence {m.silence} out of form at {t}")
    return out


def verdict(net: Net) -> list[str]:
    subs = [s for s, spec in net.topo.subscribers.items() if spec.group is not None]
    return (
        net.problems()
        + net.conformance(GDConfig().min_repetition_us)
        + net.total_order_problems(subs)
        + sideways_again(net)
        + acks_late(net)
        + detours_dropped(net)
        + out_of_form(net)
    )


def test_every_bug_has_a_scenario() -> None:
    assert sorted(SCENARIO) == list(bug_names())
    assert len(ZOO) >= 8
    assert policy_by_name("none") is PAPER_POLICY
    with pytest.raises(ProtocolMisuse, match="allowed: none, correct, paper, ack-any-downstream"):
        policy_by_name("nope")


@pytest.mark.parametrize("scenario", sorted(set(SCENARIO.values())))
def test_the_correct_protocol_passes_every_zoo_scenario(scenario: str) -> None:
    net = zoo_run(PAPER_POLICY, scenario)
    assert net.delivered
    assert verdict(net) == []


@pytest.mark.parametrize("bug", sorted(SCENARIO))
def test_every_planted_bug_is_observable(bug: str) -> None:
    net = zoo_run(policy_by_name(bug), SCENARIO[bug])
    assert verdict(net) != []


def test_runs_do_not_depend_on_hash_order() -> None:
    """Same inputs, same effects, whatever PYTHONHASHSEED (nothing hash-ordered reaches them)."""
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, sys; sys.path.insert(0, sys.argv[1]);"
        "import test_gd_network as t;"
        "n = t.zoo_run(t.PAPER_POLICY, 'loss-upstream');"
        "from gapless.impl.trace import canonical;"
        "print(hashlib.sha256(canonical((n.sent, n.delivered)).encode()).hexdigest())"
    )
    here = os.path.dirname(__file__)
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run(
            [sys.executable, "-c", code, here], env=env, capture_output=True, text=True, check=True
        )
        digests.add(res.stdout.strip())
    assert len(digests) == 1
