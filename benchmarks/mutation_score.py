"""Mutation score of the verified core the GD roles run (``make mutation``, issue 11).

``python benchmarks/mutation_score.py --run`` runs mutmut 3.8 over exactly the core modules
the guaranteed-delivery roles run for streams, tick sets and curiosity ledgers — the stream
package ``impl/streams/`` (``__init__``, ``runs``, ``typed``, ``paired``), ``impl/ticksets.py``
and ``impl/ledger.py`` (:data:`MODULES`; :func:`roles_core_modules` checks the list against
what importing the roles loads) — against the law and differential tests that judge them
against ``spec/`` (:data:`TESTS`: ``tests/laws`` and the typed-error cases of
``tests/unit/test_streams.py``). It prints, and writes as JSON, a per-module and total score,
every survivor with its diff, the run's wall time and this machine's
``python_ns_per_iteration``. Without ``--run`` it only reports the runs on disk.

Scoping and resuming (the machine is shared and loaded): each module has its own stage,
``build/mutation/<module>/``, so ``--module ticksets`` runs one module alone; a stage that
exists is resumed, not rebuilt (mutmut keeps every verdict and runs only the mutants without
one), unless ``--fresh``. ``--retest`` copies the current tests and unmutated ``impl`` files
into the stages and re-runs the survivors (after a new test was written); with ``--run`` too,
it then runs the mutants not checked yet. ``--show`` prints each survivor's diff.

Why a stage: mutmut names a mutant after its file path (``src/`` stripped) and checks that
the tests import the code under that name. Our modules live in ``impl/`` but are imported as
``gapless.impl.*`` (setuptools package-dir mapping), so a stage lays them out as
``src/gapless/impl/`` next to ``tests/`` and a ``pyproject.toml`` whose ``[tool.mutmut]``
table this script writes (the repository's own table is replaced in the copy). mutmut puts
``mutants/src`` first on ``sys.path``: ``gapless.impl`` then resolves to the mutated copy,
every other subpackage (``gapless.spec`` above all) to the editable install. The repository
itself is never touched.

Score = (killed + timeout) / (total - skipped); a mutant no test covers counts as surviving;
mutants an interrupted run did not reach are reported as not checked (the target is then
not met).
Mutants argued equivalent in ``benchmarks/mutation_equivalent.md`` (one ``- `name`: reason``
line each) are listed apart and also give a second score that leaves them out; the headline
score counts them as survivors. The JSON goes to ``build/mutation/score.json`` and, with
``--record``, to ``benchmarks/mutation_score.json`` (the committed figure the README cites).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gapless.benchmarks._targets import machine_speed

ROOT = Path(__file__).resolve().parent.parent
STAGES = ROOT / "build" / "mutation"
RECORD = ROOT / "benchmarks" / "mutation_score.json"
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.md"
TARGET = 85.0
KILLED = {"killed", "timeout", "caught by type check"}
# Not judged (yet): skipped by configuration, or not run by an interrupted run (resume it).
PENDING = {"skipped", "not checked"}
# Short name -> source file, relative to impl/.
MODULES = {
    "streams": "streams/__init__.py",
    "streams.runs": "streams/runs.py",
    "streams.typed": "streams/typed.py",
    "streams.paired": "streams/paired.py",
    "ticksets": "ticksets.py",
    "ledger": "ledger.py",
}
TESTS = ("tests/laws/", "tests/unit/test_streams.py")
# The roles' modules: importing them loads every core module they run.
ROLE_MODULES = ("pubend", "subend", "broker", "node", "step", "build")


def roles_core_modules() -> list[str]:
    """The stream, tick-set and ledger modules the GD roles load (in a fresh interpreter)."""
    code = (
        "import importlib, sys\n"
        f"for m in {ROLE_MODULES!r}: importlib.import_module('gapless.impl.gd.' + m)\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    prefixes = ("gapless.impl.streams", "gapless.impl.ticksets", "gapless.impl.ledger")
    return [m.removeprefix("gapless.impl.") for m in out if m.startswith(prefixes)]


def _mutmut() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    return str(exe) if exe.exists() else "mutmut"


def _mutmut_table(module: str) -> str:
    lines = [
        "[tool.mutmut]",
        "# Written by benchmarks/mutation_score.py for this stage only.",
        'source_paths = ["src/gapless/impl/"]',
        f'only_mutate = ["src/gapless/impl/{MODULES[module]}"]',
        f"pytest_add_cli_args_test_selection = {json.dumps(list(TESTS))}",
        'also_copy = ["spec/"]',
        # A mutant that loops forever is stopped after 4x its tests' CPU time (+1 s), not
        # mutmut's 15x: on a loaded 2-core machine the default cost minutes per such mutant.
        "timeout_multiplier = 4.0",
    ]
    return "\n".join(lines) + "\n"


def _copy_tests(stage_dir: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for where in (stage_dir / "tests", stage_dir / "mutants" / "tests"):
        if where.parent.exists():
            shutil.rmtree(where, ignore_errors=True)
            shutil.copytree(ROOT / "tests", where, ignore=ignore)


def _refresh(stage_dir: Path, module: str) -> bool:
    """Copy the current tests and every unmutated ``impl`` file into a stage (the mutants
    run against today's code); False when the mutated module itself changed (``--fresh``)."""
    _copy_tests(stage_dir)
    mutated = MODULES[module]
    for path in sorted((ROOT / "impl").rglob("*.py")):
        rel = path.relative_to(ROOT / "impl").as_posix()
        for base in (stage_dir / "src", stage_dir / "mutants" / "src"):
            target = base / "gapless" / "impl" / rel
            if rel != mutated:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
    staged = stage_dir / "src" / "gapless" / "impl" / mutated
    return staged.read_bytes() == (ROOT / "impl" / mutated).read_bytes()


def _write_pyproject(stage_dir: Path, module: str) -> None:
    """The repository's ``pyproject.toml`` with this script's ``[tool.mutmut]`` table."""
    toml = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    toml = re.sub(r"(?ms)^\[tool\.mutmut\]$.*?(?=^\[)", "", toml)
    text = toml + "\n" + _mutmut_table(module)
    for where in (stage_dir, stage_dir / "mutants"):
        if where.exists():
            (where / "pyproject.toml").write_text(text)


def stage(module: str) -> Path:
    """Lay out ``build/mutation/<module>`` for mutmut (see the module docstring)."""
    stage_dir = STAGES / module
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    (stage_dir / "src" / "gapless").mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / "impl", stage_dir / "src" / "gapless" / "impl", ignore=ignore)
    _copy_tests(stage_dir)
    _write_pyproject(stage_dir, module)
    (stage_dir / "spec").mkdir()
    shutil.copy2(ROOT / "spec" / "lattices.md", stage_dir / "spec" / "lattices.md")
    return stage_dir


def run_mutmut(stage_dir: Path, max_children: int, names: list[str]) -> float:
    """Run mutmut in a stage (``names``: only those mutants); output to ``mutmut.log``."""
    env = dict(os.environ)
    env.setdefault("HYPOTHESIS_PROFILE", "mutation")
    t0 = time.monotonic()
    with (stage_dir / "mutmut.log").open("a") as log:
        subprocess.run(
            [_mutmut(), "run", "--max-children", str(max_children), *names],
            cwd=stage_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    return time.monotonic() - t0


def results(stage_dir: Path) -> dict[str, str]:
    """Every mutant's status in a stage, from ``mutmut results --all``."""
    out = subprocess.run(
        [_mutmut(), "results", "--all", "true"],
        cwd=stage_dir,
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


def diff(stage_dir: Path, name: str) -> str:
    out = subprocess.run(
        [_mutmut(), "show", name], cwd=stage_dir, capture_output=True, text=True, check=False
    )
    return out.stdout.strip()


def equivalent_mutants() -> dict[str, str]:
    """``name -> reason`` from ``benchmarks/mutation_equivalent.md`` (``- `name`: reason``)."""
    if not EQUIVALENT.exists():
        return {}
    found = re.findall(r"(?m)^- `([^`]+__mutmut_\d+)`: (.*)$", EQUIVALENT.read_text("utf-8"))
    return dict(found)


def _score(killed: int, total: int) -> float:
    return round(100.0 * killed / total, 2) if total else 100.0


def summarize(
    status_by_module: dict[str, dict[str, str]], equivalent: dict[str, str]
) -> dict[str, Any]:
    """Per-module and total figures; survivors, and which of them are argued equivalent."""
    by_module: dict[str, Any] = {}
    counts: dict[str, int] = {}
    killed = total = equiv = 0
    survivors: list[str] = []
    for module, status in sorted(status_by_module.items()):
        tested = {n: s for n, s in status.items() if s not in PENDING}
        # A mutant argued equivalent is never counted killed: a "timeout" of one is the
        # loaded machine running its full test set past the CPU limit, not a detection.
        k = sum(s in KILLED and n not in equivalent for n, s in tested.items())
        lost = sorted(n for n, s in tested.items() if s not in KILLED or n in equivalent)
        e = sum(n in equivalent for n in lost)
        for s in status.values():
            counts[s] = counts.get(s, 0) + 1
        by_module[module] = {
            "killed": k,
            "total": len(tested),
            "score_percent": _score(k, len(tested)),
            "equivalent": e,
            "score_without_equivalent_percent": _score(k, len(tested) - e),
            "met": _score(k, len(tested)) >= TARGET,
        }
        killed, total, equiv = killed + k, total + len(tested), equiv + e
        survivors += lost
    return {
        "command": "make mutation  (python benchmarks/mutation_score.py --run)",
        "modules": {m: f"impl/{MODULES[m]}" for m in status_by_module},
        "tests": list(TESTS),
        "killed": killed,
        "total": total,
        "score_percent": _score(killed, total),
        "equivalent": equiv,
        "score_without_equivalent_percent": _score(killed, total - equiv),
        "target_percent": TARGET,
        "not_checked": counts.get("not checked", 0),
        "met": all(m["met"] for m in by_module.values())
        and bool(by_module)
        and not counts.get("not checked", 0),
        "counts": dict(sorted(counts.items())),
        "by_module": by_module,
        "survivors": [n for n in survivors if n not in equivalent],
        "equivalent_mutants": {n: equivalent[n] for n in survivors if n in equivalent},
    }


def _print(summary: dict[str, Any], diffs: dict[str, str]) -> None:
    print(
        f"mutation score: {summary['killed']}/{summary['total']} killed = "
        f"{summary['score_percent']:.1f}% ({summary['equivalent']} argued equivalent; "
        f"without them {summary['score_without_equivalent_percent']:.1f}%; target >= "
        f"{TARGET:g}% per module: {'met' if summary['met'] else 'missed'})"
    )
    for module, m in summary["by_module"].items():
        print(
            f"  {module:15} {m['killed']}/{m['total']} = {m['score_percent']:.1f}%"
            f"  ({m['equivalent']} equivalent)"
        )
    print(f"statuses: {summary['counts']}")
    if summary["not_checked"]:
        print(f"INCOMPLETE: {summary['not_checked']} mutants not checked yet (run again)")
    print(f"survivors ({len(summary['survivors'])}):")
    for name in summary["survivors"]:
        print(f"  {name}")
        if name in diffs:
            print("    " + diffs[name].replace("\n", "\n    "))
    print(f"argued equivalent ({len(summary['equivalent_mutants'])}): {EQUIVALENT.name}")


def _stage_of(name: str) -> str:
    """The module whose stage holds mutant ``name`` (``gapless.impl.streams.runs.x_f__...``)."""
    dotted = name.split(".x")[0].removeprefix("gapless.impl.")
    return dotted if dotted in MODULES else dotted.removesuffix(".__init__")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run (or resume) mutmut first")
    parser.add_argument("--module", action="append", choices=sorted(MODULES), default=None)
    parser.add_argument("--fresh", action="store_true", help="rebuild the stages first")
    parser.add_argument("--retest", action="store_true", help="copy tests, re-run survivors")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    parser.add_argument("--record", action="store_true", help=f"also write {RECORD.name}")
    args = parser.parse_args(argv)
    modules = args.module or list(MODULES)
    loaded = roles_core_modules()
    missing = [m for m in MODULES if m not in loaded]
    extra = [m for m in loaded if m not in MODULES]
    if missing or extra:
        print(f"the roles' core modules changed: not loaded {missing}, unlisted {extra}")
        return 2
    seconds = 0.0
    for module in modules:
        stage_dir = STAGES / module
        if args.run and (args.fresh or not (stage_dir / "mutants").exists()):
            stage(module)
        elif args.run or args.retest:
            _write_pyproject(stage_dir, module)  # resume with this script's settings
        if args.retest and (stage_dir / "mutants").exists():
            if not _refresh(stage_dir, module):
                print(f"{module}: impl/{MODULES[module]} changed since staging: use --fresh")
                return 2
            status = results(stage_dir)
            argued = equivalent_mutants()
            lost = [n for n, s in status.items() if s not in KILLED | PENDING and n not in argued]
            if lost:
                seconds += run_mutmut(stage_dir, args.max_children, lost)
        # --run resumes; after --retest only when some mutant is still not checked
        if args.run and (not args.retest or "not checked" in results(stage_dir).values()):
            seconds += run_mutmut(stage_dir, args.max_children, [])
    done = {m: results(STAGES / m) for m in MODULES if (STAGES / m / "mutants").exists()}
    if not done:
        print("no mutation run found: run `make mutation` (or this script with --run)")
        return 2
    summary = summarize(done, equivalent_mutants())
    diffs = {n: diff(STAGES / _stage_of(n), n) for n in summary["survivors"]}
    summary["survivor_diffs"] = diffs
    summary["seconds_this_invocation"] = round(seconds, 1)
    summary.update(machine_speed())
    text = json.dumps(summary, indent=2) + "\n"
    (STAGES / "score.json").write_text(text)
    if args.record:
        RECORD.write_text(text)
    _print(summary, diffs if args.show else {})
    return 0 if summary["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
