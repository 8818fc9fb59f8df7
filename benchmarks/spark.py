"""``gapless bench spark``: one campaign of short schedules as a plain loop, with
``multiprocessing`` on 2 processes, and on ``local[2]`` Spark (issue 4 §6).

Each executor runs in its own subprocess (NOTES.md: the JVM lingers until the Python process
exits and would skew later timings), each on a fresh output directory, Parquet commits
included, shrinking off. Spark's start-up — the session plus its Python workers loading the
backend — is reported apart (``spark_startup_s``) and excluded from ``spark_per_s``.

The schedules: GD on the two-broker graph of [GD §4.1], 2.2 simulated seconds with drops,
crashes and reorderings, 0.5 s of drain — about 20 ms of CPU each. Liveness is left out:
judging it needs a drain longer than AckExpected's period (AET = 10 s [GD §3.2]), which
would make the schedules long.

Keys: ``loop_per_s``, ``mp_per_s``, ``spark_per_s`` (schedules per second),
``spark_vs_loop`` (Spark over loop), ``mp_vs_loop``, ``spark_startup_s``, ``rounds`` (1 or 2:
the best of two rounds when the first was quick), ``schedule_ms`` (mean wall time of
one schedule in the loop), ``schedules``, ``targets`` (``spark_vs_loop >= 1.7``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Final

from gapless.benchmarks._targets import target
from gapless.invariants import INVARIANTS

__all__ = ["BENCH_CONFIG", "run"]

SCHEDULES: Final = 2000
BENCH_CONFIG: Final[dict[str, Any]] = {
    "protocol": "gd",
    "topology": "two-broker",
    "duration_s": 2.2,
    "workload": {"drain_s": 0.5, "rate_per_pubend": 25.0},
    "invariants": [i for i in INVARIANTS if i != "liveness"],
    "faults": {"profile": "rates", "rates": {"drop": 1.0, "crash": 0.5, "reorder": 1.0}},
    "shrink": False,
    "master": "local[2]",
}


def _child(mode: str, out: str, schedules: int) -> dict[str, Any]:
    from gapless.spark_fuzz.campaign import run_campaign
    from gapless.spark_fuzz.config import load_config

    overrides = dict(BENCH_CONFIG, schedules=schedules, out=out, id=f"bench-{mode}")
    config = load_config(None, overrides)
    executor = {"loop": "loop", "mp": "processes", "spark": "spark"}[mode]
    result = run_campaign(config, executor=executor, processes=2)
    walls = []
    if mode == "loop":
        from gapless.spark_fuzz.store import read_rows

        walls = read_rows(result.directory).column("wall_s").to_pylist()
    return {
        "run_s": result.run_s,
        "startup_s": result.spark_startup_s,
        "rows": result.summary["schedules_committed"],
        "verdicts": {
            "pass": result.summary["passed"],
            "violation": result.summary["failed"],
            "error": result.summary["errors"],
            "timeout": result.summary["timeouts"],
        },
        "schedule_ms": (1000 * sum(walls) / len(walls)) if walls else None,
    }


def _measure(mode: str, schedules: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"gapless-bench-{mode}-") as out:
        code = (
            "import json, sys; from gapless.benchmarks.spark import _child; "
            f"print('RESULT ' + json.dumps(_child({mode!r}, {out!r}, {schedules})))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=False,
            env=dict(os.environ),
        )
        for line in proc.stdout.splitlines():
            if line.startswith("RESULT "):
                result: dict[str, Any] = json.loads(line[len("RESULT ") :])
                return result
        raise RuntimeError(
            f"bench spark: the {mode} run failed (exit {proc.returncode}): {proc.stderr[-2000:]}"
        )


def run(schedules: int = SCHEDULES, *, budget_s: float = 80.0) -> dict[str, Any]:
    """Measure the three executors; if the first round took under ``budget_s`` seconds, run a
    second round and keep each executor's best (the machine is shared: the best of two is the
    least disturbed), so the whole bench stays under 3 minutes."""
    started = time.perf_counter()
    best: dict[str, dict[str, Any]] = {}
    rounds = 0
    while rounds < 2:
        for mode in ("loop", "mp", "spark"):
            result = _measure(mode, schedules)
            if mode not in best or result["run_s"] < best[mode]["run_s"]:
                best[mode] = result
        rounds += 1
        if time.perf_counter() - started > budget_s:
            break
    loop, mp, spark = best["loop"], best["mp"], best["spark"]
    loop_per_s = schedules / loop["run_s"]
    mp_per_s = schedules / mp["run_s"]
    spark_per_s = schedules / spark["run_s"]
    ratio = spark_per_s / loop_per_s
    return {
        "schedules": schedules,
        "rounds": rounds,
        "schedule_ms": round(loop["schedule_ms"] or 0.0, 3),
        "loop_per_s": round(loop_per_s, 2),
        "mp_per_s": round(mp_per_s, 2),
        "spark_per_s": round(spark_per_s, 2),
        "spark_vs_loop": round(ratio, 3),
        "mp_vs_loop": round(mp_per_s / loop_per_s, 3),
        "spark_startup_s": round(spark["startup_s"], 3),
        "verdicts": loop["verdicts"],
        "same_verdicts": loop["verdicts"] == mp["verdicts"] == spark["verdicts"],
        "targets": {"spark_vs_loop": target(ratio, 1.7, at_least=True)},
    }
