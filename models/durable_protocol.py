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
duplication and reordering windows on links, and subscriber disconnections (the subscriber
reconnects presenting its CT, or an older one: the ``older_ct_percent`` config key). Safety
(``release_horizon``, ``release_rule``, ``gap_legal``) holds at every moment; no-loss is judged
after the final heal and drain. Trace files (``gapless check``) are not written for it yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import networkx as nx

from gapless.impl.durable.policy import PAPER_POLICY
from gapless.impl.durable.variants import VARIANTS
from gapless.impl.durable.wire import DurWire
from gapless.invariants.durable import INVARIANTS
from gapless.invariants.durable.online import DurableChecker
from gapless.invariants.plugin import CheckContext, SubscriptionInfo
from gapless.models.durable_binding import TOPOLOGIES, DurableConfig, make_binding
from gapless.models.durable_scenarios import CAPACITY_TOPOLOGIES, SCENARIOS
from gapless.models.registry import ProtocolEntry
from gapless.models.workload import Workload

__all__ = ["ENTRY", "FAULT_KINDS", "check_context"]

FAULT_KINDS: Final = ("crash", "link_fail", "drop", "duplicate", "reorder", "disconnect")
"""The faults a durable run may suffer."""

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
)
"""Durable subscriptions' registry entry."""
