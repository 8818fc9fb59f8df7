"""What scoping connection news by level saves on ``ges-latency``'s topologies [GES "The
connectivity graph"].

Theory of operation
-------------------
``ges-latency`` itself has no faults, so no link ever changes and no ``LinkNews`` is sent at
all. To measure the dissemination of connection losses and additions, :func:`news_run` runs
the latency setting (:func:`gapless.models.ges_latency.latency_topology` and
:func:`~gapless.models.ges_latency.latency_workload`, 50% matching, 100 events/s for one
second) under a schedule that fails every link of the topology once, one after the other
(``link_fail`` faults of :data:`FAIL_US`, :data:`GAP_US` apart, in link order), so each link
is reported down and up again by both its ends. It counts the ``LinkNews`` messages and the
news entries they carry, with the paper's scope (news of a link only inside the unit it lies
in, :func:`gapless.impl.ges.linkstate.within_unit`) and with the unscoped flood
(:func:`~gapless.impl.ges.linkstate.everywhere`) it replaced. Both runs are judged online by
every invariant (``avoid_suspected`` and ``roam_complete`` included: the routes and the
deliveries must not suffer for the news a node no longer hears).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from gapless.impl.ges import PAPER_POLICY
from gapless.impl.ges.aggregate import per_link
from gapless.impl.ges.config import GESConfig
from gapless.impl.ges.linkstate import everywhere
from gapless.impl.trace import TraceRecord
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.ges_binding import GESBinding
from gapless.models.ges_latency import (
    GRANULARITY,
    latency_checker,
    latency_topology,
    latency_workload,
)
from gapless.models.topology import link_name
from gapless.models.world import World

__all__ = ["FAIL_US", "GAP_US", "MODES", "news_figures", "news_run"]

FAIL_US: Final = 15_000
"""How long each link stays failed."""
GAP_US: Final = 20_000
"""Between the starts of two links' failures."""
_DURATION_US: Final = 1_000_000
_DRAIN_US: Final = 3_000_000


MODES: Final = {
    "aggregated": PAPER_POLICY,
    "scoped": attrs.evolve(PAPER_POLICY, news_key=per_link),
    "flooded": attrs.evolve(PAPER_POLICY, news_scope=everywhere, news_key=per_link),
}
"""The news with the paper's rewriting at the gatekeepers (per-link entries scoped by level,
aggregated into unit pairs for the nodes that see a link as one edge), scoped per link only
(before the rewriting), and flooded per link to every node (before the scoping)."""


def news_run(topology: str, *, mode: str = "aggregated") -> dict[str, Any]:
    """One run (see module doc): ``link_news`` messages, ``news_entries`` carried (per-link
    and aggregated), the verdict, and the deliveries (which neither scoping nor aggregation
    must change the count of)."""
    graph = latency_topology(topology)
    wl = latency_workload(graph, matching=50, rate=100, size=100, duration_us=_DURATION_US)
    policy = MODES[mode]
    binding = GESBinding(graph, wl, GESConfig(), policy, granularity=GRANULARITY)
    links = sorted(link_name(a, b) for a, b in graph.edges)
    events = tuple(
        FaultEvent(
            kind="link_fail", at_us=100_000 + i * GAP_US, duration_us=FAIL_US, target=ln, stream=i
        )
        for i, ln in enumerate(links)
    )
    checker = latency_checker(graph, wl, binding, flooding=False)
    count = {"link_news": 0, "news_entries": 0, "pair_entries": 0, "delivered": 0}

    def observe(r: TraceRecord) -> bool:
        checker.observe(r)
        if r.kind == "send" and r.detail.wire.kind == "link_news":
            count["link_news"] += 1
            count["news_entries"] += len(r.detail.msg.entries) + len(r.detail.msg.pairs)
            count["pair_entries"] += len(r.detail.msg.pairs)
        elif r.kind == "deliver":
            count["delivered"] += 1
        return False

    world = World(
        graph=graph,
        workload=wl,
        schedule=FaultSchedule(seed=0, events=events),
        seed=0,
        binding=binding,
        observer=observe,
        max_events=20_000_000,
    )
    world.run(duration_us=_DURATION_US, drain_us=_DRAIN_US)
    end = TraceRecord(seq=world._rseq, time=world.now, node="-", kind="fault", detail="end")
    violation = checker.violation or checker.finish(end)
    return {
        "verdict": "pass" if violation is None and not world.timed_out else "violation",
        "invariant": None if violation is None else violation.invariant,
        "links_failed": len(links),
        **count,
    }


def news_figures(topologies: tuple[str, ...] = ("ges-dense", "ges-sparse")) -> dict[str, Any]:
    """Per topology: the runs of every mode, the fraction of news messages scoping saves
    against the flood, and what the aggregation saves against scoping alone (messages and
    entries)."""
    out: dict[str, Any] = {}
    for name in topologies:
        runs = {mode: news_run(name, mode=mode) for mode in MODES}
        agg, scoped, flooded = runs["aggregated"], runs["scoped"], runs["flooded"]
        out[name] = {
            **runs,
            "messages_saved": round(1.0 - scoped["link_news"] / max(1, flooded["link_news"]), 3),
            "aggregation_messages_saved": round(
                1.0 - agg["link_news"] / max(1, scoped["link_news"]), 3
            ),
            "aggregation_entries_saved": round(
                1.0 - agg["news_entries"] / max(1, scoped["news_entries"]), 3
            ),
        }
    return out
