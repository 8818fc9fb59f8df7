"""The bug zoo as campaigns: proof that the checks bite [issue 4 §4].

For every planted bug of ``gapless.spark_fuzz.zoo.ZOO`` — and for the correct protocol,
``bug = "none"`` — run the *same* campaign (same topology, workload, faults and seeds; only
the variant differs) and report whether a violation was found, after how many schedules
(the first violating seed's position, counting from 1), and how many fault events the
shrunk counterexample of that first violation holds. The correct protocol must not be
detected; every bug must be.

All campaigns share one Spark session (start-up paid once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import CampaignConfig, load_config
from gapless.spark_fuzz.store import read_rows

__all__ = ["run_zoo", "zoo_bugs"]


def zoo_bugs(config: CampaignConfig) -> list[str]:
    """Every variant of the configuration's backend except ``"none"``, sorted."""
    from gapless.spark_fuzz.backend import load_backend

    backend = load_backend(config.protocol, config.backend)
    return sorted(v for v in backend.variants() if v != "none")


def run_zoo(
    base: CampaignConfig,
    *,
    bugs: Sequence[str] | None = None,
    executor: str = "spark",
    processes: int = 2,
    on_result: Callable[[Mapping[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """One campaign per bug plus ``"none"``; returns the JSON list of issue 4 §4."""
    names = list(bugs) if bugs is not None else zoo_bugs(base)
    sc = None
    if executor == "spark":
        from gapless.spark_fuzz.session import start_spark

        sc = start_spark(base.master)
    results: list[dict[str, Any]] = []
    try:
        for bug in [*names, "none"]:
            overrides = base.to_data()
            for key in ("fault_profile", "fault_rates"):
                overrides.pop(key)
            overrides["faults"] = {
                "profile": base.fault_profile,
                "rates": dict(base.fault_rates),
            }
            overrides["variant"] = bug
            overrides["id"] = None
            overrides["max_counterexamples"] = 1
            overrides["invariants"] = list(base.invariants)
            overrides = {k: v for k, v in overrides.items() if v is not None}
            config = load_config(None, overrides)
            run = run_campaign(config, executor=executor, processes=processes, spark_context=sc)
            rows = read_rows(run.directory).to_pylist()
            violating = sorted(r["seed"] for r in rows if r["verdict"] == "violation")
            entry: dict[str, Any] = {
                "bug": bug,
                "detected": bool(violating),
                "schedules_to_detect": (violating[0] - config.seed + 1) if violating else None,
                "shrunk_fault_events": None,
                "invariant": None,
                "violations": len(violating),
                "schedules": len(rows),
                "campaign_id": config.campaign_id,
            }
            if violating:
                first = next(r for r in rows if r["seed"] == violating[0])
                entry["invariant"] = first["invariant"]
                cx_path = run.directory / "_counterexamples" / f"seed-{violating[0]}.json"
                if cx_path.exists():
                    from gapless.spark_fuzz.counterexample import load_counterexample

                    entry["shrunk_fault_events"] = load_counterexample(cx_path).shrunk_fault_events
            results.append(entry)
            if on_result is not None:
                on_result(entry)
    finally:
        if sc is not None:
            sc.stop()
    return results
