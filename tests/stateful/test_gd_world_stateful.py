"""Stateful tests: Hypothesis drives the simulated GD network with the same fault-schedule data
a campaign uses; every invariant is checked after every step; teardown heals, drains and
checks liveness (issue 3 §5).

Budget (HYPOTHESIS_PROFILE=ci): the machine runs a fifth of the profile's examples (20) of at
most 12 steps; ``thorough`` runs 400 examples of up to 40 steps.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gapless.models.faults import FaultEvent, derive_seed
from gapless.models.run import Run
from gapless.models.runner import RunSpec
from gapless.models.topology import brokers, links, topology
from gapless.models.workload import PublishEvent, WorkloadSpec

_S = 1_000_000
HORIZON = 120 * _S  # publishing goes on until teardown heals everything
DRAIN = 25 * _S  # > AET (10 s) + backoff: time for AckExpected-driven recovery
GRAPH = topology("fig3")
BROKERS = brokers(GRAPH)
LINKS = links(GRAPH)
SUBSCRIBERS = tuple(f"s{i}.u0" for i in range(1, 6))

durations = st.integers(min_value=50_000, max_value=3 * _S)


class GDNetwork(RuleBasedStateMachine):
    """Fig. 3 with mixed content filters; rules are publishes, time steps and faults."""

    variant = "none"

    def __init__(self) -> None:
        super().__init__()
        self.spec = RunSpec(
            variant=self.variant,
            topology="fig3",
            workload=WorkloadSpec(rate_per_pubend=5.0, subscribers_per_shb=1, filters="mixed"),
            duration_us=HORIZON,
            drain_us=DRAIN,
        )
        self.seed = 11
        self.run = Run(self.spec, _empty(), self.seed)
        self.world = self.run.world
        self.world.start(duration_us=HORIZON)
        self.k = 0
        self.extra = 0

    # -- helpers ---------------------------------------------------------------------------

    def _fault(self, kind: str, target: str, dur: int, **kw: Any) -> None:
        self.k += 1
        self.world.add_fault(
            FaultEvent(
                kind=kind,
                at_us=self.world.now,
                duration_us=dur,
                target=target,
                stream=derive_seed(self.seed, kind, self.k),
                **kw,
            )
        )

    def _alive(self) -> bool:
        return not self.world.stopped

    # -- rules -----------------------------------------------------------------------------

    @rule(dt=st.integers(min_value=1_000, max_value=2 * _S))
    def advance(self, dt: int) -> None:
        self.world.advance(self.world.now + dt)

    @rule(pubend=st.sampled_from(("P0", "P1", "P2", "P3")), loc=st.sampled_from(("NY", "LN")))
    def publish(self, pubend: str, loc: str) -> None:
        self.extra += 1
        self.world.add_publish(
            PublishEvent(
                at_us=self.world.now,
                pubend=pubend,
                index=10_000 + self.extra,
                attributes={"n": 10_000 + self.extra, "loc": loc, "p": 5, "k": 0},
            )
        )

    @precondition(_alive)
    @rule(broker=st.sampled_from(BROKERS), dur=durations)
    def crash_broker(self, broker: str, dur: int) -> None:
        self._fault("crash", broker, dur)

    @precondition(_alive)
    @rule(broker=st.sampled_from(BROKERS), stall=durations, dur=durations)
    def stall_then_crash(self, broker: str, stall: int, dur: int) -> None:
        self._fault("stall_broker", broker, dur, stall_us=stall)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations)
    def fail_link(self, link: str, dur: int) -> None:
        self._fault("link_fail", link, dur)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), stall=durations, dur=durations)
    def stall_link(self, link: str, stall: int, dur: int) -> None:
        self._fault("stall_link", link, dur, stall_us=stall)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations, p=st.sampled_from((0.1, 0.5, 1.0)))
    def drop(self, link: str, dur: int, p: float) -> None:
        self._fault("drop", link, dur, probability=p)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations, p=st.sampled_from((0.2, 1.0)))
    def duplicate(self, link: str, dur: int, p: float) -> None:
        self._fault("duplicate", link, dur, probability=p)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations, d=st.integers(1_000, 80_000))
    def reorder(self, link: str, dur: int, d: int) -> None:
        self._fault("reorder", link, dur, max_delay_us=d)

    @precondition(_alive)
    @rule(sub=st.sampled_from(SUBSCRIBERS), dur=durations)
    def disconnect(self, sub: str, dur: int) -> None:
        self._fault("disconnect", sub, dur)

    @precondition(_alive)
    @rule(side=st.sets(st.sampled_from(BROKERS), min_size=1, max_size=4), dur=durations)
    def partition(self, side: set[str], dur: int) -> None:
        self._fault("partition", ",".join(sorted(side)), dur)

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def every_invariant_holds(self) -> None:
        v = self.run.checker.violation
        assert v is None, v.explain()
        assert not self.world.timed_out

    def teardown(self) -> None:
        if self.world.stopped:
            return
        self.world.stop_publishing()
        self.world.heal_all()
        self.world.advance(self.world.now + DRAIN)
        out = self.run.outcome()
        assert out.verdict == "pass", out.explanation


def _empty() -> Any:
    from gapless.models.faults import FaultSchedule

    return FaultSchedule(seed=11)


_base = settings.default
GDNetwork.TestCase.settings = settings(
    _base,
    max_examples=max(5, _base.max_examples // 5),
    stateful_step_count=12 if _base.max_examples <= 100 else 40,
    deadline=None,
)
TestGDNetwork = GDNetwork.TestCase


class FilterDropsDNetwork(GDNetwork):
    """The same machine on a planted bug (``filter-drops-d`` of the bug zoo): it must fail."""

    variant = "filter-drops-d"


def test_the_machine_catches_a_planted_bug() -> None:
    from hypothesis import Phase
    from hypothesis.stateful import run_state_machine_as_test

    try:
        import gapless.spark_fuzz.zoo  # noqa: F401
    except ModuleNotFoundError:  # pragma: no cover - the zoo ships with the package
        raise AssertionError("the bug zoo is missing") from None
    with pytest.raises(AssertionError, match="violated"):
        run_state_machine_as_test(
            FilterDropsDNetwork,
            settings=settings(
                max_examples=10,
                stateful_step_count=6,
                deadline=None,
                derandomize=True,
                phases=[Phase.generate],
                database=None,
                print_blob=False,
            ),
        )
