"""Durable subscriptions [DUR] as one registry entry: everything the kit needs of them.

Theory of operation
-------------------
The entry gathers the durable roles (:mod:`gapless.impl.durable`: the pubend, intermediate
brokers, the SHB), their planted bugs (:mod:`gapless.impl.durable.variants`), the binding and
topologies (:mod:`gapless.models.durable_binding`), the scenarios
(:mod:`gapless.models.durable_scenarios`), the four trace-only invariants
(:mod:`gapless.invariants.durable`) judged online by
:class:`~gapless.invariants.durable.online.DurableChecker`, and the wire summary
(:class:`~gapless.impl.durable.wire.DurWire`). Its fault kinds: broker crashes (an SHB
restarts from its store, losing what was not synced [DUR §4.1]), link failures, loss,
duplication and reordering windows on links, and subscriber disconnections: the subscriber
reconnects presenting its CT (``disconnect``; or, for ``older_ct_percent`` of them, an older
one), reconnects at another SHB (``move``) or presents the CT it acknowledged before its latest
(``older_ct``). Safety
(``release_horizon``, ``release_rule``, ``gap_legal``) holds at every moment; no-loss is judged
after the final heal and drain. Trace files: :func:`write_world_trace` writes a run's ``dur_*``
records as a ``gapless-trace`` version-3 file (:mod:`gapless.invariants.durable.tracefile`),
which ``gapless check`` judges with the same invariants.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

import networkx as nx

from gapless.impl.durable.policy import PAPER_POLICY
from gapless.impl.durable.variants import VARIANTS
from gapless.impl.durable.wire import DurWire
from gapless.invariants.durable import INVARIANTS
from gapless.invariants.durable.online import DurableChecker
from gapless.invariants.durable.tracefile import trace_check, write_durable_trace
from gapless.invariants.plugin import CheckContext, SubscriptionInfo
from gapless.models.durable_binding import TOPOLOGIES, DurableConfig, make_binding
from gapless.models.durable_scenarios import CAPACITY_TOPOLOGIES, SCENARIOS
from gapless.models.registry import ProtocolEntry
from gapless.models.workload import Workload

__all__ = ["ENTRY", "FAULT_KINDS", "check_context", "write_world_trace"]

FAULT_KINDS: Final = (
    "crash",
    "link_fail",
    "drop",
    "duplicate",
    "reorder",
    "disconnect",
    "move",
    "older_ct",
)
"""The faults a durable run may suffer: ``move`` reconnects a subscriber at another SHB
(reconnect-anywhere), ``older_ct`` makes it present an older acknowledged CT
(``models/faults.py``, ``models/durable_binding.py``)."""

SAFETY: Final = ("release_horizon", "release_rule", "gap_legal")
"""The invariants that hold at every moment."""


def check_context(
    graph: nx.Graph, workload: Workload, binding: Any, matches: Callable[[str, Any], bool]
) -> CheckContext:
    """The invariants' context of a run: subscriptions, the broker tree, roles, decoders."""
    return CheckContext(
        subscriptions=tuple(
            SubscriptionInfo(name=s.name, shb=s.shb, filter=s.filter)
            for s in workload.subscriptions
        ),
        cell_of={n: n for n in graph.nodes},
        cell_tree=tuple(graph.graph["cell_tree"]),
        pubend_host=dict(graph.graph["pubends"]),
        merged=(),
        roles={n: str(d["role"]) for n, d in graph.nodes(data=True)},
        min_repetition_us=0,
        matches=matches,
        logged=binding.logged,
        payload_attributes=binding.payload_attributes,
    )


def write_world_trace(
    path: str | os.PathLike[str], scenario: Any, outcome: Any, context: CheckContext
) -> int:
    """Write a scenario run's (a :class:`~gapless.models.registry.Scenario`) ``dur_*``
    records as a durable trace file, given the run's checker context; no-loss is judged at
    its end unless the run timed out."""
    trace = outcome.trace or ()
    end = (trace[-1].seq + 1 if trace else 0, outcome.end_time_us)
    meta = {"scenario": scenario.name, "seed": 0, "trace_digest": outcome.trace_digest}
    return write_durable_trace(
        path, context, trace, live_end=outcome.verdict != "timeout", end=end, meta=meta
    )


ENTRY: Final = ProtocolEntry(
    name="durable",
    summary=(
        "Gryphon durable subscriptions: checkpoint tokens, event/silence/gap messages, the "
        "release protocol (Tr <= Td, the L rule with PHB-controlled early release), the SHB's "
        "constream, catchup streams and persistent filtering subsystem, SHB crash recovery"
    ),
    paper="Bhola, Zhao, Auerbach, Scalably supporting durable subscriptions in a "
    "publish/subscribe system (Gryphon)",
    make_binding=make_binding,
    config_type=DurableConfig,
    correct_policy=PAPER_POLICY,
    variants=VARIANTS,
    topologies={**TOPOLOGIES, **CAPACITY_TOPOLOGIES},
    default_topology="dur-two",
    scenarios=tuple(SCENARIOS.values()),
    fault_kinds=FAULT_KINDS,
    invariants=INVARIANTS,
    safety_invariants=SAFETY,
    context=check_context,
    checker=DurableChecker,
    wire_schema=DurWire,
    trace_check=trace_check,
    write_trace=write_world_trace,
)
"""Durable subscriptions' registry entry."""
