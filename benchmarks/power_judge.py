"""How ``gapless bench power`` judges one mutant: the procedure a stored verdict depends on.

Theory of operation
-------------------
Everything here decides a verdict, so the text of this module is part of both verdict keys
(:mod:`gapless.benchmarks.power_keys`); the bench's bookkeeping and report
(:mod:`gapless.benchmarks.power`) are not, and change no verdict.

1. **Staging** (:func:`stage`): a fresh directory gets a copy of ``impl/`` with the one
   module changed, laid out as ``src/gapless/impl`` and put first on ``PYTHONPATH`` (the
   editable install supplies every other subpackage; Spark's Python workers inherit it).
2. **The tests** (:func:`tests_kill`): the fast tiers (:data:`FAST_TIERS`) in two passes, both
   stopping at the first failure (``-x``): first the test files that import the mutated
   module, then the others (:func:`ordered_test_files`). Together they run every test file
   once, so the verdict (some test fails) is the full tiers'; the order and the stop only
   change how long a killed mutant takes. The Hypothesis profile ``mutation`` draws the
   ``ci`` profile's examples (``derandomize``, same count) and skips shrinking, which never
   changes whether a test fails.
3. **The campaign** (:func:`campaign_kill`): the default demo campaign (``campaigns/demo.toml``,
   its seed and schedule count as shipped unless ``schedules`` is given), on Spark, no
   shrinking, ``--fail-fast``: killed when ``gapless fuzz`` exits non-zero — 1: a schedule
   failed, errored or timed out; anything else: the campaign could not run with the mutant
   (its topology no longer builds...), which the unmutated code never does. Stopping at the
   first chunk with a failing schedule cannot change that exit code, only how long a killed
   mutant takes; a surviving mutant always runs every schedule.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from gapless.benchmarks._mutants import Mutant

__all__ = [
    "DEMO",
    "FAST_TIERS",
    "ROOT",
    "campaign_kill",
    "one_campaign",
    "ordered_test_files",
    "stage",
    "tests_kill",
]

ROOT: Final = Path(__file__).resolve().parents[1]
DEMO: Final = ROOT / "campaigns" / "demo.toml"
FAST_TIERS: Final = ("tests/laws", "tests/stateful", "tests/scenarios", "tests/unit")
_FAILED: Final = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def ordered_test_files(module: str, root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The test files of :data:`FAST_TIERS` under ``root`` split in two: those that name the
    mutated ``module``'s import path (``gapless.impl.gd.pubend`` or ``from gapless.impl.gd
    import pubend``), then all the others. Together they are every test file, once."""
    dotted = "gapless." + module.removesuffix(".py").replace("/", ".")
    package, _, leaf = dotted.rpartition(".")
    names = (dotted, f"from {package} import {leaf}")
    first: list[str] = []
    rest: list[str] = []
    for tier in FAST_TIERS:
        for f in sorted((root / tier).rglob("test_*.py")):
            text = f.read_text()
            (first if any(n in text for n in names) else rest).append(str(f.relative_to(root)))
    return first, rest


def stage(mutant: Mutant, work: Path) -> dict[str, str]:
    """Lay out the mutated ``impl/`` under ``work/src/gapless/impl``; the environment to use."""
    src = work / "src" / "gapless"
    src.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "impl", src / "impl", ignore=ignore)
    (src / "impl" / Path(mutant.module).relative_to("impl")).write_text(mutant.source)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(work / "src"), env.get("PYTHONPATH")]))
    env["HYPOTHESIS_PROFILE"] = "mutation"  # the ci profile's examples, no shrinking
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(work / "hypothesis")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def tests_kill(mutant: Mutant, env: dict[str, str], work: Path) -> dict[str, Any]:
    """``killed``: whether some fast test fails with the mutant staged in ``env``; ``by``: the
    first failing test (pytest's node id), ``pass``: 1 or 2, which pass it failed in."""
    base = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    base += ["--basetemp", str(work / "pytest")]
    for n, files in enumerate(ordered_test_files(mutant.module), start=1):
        if not files:
            continue
        done = subprocess.run(
            [*base, *files], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            failed = _FAILED.search(done.stdout)
            return {"killed": True, "by": failed.group(1) if failed else None, "pass": n}
    return {"killed": False, "by": None, "pass": None}


def campaign_kill(env: dict[str, str], work: Path, params: dict[str, Any]) -> dict[str, Any]:
    got = one_campaign(env, work, params, ())
    if not got["killed"] and got["exit"] == 0 and params["total_order"]:
        extra = ("--topology", "total-order", "--campaign-id", "demo-total-order")
        more = one_campaign(env, work, {**params, "schedules": params["total_order"]}, extra)
        got = {**more, "topology": "total-order"}
    return got


def one_campaign(
    env: dict[str, str], work: Path, params: dict[str, Any], extra: tuple[str, ...]
) -> dict[str, Any]:
    gapless = Path(sys.executable).with_name("gapless")
    cmd = [str(gapless), "fuzz", "--config", str(DEMO), "--out", str(work / "out")]
    cmd += ["--no-shrink", "--fail-fast", "--json", "--master", str(params["master"]), *extra]
    if params["schedules"] is not None:
        cmd += ["--schedules", str(params["schedules"])]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    try:
        summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        summary = {}
    return {
        # 1: a schedule failed; any other non-zero exit: the campaign could not run with the
        # mutant (e.g. its topology no longer builds, a configuration error), which the
        # unmutated code never does — the mutant is seen either way
        "killed": done.returncode != 0,
        "exit": done.returncode,
        "failed": summary.get("failed"),
        "errors": summary.get("errors"),
        "timeouts": summary.get("timeouts"),
        "by_invariant": summary.get("by_invariant"),
        "schedules_run": summary.get("schedules_committed"),
        "stderr_tail": done.stderr[-400:] if done.returncode not in (0, 1) else "",
    }
