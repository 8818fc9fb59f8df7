"""The power bench samples the lines the protocol runs (issue 18 §1, power5)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from gapless.benchmarks import power
from gapless.benchmarks._mutants import Mutant, mutants_of, run_points, sample, unrun
from gapless.benchmarks.power_lines import enclosing_function, measure

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """LIMIT = 3


def used(x, step=1):
    if x < LIMIT:
        return x + step
    return x


def helper(y, bound=7):
    return y * 2 > bound


class Box:
    def size(self):
        return LIMIT - 1
"""
# the lines a run that calls used(1) only executes: module body, both defs, the class body
RAN = frozenset({1, 4, 5, 6, 10, 14, 15})


def _root(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(SOURCE)
    return tmp_path


def test_only_points_on_lines_that_ran_are_kept(tmp_path: Path) -> None:
    root = _root(tmp_path)
    tree = ast.parse(SOURCE)
    every = mutants_of(root, "m.py")
    kept = run_points(tree, RAN)
    kept_lines = {m.line for m in every if m.index in kept}
    # LIMIT = 3, used's default step=1 (its body ran), x < LIMIT, x + step
    assert kept_lines == {1, 4, 5, 6}
    # used's untaken ``return x``; helper's default bound=7 sits on a def line that ran at
    # import, but helper never ran; Box.size never ran
    assert {m.line for m in every if m.index not in kept} == {7, 10, 11, 16}


def test_the_sample_draws_only_from_run_points_and_is_unchanged_without_lines(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    ran = {"m.py": RAN}
    got = sample(root, ["m.py"], 100, seed=3, ran=ran)
    assert got
    assert {m.line for m in got} <= {1, 4, 5, 6}
    assert [m.ident for m in sample(root, ["m.py"], 4, seed=3, ran=ran)] == [
        m.ident for m in sample(root, ["m.py"], 4, seed=3, ran=ran)
    ]
    # without ``ran``: every point, the draw earlier samples made
    assert len(sample(root, ["m.py"], 100, seed=3)) == len(mutants_of(root, "m.py"))


def test_unrun_mutants_name_their_function(tmp_path: Path) -> None:
    root = _root(tmp_path)
    found = unrun(root, mutants_of(root, "m.py"), {"m.py": RAN})
    assert {where for _m, where, _c in found} == {"used", "helper", "Box.size"}
    # used ran (its ``return x`` is a branch not taken); helper and Box.size never ran
    assert {where: called for _m, where, called in found} == {
        "used": True,
        "helper": False,
        "Box.size": False,
    }
    tree = ast.parse(SOURCE)
    assert enclosing_function(tree, 1) == "<module>"
    assert enclosing_function(tree, 16) == "Box.size"


def test_the_demo_runs_the_roles_and_not_the_uncalled_helpers() -> None:
    """One seed per setup of the real demo under coverage (a few seconds)."""
    got: dict[str, Any] = measure(ROOT, per_setup=1)
    assert sorted(got["seeds"]) == sorted(["", "best-effort", "total-order", "with-group-commit"])
    assert all(len(seeds) == 1 for seeds in got["seeds"].values())
    lines = {m: frozenset(ls) for m, ls in got["lines"].items()}
    pubend = ast.parse((ROOT / "impl/gd/pubend.py").read_text())
    curiosity = ast.parse((ROOT / "impl/curiosity.py").read_text())

    def body_lines(tree: ast.Module, name: str) -> set[int]:
        fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
        return {s.lineno for s in fn.body[1:]}  # past the docstring

    assert body_lines(pubend, "on_publish") & lines["impl/gd/pubend.py"]
    # the group-commit share runs the batch write's completion (power10's miss pubend.py:236)
    assert body_lines(pubend, "_batch_written") & lines["impl/gd/pubend.py"]
    # a helper no role calls [power4's list]: its body never runs
    assert not body_lines(curiosity, "forget_curiosity") & lines["impl/curiosity.py"]


def _mutants() -> list[Mutant]:
    return [
        Mutant(module=f"impl/m{i}.py", line=1, kind="k", index=i, source=f"x = {i}", diff="d")
        for i in range(3)
    ]


@pytest.mark.parametrize(
    ("campaigns", "wanted"),
    [
        ("none", ["tests", "tests", "tests"]),
        ("killed", ["tests", "tests", "campaign", "tests"]),
        ("all", ["tests", "tests", "campaign", "tests", "campaign", "campaign"]),
    ],
)
def test_campaigns_limits_whose_campaign_is_judged(
    campaigns: str, wanted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []

    def judge(m: Mutant, record: dict[str, Any], what: str, params: dict[str, Any]) -> Any:
        calls.append((m.module, what))
        if what == "tests":
            return {**record, "killed_by_tests": m.module == "impl/m1.py"}
        return {**record, "killed_by_campaign": False, "campaign_key": params["campaign_key"]}

    monkeypatch.setattr(power, "_judge", judge)
    params = {**power._params({"campaigns": campaigns}), "campaign_key": "k"}
    records = power._judge_all(_mutants(), power._Store(None), params)
    assert sorted(what for _m, what in calls) == sorted(wanted)
    # with no campaigns the mutant the tests kill lacks a verdict campaign_power needs
    complete = [power._complete(r, campaigns) for r in records]
    assert complete == [True, campaigns != "none", True]
    # a survivor of the tests needs no campaign verdict unless campaigns=all
    assert power._complete({"killed_by_tests": False}, "killed")
    assert not power._complete({"killed_by_tests": False}, "all")
    assert not power._complete({"killed_by_tests": True}, "killed")


def test_campaigns_parameter_is_checked() -> None:
    assert power._params({})["campaigns"] == "all"
    with pytest.raises(ValueError, match="campaigns='some'"):
        power._params({"campaigns": "some"})


def test_the_modules_are_the_same_under_the_benchs_staging(tmp_path: Path) -> None:
    """A staged copy of ``impl`` first on the path (as every mutant is judged) names the same
    modules: a power test that read the repository's ``impl`` instead failed for every staged
    mutant, and counted it killed by the tests."""
    mutant = mutants_of(ROOT, "impl/gd/step.py")[0]
    env = power._stage(
        attrs.evolve(mutant, source=(ROOT / "impl/gd/step.py").read_text()), tmp_path
    )
    probe = "from gapless.benchmarks.power import run_modules; print(run_modules())"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(power.run_modules())
