"""``gapless bench campaign``: schedules per core-second of the demo campaign (issue 17).

A campaign is worth the schedules it runs. This runs the demo campaign's schedules
(``campaigns/demo.toml``: GD Figure 3 under swarm faults, every invariant online; its seeds
and schedule count as shipped) one after another in this process, exactly as a Spark task
runs them (``gapless.spark_fuzz.execute.run_seed``), and divides the schedules by the CPU
time they took: ``schedules_per_core_s``. CPU time, not wall time, so a machine busy with
other work does not count against it, and one core's figure is what a campaign gets per
core it is given. Verdicts are tallied so a speed-up that changes them is seen.
Compare two commits with ``gapless bench campaign --baseline PATH``.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from gapless.spark_fuzz.config import canonical_json, load_config
from gapless.spark_fuzz.execute import run_seed

__all__ = ["SPEEDUP_KEYS", "run"]

DEMO = Path(__file__).resolve().parents[1] / "campaigns" / "demo.toml"

SPEEDUP_KEYS = {"schedules_per_core_s": "higher"}
"""Figures ``gapless bench campaign --baseline PATH`` compares (and which way is better)."""


def run() -> dict[str, Any]:
    config = load_config(str(DEMO), {"out": "out/bench-campaign"})
    config_json = canonical_json(config.to_data())
    verdicts: Counter[str] = Counter()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for seed in range(config.seed, config.seed + config.schedules):
        verdicts[run_seed(config_json, seed).row["verdict"]] += 1
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    return {
        "campaign": str(DEMO.name),
        "schedules": config.schedules,
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "schedules_per_core_s": round(config.schedules / cpu, 3),
        "verdicts": dict(sorted(verdicts.items())),
        "targets": {},
    }
