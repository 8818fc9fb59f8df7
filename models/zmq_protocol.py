"""ZeroMQ subscription forwarding [ZMQ] as one registry entry, and its scenario ``zmq-tree``.

Theory of operation
-------------------
The entry gathers the roles (:mod:`gapless.impl.zmq`), the planted bugs
(:mod:`gapless.impl.zmq.variants`), the binding and the invariants' context
(:mod:`gapless.models.zmq_binding`), the trace-only invariants
(:mod:`gapless.invariants.zmq`) and the wire summary
(:class:`~gapless.impl.zmq.messages.ZmqWire`). The world may inject crashes, link failures
and subscriber disconnections: a TCP connection loses, duplicates or reorders nothing without
ending, so the loss, duplication and reordering windows are not ZeroMQ faults. Only
``no_unsubscribed_delivery`` holds at every moment; the others are judged once churn has
stopped and subscriptions have settled, which every run reaches in its drain.

``zmq-tree``: 100 subscribers on random prefixes under a three-level tree of devices; churn
(subscribers going and coming back) and link failures for the first 4 s, then quiet; a
message every 20 ms for 8 s. Its figures: ``upstream_subscriptions`` (what each level of
devices holds upstream, top first), ``excess_messages`` (0 without the fallback),
``stale_subscriptions`` (0), ``lost`` (0, over the messages published after settling).
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Final

from gapless.impl.zmq.messages import ZmqWire
from gapless.impl.zmq.policy import PAPER_POLICY
from gapless.impl.zmq.variants import VARIANTS
from gapless.invariants.zmq import (
    NAMES,
    SAFETY,
    Completeness,
    Ledger,
    MinimalTraffic,
    SubscriptionConsistency,
    WorldReader,
    ZmqCheckContext,
    ZmqChecker,
)
from gapless.invariants.zmq_tracefile import trace_check, write_zmq_trace
from gapless.models.faults import FaultEvent
from gapless.models.registry import ProtocolEntry, Scenario
from gapless.models.runspec import RunOutcome, RunSpec
from gapless.models.workload import WorkloadSpec, generate_workload
from gapless.models.zmq_binding import TOPOLOGIES, ZmqConfig, check_context, make_binding

__all__ = ["ENTRY", "SCENARIOS", "tree_figures", "write_world_trace"]

_S: Final = 1_000_000
FAULT_KINDS: Final = ("crash", "link_fail", "disconnect")


def _tree_spec() -> RunSpec:
    return RunSpec(
        protocol="zmq",
        topology="zmq-tree",
        workload=WorkloadSpec(rate_per_pubend=50.0, subscribers_per_shb=25, filters="all"),
        duration_us=8 * _S,
        drain_us=1 * _S,
    )


def _churn() -> tuple[FaultEvent, ...]:
    """Twenty subscribers go away and come back, two device links fail, all in 0.3–4 s."""
    events = [
        FaultEvent(
            kind="disconnect",
            at_us=300_000 + 170_000 * i,
            duration_us=200_000 + 50_000 * (i % 7),
            target=f"d3{'abcd'[i % 4]}.u{(7 * i) % 25}",
            stream=i,
        )
        for i in range(20)
    ]
    events.append(
        FaultEvent(kind="link_fail", at_us=1 * _S, duration_us=500_000, target="d1|d2a", stream=20)
    )
    events.append(
        FaultEvent(kind="link_fail", at_us=2 * _S, duration_us=1 * _S, target="d2b|d3c", stream=21)
    )
    return tuple(events)


def _no_filters(text: str, attributes: Any) -> bool:
    return True  # prefixes, not content filters, select here


def _context(scenario: Scenario) -> ZmqCheckContext:
    spec = scenario.spec
    graph = TOPOLOGIES[spec.topology]()
    workload = generate_workload(spec.workload, graph, duration_us=spec.duration_us, seed=0)
    return check_context(graph, workload, make_binding(spec, graph, workload), _no_filters)


def write_world_trace(
    path: str | os.PathLike[str], scenario: Scenario, outcome: RunOutcome, context: Any = None
) -> int:
    """Write a scenario run's trace as a ZeroMQ ``gapless-trace`` file (the world's records
    read as the invariants read them); ``gapless check`` judges it. The context is rebuilt
    without filters (ZeroMQ matches by prefix on the wire), so ``context`` is not used."""
    ctx = _context(scenario)
    reader = WorldReader(ctx)
    records = [r for record in outcome.trace or () for r in reader.translate(record)]
    meta = {"scenario": scenario.name, "seed": 0, "trace_digest": outcome.trace_digest}
    return write_zmq_trace(
        path, ctx.topology, records, up=ctx.graph_edges, margin_us=ctx.margin_us, meta=meta
    )


def tree_figures(
    scenario: Scenario, outcome: RunOutcome, brokers: tuple[str, ...]
) -> dict[str, Any]:
    """The figures of a ``zmq-tree`` run, from its recorded trace alone."""
    ctx = _context(scenario)
    reader = WorldReader(ctx)
    ledger = Ledger(ctx.topology, up=ctx.graph_edges)
    ledger.margin_us = ctx.margin_us
    complete = Completeness(ctx.topology, ledger)
    minimal = MinimalTraffic(ctx.topology, ledger)
    consistent = SubscriptionConsistency(ctx.topology, ledger)
    for record in outcome.trace or ():
        for r in reader.translate(record):
            ledger.observe(r)
    complete.finish()
    minimal.finish()
    consistent.finish()
    depth = dict.fromkeys(ctx.topology.publishers, 0)
    todo = list(depth)
    while todo:  # breadth first from the publisher
        up = todo.pop(0)
        for e in ctx.topology.children(up):
            if e.down not in depth and e.down not in ctx.topology.subscribers:
                depth[e.down] = depth[up] + 1
                todo.append(e.down)
    levels = [0] * max(depth.values())
    for up, down in ctx.graph_edges:
        if ledger.live[(up, down)]:
            levels[depth[up]] += len(ledger.held[(up, down)])
    settled = ledger.settled_posts()
    lost = sum(1 for v in complete.violations if "delivered 0 times" in v.message)
    return {
        "scenario": scenario.name,
        "verdict": outcome.verdict,
        "invariant": outcome.invariant,
        "upstream_subscriptions": levels,
        "excess_messages": minimal.excess + len(minimal.violations),
        "stale_subscriptions": sum(v.message.count("'prefix'") for v in consistent.violations),
        "lost": lost,
        "measured_messages": len(settled),
        "settled_at_ms": round(ledger.settle_point / 1000, 1),
        "delivered": sum(1 for r in outcome.trace or () if r.kind == "deliver"),
    }


def tree_pass_marks(name: str, m: dict[str, Any]) -> dict[str, bool]:
    """The paper's claims on the figures."""
    levels = m["upstream_subscriptions"]
    return {
        "the correct protocol passes every invariant": m["verdict"] == "pass",
        "nothing published after settling is lost": m["lost"] == 0,
        "no stale subscription survives": m["stale_subscriptions"] == 0,
        "no message crosses an edge nobody below wants": m["excess_messages"] == 0,
        "aggregation: each level holds no more than the level below": all(
            a <= b for a, b in itertools.pairwise(levels)
        ),
        "a batch was measured after settling": m["measured_messages"] > 0,
    }


SCENARIOS: Final[dict[str, Scenario]] = {
    "zmq-tree": Scenario(
        name="zmq-tree",
        protocol="zmq",
        description=(
            "100 subscribers on random prefixes under a 3-level tree of devices; churn and "
            'link failures, then settling and a measured batch [ZMQ "Subscription Forwarding"]'
        ),
        spec=_tree_spec(),
        events=_churn(),
        figures=tree_figures,
        pass_marks=tree_pass_marks,
    )
}

ENTRY: Final = ProtocolEntry(
    name="zmq",
    summary=(
        "ZeroMQ PUB/SUB subscription forwarding: prefix subscriptions travel upstream "
        "through XSUB/XPUB devices (first subscription and last unsubscription only), are "
        "withdrawn when a peer goes and resent when it comes back; data goes only where "
        "someone below wants it, filtered at the SUB"
    ),
    paper="Martin Sústrik, Design of PUB/SUB subsystem in ØMQ (2011, 2014)",
    make_binding=make_binding,
    config_type=ZmqConfig,
    correct_policy=PAPER_POLICY,
    variants=VARIANTS,
    topologies=TOPOLOGIES,
    default_topology="zmq-small",
    scenarios=tuple(SCENARIOS.values()),
    fault_kinds=FAULT_KINDS,
    invariants=NAMES,
    safety_invariants=SAFETY,
    context=check_context,
    checker=ZmqChecker,
    wire_schema=ZmqWire,
    trace_check=trace_check,
    write_trace=write_world_trace,
)
"""ZeroMQ's registry entry."""
