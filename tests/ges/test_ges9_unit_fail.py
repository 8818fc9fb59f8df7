"""A whole unit failing forever in the fuzz (the generator's ``fail_unit``) [GES "Reliable
delivery": "a unit can fail and remain failed forever"]: drawn by ``campaigns/ges-demo.toml``
without changing any other draw, judged by the fault budget, and survived by the correct
protocol."""

from __future__ import annotations

import attrs
import pytest
from _runs import spec

from gapless.impl.errors import ProtocolMisuse
from gapless.models.faults import FaultEvent, FaultProfile, FaultSchedule, Targets, generate
from gapless.models.ges_binding import within_budget
from gapless.models.ges_topology import ges_dense
from gapless.models.run import simulate
from gapless.models.runner import fault_targets
from gapless.models.workload import WorkloadSpec

DENSE = ges_dense()
UNITS = DENSE.graph["units"]


def _demo_profile(with_units: bool) -> FaultProfile:
    rates = (("disconnect", 1.0), ("fail", 0.1), ("link_fail", 0.3), ("drop", 0.3))
    return FaultProfile(rates=(*rates, *((("fail_unit", 0.2),) if with_units else ())), swarm=True)


def test_the_topology_names_its_clusters_and_super_clusters_and_the_runner_passes_them() -> None:
    clusters = ("n1,n2,n3,n4", "n5,n6,n7,n8", "n9,n10,n11")
    clusters += ("n12,n13,n14,n15", "n16,n17,n18,n19", "n20,n21,n22")
    assert UNITS[:6] == clusters
    assert len(UNITS) == 8  # and the two super-clusters
    assert fault_targets(spec(topology="ges-dense")).units == UNITS


def test_a_unit_fails_whole_at_one_instant_and_nothing_else_is_drawn_differently() -> None:
    targets = fault_targets(spec(topology="ges-dense"))
    with_units = 0
    for seed in range(1, 41):
        new = generate(_demo_profile(True), targets, duration_us=6_000_000, seed=seed).events
        old = generate(_demo_profile(False), targets, duration_us=6_000_000, seed=seed).events
        extra = [e for e in new if e not in old]
        assert [e for e in new if e in old] == list(old)
        by_instant: dict[int, list[FaultEvent]] = {}
        for e in extra:
            assert e.kind == "fail"
            by_instant.setdefault(e.at_us, []).append(e)
        for group in by_instant.values():
            assert ",".join(sorted(e.target for e in group)) in {
                ",".join(sorted(u.split(","))) for u in UNITS
            }
            assert len({e.duration_us for e in group}) == 1
            assert len({e.stream for e in group}) == len(group)
        with_units += bool(extra)
    assert 8 <= with_units <= 30  # a swarm enables it in about half the schedules


def test_no_units_no_unit_failures_and_no_fault_event_has_the_kind() -> None:
    bare = Targets(brokers=("a", "b"), links=("a|b",), subscribers=())
    profile = FaultProfile(rates=(("fail_unit", 5.0),))
    assert generate(profile, bare, duration_us=5_000_000, seed=1).events == ()
    some = generate(profile, attrs.evolve(bare, units=("a,b",)), duration_us=5_000_000, seed=1)
    assert {e.kind for e in some.events} == {"fail"}
    with pytest.raises(ProtocolMisuse, match="written as fail events"):
        FaultEvent(kind="fail_unit", at_us=0, duration_us=0, target="a,b", stream=1)


def _fails(unit: str) -> tuple[FaultEvent, ...]:
    return tuple(
        FaultEvent(kind="fail", at_us=1_000_000, duration_us=300_000, target=n, stream=i)
        for i, n in enumerate(unit.split(","))
    )


def test_the_budget_keeps_a_unit_without_a_system_storage_that_leaves_the_rest_connected() -> None:
    within = {u: within_budget(DENSE, _fails(u)) for u in UNITS}
    assert within == {
        "n1,n2,n3,n4": True,
        "n5,n6,n7,n8": False,  # system storage n6
        "n9,n10,n11": False,  # both links between the super-clusters end there
        "n12,n13,n14,n15": True,
        "n16,n17,n18,n19": False,  # system storage n17
        "n20,n21,n22": True,
        UNITS[6]: False,  # a super-cluster holds a system storage
        UNITS[7]: False,
    }


def test_the_correct_protocol_survives_a_cluster_failing_for_good() -> None:
    """Cluster n20-n22 (publisher P0's node among them) fails for good 1 s in; its clients
    reconnect elsewhere and still get every event they were interested in, exactly once."""
    s = spec(
        topology="ges-dense",
        workload=WorkloadSpec(rate_per_pubend=5.0, filters="mixed", subscribers_per_shb=1),
        duration_us=2_000_000,
    )
    out = simulate(s, FaultSchedule(seed=1, events=_fails("n20,n21,n22")), 1)
    assert out.verdict == "pass", out.explanation
    assert out.counters.delivered > 0
