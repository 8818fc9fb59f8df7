"""A stopped judgement (``-x`` test passes, a ``--fail-fast`` campaign) gives the verdict of the
full one: the bench's ``full=1`` judges both ways and reports any difference (issue 18 §1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gapless.benchmarks import power
from gapless.benchmarks._mutants import mutant_named

ROOT = Path(__file__).resolve().parents[2]


def _record(name: str, stopped: bool, full: bool, s: float, full_s: float) -> dict[str, Any]:
    return {
        "mutant": name,
        "killed_by_tests": stopped,
        "tests_s": s,
        "tests_full": {"killed": full, "s": full_s},
    }


def test_the_report_counts_agreements_and_names_a_difference() -> None:
    got = power._stopped_vs_full(
        [
            _record("a", True, True, 5.0, 50.0),
            _record("b", False, False, 60.0, 61.0),
            _record("c", True, False, 1.0, 2.0),  # a stopped kill the full run does not see
            {"mutant": "d", "killed_by_tests": True},  # not judged in full
        ]
    )
    assert got == {
        "tests": {
            "judged_both_ways": 3,
            "same_verdict": 2,
            "differ": ["c"],
            "stopped_s": 66.0,
            "full_s": 113.0,
        }
    }
    assert power._params({"full": "1"})["full"] == 1


@pytest.mark.long
@pytest.mark.parametrize(
    "ident",
    [
        "impl/ticksets.py:160:int constant#148",  # killed by both (35f4f7f)
        "impl/gd/routing.py:137:compare NotIn#59",  # killed by a role test in the second pass
    ],
)
def test_real_mutants_get_the_same_verdict_stopped_and_in_full(ident: str) -> None:
    mutant = mutant_named(ROOT, ident)
    assert mutant is not None
    params = {**power._params({"schedules": "20", "full": "1"}), "campaign_key": "k"}
    record = power._judge(mutant, {"mutant": ident}, "tests", params)
    record = power._judge(mutant, record, "campaign", params)
    assert record["killed_by_tests"] == record["tests_full"]["killed"]
    assert record["killed_by_campaign"] == record["campaign_full"]["killed"]
    report = power._stopped_vs_full([record])
    print(json.dumps({"mutant": ident, **report}, sort_keys=True))  # the costs, with -rA
    assert report["tests"]["differ"] == report["campaign"]["differ"] == []


def test_a_kill_by_timeouts_alone_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schedule that overran ``timeout_s`` kills the mutant; on a loaded machine that can be
    the machine, not the mutant, so the report names such kills for a person to look at."""
    base = {"module": "impl/m.py", "diff": "d", "killed_by_tests": True}
    records = [
        {**base, "mutant": "hang", "killed_by_campaign": True, "campaign": {"timeouts": 7}},
        {**base, "mutant": "seen", "killed_by_campaign": True, "campaign": {"failed": 1}},
        {
            **base,
            "mutant": "both",
            "killed_by_campaign": True,
            "campaign": {"failed": 1, "timeouts": 2},
        },
    ]
    monkeypatch.setattr(power, "run_modules", lambda: ["impl/m.py"])
    monkeypatch.setattr(power, "sample", lambda *_a, **_k: [])
    monkeypatch.setattr(power, "verdict_keys", lambda: {"tests": "t", "campaign": "c"})
    monkeypatch.setattr(power, "run_lines", lambda *_a: {})
    monkeypatch.setattr(power, "unrun", lambda *_a: [])
    monkeypatch.setattr(power, "_judge_all", lambda *_a: records)
    assert power.run(judge="0")["killed_by_timeouts_only"] == ["hang"]


def test_the_judge_runs_the_fast_tiers_without_the_long_tests() -> None:
    """The long test above sits in a fast tier and judges mutants in full: a judge that ran it
    would start a judge inside itself, without end (seen: six nested full runs, power6)."""
    from gapless.benchmarks.power_judge import JUDGE_PYTEST

    assert list(JUDGE_PYTEST[-2:]) == ["-m", "not long"]
    assert any(Path(__file__).is_relative_to(ROOT / tier) for tier in power.FAST_TIERS)
