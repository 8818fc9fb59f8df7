"""Figure 10's speed work keeps every verdict [DFT §IX-B]: the points of one δ that share
their start-up (:func:`gapless.models.dft_fig10.fig10_delta`) are the points run alone
(:func:`fig10_point`) — same trace digest, events, deliveries, verdict and owed deliveries
met — and the bench's stored points are resumed, not run again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gapless.benchmarks import dft as bench
from gapless.models.dft_fig10 import fig10_delta, fig10_point

_SAME = ("digest", "events", "delivered", "expected", "verdict", "invariant", "bounded_met")


def test_shared_startup_points_equal_points_run_alone() -> None:
    shared = list(fig10_delta(100, 1, (12, 0), 1.0))
    assert [p["k"] for p in shared] == [12, 0]
    for p in shared:
        alone = fig10_point(100, 1, p["k"], 1.0)
        assert {f: p[f] for f in _SAME} == {f: alone[f] for f in _SAME}
        assert p["shared_events"] < p["events"]
    # the points differ (the failures took effect): not one run reported twice
    assert shared[0]["digest"] != shared[1]["digest"]
    assert shared[0]["verdict"] == "out_of_budget"
    assert shared[1]["verdict"] == "pass"
    assert shared[1]["bounded_met"] > 0


def test_stored_points_are_resumed(tmp_path: Path) -> None:
    shape = {"n": 100, "duration": 0.6, "ks": (0,), "deltas": (0,)}
    first = bench._fig10(1, shape, tmp_path)
    stored = tmp_path / "n100_0.6s_d0_k0.json"
    assert json.loads(stored.read_text())["digest"] == first["points"]["d0_k0"]["digest"]
    assert first["fig10_resumed"] == 0
    assert first["fig10_events"] > 0
    again = bench._fig10(1, shape, tmp_path)
    assert again["fig10_resumed"] == 1
    assert again["points"]["d0_k0"]["digest"] == first["points"]["d0_k0"]["digest"]


def test_a_stored_point_without_legitimate_gets_it_from_the_setup(tmp_path: Path) -> None:
    """Points stored before the bench reported ``legitimate`` get it on resume, computed from
    the workload, tree and failures alone, equal to what the run reports; a stored point whose
    ``expected`` this setup does not give is refused, naming the point."""
    shape = {"n": 100, "duration": 0.6, "ks": (12,), "deltas": (0,)}
    first = bench._fig10(1, shape, tmp_path)["points"]["d0_k12"]
    assert first["legitimate"] < first["expected"]  # the failures cut pairs: not trivial
    stored = tmp_path / "n100_0.6s_d0_k12.json"
    old = json.loads(stored.read_text())
    del old["legitimate"], old["legitimate_fraction"]
    stored.write_text(json.dumps(old))
    again = bench._fig10(1, shape, tmp_path)
    point = again["points"]["d0_k12"]
    assert point["legitimate_offline"] is True
    assert point["legitimate"] == first["legitimate"]
    assert point["legitimate_fraction"] == first["legitimate_fraction"]
    assert again["fig10_delivered_equals_legitimate"] == 1
    stored.write_text(json.dumps({**old, "expected": old["expected"] + 1}))
    with pytest.raises(ValueError, match="δ=0 k=12"):
        bench._fig10(1, shape, tmp_path)
