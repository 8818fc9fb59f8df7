"""The DFT Hypothesis stateful machine with joins during a run [DFT §I, §II, §VIII]:
subscribe, publish, crash and restart, fail and heal primary links — and *join*: a newcomer
attaches to a live broker of the grown tree (up to three per run). Every safety invariant
after every step, judged on the grown tree; at the end every invariant (the bounded
guarantee for pairs within δ), then, every link healed, every live untagged subscriber
owed every later matching publication of every live source within the budget, and once
every crashed broker has restarted, ``live_after_heal`` [DFT §VIII-A]. The newcomers take
part in all of it: as publishers, subscribers' brokers, crashed brokers, link ends."""

from __future__ import annotations

from _dft4_net import JoinNet
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gapless.impl.dft.config import DFTConfig
from gapless.impl.dft.tree import complete_tree
from gapless.invariants.dft import DFT_SAFETY, DFTContext, check_dft_trace, live_after_heal
from gapless.spec.filters import reference_match, reference_matcher

TREE = complete_tree(13, 3)
FILTERS = ("true", "x == 1", "x < 2")
MAX_JOINS = 3


class DFTJoinMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.net = JoinNet(TREE, config=DFTConfig(delta=1))
        self.subs: list[tuple[str, str, str]] = []

    # ---- helpers ----------------------------------------------------------------------
    def _pick(self, i: int) -> str:
        order = self.net.tree.order
        return order[i % len(order)]

    def _links(self) -> list[tuple[str, str]]:
        t = self.net.tree
        return [(b, p) for b in t.order if (p := t.parent[b]) is not None]

    def _check(self, names: tuple[str, ...] = ()) -> None:
        ctx = DFTContext(tree=self.net.tree, delta=1, matches=reference_matcher())
        v, _ = check_dft_trace(self.net.records, ctx, names)
        assert v is None, v.explain() if v else ""

    # ---- rules ------------------------------------------------------------------------
    @precondition(lambda self: len(self.net.arrivals) < MAX_JOINS)
    @rule(i=st.integers(0, 40))
    def join(self, i: int) -> None:
        attach = self._pick(i)
        if attach in self.net.alive:
            self.net.join(f"J{len(self.net.arrivals)}", attach)
            self.net.drain()

    @rule(i=st.integers(0, 40), flt=st.sampled_from(FILTERS))
    def subscribe(self, i: int, flt: str) -> None:
        broker = self._pick(i)
        if broker in self.net.alive:
            name = f"S{len(self.subs)}"
            self.subs.append((name, broker, flt))
            self.net.subscribe(broker, name, flt)
            self.net.drain()

    @rule(i=st.integers(0, 40), x=st.integers(0, 2))
    def publish(self, i: int, x: int) -> None:
        broker = self._pick(i)
        if broker in self.net.alive:
            self.net.publish(broker, x=x)
            self.net.drain()

    @precondition(lambda self: len(self.net.alive) > len(self.net.tree.order) - 3)
    @rule(i=st.integers(0, 40))
    def crash(self, i: int) -> None:
        broker = self._pick(i)
        if broker in self.net.alive:
            self.net.crash(broker)
            self.net.drain()

    @rule(i=st.integers(0, 40))
    def restart(self, i: int) -> None:
        broker = self._pick(i)
        if broker not in self.net.alive:
            self.net.restart(broker)
            self.net.drain()

    @rule(i=st.integers(0, 40))
    def fail_link(self, i: int) -> None:
        links = self._links()
        self.net.fail_link(*links[i % len(links)])
        self.net.drain()

    @rule(i=st.integers(0, 40))
    def heal_link(self, i: int) -> None:
        links = self._links()
        link = links[i % len(links)]
        if frozenset(link) in self.net.failed:
            self.net.heal_link(*link)
            self.net.drain()

    @invariant()
    def safety_holds(self) -> None:
        self._check(DFT_SAFETY)

    @invariant()
    def nothing_rejected(self) -> None:
        """No message ever names a broker its receiver has not heard of (the news of a join
        travels ahead of everything that names the newcomer)."""
        bad = [r.detail for r in self.net.records if r.kind == "rejected"]
        assert not bad, bad[:3]

    def teardown(self) -> None:
        net = self.net
        self._check()
        for a, b in sorted(net.failed, key=sorted):
            net.heal_link(a, b)
        net.drain()
        before = {name: len(net.delivered(name)) for name, _, _ in self.subs}
        for src in sorted(net.alive):
            net.publish(src, x=1)
        net.drain()
        ctx = DFTContext(tree=net.tree, delta=1, matches=reference_matcher())
        v, checker = check_dft_trace(net.records, ctx)
        assert v is None, v.explain() if v else ""
        for name, broker, flt in self.subs:
            sub = checker.subs[f"{name}/0"]
            if sub.closed or sub.tags or not reference_match(flt, {"x": 1}):
                continue
            got = net.delivered(name)[before[name] :]
            owed = [s for s in sorted(net.alive) if checker.within_budget(s, broker)]
            assert sorted(p for p, _ in got) == owed, (name, got, owed)
        for b in sorted(set(net.tree.order) - net.alive):
            net.restart(b)
            net.drain()
        since = net.time
        for src in net.tree.order:
            net.publish(src, x=1)
        net.drain()
        v, checker = check_dft_trace(net.records, ctx)
        assert v is None, v.explain() if v else ""
        late = live_after_heal(checker, since)
        assert late is None, late.explain() if late else ""


DFTJoinMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
test_dft_join_machine = DFTJoinMachine.TestCase
