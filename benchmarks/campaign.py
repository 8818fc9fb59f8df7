"""``gapless bench campaign``: schedules per core-second of the demo campaign (issue 17).

A campaign is worth the schedules it runs. This runs the demo campaign's schedules
(``campaigns/demo.toml``: GD Figure 3 under swarm faults, every invariant online; its seeds
and schedule count as shipped) one after another in this process, exactly as a Spark task
runs them (``gapless.spark_fuzz.execute.run_seed``), and divides the schedules by the CPU
time they took: ``schedules_per_core_s``. CPU time, not wall time, so a machine busy with
other work does not count against it, and one core's figure is what a campaign gets per
core it is given. Verdicts are tallied so a speed-up that changes them is seen.
Compare two commits with ``gapless bench campaign --baseline PATH``.

Parameters: ``schedules=N`` runs the first N schedules only; ``without=NAME[,NAME...]``
measures what invariants cost: each schedule runs twice in this process, once judged by
every invariant and once without those named (the order alternating from seed to seed, so
a drift of the machine falls on both alike), and the result adds ``cpu_s_without``,
``cost_ratio`` (CPU with over CPU without) and the verdicts of both sides. A schedule of a
mix setup that names its own invariants (``[mix.NAME] invariants``) keeps them on both sides
less the named ones.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

import attrs

from gapless.models.protocols import protocol
from gapless.spark_fuzz.config import CampaignConfig, canonical_json, load_config
from gapless.spark_fuzz.execute import run_seed

__all__ = ["SPEEDUP_KEYS", "TAKES_PARAMS", "run"]

TAKES_PARAMS: Final = True

DEMO = Path(__file__).resolve().parents[1] / "campaigns" / "demo.toml"

SPEEDUP_KEYS = {"schedules_per_core_s": "higher"}
"""Figures ``gapless bench campaign --baseline PATH`` compares (and which way is better)."""


def _without(config: CampaignConfig, names: tuple[str, ...]) -> CampaignConfig:
    """``config`` with the invariants ``names`` left out, in the main setup and every mix."""
    every = protocol(config.protocol).invariants
    unknown = [n for n in names if n not in every]
    if unknown:
        raise ValueError(
            f"bench campaign: without={','.join(unknown)} names no invariant of "
            f"{config.protocol}; allowed: {', '.join(every)}"
        )
    keep = tuple(n for n in (config.invariants or every) if n not in names)
    mix = {
        name: (
            {**setup, "invariants": [n for n in setup["invariants"] if n not in names]}
            if "invariants" in setup
            else dict(setup)
        )
        for name, setup in config.mix.items()
    }
    return attrs.evolve(config, invariants=keep, mix=mix)


def _params(given: dict[str, str], config: CampaignConfig) -> tuple[int, tuple[str, ...]]:
    unknown = sorted(set(given) - {"schedules", "without"})
    if unknown:
        raise ValueError(
            f"bench campaign: --param {unknown[0]} is not allowed; allowed: schedules, without"
        )
    schedules = config.schedules
    if "schedules" in given:
        text = given["schedules"]
        if not text.isdigit() or int(text) < 1:
            raise ValueError(
                f"bench campaign: schedules={text!r} is not allowed; expected an integer >= 1"
            )
        schedules = int(text)
    names = tuple(n for n in given.get("without", "").split(",") if n)
    if "without" in given and not names:
        raise ValueError("bench campaign: without= names no invariant; expected NAME[,NAME...]")
    return schedules, names


def run(**given: str) -> dict[str, Any]:
    config = load_config(str(DEMO), {"out": "out/bench-campaign"})
    schedules, names = _params(given, config)
    config_json = canonical_json(config.to_data())
    seeds = range(config.seed, config.seed + schedules)
    if names:
        return _cost(config, config_json, seeds, names)
    verdicts: Counter[str] = Counter()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for seed in seeds:
        verdicts[run_seed(config_json, seed).row["verdict"]] += 1
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    return {
        "campaign": str(DEMO.name),
        "schedules": schedules,
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "schedules_per_core_s": round(schedules / cpu, 3),
        "verdicts": dict(sorted(verdicts.items())),
        "targets": {},
    }


def _cost(
    config: CampaignConfig, config_json: str, seeds: range, names: tuple[str, ...]
) -> dict[str, Any]:
    """Each seed with every invariant and without ``names``, alternating which runs first."""
    sides = {"with": config_json, "without": canonical_json(_without(config, names).to_data())}
    cpu = {"with": 0.0, "without": 0.0}
    verdicts: dict[str, Counter[str]] = {"with": Counter(), "without": Counter()}
    wall0 = time.perf_counter()
    for seed in seeds:
        order = ("with", "without") if seed % 2 else ("without", "with")
        for side in order:
            c0 = time.process_time()
            verdict = run_seed(sides[side], seed).row["verdict"]
            cpu[side] += time.process_time() - c0
            verdicts[side][verdict] += 1
    n = len(seeds)
    return {
        "campaign": str(DEMO.name),
        "schedules": n,
        "without": list(names),
        "cpu_s": round(cpu["with"], 2),
        "cpu_s_without": round(cpu["without"], 2),
        "cost_ratio": round(cpu["with"] / cpu["without"], 4),
        "wall_s": round(time.perf_counter() - wall0, 2),
        "schedules_per_core_s": round(n / cpu["with"], 3),
        "verdicts": dict(sorted(verdicts["with"].items())),
        "verdicts_without": dict(sorted(verdicts["without"].items())),
        "targets": {},
    }
