"""Side-by-side figures against an older checkout: ``gapless bench NAME --baseline PATH``.

A before/after claim is measured in one run on one machine (machines differ 3-4x from
session to session). ``PATH`` is a checkout of an older commit (``git worktree add /tmp/old
<commit>``). Its folders are linked as a ``gapless`` package in a temporary directory put
first on ``PYTHONPATH`` of a child process running this interpreter (so the old code runs
with today's third-party libraries), which imports the old ``gapless.benchmarks.NAME`` and
prints its ``run()`` result as JSON. The new code's run happens in this process, after the
old one, and the result gains ``baseline`` (the old figures) and ``speedup_vs_baseline``
(new over old for figures where higher is better, old over new where lower is better) for
the keys the benchmark names in its ``SPEEDUP_KEYS``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["BaselineError", "run_baseline", "speedups"]

_FOLDERS = ("spec", "impl", "invariants", "models", "spark_fuzz", "cli", "benchmarks")


class BaselineError(ValueError):
    """A baseline checkout that cannot be used (missing folders, or its benchmark failed)."""


def run_baseline(path: str, name: str) -> dict[str, Any]:
    """The result of benchmark ``name`` run by the checkout at ``path`` (see module doc)."""
    root = Path(path).resolve()
    missing = [f for f in ("spec", "impl", "benchmarks") if not (root / f).is_dir()]
    if missing:
        raise BaselineError(
            f"--baseline {path!r}: not a gapless checkout (no {', '.join(missing)} folder); "
            "expected e.g. the directory of `git worktree add /tmp/old <commit>`"
        )
    if not (root / "benchmarks" / f"{name}.py").is_file():
        raise BaselineError(f"--baseline {path!r}: that checkout has no benchmark {name!r}")
    with tempfile.TemporaryDirectory(prefix="gapless-baseline-") as tmp:
        pkg = Path(tmp) / "gapless"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("", encoding="utf-8")
        for folder in _FOLDERS:
            if (root / folder).is_dir():
                (pkg / folder).symlink_to(root / folder, target_is_directory=True)
        env = {**os.environ, "PYTHONPATH": tmp + os.pathsep + os.environ.get("PYTHONPATH", "")}
        code = (
            "import json, sys, importlib\n"
            f"m = importlib.import_module('gapless.benchmarks.{name}')\n"
            "print('\\n' + json.dumps(m.run()))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
        )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise BaselineError(f"--baseline {path!r}: its benchmark {name!r} failed:\n{tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def speedups(
    new: Mapping[str, Any], old: Mapping[str, Any], keys: Mapping[str, str]
) -> dict[str, float]:
    """``new / old`` for keys where ``"higher"`` is better, ``old / new`` where ``"lower"``
    is: above 1 means the new code is faster. Keys missing on either side are skipped."""
    out: dict[str, float] = {}
    for key, better in sorted(keys.items()):
        a, b = new.get(key), old.get(key)
        if not isinstance(a, int | float) or not isinstance(b, int | float) or not a or not b:
            continue
        out[key] = round(a / b if better == "higher" else b / a, 3)
    return out
