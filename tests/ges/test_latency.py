"""``ges-latency``: the world's optional capacity model (off by default: same digests) and the
paper's matching-rate workload [GES "Results"]."""

from __future__ import annotations

from typing import Any

import pytest
from _runs import MIXED, spec

from gapless.models.faults import FaultSchedule
from gapless.models.ges_latency import (
    DURATION_US,
    MATCHING_RATES,
    MEASURING,
    MIN_EVENTS,
    RATES,
    duration_us,
    latency_pass_marks,
    latency_topology,
    latency_workload,
    measure,
)
from gapless.models.ges_topology import GES_TOPOLOGIES
from gapless.models.protocols import scenario
from gapless.models.run import build, simulate
from gapless.models.world import World
from gapless.spec.filters import reference_matcher


class _NoCost:
    """The GES binding with its ``message_cost`` seam hidden."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "message_cost":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_capacity_is_off_by_default_same_digest_with_or_without_the_seam() -> None:
    s = spec()
    _entry, _graph, _wl, binding = build(s, 0)
    assert hasattr(binding, "message_cost")
    with_seam = simulate(s, FaultSchedule(seed=0, events=MIXED), 0)
    without = simulate(s, FaultSchedule(seed=0, events=MIXED), 0, binding=_NoCost(binding))
    assert with_seam.verdict == "pass"
    assert with_seam.trace_digest == without.trace_digest


def _world(graph: Any, service_us: int, bytes_per_s: int) -> World:
    s = spec()
    _entry, _g, wl, binding = build(s, 0)
    graph.graph["service_us"] = service_us
    for a, b in graph.edges:
        graph.edges[a, b]["bytes_per_s"] = bytes_per_s
    return World(graph=graph, workload=wl, schedule=FaultSchedule(seed=0), seed=0, binding=binding)


def test_finite_capacity_delays_messages_and_zero_capacity_attributes_change_nothing() -> None:
    runs = {}
    for key, service, bw in (("off", 0, 0), ("cpu", 5_000, 0), ("link", 0, 20_000)):
        w = _world(GES_TOPOLOGIES["ges-small"](), service, bw)
        w.run(duration_us=2_000_000, drain_us=2_000_000)
        runs[key] = w
    plain = simulate(spec(duration_us=2_000_000, drain_us=2_000_000), FaultSchedule(seed=0), 0)
    assert runs["off"].digest.hexdigest() == plain.trace_digest
    assert runs["off"].busy == {}
    for key in ("cpu", "link"):
        assert runs[key].digest.hexdigest() != plain.trace_digest
        assert max(runs[key].busy.values()) > 0
    # a link direction is busy only with the link model, a broker only with the service time
    assert all(">" in k for k in runs["link"].busy)
    assert all(">" not in k for k in runs["cpu"].busy)


@pytest.mark.parametrize("matching", [100, 50, 10])
def test_every_event_matches_exactly_the_matching_rate_of_the_100_subscribers(
    matching: int,
) -> None:
    g = latency_topology("ges-dense")
    wl = latency_workload(g, matching=matching, rate=500, size=100, duration_us=400_000)
    matches = reference_matcher()
    others = [s for s in wl.subscriptions if s.name != MEASURING]
    assert len(others) == 100
    assert {s.shb for s in others}.isdisjoint({"n10", "n22"})
    assert len(wl.publishes) > 100
    for p in wl.publishes[:100]:
        assert sum(matches(s.filter, p.attributes) for s in others) == matching
        assert len(p.attributes["pad"]) == 100 - 12


def test_ges_routing_beats_flooding_at_a_low_matching_rate_and_both_pass() -> None:
    ges = measure("ges-dense", matching=10, flooding=False, rate=100)
    flood = measure("ges-dense", matching=10, flooding=True, rate=100)
    assert ges["verdict"] == flood["verdict"] == "pass"
    assert ges["n"] == flood["n"] == ges["published"] > 50
    assert ges["event_messages"] < flood["event_messages"] / 2
    assert ges["p50"] < flood["p50"]


def test_the_rates_span_the_papers_and_a_low_rate_publishes_long_enough() -> None:
    assert (min(RATES), max(RATES)) == (1, 1000)
    assert duration_us(1000) == duration_us(300) == DURATION_US
    assert duration_us(1) == MIN_EVENTS * 1_000_000
    assert duration_us(10) == MIN_EVENTS * 100_000


def test_one_event_per_second_is_measured_and_passes() -> None:
    """The low end of the paper's publish rates; the high end (1,000 events/s, about a
    minute of CPU per run) is run by ``gapless simulate --scenario ges-latency``."""
    got = measure("ges-dense", matching=10, flooding=False, rate=1)
    assert got["verdict"] == "pass"
    assert got["n"] == got["published"] >= MIN_EVENTS // 2
    assert got["p50"] is not None


def _figures(ges: list[float], flood: list[float]) -> dict[str, Any]:
    lat = {
        "ges": {r: {"p50": v} for r, v in zip(MATCHING_RATES, ges, strict=True)},
        "flooding": {r: {"p50": v} for r, v in zip(MATCHING_RATES, flood, strict=True)},
    }
    return {
        "runs": 2,
        "runs_passed": 2,
        "published": 5,
        "received": {"ges": {100: 5}},
        "latency_ms_by_topology": {"t": lat},
    }


def test_the_pass_marks_reject_the_wrong_shape() -> None:
    good = latency_pass_marks(_figures([16, 15, 15, 14, 13], [16, 16, 16, 16, 16]))
    assert all(good.values())
    rising = latency_pass_marks(_figures([13, 14, 15, 15, 16], [16, 16, 16, 16, 16]))
    assert not rising["t: GES p50 falls with the matching rate"]
    steep = latency_pass_marks(_figures([16, 15, 15, 14, 13], [15, 16, 17, 18, 20]))
    assert not steep["t: flooding p50 flat (within 2%)"]
    assert not steep["t: GES p50 <= flooding p50 at every matching rate"]
    by_rate = {
        **_figures([16, 15, 15, 14, 13], [16, 16, 16, 16, 16]),
        "received_by_rate": {1: {"ges": {100: 40, 10: 39}}, 1000: {"ges": {100: 990}}},
        "published_by_rate": {1: 40, 1000: 990},
    }
    marks = latency_pass_marks(by_rate)
    assert marks["1000 events/s: measuring subscriber got every event"]
    assert not marks["1 events/s: measuring subscriber got every event"]


def test_the_scenario_is_registered_with_its_figure_7_marks() -> None:
    sc = scenario("ges-latency")
    assert sc.protocol == "ges"
    m = {"verdict": "pass", **_figures([16, 15, 15, 14, 13], [16, 16, 16, 16, 16])}
    marks = sc.pass_marks("ges-latency", m)
    assert all(marks.values())
    assert not sc.pass_marks("ges-latency", {**m, "verdict": "violation"})["verdict pass"]
