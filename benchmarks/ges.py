"""``gapless bench ges``: GES throughput through the 22-node topology, and the cost of one
roaming client's recovery against the events it missed [GES "Results", "Recovering clients"].

1. ``ges-dense`` (22 nodes), publishers ``P0`` (n22) and ``P1`` (n1) at 50 events/s each for
   4 simulated seconds, 5 clients per node with equality profiles ``k == i % 2`` over events
   whose ``k`` is 0 or 1: each event matches half the clients (the paper's 50% matching
   rate). Every invariant is checked online. ``events_per_s``: published events per CPU
   second; ``deliveries_per_s``: deliveries per CPU second; ``sim_speedup``: simulated
   seconds per CPU second, on the default configuration: one storage per cluster under one
   per super-cluster (``granularity = "cluster"``, the default since ges8; the figures before
   ges8 are of one per super-cluster). The same figures with the suffix ``_links`` are of the
   run with the system-level links on (run config ``system_links = true``) and one storage
   per super-cluster (``granularity = "super-cluster"``), and ``_tier_links`` with the links
   and the finer tier [GES "Stable storages"].
2. The pure storage and session functions: a client who missed ``M`` events while ``N``
   events are stored for other clients reconnects (``handoff``, ``recovery_queue``, then its
   new session delivers the queue). ``recovery_us_M{M}_N{N}``: the least CPU µs of 5 runs.
   The target: with ``M`` fixed, ten times more stored events costs at most twice as much
   (``recovery_growth_with_stored``), while the cost grows with ``M``
   (``recovery_growth_with_missed``, informational).
"""

from __future__ import annotations

import time
from typing import Any

import attrs
from pyrsistent import pmap

from gapless.benchmarks._targets import target
from gapless.impl.ges import PAPER_POLICY
from gapless.impl.ges.session import offer, start_session
from gapless.impl.ges.storage import StorageState, handoff, recovery_queue, store
from gapless.models.faults import FaultSchedule
from gapless.models.run import simulate
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec

__all__ = ["run"]

_S = 1_000_000
_LINKS: tuple[tuple[str, Any], ...] = (("system_links", True),)
_SUPER: tuple[tuple[str, Any], ...] = (("granularity", "super-cluster"),)


def _throughput(config: tuple[tuple[str, Any], ...] = (), suffix: str = "") -> dict[str, Any]:
    spec = RunSpec(
        config=config,
        protocol="ges",
        topology="ges-dense",
        workload=WorkloadSpec(rate_per_pubend=50.0, filters="keys", keys=2, subscribers_per_shb=5),
        duration_us=4 * _S,
        drain_us=1 * _S,
    )
    t0 = time.process_time()
    out = simulate(spec, FaultSchedule(seed=0), 0)
    cpu = time.process_time() - t0
    figures = {
        "throughput_verdict": out.verdict,
        "published": out.counters.published,
        "delivered": out.counters.delivered,
        "matching_rate": round(out.counters.delivered / max(1, out.counters.published) / 110, 3),
        "events_per_s": round(out.counters.published / cpu, 1),
        "deliveries_per_s": round(out.counters.delivered / cpu, 1),
        "sim_speedup": round(5.0 / cpu, 3),
    }
    return {k + suffix: v for k, v in figures.items()}


def _storage(missed: int, stored: int) -> StorageState:
    """A storage with ``stored`` events for an always-connected client ``other`` and the
    last ``missed`` of them also for ``roamer``, who received none of those."""
    s = StorageState(name="S")
    s, _, _ = handoff(s, "other", 0, "b1", None, "k == 0", PAPER_POLICY)
    for seq in range(stored - missed):
        s, _ = store(s, "P", seq, pmap({"k": 0}), ("b1", "b2"), PAPER_POLICY)
    s, _, _ = handoff(s, "roamer", 0, "b2", None, "true", PAPER_POLICY)
    for seq in range(stored - missed, stored):
        s, _ = store(s, "P", seq, pmap({"k": 0}), ("b1", "b2"), PAPER_POLICY)
    return s


def _recovery_us(missed: int, stored: int) -> float:
    s = _storage(missed, stored)
    start = s.clients["roamer"].start
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        s2, rec, _ = handoff(s, "roamer", 1, "b3", start, "true", PAPER_POLICY)
        assert rec is not None
        queue = recovery_queue(s2, "roamer", rec.confirmed, rec.cut)
        sess = start_session("roamer", "true", 1, (("S", start),))
        sess = attrs.evolve(sess, last=sess.last.set("S", rec.confirmed))
        delivered = 0
        for q in queue:
            sess, out = offer(sess, "S", q.epoch, q.prev, q.pubend, q.attributes, PAPER_POLICY)
            delivered += sum(1 for d in out if d[0] == "deliver")
        best = min(best, time.process_time() - t0)
        assert delivered == missed
    return round(best * 1e6, 1)


def run() -> dict[str, Any]:
    """The figures and targets (see module doc)."""
    result = _throughput()
    result.update(_throughput((*_SUPER, *_LINKS), "_links"))
    result.update(_throughput((("granularity", "cluster"), *_LINKS), "_tier_links"))
    for missed in (10, 100, 1000):
        for stored in (2_000, 20_000):
            result[f"recovery_us_M{missed}_N{stored}"] = _recovery_us(missed, stored)
    with_stored = result["recovery_us_M100_N20000"] / result["recovery_us_M100_N2000"]
    with_missed = result["recovery_us_M1000_N20000"] / result["recovery_us_M10_N20000"]
    result["recovery_growth_with_stored"] = round(with_stored, 2)
    result["recovery_growth_with_missed"] = round(with_missed, 2)
    result["targets"] = {
        "recovery_growth_with_stored": target(with_stored, 2.0, at_least=False),
        **{
            f"throughput_verdict{k}_pass": target(
                float(result[f"throughput_verdict{k}"] == "pass"), 1.0, at_least=True
            )
            for k in ("", "_links", "_tier_links")
        },
    }
    return result
