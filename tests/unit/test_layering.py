"""The layering of DESIGN.md ("Layers point one way"), checked on the source with no
exceptions: ``spec`` and ``impl`` import nothing of ours but themselves; ``invariants`` imports
``impl`` and ``spec``; ``models`` those three; ``spark_fuzz`` everything below it;
``benchmarks`` and ``cli`` on top. Function-local imports count like any other. No import
circle anywhere in the package (type-only imports under ``if TYPE_CHECKING:`` excepted, as
they are not run), and no ``importlib.import_module`` of one of our modules below ``cli``
(the command group loads its commands lazily by name, which points down)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("spec", "impl", "invariants", "models", "spark_fuzz", "benchmarks", "cli")

ALLOWED = {
    "spec": {"spec"},
    "impl": {"impl"},
    "invariants": {"impl", "invariants", "spec"},
    "models": {"impl", "invariants", "models", "spec"},
    "spark_fuzz": {"impl", "invariants", "models", "spec", "spark_fuzz"},
    "benchmarks": {"impl", "invariants", "models", "spec", "spark_fuzz", "benchmarks"},
    "cli": {"impl", "invariants", "models", "spec", "spark_fuzz", "benchmarks", "cli"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "gapless." + ".".join(parts)


def _type_only(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                out.update(id(n) for n in ast.walk(child))
    return out


def _imports(path: Path, *, runtime_only: bool = False) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of ``path``; relative imports are reported as
    ``"."`` (forbidden: ruff's TID252 keeps them out, this keeps the check honest)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_only(tree) if runtime_only else set()
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                out.append((node.lineno, "."))
            elif node.module:
                out.append((node.lineno, node.module))
                out.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            out.append((node.lineno, f"importlib:{node.args[0].value}"))
    return out


def _violations(layer: str, files: list[Path]) -> list[str]:
    bad = []
    for f in files:
        for line, module in _imports(f):
            if module == ".":
                bad.append(f"{f.name}:{line} uses a relative import")
                continue
            dynamic = module.startswith("importlib:")
            name = module.removeprefix("importlib:")
            parts = name.split(".")
            if parts[0] != "gapless" or len(parts) < 2:
                continue
            if parts[1] not in ALLOWED[layer]:
                bad.append(f"{f.name}:{line} imports {name}")
            elif dynamic and layer != "cli":
                bad.append(f"{f.name}:{line} imports {name} through importlib")
    return bad


def _sources() -> dict[str, Path]:
    return {_module_name(f): f for layer in LAYERS for f in sorted((ROOT / layer).rglob("*.py"))}


def _graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for name, f in mods.items():
        targets = set()
        for _line, module in _imports(f, runtime_only=True):
            module = module.removeprefix("importlib:")
            if module in mods and module != name and not name.startswith(module + "."):
                targets.add(module)
        g[name] = targets
    return g


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files
    assert _violations(layer, files) == [], f"{layer} may import only {sorted(ALLOWED[layer])}"


def test_no_import_circle_in_the_package() -> None:
    assert _cycles(_graph(_sources())) == []


def test_the_checks_bite(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import gapless.impl.knowledge\n"
        "import importlib\n"
        "from . import sibling\n"
        "def f():\n"
        "    from gapless.models.world import World\n"
        "    import gapless.spark_fuzz.zoo\n"
        "    importlib.import_module('gapless.impl.gd')\n",
        encoding="utf-8",
    )
    assert _violations("invariants", [probe]) == [
        "probe.py:3 uses a relative import",
        "probe.py:5 imports gapless.models.world",
        "probe.py:5 imports gapless.models.world.World",
        "probe.py:6 imports gapless.spark_fuzz.zoo",
        "probe.py:7 imports gapless.impl.gd through importlib",
    ]
    assert _violations("spark_fuzz", [probe]) == [
        "probe.py:3 uses a relative import",
        "probe.py:7 imports gapless.impl.gd through importlib",
    ]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
