"""Branch coverage of the verified core under its law tests: ``make coverage-laws``.

A fast path that no generated case enters is a path the reference never judged (issue 11).
``python benchmarks/coverage_laws.py`` runs ``tests/laws`` under ``coverage run --branch``,
measuring only the modules the law tests check against their references — the stream
types (``impl/streams/*``), the tick sets (``impl/ticksets.py``) and the curiosity ledgers
(``impl/ledger.py``) — and prints, per module, the statements and branches covered and every
missed line and branch (``from->to``, ``-1`` meaning the function's exit). ``--also PATH`` adds
test files (``--also tests/unit/test_streams.py`` adds the typed-error tests, which enter the
misuse branches the law tests leave); ``--json`` prints the same as one JSON object;
``--fail-under P`` exits 1 when some module's branch coverage is below ``P`` percent. The
data lives in ``build/coverage-laws`` (not in the source tree).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODULES = (
    "impl/streams/__init__.py",
    "impl/streams/runs.py",
    "impl/streams/typed.py",
    "impl/streams/paired.py",
    "impl/ticksets.py",
    "impl/ledger.py",
)
TESTS = ("tests/laws",)


def measure(tests: tuple[str, ...] = TESTS) -> dict[str, Any]:
    """Run the law tests under branch coverage; per module: statements, branches, misses."""
    out_dir = ROOT / "build" / "coverage-laws"
    out_dir.mkdir(parents=True, exist_ok=True)
    data = out_dir / ".coverage"
    report = out_dir / "coverage.json"
    include = ",".join(str(ROOT / m) for m in MODULES)
    env = {**os.environ, "COVERAGE_FILE": str(data)}
    run = [sys.executable, "-m", "coverage", "run", "--branch", f"--include={include}"]
    pytest = ["-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    proc = subprocess.run([*run, *pytest], cwd=ROOT, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"coverage-laws: the law tests failed (exit {proc.returncode})")
    subprocess.run(
        [sys.executable, "-m", "coverage", "json", "-q", "-o", str(report)],
        cwd=ROOT,
        env=env,
        check=True,
    )
    raw = json.loads(report.read_text(encoding="utf-8"))
    files = {str(Path(k).resolve()): v for k, v in raw["files"].items()}
    result: dict[str, Any] = {}
    for m in MODULES:
        f = files.get(str(ROOT / m))
        if f is None:
            result[m] = {"error": "not imported by the law tests"}
            continue
        s = f["summary"]
        branches, covered = s["num_branches"], s["covered_branches"]
        result[m] = {
            "statements": s["num_statements"],
            "missed_lines": f["missing_lines"],
            "branches": branches,
            "covered_branches": covered,
            "branch_percent": round(100.0 * covered / branches, 2) if branches else 100.0,
            "missed_branches": [f"{a}->{b}" for a, b in f.get("missing_branches", [])],
        }
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--fail-under", type=float, default=None, help="minimum branch percent")
    ap.add_argument("--also", action="append", default=[], help="more test paths (repeatable)")
    args = ap.parse_args(argv)
    result = measure((*TESTS, *args.also))
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=True))
    else:
        for m, r in result.items():
            if "error" in r:
                print(f"{m}: {r['error']}")
                continue
            print(
                f"{m}: branches {r['covered_branches']}/{r['branches']} "
                f"({r['branch_percent']}%), statements {r['statements']}, "
                f"missed lines {r['missed_lines'] or 'none'}, "
                f"missed branches {r['missed_branches'] or 'none'}"
            )
    low = [
        m
        for m, r in result.items()
        if "error" in r or (args.fail_under is not None and r["branch_percent"] < args.fail_under)
    ]
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
