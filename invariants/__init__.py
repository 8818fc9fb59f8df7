"""Executable invariants over a run's trace (DESIGN.md "Checking, in four layers").

Invariants judge only what is observable — the workload, the effects the roles emit and the
faults — and compute what should have happened with the ``spec`` reference semantics.
:mod:`gapless.invariants.checker` checks them, online or over a recorded trace, as plug-ins
(:mod:`gapless.invariants.plugin`) over a shared ledger of the trace; a protocol brings its
own plug-ins through its one registry entry (:mod:`gapless.models.registry`), which builds
its checker. Guaranteed delivery's
(:mod:`gapless.invariants.gd`) are the delivery invariants (:data:`DELIVERY`: safety, order,
logged_first, gapless, exactly_once, total_order, no_e, liveness) and the wire-conformance
ones (:data:`CONFORMANCE`: nack_consolidation, ack_consolidation, retransmission_targets,
silence_targets, minimal_traffic, ack_expected_timing, down_link_routing, own_timers,
refused_input, quiet_delivery, sideways_one_hop, silence_hides_nothing, shb_ack_timing,
sideways_forwarded, canonical_state).
:mod:`gapless.invariants.tracefile` writes and reads trace files (``gapless check``);
:mod:`gapless.invariants.laws` holds the lattice law checkers.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CONFORMANCE", "DELIVERY", "INVARIANTS"]

DELIVERY: Final = (
    "safety",
    "order",
    "logged_first",
    "gapless",
    "exactly_once",
    "total_order",
    "no_e",
    "liveness",
)
CONFORMANCE: Final = (
    "nack_consolidation",
    "ack_consolidation",
    "retransmission_targets",
    "silence_targets",
    "minimal_traffic",
    "ack_expected_timing",
    "down_link_routing",
    "own_timers",
    "refused_input",
    "quiet_delivery",
    "sideways_one_hop",
    "silence_hides_nothing",
    "shb_ack_timing",
    "sideways_forwarded",
    "canonical_state",
)
INVARIANTS: Final = DELIVERY + CONFORMANCE
