"""The lines of ``impl/`` the protocol runs, which ``gapless bench power`` samples (issue 18 §1).

Theory of operation
-------------------
The issue asks for mutants of "the role and core modules the protocol runs". A module the
protocol imports may hold helpers no role calls; a mutant there is no miss of the campaign
but code to delete or to question. So the lines that run are measured, not guessed:

1. **Measure.** A fresh interpreter starts line coverage (``coverage``, the dev extra) on
   ``impl/`` *before* importing anything of ours (so module and class bodies count), then
   runs the first :data:`PER_SETUP` seeds (in the demo's seed order) of every setup of the
   demo campaign (its own and each ``mix`` setup: Figure 3, total-order merges, best
   effort) in process, as a campaign task does (``spark_fuzz.execute.run_seed``), and
   prints the executed lines per module (of the ``impl`` the interpreter imports: a staged
   mutant's, under the bench). Eight seeds per setup saturate it: on the demo,
   1, 4, 8 and 16 seeds per setup reached 3089, 3140, 3151 and 3153 lines of the GD code.
2. **Cache.** The result is stored under ``build/power-lines/<digest>.json``, the digest
   being sha256 of every source under ``impl``, ``models``, ``spark_fuzz``, ``spec``, the
   demo file and :data:`PER_SETUP`: a rerun on the same code reads it back (a commit, or a
   dirty tree, gets its own entry).
3. **Judge a point.** A mutation point runs when any line of its node ran; a point inside a
   function's default values runs only when that function's body ran (the ``def`` line runs
   at import whether the function is ever called or not).

:func:`enclosing_function` names where an unrun point sits, so the bench can list the
functions behind the old sample's unrun mutants.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = [
    "PER_SETUP",
    "default_owners",
    "enclosing_function",
    "function_ran",
    "lines_digest",
    "measure",
    "point_runs",
    "run_lines",
]

PER_SETUP: Final = 8
#: The code whose change can change which ``impl`` lines the demo's first seeds run.
_LINE_CODE: Final = ("impl", "models", "spark_fuzz", "spec")

_SCRIPT: Final = """
import importlib.util, json, sys
from pathlib import Path
import coverage
root = Path(sys.argv[1]).resolve()
per_setup = int(sys.argv[2])
# the impl this interpreter imports (a staged copy comes first on PYTHONPATH); found without
# running any of its code
impl = Path(importlib.util.find_spec("gapless.impl").submodule_search_locations[0]).resolve()
cov = coverage.Coverage(data_file=None, include=[str(impl / "*")])
cov.start()
from gapless.spark_fuzz.config import canonical_json, load_config, setup_of_seed
from gapless.spark_fuzz.execute import run_seed
config = load_config(root / "campaigns" / "demo.toml")
text = canonical_json(config.to_data())
names = [""] + sorted(config.mix)
seeds = {name: [] for name in names}
for seed in config.seeds():
    got = seeds[setup_of_seed(config, seed)]
    if len(got) < per_setup:
        got.append(seed)
verdicts = {}
for name in names:
    for s in seeds[name]:
        verdicts[s] = run_seed(text, s).row["verdict"]
cov.stop()
data = cov.get_data()
lines = {}
for f in data.measured_files():
    rel = Path("impl") / Path(f).resolve().relative_to(impl)
    lines[str(rel)] = sorted(data.lines(f) or ())
print(json.dumps({"seeds": seeds, "verdicts": verdicts, "lines": lines}))
"""


def lines_digest(root: Path, per_setup: int = PER_SETUP) -> str:
    """16 hex digits of sha256 over the demo file, :data:`_LINE_CODE`'s sources and
    ``per_setup``: the measured lines hold while it matches."""
    h = hashlib.sha256(f"{per_setup}\0".encode())
    h.update((root / "campaigns" / "demo.toml").read_bytes())
    for top in _LINE_CODE:
        for f in sorted((root / top).rglob("*.py")):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def measure(root: Path, per_setup: int = PER_SETUP) -> dict[str, object]:
    """Run the demo's first ``per_setup`` seeds of each setup under line coverage in a fresh
    interpreter: ``{"seeds": {setup: [seed...]}, "verdicts": {...}, "lines": {module:
    [line...]}}`` (modules relative to ``root``)."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(root), str(per_setup)],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring the lines the demo runs failed: {done.stderr[-800:]}")
    got: dict[str, object] = json.loads(done.stdout)
    return got


def run_lines(root: Path, per_setup: int = PER_SETUP) -> dict[str, frozenset[int]]:
    """The ``impl`` lines the demo's first ``per_setup`` seeds per setup run, per module
    (relative to ``root``), measured once per :func:`lines_digest` and cached in ``build/``."""
    cache = root / "build" / "power-lines" / f"{lines_digest(root, per_setup)}.json"
    if cache.exists():
        data = json.loads(cache.read_text())
    else:
        data = measure(root, per_setup)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        tmp.replace(cache)
    lines: Mapping[str, list[int]] = data["lines"]
    return {module: frozenset(ls) for module, ls in lines.items()}


def default_owners(tree: ast.AST) -> dict[int, int]:
    """id of every node inside a function's default values -> the line of its body's first
    statement (the line that runs only when the function is called)."""
    owners: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            body_line = node.body[0].lineno if isinstance(node.body, list) else node.body.lineno
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if default is not None:
                    owners.update((id(n), body_line) for n in ast.walk(default))
    return owners


def point_runs(node: ast.AST, ran: frozenset[int], owners: Mapping[int, int]) -> bool:
    """Whether the mutation point at ``node`` runs, given the module's executed lines ``ran``
    and :func:`default_owners` of its tree."""
    if id(node) in owners:
        return owners[id(node)] in ran
    first = getattr(node, "lineno", 0)
    last = getattr(node, "end_lineno", None) or first
    return any(line in ran for line in range(first, last + 1))


def _innermost(tree: ast.AST, line: int) -> tuple[str, ast.AST | None]:
    """The dotted name and node of the innermost function or class holding ``line``."""

    def walk(node: ast.AST, prefix: str) -> tuple[str, ast.AST] | None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                end = child.end_lineno or child.lineno
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                if start <= line <= end:
                    name = f"{prefix}{child.name}"
                    return walk(child, name + ".") or (name, child)
        return None

    return walk(tree, "") or ("<module>", None)


def enclosing_function(tree: ast.AST, line: int) -> str:
    """The dotted name of the innermost function or class holding ``line`` (``<module>``)."""
    return _innermost(tree, line)[0]


def function_ran(tree: ast.AST, line: int, ran: frozenset[int]) -> bool:
    """Whether the innermost function holding ``line`` ran at all (a line of its body past
    the docstring executed): False for a helper nobody calls, True for a branch not taken.
    Module and class bodies run at import: True."""
    node = _innermost(tree, line)[1]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return any(
        line in ran
        for stmt in body
        for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)
    )
