"""The correct GES protocol under generated fault schedules (every kind, plus brokers failing
forever and frequent roams) on the eight-node topology: never a violation; out of the fault
budget only when a storage node failed forever or the live nodes were cut apart."""

from __future__ import annotations

import attrs
import pytest
from _runs import spec

from gapless.models.faults import DEFAULT_RATES, FaultProfile
from gapless.models.run import simulate
from gapless.models.runner import generate_schedule
from gapless.models.runspec import RunSpec

RATES = {**DEFAULT_RATES, "fail": 0.2, "disconnect": 2.0, "crash": 0.3, "link_fail": 0.5}


def _spec() -> RunSpec:
    return spec(
        faults=FaultProfile(rates=tuple(sorted(RATES.items())), max_duration_us=1_500_000),
        duration_us=4_000_000,
        drain_us=4_000_000,
    )


@pytest.mark.parametrize("seed", range(4))
def test_no_violation_under_generated_faults(seed: int) -> None:
    s = _spec()
    schedule = generate_schedule(s, seed)
    assert {e.kind for e in schedule.events} >= {"disconnect"}
    out = simulate(s, schedule, seed)
    assert out.verdict in ("pass", "out_of_budget"), out.explanation
    assert out.counters.delivered > 0


@pytest.mark.parametrize("seed", range(10, 13))
def test_no_violation_with_the_finer_tier(seed: int) -> None:
    """The same with one storage per cluster under the system storages (granularity
    ``cluster``): cluster storages crash, fail forever or are cut off like any node."""
    s = attrs.evolve(_spec(), config=(("granularity", "cluster"),))
    schedule = generate_schedule(s, seed)
    out = simulate(s, schedule, seed)
    assert out.verdict in ("pass", "out_of_budget"), out.explanation
    assert out.counters.delivered > 0
