"""The power bench never counts a kill by a test that fails on the unmutated code (issue 18
§1): the test that killed a mutant is run once on the clean code, staged as a mutant is, and
a failure there stops the bench naming the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from gapless.benchmarks import power, power_judge
from gapless.benchmarks._mutants import Mutant

MUTANT = Mutant(module="impl/ledger.py", line=1, kind="k", index=0, source="x = 1", diff="d")


def _params(out: Path) -> dict[str, object]:
    return {"_store": power._Store(str(out)), "tests_key": "key-1"}


def test_a_killer_that_passes_clean_is_checked_once_per_tests_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def passes(test_id: str, module: str, work: Path) -> bool:
        calls.append(test_id)
        return True

    monkeypatch.setattr(power, "killer_passes_clean", passes)
    params = _params(tmp_path / "out")
    power._check_killer("tests/unit/test_a.py::t", MUTANT, tmp_path, params)
    power._check_killer("tests/unit/test_a.py::t", MUTANT, tmp_path, params)
    assert calls == ["tests/unit/test_a.py::t"]  # remembered in out, not run again
    power._check_killer("tests/unit/test_a.py::t", MUTANT, tmp_path, _params(tmp_path / "out"))
    assert len(calls) == 1  # a resumed bench reads it back
    other = {"_store": params["_store"], "tests_key": "key-2"}
    power._check_killer("tests/unit/test_a.py::t", MUTANT, tmp_path, other)
    assert len(calls) == 2  # another tests key: the code changed, checked again


def test_a_killer_that_fails_clean_stops_the_bench_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(power, "killer_passes_clean", lambda t, m, w: False)
    with pytest.raises(power_judge.KillerFailsClean, match=r"test_b\.py::t .*impl/ledger\.py"):
        power._check_killer("tests/unit/test_b.py::t", MUTANT, tmp_path, _params(tmp_path))


def test_killer_passes_clean_runs_the_test_on_the_staged_clean_code(tmp_path: Path) -> None:
    """For real: a passing test passes on the staged unmutated ``impl/``; a failing one does
    not (written outside the tiers, so nothing in the repository fails)."""
    good = tmp_path / "test_good.py"
    good.write_text(
        "from gapless.impl import ledger\n\n"
        "def test_staged():\n"
        "    assert '/src/gapless/impl/' in ledger.__file__.replace('\\\\', '/')\n"
    )
    bad = tmp_path / "test_bad.py"
    bad.write_text("def test_fails():\n    assert 1 == 2\n")
    assert power_judge.killer_passes_clean(f"{good}::test_staged", MUTANT.module, tmp_path / "a")
    assert not power_judge.killer_passes_clean(f"{bad}::test_fails", MUTANT.module, tmp_path / "b")


def test_a_failing_node_id_with_spaces_is_read_whole() -> None:
    """power10 stopped on ``test_semantics[loc`` — the id cut at its first space, which
    pytest could not find on the clean code either."""
    out = (
        'FAILED tests/unit/test_filters.py::test_semantics[loc == "NY" and p > 3-attrs0-True]'
        " - AssertionError: assert False\n"
        "ERROR tests/unit/test_x.py::test_y\n"
    )
    assert power_judge._FAILED.findall(out) == [
        'tests/unit/test_filters.py::test_semantics[loc == "NY" and p > 3-attrs0-True]',
        "tests/unit/test_x.py::test_y",
    ]
