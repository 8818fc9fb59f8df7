"""The layering of DESIGN.md, checked on the source: each folder imports only the layers
below it (``spec`` and ``impl`` nothing of ours but themselves; ``invariants`` only ``impl``).
One recorded departure: ``models`` may import ``spec`` — it hands the invariants the reference
filter evaluator (``gapless.spec.filters.reference_matcher``) they judge deliveries with."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ALLOWED = {
    "spec": {"spec"},
    "impl": {"impl"},
    "invariants": {"impl", "invariants"},
    "models": {"impl", "invariants", "models", "spec"},
    "spark_fuzz": {"impl", "invariants", "models", "spec", "spark_fuzz"},
    "benchmarks": {"impl", "invariants", "models", "spec", "spark_fuzz", "benchmarks"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _violations(layer: str, files: list[Path]) -> list[str]:
    bad = []
    for f in files:
        for line, module in _imports(f):
            parts = module.split(".")
            if parts[0] == "gapless" and len(parts) > 1 and parts[1] not in ALLOWED[layer]:
                bad.append(f"{f.name}:{line} imports {module}")
    return bad


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files
    assert _violations(layer, files) == [], f"{layer} may import only {sorted(ALLOWED[layer])}"


def test_the_check_bites(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import gapless.impl.knowledge\n"
        "def f():\n"
        "    from gapless.spec.filters import reference_matcher\n"
        "    import gapless.models.world\n",
        encoding="utf-8",
    )
    assert _violations("invariants", [probe]) == [
        "probe.py:3 imports gapless.spec.filters",
        "probe.py:4 imports gapless.models.world",
    ]
    assert _violations("models", [probe]) == []
