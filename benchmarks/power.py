"""``gapless bench power``: how many of the bugs the tests find does the main job find? (issue 18)

Theory of operation
-------------------
1. **Which modules.** The modules the guaranteed-delivery protocol runs are found, not listed:
   import ``gapless.impl.gd`` in a fresh interpreter and take every ``gapless.impl`` module it
   loaded, minus those that cannot change what a correct run does (the planted-bug table
   ``variants``, the rule map that only documents handlers, the error types).
2. **Which mutants.** :mod:`gapless.benchmarks._mutants` enumerates every mutation point of
   those modules (mutmut's operator kinds) and draws ``mutants`` of them with a fixed ``seed``.
3. **Who kills each.** For every mutant, a fresh directory gets a copy of ``impl/`` with the
   one module changed, laid out as ``src/gapless/impl`` and put first on ``PYTHONPATH`` (the
   editable install supplies every other subpackage; Spark's Python workers inherit the
   path). Then, each in its own output directory:
   - the fast test tiers (:data:`FAST_TIERS`, Hypothesis profile ``ci``, stop at the first
     failure): killed by the tests when pytest fails;
   - the default demo campaign (``campaigns/demo.toml``: its schedule count and seed as
     shipped, on local Spark, no shrinking): killed by the campaign when ``gapless fuzz``
     exits 1 (some schedule failed, errored or timed out).
4. **The figures.** ``campaign_power`` = killed by both / killed by the tests (the share of
   the bugs the tests find that the campaign finds too); ``equivalent_suspects`` are the
   mutants nobody killed, with their diff, for a person to judge; per-module rows; the wall
   time. Target: ``campaign_power >= 0.9``.

Parameters (``gapless bench power --param KEY=VALUE``): ``mutants`` (60), ``seed`` (1),
``schedules`` (the demo's 300; fewer for a quick look, reported as such), ``master``
(``local[*]``), ``total_order`` (0: off; N: a mutant the demo campaign misses also meets the
demo campaign on the total-order merge topology [GD Figure 1] for N schedules, and counts as
killed by the campaign if that fails — the demo runs Figure 3 only, where no merge code runs).
It is long (minutes per surviving mutant): a bench, never part of ``make test``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

from gapless.benchmarks._mutants import Mutant, sample

__all__ = ["FAST_TIERS", "TAKES_PARAMS", "run", "run_modules"]

ROOT: Final = Path(__file__).resolve().parents[1]
DEMO: Final = ROOT / "campaigns" / "demo.toml"
FAST_TIERS: Final = ("tests/laws", "tests/stateful", "tests/scenarios", "tests/unit")
TARGET: Final = 0.9
TAKES_PARAMS: Final = True
#: Modules the protocol loads that cannot change a correct run's behaviour.
_NOT_RUN: Final = (
    "gapless.impl.gd.variants",  # the planted bugs: off in a correct run
    "gapless.impl.gd.rulemap",  # documents the handlers
    "gapless.impl.variants",  # how a planted bug is chosen
    "gapless.impl.errors",  # exception types
    "gapless.impl.trace",  # the trace records and their digest, not the protocol
)

_PROBE: Final = (
    "import sys, gapless.impl.gd, gapless.models.gd_binding\n"
    "print('\\n'.join(sorted(getattr(m, '__file__', None) or '' for n, m in sys.modules.items()"
    " if n.startswith('gapless.impl.') and n not in {skip!r})))"
)


def run_modules() -> list[str]:
    """The ``impl/`` modules (paths relative to the repository) the GD protocol runs."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(skip=set(_NOT_RUN))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    impl = (ROOT / "impl").resolve()
    mods = []
    for line in out.splitlines():
        path = Path(line).resolve() if line else None
        if path is not None and path.is_relative_to(impl):
            mods.append(str(path.relative_to(ROOT)))
    return sorted(mods)


def _stage(mutant: Mutant, work: Path) -> dict[str, str]:
    """Lay out the mutated ``impl/`` under ``work/src/gapless/impl``; the environment to use."""
    src = work / "src" / "gapless"
    src.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "impl", src / "impl", ignore=ignore)
    (src / "impl" / Path(mutant.module).relative_to("impl")).write_text(mutant.source)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(work / "src"), env.get("PYTHONPATH")]))
    env["HYPOTHESIS_PROFILE"] = "ci"
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(work / "hypothesis")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _tests_kill(env: dict[str, str], work: Path) -> bool:
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    cmd += ["--basetemp", str(work / "pytest"), *FAST_TIERS]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return done.returncode != 0


def _campaign_kill(env: dict[str, str], work: Path, params: dict[str, Any]) -> dict[str, Any]:
    got = _one_campaign(env, work, params, ())
    if not got["killed"] and got["exit"] == 0 and params["total_order"]:
        extra = ("--topology", "total-order", "--campaign-id", "demo-total-order")
        more = _one_campaign(env, work, {**params, "schedules": params["total_order"]}, extra)
        got = {**more, "topology": "total-order"}
    return got


def _one_campaign(
    env: dict[str, str], work: Path, params: dict[str, Any], extra: tuple[str, ...]
) -> dict[str, Any]:
    gapless = Path(sys.executable).with_name("gapless")
    cmd = [str(gapless), "fuzz", "--config", str(DEMO), "--out", str(work / "out")]
    cmd += ["--no-shrink", "--json", "--master", str(params["master"]), *extra]
    if params["schedules"] is not None:
        cmd += ["--schedules", str(params["schedules"])]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    try:
        summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        summary = {}
    return {
        "killed": done.returncode == 1,
        "exit": done.returncode,
        "failed": summary.get("failed"),
        "errors": summary.get("errors"),
        "timeouts": summary.get("timeouts"),
        "stderr_tail": done.stderr[-400:] if done.returncode not in (0, 1) else "",
    }


def _judge(mutant: Mutant, params: dict[str, Any]) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="gapless-power-"))
    try:
        env = _stage(mutant, work)
        t0 = time.perf_counter()
        by_tests = _tests_kill(env, work)
        t1 = time.perf_counter()
        campaign = _campaign_kill(env, work, params)
        t2 = time.perf_counter()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "mutant": mutant.ident,
        "module": mutant.module,
        "killed_by_tests": by_tests,
        "killed_by_campaign": campaign["killed"],
        "campaign": campaign,
        "tests_s": round(t1 - t0, 1),
        "campaign_s": round(t2 - t1, 1),
        "diff": mutant.diff,
    }


def _params(given: dict[str, str]) -> dict[str, Any]:
    allowed = {"mutants": 60, "seed": 1, "schedules": None, "master": "local[*]", "total_order": 0}
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"bench power: unknown parameter(s) {unknown}; allowed: {sorted(allowed)}")
    out: dict[str, Any] = dict(allowed)
    for key, value in given.items():
        if key == "master":
            out[key] = value
            continue
        least = 0 if key in ("seed", "total_order") else 1
        if not value.isdigit() or int(value) < least:
            raise ValueError(
                f"bench power: {key}={value!r} is not allowed; expected an integer >= {least}"
            )
        out[key] = int(value)
    return out


def _rows(judged: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    per: dict[str, Counter[str]] = {}
    for r in judged:
        c = per.setdefault(r["module"], Counter())
        c["mutants"] += 1
        c["killed_by_tests"] += r["killed_by_tests"]
        c["killed_by_campaign"] += r["killed_by_campaign"]
        c["killed_by_both"] += r["killed_by_tests"] and r["killed_by_campaign"]
    return {m: dict(sorted(c.items())) for m, c in sorted(per.items())}


def run(**given: str) -> dict[str, Any]:
    params = _params(given)
    t0 = time.perf_counter()
    modules = run_modules()
    mutants = sample(ROOT, modules, params["mutants"], params["seed"])
    judged = [_judge(m, params) for m in mutants]
    by_tests = sum(r["killed_by_tests"] for r in judged)
    by_campaign = sum(r["killed_by_campaign"] for r in judged)
    both = sum(r["killed_by_tests"] and r["killed_by_campaign"] for r in judged)
    power = round(both / by_tests, 3) if by_tests else 0.0
    return {
        "mutants": len(judged),
        "seed": params["seed"],
        "schedules": params["schedules"] or "demo.toml's",
        "total_order_schedules": params["total_order"],
        "modules": modules,
        "killed_by_tests": by_tests,
        "killed_by_campaign": by_campaign,
        "killed_by_both": both,
        "campaign_power": power,
        "campaign_only": [
            r["mutant"] for r in judged if r["killed_by_campaign"] and not r["killed_by_tests"]
        ],
        "missed_by_campaign": [
            {"mutant": r["mutant"], "diff": r["diff"]}
            for r in judged
            if r["killed_by_tests"] and not r["killed_by_campaign"]
        ],
        "equivalent_suspects": [
            {"mutant": r["mutant"], "diff": r["diff"]}
            for r in judged
            if not r["killed_by_tests"] and not r["killed_by_campaign"]
        ],
        "per_module": _rows(judged),
        "judged": judged,
        "wall_s": round(time.perf_counter() - t0, 1),
        "targets": {
            "campaign_power": {"value": power, "target": f">= {TARGET}", "met": power >= TARGET}
        },
    }
