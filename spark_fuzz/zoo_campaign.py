"""The bug zoo as campaigns: proof that the checks bite [issue 4 §4].

For every planted bug of ``gapless.spark_fuzz.zoo.ZOO`` — and for the correct protocol,
``bug = "none"`` — run the *same* campaigns (a *suite*: by default :data:`DEFAULT_SUITE`, GD
Figure 3 and the total-order merge graph, because some bugs live in merges and others in
cells of intermediate brokers; same workload, faults and seeds; only the variant differs) and
report whether a violation was found, after how many schedules (the first violating seed's
position in the campaign that found it first, counting from 1), and how many fault events the
shrunk counterexample of that first violation holds. The correct protocol must not be
detected; every bug must be.

All campaigns share one Spark session (start-up paid once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gapless.models.protocols import protocol
from gapless.spark_fuzz.backend import load_backend
from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import CampaignConfig, load_config
from gapless.spark_fuzz.store import read_rows

__all__ = ["DEFAULT_SUITE", "run_zoo", "suite_configs", "zoo_bugs"]

_FAULTS: dict[str, Any] = {
    "profile": "rates",
    "rates": {"drop": 1.0, "duplicate": 0.5, "reorder": 0.8, "disconnect": 0.3},
}
DEFAULT_SUITE: tuple[dict[str, Any], ...] = (
    {
        "topology": "total-order",
        "duration_s": 3.0,
        "workload": {"drain_s": 5.0, "filters": "mixed"},
        "faults": _FAULTS,
    },
    {
        "topology": "fig3",
        "duration_s": 3.0,
        "workload": {"drain_s": 12.0, "filters": "mixed"},
        "faults": {
            "profile": "rates",
            "rates": {
                "crash": 0.6,
                "drop": 1.0,
                "duplicate": 0.5,
                "reorder": 0.8,
                "link_fail": 1.0,
            },
        },
    },
)
"""The zoo's campaigns (overrides of a campaign configuration).

* the total-order merge graph [GD Figure 1], message-level faults, a 5 s drain: merges
  (``merge-f-while-q``)
  and nack repetition (``no-nack-repetition``: a drain shorter than AckExpected's period
  AET = 10 s [GD §3.2] leaves repetition as the only repair);
* GD Figure 3 with broker crashes and link failures too and a 12 s drain (longer than the
  11.2 s a tick lost at the tail may need to be acked: AET, its check period, the acks):
  AckExpected after a pubend restart (``ignore-ack-expected``), consolidation across cells of
  intermediate brokers, detours round a failed link of a bundle member (``drop-detours``:
  one broker of a cell loses a link its neighbour keeps, which crashes never do).
"""


def suite_configs(overrides: Mapping[str, Any], path: str | None = None) -> list[CampaignConfig]:
    """The suite's base configurations: the file at ``path`` alone if given, else
    :data:`DEFAULT_SUITE`; ``overrides`` (flags, ``None`` = not given) apply to each."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if path is not None:
        return [load_config(path, given)]
    if given.get("protocol", "gd") != "gd":
        # another protocol's zoo: one swarm campaign on its default topology per topology
        # its variants ask for
        entry = protocol(str(given["protocol"]))
        topologies = sorted(
            {entry.default_topology}
            | {v.topology for v in entry.variants.values() if v.topology is not None}
        )
        return [
            load_config(None, {"topology": t, "faults": {"profile": "swarm"}, **given})
            for t in topologies
        ]
    return [load_config(None, {**entry, **given}) for entry in DEFAULT_SUITE]


def zoo_bugs(config: CampaignConfig) -> list[str]:
    """Every variant of the configuration's backend except ``"none"``, sorted."""
    backend = load_backend(config.protocol, config.backend)
    return sorted(v for v in backend.variants() if v != "none")


def run_zoo(
    suite: Sequence[CampaignConfig],
    *,
    bugs: Sequence[str] | None = None,
    executor: str = "spark",
    processes: int = 2,
    on_result: Callable[[Mapping[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """The suite's campaigns per bug plus ``"none"``; returns the JSON list of issue 4 §4."""
    names = list(bugs) if bugs is not None else zoo_bugs(suite[0])
    sc = None
    if executor == "spark":
        from gapless.spark_fuzz.session import start_spark

        sc = start_spark(suite[0].master)
    results: list[dict[str, Any]] = []
    try:
        for bug in [*names, "none"]:
            entry = _zoo_entry(bug, suite, executor, processes, sc)
            results.append(entry)
            if on_result is not None:
                on_result(entry)
    finally:
        if sc is not None:
            sc.stop()
    return results


def _zoo_entry(
    bug: str, suite: Sequence[CampaignConfig], executor: str, processes: int, sc: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "bug": bug,
        "detected": False,
        "schedules_to_detect": None,
        "shrunk_fault_events": None,
        "invariant": None,
        "violations": 0,
        "schedules": 0,
        "campaigns": [],
    }
    best: tuple[int, int, CampaignConfig, Any, str] | None = None
    for index, base in enumerate(suite):
        overrides = base.to_data()
        for key in ("fault_profile", "fault_rates"):
            overrides.pop(key)
        overrides["faults"] = {"profile": base.fault_profile, "rates": dict(base.fault_rates)}
        overrides["variant"] = bug
        overrides["id"] = None
        overrides["shrink"] = False
        overrides["invariants"] = list(base.invariants)
        overrides = {k: v for k, v in overrides.items() if v is not None}
        config = load_config(None, overrides)
        run = run_campaign(config, executor=executor, processes=processes, spark_context=sc)
        rows = read_rows(run.directory).to_pylist()
        violating = sorted(r["seed"] for r in rows if r["verdict"] == "violation")
        entry["violations"] += len(violating)
        entry["schedules"] += len(rows)
        entry["campaigns"].append(
            {
                "campaign_id": config.campaign_id,
                "topology": config.topology,
                "violations": len(violating),
                "schedules": len(rows),
            }
        )
        if violating:
            position = violating[0] - config.seed + 1
            first = next(r for r in rows if r["seed"] == violating[0])
            if best is None or (position, index) < (best[0], best[1]):
                best = (position, index, config, run.directory, first["invariant"])
    if best is not None:
        position, _index, config, directory, invariant = best
        entry.update(detected=True, schedules_to_detect=position, invariant=invariant)
        seed = config.seed + position - 1
        path = directory / "_counterexamples" / f"seed-{seed}.json"
        if not path.exists():
            from gapless.spark_fuzz.counterexample import shrink_seed, write_counterexample

            path.parent.mkdir(exist_ok=True)
            write_counterexample(shrink_seed(config, seed, invariant), path)
        from gapless.spark_fuzz.counterexample import load_counterexample

        entry["shrunk_fault_events"] = load_counterexample(path).shrunk_fault_events
        entry["counterexample"] = str(path)
    return entry
