"""Hypothesis stateful machine over the DFT roles [DFT §II-VIII]: subscribe, publish, crash a
broker and restart it (full recovery), fail and heal links, on the 13-broker complete tree
(fanout 3) with δ = 1. Every
safety invariant is judged after every step (the trace so far); at the end every invariant,
with the bounded guarantee judged only for pairs within δ (the out-of-budget judgement), and
after a final heal: every live subscriber accepted untagged receives every later matching
publication of every live source within the budget; and once every crashed broker has
restarted too, ``live_after_heal``: every open subscription, tagged or not, receives every
later matching publication (partition recovery, [DFT §VIII-A])."""

from __future__ import annotations

from _dft_net import Net
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gapless.impl.dft.config import DFTConfig
from gapless.impl.dft.tree import complete_tree
from gapless.invariants.dft import DFT_SAFETY, DFTContext, check_dft_trace, live_after_heal
from gapless.spec.filters import reference_match, reference_matcher

TREE = complete_tree(13, 3)
BROKERS = list(TREE.order)
LINKS = [(b, p) for b in BROKERS if (p := TREE.parent[b]) is not None]
FILTERS = ("true", "x == 1", "x < 2")


class DFTMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.net = Net(TREE, config=DFTConfig(delta=1))
        self.ctx = DFTContext(tree=TREE, delta=1, matches=reference_matcher())
        self.subs: list[tuple[str, str, str]] = []

    @rule(broker=st.sampled_from(BROKERS), flt=st.sampled_from(FILTERS))
    def subscribe(self, broker: str, flt: str) -> None:
        if broker in self.net.alive:
            name = f"S{len(self.subs)}"
            self.subs.append((name, broker, flt))
            self.net.subscribe(broker, name, flt)
            self.net.drain()

    @rule(broker=st.sampled_from(BROKERS), x=st.integers(0, 2))
    def publish(self, broker: str, x: int) -> None:
        if broker in self.net.alive:
            self.net.publish(broker, x=x)
            self.net.drain()

    @precondition(lambda self: len(self.net.alive) > len(BROKERS) - 3)
    @rule(broker=st.sampled_from(BROKERS))
    def crash(self, broker: str) -> None:
        if broker in self.net.alive:
            self.net.crash(broker)
            self.net.drain()

    @rule(broker=st.sampled_from(BROKERS))
    def restart(self, broker: str) -> None:
        if broker not in self.net.alive:
            self.net.restart(broker)
            self.net.drain()

    @rule(link=st.sampled_from(LINKS))
    def fail_link(self, link: tuple[str, str]) -> None:
        self.net.fail_link(*link)
        self.net.drain()

    @rule(link=st.sampled_from(LINKS))
    def heal_link(self, link: tuple[str, str]) -> None:
        if frozenset(link) in self.net.failed:
            self.net.heal_link(*link)
            self.net.drain()

    @invariant()
    def safety_holds(self) -> None:
        v, _ = check_dft_trace(self.net.records, self.ctx, DFT_SAFETY)
        assert v is None, v.explain() if v else ""

    def teardown(self) -> None:
        v, _ = check_dft_trace(self.net.records, self.ctx)
        assert v is None, v.explain() if v else ""
        for a, b in sorted(self.net.failed, key=sorted):
            self.net.heal_link(a, b)
        self.net.drain()
        before = {name: len(self.net.delivered(name)) for name, _, _ in self.subs}
        for src in sorted(self.net.alive):
            self.net.publish(src, x=1)
        self.net.drain()
        v, checker = check_dft_trace(self.net.records, self.ctx)
        assert v is None, v.explain() if v else ""
        for name, broker, flt in self.subs:
            sub = checker.subs[f"{name}/0"]
            if sub.closed or sub.tags or not reference_match(flt, {"x": 1}):
                continue
            got = self.net.delivered(name)[before[name] :]
            owed = [s for s in sorted(self.net.alive) if checker.within_budget(s, broker)]
            assert sorted(p for p, _ in got) == owed, (name, got, owed)
        # every crashed broker restarts: with no failure standing, partition recovery owes
        # every open subscription, accepted during a partition or not, every later
        # matching publication [DFT §VIII-A]
        for b in sorted(set(BROKERS) - self.net.alive):
            self.net.restart(b)
            self.net.drain()
        since = self.net.time
        for src in BROKERS:
            self.net.publish(src, x=1)
        self.net.drain()
        v, checker = check_dft_trace(self.net.records, self.ctx)
        assert v is None, v.explain() if v else ""
        late = live_after_heal(checker, since)
        assert late is None, late.explain() if late else ""


DFTMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=20, deadline=None)
test_dft_machine = DFTMachine.TestCase
