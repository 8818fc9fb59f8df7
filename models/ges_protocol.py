"""The Grid Event Service [GES] as one registry entry: everything the kit needs of it.

Theory of operation
-------------------
The entry gathers GES's own modules: the node role (:mod:`gapless.impl.ges`), its planted bugs
(:mod:`gapless.impl.ges.variants`), the binding and fault budget
(:mod:`gapless.models.ges_binding`), the 22-node topologies
(:mod:`gapless.models.ges_topology`), the scenarios (:mod:`gapless.models.ges_scenarios`), the
trace-only checker (:mod:`gapless.invariants.ges`) and the protocol's own wire summary
(:class:`~gapless.impl.ges.messages.GesWire`). Its fault kinds are GD's plus ``fail`` (a
broker that fails forever), ``reprofile`` (a client changes its profile within its
connection) and ``fail_unit`` (every broker of a cluster or super-cluster fails forever); a
schedule that fails a storage node forever or disconnects the
live nodes leaves the budget and is judged on safety alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

import networkx as nx

from gapless.impl.ges import PAPER_POLICY, GESConfig
from gapless.impl.ges.messages import GesWire
from gapless.impl.ges.variants import VARIANTS
from gapless.invariants.ges import INVARIANTS, SAFETY, GESChecker, GESContext
from gapless.invariants.ges_tracefile import trace_check, write_ges_trace
from gapless.models.faults import FAULT_KINDS, PERMANENT_KINDS, PROFILE_KINDS, UNIT_KINDS
from gapless.models.ges_binding import make_binding, within_budget
from gapless.models.ges_scenarios import SCENARIOS
from gapless.models.ges_topology import GES_TOPOLOGIES
from gapless.models.registry import ProtocolEntry, Scenario
from gapless.models.runspec import RunOutcome
from gapless.models.workload import Workload

__all__ = ["ENTRY", "check_context", "write_world_trace"]


def check_context(
    graph: nx.Graph, workload: Workload, binding: Any, matches: Callable[[str, Any], bool]
) -> GESContext:
    """The invariants' context of a run: profiles, storages, links, decoders."""
    return GESContext(
        profiles={s.name: s.filter for s in workload.subscriptions},
        storage_of_pubend=dict(binding.storage_of_pubend),
        links=tuple(sorted((min(a, b), max(a, b)) for a, b in graph.edges)),
        matches=matches,
        logged=binding.logged,
        durable=binding.durable,
        waits=bool(getattr(binding, "notification_wait", False)),
        storages=tuple(binding.net.storages),
    )


def write_world_trace(
    path: str | os.PathLike[str], scenario: Scenario, outcome: RunOutcome, context: Any
) -> int:
    """Write a scenario run's trace as a GES ``gapless-trace`` file
    (:mod:`gapless.invariants.ges_tracefile`), given the run's checker context; ``gapless
    check`` judges it. The file ends live (``roam_complete`` judged at its end) unless the run
    left the fault budget."""
    meta = {"scenario": scenario.name, "seed": 0, "trace_digest": outcome.trace_digest}
    live = outcome.verdict != "out_of_budget"
    return write_ges_trace(path, context, outcome.trace or (), live_end=live, meta=meta)


ENTRY: Final = ProtocolEntry(
    name="ges",
    summary=(
        "Grid Event Service: hierarchical broker units, profile-based routing toward "
        "interested units only, system stable storages with epochs, and roaming clients "
        "recovered exactly once at any broker while brokers fail forever"
    ),
    paper="Fox and Pallickara, An Event Service to Support Grid Computational Environments "
    "(the Grid Event Service, NaradaBrokering)",
    make_binding=make_binding,
    config_type=GESConfig,
    correct_policy=PAPER_POLICY,
    variants=VARIANTS,
    topologies=GES_TOPOLOGIES,
    default_topology="ges-dense",
    scenarios=tuple(SCENARIOS.values()),
    fault_kinds=(*FAULT_KINDS, *PERMANENT_KINDS, *PROFILE_KINDS, *UNIT_KINDS),
    invariants=INVARIANTS,
    safety_invariants=SAFETY,
    context=check_context,
    checker=GESChecker,
    wire_schema=GesWire,
    within_budget=within_budget,
    trace_check=trace_check,
    write_trace=write_world_trace,
)
"""GES's registry entry."""
