"""Helpers for the campaign tests: the fake backend on every process's path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FAKE = "fake_backend:FakeBackend"


def fake_env(**extra: str) -> dict[str, str]:
    """An environment in which subprocesses (and Spark's Python workers) import the fake."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def gapless(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the ``gapless`` command in a subprocess."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "gapless"), *args],
        capture_output=True,
        text=True,
        env=env or fake_env(),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def fake_overrides(tmp: Path, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "backend": FAKE,
        "out": str(tmp / "out"),
        "duration_s": 10.0,
        "schedules": 40,
    }
    base.update(extra)
    return base
