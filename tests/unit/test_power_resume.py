"""The power bench's resumable verdict store and its test-file order (issue 18 §1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gapless.benchmarks import power, power_judge
from gapless.benchmarks._mutants import Mutant

ROOT = Path(__file__).resolve().parents[2]


def _mutants() -> list[Mutant]:
    return [
        Mutant(module=f"impl/m{i}.py", line=1, kind="k", index=i, source=f"x = {i}", diff="d")
        for i in range(3)
    ]


def _fake_judge(calls: list[tuple[str, str]], tests_kill: set[str]) -> Any:
    def judge(m: Mutant, record: dict[str, Any], what: str, params: dict[str, Any]) -> Any:
        calls.append((m.module, what))
        if what == "tests":
            return {**record, "killed_by_tests": m.module in tests_kill, "tests_s": 1.0}
        return {
            **record,
            "killed_by_campaign": True,
            "campaign_key": params["campaign_key"],
            "campaign_s": 2.0,
        }

    return judge


def _params(out: Path, key: str, judge: int = 1) -> dict[str, Any]:
    return {**power._params({"out": str(out), "judge": str(judge)}), "campaign_key": key}


def test_verdicts_are_stored_and_a_rerun_judges_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(power, "_judge", _fake_judge(calls, {"impl/m1.py"}))
    params = _params(tmp_path, "a")
    first = power._judge_all(_mutants(), power._Store(str(tmp_path)), params)
    # each mutant's tests, at once its campaign if the tests kill it; the other campaigns last
    tests = [m for m, what in calls if what == "tests"]
    assert sorted(tests) == ["impl/m0.py", "impl/m1.py", "impl/m2.py"]
    at = calls.index(("impl/m1.py", "tests"))
    assert calls[at + 1] == ("impl/m1.py", "campaign")
    assert sorted(calls[-2:]) == [("impl/m0.py", "campaign"), ("impl/m2.py", "campaign")]
    assert len(list(tmp_path.glob("*.json"))) == 3
    calls.clear()
    again = power._judge_all(_mutants(), power._Store(str(tmp_path)), params)
    assert calls == []
    assert again == first


def test_a_changed_campaign_rejudges_the_campaign_verdicts_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(power, "_judge", _fake_judge(calls, set()))
    power._judge_all(_mutants(), power._Store(str(tmp_path)), _params(tmp_path, "a"))
    calls.clear()
    power._judge_all(_mutants(), power._Store(str(tmp_path)), _params(tmp_path, "b"))
    assert sorted(calls) == [(f"impl/m{i}.py", "campaign") for i in range(3)]


def test_judge_0_only_reports_what_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(power, "_judge", _fake_judge(calls, set()))
    got = power._judge_all(_mutants(), power._Store(str(tmp_path)), _params(tmp_path, "a", 0))
    assert calls == []
    assert all("killed_by_tests" not in r for r in got)


def test_the_two_test_passes_hold_every_fast_test_file_once() -> None:
    every = sorted(
        str(f.relative_to(ROOT)) for t in power.FAST_TIERS for f in (ROOT / t).rglob("test_*.py")
    )
    for module in ("impl/gd/pubend.py", "impl/ticksets.py", "impl/streams/runs.py"):
        first, rest = power.ordered_test_files(module, ROOT)
        assert sorted(first + rest) == every
        assert not set(first) & set(rest)
        assert all("test_" in f for f in first)
    first, _ = power.ordered_test_files("impl/gd/pubend.py", ROOT)
    assert first  # some test file imports the pubend directly


def test_the_second_pass_runs_the_nearest_test_files_first() -> None:
    """No test file imports ``impl/gd/routing.py`` itself; the roles that call it do, so their
    tests run before the laws of the lattices (which the tiers' order put first: a routing
    mutant took 191 s of tests on 35f4f7f)."""
    first, rest = power.ordered_test_files("impl/gd/routing.py", ROOT)
    assert first == []
    dist = [power_judge.import_distance(ROOT / f, "gapless.impl.gd.routing") for f in rest]
    known = [d for d in dist if d is not None]
    assert known == sorted(known)
    assert known[0] == 2
    assert dist[: len(known)] == known  # files no import chain leads from come last
    assert "tests/unit/test_gd_ib.py" in rest[:12]
    assert not rest[0].startswith("tests/laws/")


def test_only_names_any_mutation_point_and_refuses_unknown_ids() -> None:
    modules = ["impl/transfer.py", "impl/ticksets.py"]
    got = power.named_mutants(ROOT, modules, "impl/transfer.py:63:bool constant#7")
    assert [m.ident for m in got] == ["impl/transfer.py:63:bool constant#7"]
    assert "all_s = False" in got[0].diff
    with pytest.raises(ValueError, match="do not exist"):
        power.named_mutants(ROOT, modules, "impl/transfer.py:63:bool constant#8")
    with pytest.raises(ValueError, match="do not exist"):
        power.named_mutants(ROOT, modules, "impl/nowhere.py:1:x#0")
    params = power._params({"only": "a,b", "tests": "0"})
    assert params["only"] == "a,b"
    assert params["tests"] == 0


def test_tests_off_judges_the_campaign_verdicts_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(power, "_judge", _fake_judge(calls, set()))
    params = {**power._params({"tests": "0"}), "campaign_key": "k"}
    records = power._judge_all(_mutants(), power._Store(None), params)
    assert sorted(calls) == [(f"impl/m{i}.py", "campaign") for i in range(3)]
    assert all(r["killed_by_campaign"] and "killed_by_tests" not in r for r in records)


def test_a_campaign_that_cannot_run_with_the_mutant_kills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def done(code: int, over_cap: bool) -> power_judge.Capped:
        got = power_judge.Capped([], code, "{}", "CampaignConfigError: ...")
        got.over_cap = over_cap
        return got

    params = power._params({})
    cases = ((0, False, False), (1, False, True), (2, False, True), (-9, True, True))
    for code, over_cap, killed in cases:
        monkeypatch.setattr(
            power_judge, "run_capped", lambda *_a, c=code, o=over_cap, **_k: done(c, o)
        )
        got = power_judge.one_campaign({}, tmp_path, params, ())
        assert got["killed"] is killed
        assert got["exit"] == code
        assert got["memory_cap"] is over_cap


def test_the_report_lists_every_campaign_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [
        {"mutant": "a", "module": "impl/m0.py", "diff": "d", "killed_by_campaign": True},
        {"mutant": "b", "module": "impl/m1.py", "diff": "d"},
    ]
    monkeypatch.setattr(power, "run_modules", lambda: ["impl/m0.py", "impl/m1.py"])
    monkeypatch.setattr(power, "sample", lambda *_a, **_k: _mutants()[:2])
    monkeypatch.setattr(power, "verdict_keys", lambda: {"tests": "t", "campaign": "c"})
    monkeypatch.setattr(power, "run_lines", lambda *_a: {})
    monkeypatch.setattr(power, "unrun", lambda *_a: [])
    monkeypatch.setattr(power, "_judge_all", lambda *_a: records)
    got = power.run(tests="0", judge="0")
    assert got["judged"] == 0  # no tests verdict: not part of campaign_power
    assert got["campaign_verdicts"] == {
        "a": {"killed": True, "by_invariant": None, "schedules_run": None}
    }
