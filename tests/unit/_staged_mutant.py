"""Run a snippet of Python against the kit with one mutant of ``impl/`` staged first on the
path (the tests that show an invariant catching a mutant the power bench found)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gapless.benchmarks._mutants import Mutant, mutant_named

ROOT = Path(__file__).resolve().parents[2]


def mutant(mutant_id: str) -> Mutant:
    """The mutant the power bench names ``mutant_id`` (``module:line:kind#index``)."""
    got = mutant_named(ROOT, mutant_id)
    assert got is not None, f"no mutation point {mutant_id} in today's code"
    return got


def run_staged(tmp_path: Path, m: Mutant, code: str, *args: str) -> str:
    """The standard output of ``python -c code args`` with ``impl/`` copied under
    ``tmp_path`` and ``m`` applied there, first on ``PYTHONPATH``."""
    impl = tmp_path / "src" / "gapless" / "impl"
    for f in (ROOT / "impl").rglob("*.py"):
        dest = impl / f.relative_to(ROOT / "impl")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(f.read_text())
    (impl / Path(m.module).relative_to("impl")).write_text(m.source)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "src"), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    return done.stdout
