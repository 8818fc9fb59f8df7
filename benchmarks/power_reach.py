"""Does a mutant ever compute something else in the demo's runs? (issue 18: judging misses)

Theory of operation
-------------------
A mutant the demo campaign misses is either observable in a run but judged by no rule (an
invariant is missing), or it never changes anything a run does (no invariant can see it).
This tool tells the two apart by measurement instead of by reading: it runs the mutated
function **beside** the original on every call the demo's schedules make, and counts the
calls on which the two differ.

1. **Which function.** The outermost function holding the mutant's line: a module-level
   function or a method of a module-level class (undecorated, not a generator). Its mutated
   text is taken from the mutant's module (:mod:`gapless.benchmarks._mutants`).
2. **Side by side.** A fresh copy of ``impl/`` is staged (as the bench stages a mutant) in
   which the mutated module is the *original* module plus, at its end, the mutated function
   under another name and a wrapper installed in the original's place: each call runs the
   original, then the mutant on the same arguments, and returns the original's result, so
   the run is the correct run. Two answers differ when their types differ, when ``==`` says
   they differ (a stream's ``==`` compares its runs, so a non-canonical stream differs from
   its canonical twin), or when one raises and the other does not. Running the mutant a
   second time on the same arguments is sound only where they are immutable values: hence
   only the value cores (:data:`VALUE_MODULES`: streams, tick sets, knowledge, filters),
   which take and return immutable values; a role handler that appends to its step is
   refused.
3. **The runs.** The demo's first ``seeds`` schedules (its own seed order, so its ``mix``
   setups take their share), in process, as a campaign task runs them
   (``spark_fuzz.execute.run_seed``).

The answer (``calls``, ``differ``, the first differing calls' arguments and answers, the
verdicts): ``differ == 0`` means that on these schedules the mutant computes exactly what the
original computes on every call — every state, message and delivery of the run is the
same, so no invariant over anything a run shows can kill it there; ``differ > 0`` means the
mutant is reached and changes a value, and the question becomes whether that value reaches
anything the invariants judge.

Run it: ``python -m gapless.benchmarks.power_reach --seeds 300 'impl/streams/runs.py:223:compare
Eq#198'``. A bench tool, never part of ``make test``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Final

from gapless.benchmarks._mutants import Mutant, mutant_named
from gapless.benchmarks.power_judge import ROOT

__all__ = ["VALUE_MODULES", "ReachError", "probe_source", "reach"]

#: The modules whose functions take and return immutable values only, so a mutated function
#: may run a second time on the same arguments without changing the run.
VALUE_MODULES: Final = (
    "impl/streams/",
    "impl/ticksets.py",
    "impl/knowledge.py",
    "impl/filters.py",
    "impl/ledger.py",  # frozen cell and curiosity ledgers: an edit returns a new value (power8)
)


class ReachError(ValueError):
    """The mutant cannot be probed side by side (named: why, and what can)."""


def _outermost(tree: ast.Module, line: int) -> tuple[str | None, ast.FunctionDef]:
    """``(class name or None, function node)`` of the outermost function holding ``line``."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.lineno <= line <= (node.end_lineno or 0):
            return None, node
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or 0):
            for item in node.body:
                end = item.end_lineno or 0
                if isinstance(item, ast.FunctionDef) and item.lineno <= line <= end:
                    return node.name, item
    raise ReachError(
        f"line {line} is in no module-level function or method of a module-level class; "
        "allowed: a mutant inside a function"
    )


def _named(tree: ast.Module, cls: str | None, name: str) -> ast.FunctionDef:
    body = tree.body
    if cls is not None:
        body = next(n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)


_PROBE: Final = """

# ---- gapless.benchmarks.power_reach: the mutant beside the original (a staged copy) ----
import atexit as _reach_atexit
import json as _reach_json
import os as _reach_os

_REACH = {{"calls": 0, "differ": 0, "first": []}}

{mutant}


def _reach_same(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _reach_wrap(orig, mut):
    def wrapper(*args, **kwargs):
        try:
            r0, e0 = orig(*args, **kwargs), None
        except BaseException as exc:
            r0, e0 = None, exc
        if not isinstance(e0, Exception) and e0 is not None:
            raise e0  # a timeout or an interrupt: not an answer
        try:
            r1, e1 = mut(*args, **kwargs), None
        except Exception as exc:
            r1, e1 = None, exc
        _REACH["calls"] += 1
        if type(e0) is not type(e1) or (e0 is None and not _reach_same(r0, r1)):
            _REACH["differ"] += 1
            if len(_REACH["first"]) < 3:
                _REACH["first"].append(
                    {{
                        "args": repr(args)[:600],
                        "original": repr(e0 if e0 is not None else r0)[:600],
                        "mutant": repr(e1 if e1 is not None else r1)[:600],
                    }}
                )
        if e0 is not None:
            raise e0
        return r0

    return wrapper


{install}


@_reach_atexit.register
def _reach_dump():
    with open(_reach_os.environ["GAPLESS_REACH_OUT"], "w") as fh:
        fh.write(_reach_json.dumps(_REACH))
"""


def probe_source(mutant: Mutant, original: str) -> str:
    """The staged module: ``original`` with the mutant's function beside its own."""
    if not mutant.module.startswith(VALUE_MODULES):
        raise ReachError(
            f"{mutant.module}: not a value module; allowed: {', '.join(VALUE_MODULES)} "
            "(a function that changes its arguments cannot run twice on them)"
        )
    cls, func = _outermost(ast.parse(original), mutant.line)
    if func.decorator_list:
        raise ReachError(f"{func.name}: decorated; allowed: a plain function or method")
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(func)):
        raise ReachError(f"{func.name}: a generator; allowed: a function returning a value")
    mutated = _named(ast.parse(mutant.source), cls, func.name)
    mutated.name = "_reach_mutant"
    target = func.name if cls is None else f"{cls}.{func.name}"
    orig = func.name if cls is None else f"{cls}.__dict__[{func.name!r}]"
    install = f"{target} = _reach_wrap({orig}, _reach_mutant)"
    return original + _PROBE.format(mutant=ast.unparse(mutated), install=install)


_RUN: Final = """
import json, sys, collections
import gapless.impl
from gapless.spark_fuzz.config import canonical_json, load_config
from gapless.spark_fuzz.execute import run_seed
assert gapless.impl.__path__[0].startswith(sys.argv[1]), gapless.impl.__path__
demo = load_config(sys.argv[2])
text = canonical_json(demo.to_data())
verdicts = collections.Counter()
for seed in list(demo.seeds())[: int(sys.argv[3])]:
    verdicts[str(run_seed(text, seed).row["verdict"])] += 1
print(json.dumps(dict(sorted(verdicts.items()))))
"""


def reach(which: Mutant | str, seeds: int, root: Path = ROOT) -> dict[str, Any]:
    """Probe a mutant (or its id ``module:line:kind#index``) on the demo's first ``seeds``."""
    mutant = mutant_named(root, which) if isinstance(which, str) else which
    if mutant is None:
        raise ReachError(f"{which!r}: no such mutant; allowed: an id of `gapless bench power`")
    ident = mutant.ident
    if seeds < 1:
        raise ReachError(f"seeds must be >= 1, got {seeds}")
    original = (root / mutant.module).read_text()
    staged = probe_source(mutant, original)
    with tempfile.TemporaryDirectory(prefix="gapless-reach-") as tmp:
        work = Path(tmp)
        src = work / "src" / "gapless"
        src.mkdir(parents=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(root / "impl", src / "impl", ignore=ignore)
        (src / "impl" / Path(mutant.module).relative_to("impl")).write_text(staged)
        out = work / "reach.json"
        env = dict(os.environ)
        path = [str(work / "src"), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
        env["GAPLESS_REACH_OUT"] = str(out)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _RUN,
                str(work / "src"),
                str(root / "campaigns" / "demo.toml"),
                str(seeds),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise ReachError(f"{ident}: the probe run failed:\n{done.stderr[-2000:]}")
        counts = json.loads(out.read_text())
    return {
        "mutant": ident,
        "diff": mutant.diff,
        "seeds": seeds,
        "verdicts": json.loads(done.stdout.strip().splitlines()[-1]),
        **counts,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gapless.benchmarks.power_reach",
        description=textwrap.dedent(__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument("mutants", nargs="+", help="mutant ids, module:line:kind#index")
    parser.add_argument("--seeds", type=int, default=300, help="the demo's first N schedules")
    args = parser.parse_args(argv)
    try:
        rows = [reach(m, args.seeds) for m in args.mutants]
    except ReachError as exc:
        print(f"power_reach: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
