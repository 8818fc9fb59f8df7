"""Guaranteed delivery [GD] as one registry entry: everything the kit needs of it.

Theory of operation
-------------------
The entry gathers what lives in GD's own modules: the roles and their configuration
(:mod:`gapless.impl.gd`), the planted bugs declared beside the rules
(:mod:`gapless.impl.gd.variants`), the binding and the invariants' context
(:mod:`gapless.models.gd_binding`), the topologies (:mod:`gapless.models.topology`), the paper's
failure experiments (:mod:`gapless.models.gd_scenarios`), the checker
(:mod:`gapless.invariants.checker`) and the wire summary (:class:`gapless.impl.trace.Wire`).
GD has no fault budget: every fault schedule is judged by every invariant.
"""

from __future__ import annotations

import os
from typing import Any, Final

from gapless.impl.gd import PAPER_POLICY
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.variants import VARIANTS
from gapless.impl.trace import Wire
from gapless.invariants import INVARIANTS
from gapless.invariants.checker import Checker
from gapless.invariants.tracefile import check_trace_file, write_trace
from gapless.models.faults import FAULT_KINDS
from gapless.models.gd_binding import check_context, make_binding
from gapless.models.gd_scenarios import SCENARIOS
from gapless.models.registry import ProtocolEntry, Scenario
from gapless.models.topology import TOPOLOGIES

__all__ = ["ENTRY", "write_world_trace"]


def write_world_trace(
    path: str | os.PathLike[str], scenario: Scenario, outcome: Any, context: Any
) -> int:
    """Write a scenario run's trace as a GD ``gapless-trace`` file, given the run's checker
    context; ``gapless check`` judges it (liveness at the file's end)."""
    meta = {"scenario": scenario.name, "seed": 0, "trace_digest": outcome.trace_digest}
    return write_trace(path, context, outcome.trace or (), live_end=True, meta=meta, protocol="gd")


ENTRY: Final = ProtocolEntry(
    name="gd",
    summary=(
        "Guaranteed delivery: exactly-once, gapless, ordered delivery of every matching "
        "message through brokers that crash and links that fail or lose messages "
        "(knowledge and curiosity streams, nack and ack consolidation)"
    ),
    paper="Bhola et al., Exactly-once Delivery in a Content-based Publish-Subscribe System "
    "(IBM Gryphon, DSN 2002)",
    make_binding=make_binding,
    config_type=GDConfig,
    correct_policy=PAPER_POLICY,
    variants=VARIANTS,
    topologies=TOPOLOGIES,
    default_topology="fig3",
    scenarios=tuple(SCENARIOS.values()),
    fault_kinds=tuple(FAULT_KINDS),
    invariants=tuple(INVARIANTS),
    safety_invariants=(
        "safety",
        "order",
        "total_order",
        "logged_first",
        "exactly_once",
        "no_e",
        "minimal_traffic",
        "down_link_routing",
        "canonical_state",
    ),
    context=check_context,
    checker=Checker,
    wire_schema=Wire,
    trace_check=check_trace_file,
    write_trace=write_world_trace,
    # canonical_state judges the malformed records of the binding's per-step form check
    state_checked=("canonical_state",),
)
"""GD's registry entry."""
