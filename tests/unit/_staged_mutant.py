"""Run a snippet of Python against the kit with one mutant of ``impl/`` staged first on the
path (the tests that show an invariant catching a mutant the power bench found)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


_ONE_SEED = (
    "import json, sys\n"
    "from gapless.spark_fuzz.config import canonical_json, load_config\n"
    "from gapless.spark_fuzz.execute import run_seed\n"
    "c = load_config(sys.argv[1], {'duration_s': float(sys.argv[3])})\n"
    "print(json.dumps(run_seed(canonical_json(c.to_data()), int(sys.argv[2])).row))\n"
)


def run_seed_staged(
    tmp_path: Path, m: Mutant, config: Path, seed: int, duration_s: float
) -> dict[str, Any]:
    """The campaign row of schedule ``seed`` of the campaign file ``config``, its runs cut
    to ``duration_s`` seconds, with ``m`` staged (:func:`run_staged`)."""
    out = run_staged(tmp_path, m, _ONE_SEED, str(config), str(seed), str(duration_s))
    row: dict[str, Any] = json.loads(out)
    return row
