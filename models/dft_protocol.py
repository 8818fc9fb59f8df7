"""The δ-fault-tolerant protocol [DFT] as one registry entry.

Theory of operation
-------------------
Everything the kit needs of DFT, gathered from its own modules: the roles and configuration
(:mod:`gapless.impl.dft`), the planted bugs and the naive baseline
(:mod:`gapless.impl.dft.variants`), the binding, topologies, context and fault budget
(:mod:`gapless.models.dft_binding`), the checker (:mod:`gapless.invariants.dft`) and the
wire summary (:class:`gapless.impl.dft.messages.DFTWire`).

Fault kinds: link failures, subscriber disconnects (a reconnect is a new connection,
hence a new subscription issued mid-run — during a partition, the case tags exist for
[DFT §V-C]) and broker crashes (the world restarts the broker; it goes through full
recovery [DFT §VIII-B], ``gapless.impl.dft.recovery``) and joins (a broker of the
topology's joiners enters the system during the run [DFT §I, §II]; topology
``dft-tree13-join``). Beyond δ failures on
a primary sub-path the run is judged on safety alone (``out_of_budget``).

Scenario: ``dft-gap-s1`` (:mod:`gapless.models.dft_scenarios`), the §I gap on Figure 1's
network, from a scripted workload the topology carries.
"""

from __future__ import annotations

import os
from typing import Any, Final

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig
from gapless.impl.dft.messages import DFTWire
from gapless.impl.dft.variants import VARIANTS
from gapless.invariants.dft import DFT_INVARIANTS, DFT_SAFETY, DFTChecker
from gapless.invariants.dft_tracefile import trace_check, write_dft_trace
from gapless.models.dft_binding import TOPOLOGIES, check_context, make_binding, within_budget
from gapless.models.dft_fig_scenarios import FIG_SCENARIOS
from gapless.models.dft_scenarios import SCENARIOS
from gapless.models.registry import ProtocolEntry, Scenario

__all__ = ["ENTRY"]


def write_world_trace(
    path: str | os.PathLike[str], scenario: Scenario, outcome: Any, context: Any
) -> int:
    """Write a scenario run's trace as a DFT ``gapless-trace`` file
    (:mod:`gapless.invariants.dft_tracefile`), given the run's checker context."""
    meta = {"scenario": scenario.name, "seed": 0, "trace_digest": outcome.trace_digest}
    return write_dft_trace(path, context, outcome.trace or (), meta=meta)


ENTRY: Final = ProtocolEntry(
    name="dft",
    summary=(
        "δ-fault-tolerant pub/sub: exactly-once, per-source ordered, gapless delivery over a "
        "primary tree whose brokers bypass up to δ unreachable neighbours (partitions, tags, "
        "confirmations, legitimate propagation)"
    ),
    paper="Kazemzadeh, Jacobsen, Reliable and Highly Available Distributed "
    "Publish/Subscribe Service (SRDS 2009)",
    make_binding=make_binding,
    config_type=DFTConfig,
    correct_policy=PAPER_POLICY,
    variants=VARIANTS,
    topologies=TOPOLOGIES,
    default_topology="dft-fig1",
    scenarios=(*SCENARIOS, *FIG_SCENARIOS),
    fault_kinds=("link_fail", "disconnect", "crash", "join"),
    invariants=DFT_INVARIANTS,
    safety_invariants=DFT_SAFETY,
    context=check_context,
    checker=DFTChecker,
    wire_schema=DFTWire,
    within_budget=within_budget,
    trace_check=trace_check,
    write_trace=write_world_trace,
)
"""DFT's registry entry."""
