"""A stateful test of GES: Hypothesis drives the simulated eight-node network (``ges-small``)
with publishes, time steps, roams, profile changes, crashes, brokers failing forever and link
faults; every invariant — roaming exactly-once, selective routing and the rest — is checked
after every step; teardown heals, drains and judges liveness (``roam_complete``) unless a
failure left the fault budget [GES "Reliable delivery", "Profiles and the profile graph"].

Budget (HYPOTHESIS_PROFILE=ci): a fifth of the profile's examples (at least 5) of at most 10
steps. A planted bug of the zoo (``double-decrement``) run through the same machine fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gapless.models.faults import FaultEvent, FaultSchedule, derive_seed
from gapless.models.ges_topology import ges_small
from gapless.models.run import Run
from gapless.models.runspec import RunSpec
from gapless.models.topology import link_name
from gapless.models.workload import PublishEvent, WorkloadSpec

_S = 1_000_000
HORIZON = 60 * _S
DRAIN = 6 * _S
GRAPH = ges_small()
NODES = tuple(sorted(GRAPH.nodes))
STORAGES = tuple(GRAPH.graph["storages"])
LINKS = tuple(sorted(link_name(a, b) for a, b in GRAPH.edges))
CLIENTS = tuple(f"{n}.u{i}" for n in NODES for i in (0, 1))
durations = st.integers(min_value=50_000, max_value=2 * _S)


class GESNetwork(RuleBasedStateMachine):
    """ges-small with mixed profiles (two clients per node)."""

    variant = "none"

    def __init__(self) -> None:
        super().__init__()
        self.spec = RunSpec(
            protocol="ges",
            variant=self.variant,
            topology="ges-small",
            workload=WorkloadSpec(rate_per_pubend=5.0, subscribers_per_shb=2, filters="mixed"),
            duration_us=HORIZON,
            drain_us=DRAIN,
        )
        self.seed = 7
        self.run = Run(self.spec, FaultSchedule(seed=self.seed), self.seed)
        self.world = self.run.world
        self.world.start(duration_us=HORIZON)
        self.k = 0
        self.extra = 0

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

    @rule(dt=st.integers(min_value=1_000, max_value=2 * _S))
    def advance(self, dt: int) -> None:
        self.world.advance(self.world.now + dt)

    @rule(pubend=st.sampled_from(("P0", "P1")), loc=st.sampled_from(("NY", "LN", "TK")))
    def publish(self, pubend: str, loc: str) -> None:
        self.extra += 1
        n = 10_000 + self.extra
        self.world.add_publish(
            PublishEvent(
                at_us=self.world.now,
                pubend=pubend,
                index=n,
                attributes={"n": n, "loc": loc, "p": n % 6, "k": n % 10},
            )
        )

    @precondition(_alive)
    @rule(client=st.sampled_from(CLIENTS), dur=durations)
    def roam(self, client: str, dur: int) -> None:
        self._fault("disconnect", client, dur)

    @precondition(_alive)
    @rule(client=st.sampled_from(CLIENTS))
    def reprofile(self, client: str) -> None:
        self._fault("reprofile", client, 0)

    @precondition(_alive)
    @rule(node=st.sampled_from(NODES), dur=durations)
    def crash(self, node: str, dur: int) -> None:
        self._fault("crash", node, dur)

    @precondition(_alive)
    @rule(node=st.sampled_from(tuple(n for n in NODES if n not in STORAGES)))
    def fail_forever(self, node: str) -> None:
        self._fault("fail", node, _S)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations)
    def fail_link(self, link: str, dur: int) -> None:
        self._fault("link_fail", link, dur)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations, p=st.sampled_from((0.3, 1.0)))
    def drop(self, link: str, dur: int, p: float) -> None:
        self._fault("drop", link, dur, probability=p)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations, p=st.sampled_from((0.3, 1.0)))
    def duplicate(self, link: str, dur: int, p: float) -> None:
        self._fault("duplicate", link, dur, probability=p)

    @precondition(_alive)
    @rule(link=st.sampled_from(LINKS), dur=durations, d=st.integers(1_000, 80_000))
    def reorder(self, link: str, dur: int, d: int) -> None:
        self._fault("reorder", link, dur, max_delay_us=d)

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
        assert out.verdict in ("pass", "out_of_budget"), out.explanation


_base = settings.default
GESNetwork.TestCase.settings = settings(
    _base,
    max_examples=max(5, _base.max_examples // 5),
    stateful_step_count=10 if _base.max_examples <= 100 else 30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestGESNetwork = GESNetwork.TestCase


class DoubleDecrementNetwork(GESNetwork):
    """The same machine on a planted bug of the zoo: it must fail."""

    variant = "double-decrement"


def test_the_machine_catches_a_planted_bug() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    with pytest.raises(AssertionError, match=r"violated"):
        run_state_machine_as_test(
            DoubleDecrementNetwork,
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
