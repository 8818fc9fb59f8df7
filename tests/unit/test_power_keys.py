"""The power bench's verdict keys: the code a judge can load, no more, no less (issue 18 §1)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gapless.benchmarks import power, power_keys
from gapless.benchmarks.power_judge import FAST_TIERS

ROOT = Path(__file__).resolve().parents[2]
_TOPS = ("spec", "impl", "invariants", "models", "spark_fuzz", "cli", "benchmarks")

# `gapless fuzz` run in-process on the demo's first seed; at exit, every gapless module the
# process loaded. (Its first three seeds, one of each setup of its mix, and a failing schedule
# of a planted bug load the same 179 modules: measured, power6.)
_PROBE = """
import atexit, sys
loaded = lambda: sorted(m for m in sys.modules if m.startswith("gapless."))
atexit.register(lambda: print("\\n".join(loaded())))
from gapless.cli.main import main
sys.argv = ["gapless", "fuzz", "--config", "campaigns/demo.toml", "--executor", "loop",
            "--schedules", "1", "--out", sys.argv[1], "--no-shrink", "--json"]
main()
"""


def _copy(tmp: Path) -> Path:
    for top in (*_TOPS, "tests", "campaigns"):
        shutil.copytree(ROOT / top, tmp / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def test_the_campaign_closure_holds_every_module_a_campaign_loads(tmp_path: Path) -> None:
    """The static closure against a real ``gapless fuzz``: a module the run loads but the key
    leaves out would let a stale verdict through."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(re.findall(r"^gapless\.\S+$", done.stdout, re.MULTILINE))
    keyed = power_keys.closure(ROOT, power_keys.CAMPAIGN_ROOTS, ("gapless.cli", "gapless.cli.main"))
    judged = {m for m in loaded if m.startswith("gapless.impl")}
    assert judged  # the probe ran the roles
    assert "gapless.models.gd_binding" in loaded
    assert loaded - judged <= keyed
    # and the closure is narrower than everything: what no campaign runs is out of it
    assert "gapless.spec.proofs" not in keyed
    assert "gapless.spark_fuzz.zoo_campaign" not in keyed
    assert "gapless.benchmarks.power" not in keyed


def test_strings_naming_modules_are_followed() -> None:
    """Non-vacuity of the string rule: the Spark daemon preloads ``gapless.models.runner`` by
    name only; dropping the rule drops modules only strings name."""
    keyed = power_keys.closure(ROOT, power_keys.CAMPAIGN_ROOTS)
    assert "gapless.spark_fuzz.spark_daemon" in keyed
    daemon = ROOT / "spark_fuzz" / "spark_daemon.py"
    text = daemon.read_text()
    with_strings = power_keys._named(ROOT, "gapless.spark_fuzz.spark_daemon", text, True)
    without = power_keys._named(ROOT, "gapless.spark_fuzz.spark_daemon", text, False)
    assert "gapless.models.runner" in with_strings - without


def test_each_key_follows_its_own_code_only(tmp_path: Path) -> None:
    root = _copy(tmp_path)

    def keys() -> dict[str, str]:
        return {
            "campaign": power_keys.campaign_key(root),
            "tests": power_keys.tests_key(root, FAST_TIERS),
            "impl": power_keys.impl_key(root),
        }

    last = [keys()]

    def edit(rel: str) -> dict[str, bool]:
        f = root / rel
        f.write_text(f.read_text() + "\n# changed\n")
        before, after = last[0], keys()
        last[0] = after
        return {k: before[k] != after[k] for k in before}

    every = {"campaign": True, "tests": True, "impl": False}
    assert edit("invariants/gd/traffic.py") == every
    assert edit("spark_fuzz/guided.py") == every  # the runner imports it
    assert edit("impl/gd/pubend.py") == {"campaign": False, "tests": False, "impl": True}
    assert edit("spec/proofs.py") == {"campaign": False, "tests": True, "impl": False}
    assert edit("campaigns/demo.toml") == {"campaign": True, "tests": True, "impl": False}
    # a test outside the fast tiers, or a module nothing imports, keys nothing
    nothing = {"campaign": False, "tests": False, "impl": False}
    assert edit("tests/spark/test_spark_zoo.py") == nothing
    (root / "models" / "unused_helper.py").write_text("X = 1\n")
    assert edit("models/unused_helper.py") == nothing


def test_a_verdict_under_another_key_is_judged_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gapless.benchmarks._mutants import Mutant

    calls: list[str] = []

    def judge(m: Mutant, record: dict[str, Any], what: str, params: dict[str, Any]) -> Any:
        calls.append(what)
        if what == "tests":
            return {**record, "killed_by_tests": True, "tests_key": params["tests_key"]}
        return {**record, "killed_by_campaign": True, "campaign_key": params["campaign_key"]}

    monkeypatch.setattr(power, "_judge", judge)
    mutants = [Mutant(module="impl/m.py", line=1, kind="k", index=0, source="x", diff="d")]

    def run(tests_key: str, campaign_key: str) -> list[str]:
        calls.clear()
        params = {**power._params({"out": str(tmp_path)}), "campaign_key": campaign_key}
        params["tests_key"] = tests_key
        power._judge_all(mutants, power._Store(str(tmp_path)), params)
        return list(calls)

    assert run("t1", "c1") == ["tests", "campaign"]
    assert run("t1", "c1") == []
    assert run("t1", "c2") == ["campaign"]
    assert run("t2", "c2") == ["tests"]


def test_the_bench_reports_both_keys() -> None:
    keys = power.verdict_keys()
    assert set(keys) == {"tests", "campaign"}
    impl, judge = keys["campaign"].split(":")[1:]
    assert keys["tests"].endswith(f":{impl}:{judge}")
    assert impl == power_keys.impl_key(ROOT)
