"""Mutation testing of the verified core's lattice and stream modules (``make mutation``).

``python benchmarks/mutation_score.py --run`` stages the code, runs mutmut 3.8 over
``impl/knowledge.py``, ``impl/curiosity.py``, the stream package ``impl/streams/``
(``runs.py``, ``typed.py``, ``paired.py`` and its ``__init__``), the tick sets
``impl/ticksets.py`` and the curiosity ledgers ``impl/ledger.py`` (the modules listed in
``[tool.mutmut] only_mutate``) against the fast test tiers, and prints the score (per module
too); without ``--run`` it only reports an earlier run.

Why a staging directory: mutmut names a mutant after its file path (``src/`` stripped) and
checks that the tests import the code under that name. Our modules live in ``impl/`` but are
imported as ``gapless.impl.*`` (setuptools package-dir mapping), so the stage lays them out as
``build/mutation/src/gapless/impl/`` next to a copy of ``pyproject.toml`` (whose
``[tool.mutmut]`` table configures the run) and ``tests/``. mutmut puts ``mutants/src`` first on
``sys.path``; ``gapless.impl`` then resolves to the mutated copy while every other subpackage
still comes from the editable install. The repository itself is never touched.

The test selection is ``[tool.mutmut] pytest_add_cli_args_test_selection``: the lattice and
stream tests of ``tests/laws`` and ``tests/unit`` (the other unit tests exercise the CLI and
the simulator, which are slow here and do not test these modules).

Score = (killed + timeout) / (total - skipped); a mutant with no covering test counts as
surviving. Output: ``killed/total``, the percentage, every survivor, and
``build/mutation/score.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "build" / "mutation"
TARGET = 85.0
KILLED = {"killed", "timeout", "caught by type check"}


def _mutmut() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    return str(exe) if exe.exists() else "mutmut"


def stage() -> None:
    """Lay out ``build/mutation`` for mutmut (see the module docstring)."""
    if STAGE.exists():
        shutil.rmtree(STAGE)
    (STAGE / "src" / "gapless").mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / "impl", STAGE / "src" / "gapless" / "impl", ignore=ignore)
    shutil.copytree(ROOT / "tests", STAGE / "tests", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", STAGE / "pyproject.toml")
    (STAGE / "spec").mkdir()
    shutil.copy2(ROOT / "spec" / "lattices.md", STAGE / "spec" / "lattices.md")


def run_mutmut(max_children: int) -> float:
    """Run mutmut in the stage; its output goes to ``build/mutation/mutmut.log``."""
    env = dict(os.environ)
    env.setdefault("HYPOTHESIS_PROFILE", "mutation")
    t0 = time.monotonic()
    with (STAGE / "mutmut.log").open("w") as log:
        subprocess.run(
            [_mutmut(), "run", "--max-children", str(max_children)],
            cwd=STAGE,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    return time.monotonic() - t0


def results() -> dict[str, str]:
    """Every mutant's status, from ``mutmut results --all``."""
    out = subprocess.run(
        [_mutmut(), "results", "--all", "true"],
        cwd=STAGE,
        capture_output=True,
        text=True,
        check=False,
    )
    status: dict[str, str] = {}
    for line in out.stdout.splitlines():
        name, sep, state = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            status[name] = state
    return status


def summarize(status: dict[str, str]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for state in status.values():
        counts[state] = counts.get(state, 0) + 1
    skipped = counts.get("skipped", 0)
    total = len(status) - skipped
    killed = sum(n for state, n in counts.items() if state in KILLED)
    survivors = sorted(n for n, s in status.items() if s not in KILLED and s != "skipped")
    by_module: dict[str, list[int]] = {}
    for name, state in status.items():
        module = name.split(".x")[0]
        k_t = by_module.setdefault(module, [0, 0])
        if state != "skipped":
            k_t[1] += 1
            k_t[0] += state in KILLED
    score = 100.0 * killed / total if total else 0.0
    return {
        "killed": killed,
        "total": total,
        "score_percent": round(score, 2),
        "target_percent": TARGET,
        "met": score >= TARGET,
        "counts": dict(sorted(counts.items())),
        "by_module": {m: f"{k}/{t}" for m, (k, t) in sorted(by_module.items())},
        "survivors": survivors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="stage and run mutmut first")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    args = parser.parse_args(argv)
    seconds = None
    if args.run:
        stage()
        seconds = run_mutmut(args.max_children)
    if not (STAGE / "mutants").exists():
        print("no mutation run found: run `make mutation` (or this script with --run)")
        return 2
    summary = summarize(results())
    if seconds is not None:
        summary["seconds"] = round(seconds, 1)
    (STAGE / "score.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(
        f"mutation score: {summary['killed']}/{summary['total']} killed = "
        f"{summary['score_percent']:.1f}% (target >= {TARGET:g}%: "
        f"{'met' if summary['met'] else 'missed'})"
    )
    for module, ratio in summary["by_module"].items():
        print(f"  {module}: {ratio}")
    print(f"statuses: {summary['counts']}")
    print(f"survivors ({len(summary['survivors'])}):")
    for name in summary["survivors"]:
        print(f"  {name}")
        if args.show:
            diff = subprocess.run(
                [_mutmut(), "show", name], cwd=STAGE, capture_output=True, text=True, check=False
            )
            print("    " + diff.stdout.replace("\n", "\n    "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
