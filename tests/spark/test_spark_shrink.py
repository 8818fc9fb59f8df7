"""Shrinking and counterexample files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark_helpers import fake_overrides

from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.counterexample import (
    CounterexampleError,
    load_counterexample,
    replay,
    shrink_seed,
)
from gapless.spark_fuzz.replay import format_timeline, mermaid
from gapless.spark_fuzz.shrink import ddmin

pytestmark = pytest.mark.usefixtures("fake_path")


def test_ddmin_finds_a_one_minimal_subset() -> None:
    assert ddmin(list(range(20)), lambda xs: 3 in xs and 17 in xs) == [3, 17]
    assert ddmin([1, 2, 3], lambda xs: True) == []
    calls: list[int] = []

    def fails(xs: object) -> bool:
        calls.append(1)
        return 5 in xs  # type: ignore[operator]

    assert ddmin(list(range(64)), fails) == [5]
    assert len(calls) < 64


def test_shrink_removes_events_workload_and_time(tmp_path: Path) -> None:
    config = load_config(
        None,
        fake_overrides(
            tmp_path,
            variant="buggy",
            duration_s=20.0,
            faults={"rates": {"crash": 0.5, "drop": 0.5, "delay": 0.5}},
            workload={"messages": 80},
        ),
    )
    cx = shrink_seed(config, 1, "gapless")
    assert cx.original_fault_events > 10
    assert cx.shrunk_fault_events == 2
    assert cx.invariant == "gapless"
    assert cx.workload_scale == 0.125  # 80 -> 10 messages, the least that still fails
    assert cx.duration_s is not None
    assert 2.0 <= cx.duration_s < 3.0
    assert sorted(e["kind"] for e in cx.schedule) == ["crash", "drop"]


def test_campaign_writes_replayable_counterexamples(tmp_path: Path) -> None:
    config = load_config(None, fake_overrides(tmp_path, variant="buggy", max_counterexamples=2))
    run = run_campaign(config, executor="loop")
    assert len(run.counterexamples) == 2
    cx = load_counterexample(run.counterexamples[0])
    assert cx.variant == "buggy"
    again = replay(cx)
    assert again.reproduced
    text = format_timeline(again)
    assert "VIOLATION at" in text
    diagram = mermaid(again)
    assert diagram.startswith("sequenceDiagram\n")
    assert "VIOLATION gapless" in diagram
    # no pickle anywhere: the file is JSON
    json.loads(run.counterexamples[0].read_text())


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"format": "gapless-counterexample/1", "seed": ', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"format": "other"}', "'format'"),
        ('{"format": "gapless-counterexample/1", "seed": 1}', "missing or of the wrong type"),
    ],
)
def test_malformed_counterexamples_are_named(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "cx.json"
    path.write_text(content)
    with pytest.raises(CounterexampleError, match=fragment.replace("(", r"\(")):
        load_counterexample(path)


def test_counterexample_with_wrong_types_is_refused(tmp_path: Path) -> None:
    config = load_config(None, fake_overrides(tmp_path, variant="buggy", max_counterexamples=1))
    run = run_campaign(config, executor="loop")
    data = json.loads(run.counterexamples[0].read_text())
    data["seed"] = -4
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(CounterexampleError, match="'seed' = -4"):
        load_counterexample(bad)
    data["seed"] = 1
    data["schedule"] = {"not": "a list"}
    bad.write_text(json.dumps(data))
    with pytest.raises(CounterexampleError, match="cannot be rebuilt"):
        load_counterexample(bad)


def test_the_report_says_what_was_fuzzed_and_what_was_never_exercised(tmp_path: Path) -> None:
    """Issue 12, plots: every report plot's title says what was fuzzed, its axes carry units,
    and the coverage plot names the transitions the lattice allows that the campaign never
    exercised."""
    import html
    import re

    from gapless.spark_fuzz.report import lattice_transitions, write_report

    config = load_config(None, fake_overrides(tmp_path, variant="buggy", max_counterexamples=1))
    run_campaign(config, executor="loop")
    page = html.unescape(write_report(tmp_path / "out").read_text(encoding="utf-8"))
    allowed = lattice_transitions()
    assert {"K:Q->D", "K:Q->F", "K:D->D*", "C:N->C", "C:C->A", "C:C->N", "K:D->F"} <= set(allowed)
    assert "K:D->Q" not in allowed  # knowledge never goes down by join
    # the fake backend records K:Q->D and C:N->C only: every other allowed one is named
    (never,) = [line for line in page.splitlines() if "never exercised by this campaign" in line]
    named = set(re.findall(r"<code>(.*?)</code>", never))
    assert named == set(allowed) - {"K:Q->D", "C:N->C"}
    assert f"variant buggy, topology fig3, {config.schedules} schedules" in page
