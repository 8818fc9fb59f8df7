"""DFT scenarios: ``dft-gap-s1``, the §I gap on Figure 1's network [DFT §I]; ``dft-join``,
brokers joining during a run [DFT §I, §II].

Theory of operation
-------------------
The topology ``dft-gap-s1`` (:func:`gapless.models.dft_binding.gap_s1`) carries the §I
sequence as a scripted workload: S1 subscribes at B3 at the start, S2 arrives at B4 at
0.2 s, P publishes p1, p2, p3 at B1 (all match s2; only p1 and p3 match s1), then p4, p5
after the heal. The scenario's one fault fails link B1-B2 from 0.1 s to 1 s, so s2 is issued
while B1 is cut off from B2: B2 accepts it with its barrier <B1> as a confirmation tag, which
excludes B1's publications from S2 until the partition recovers [DFT §V-C, §VIII-A].

The registered run is the δ-fault-tolerant protocol (δ = 1) with every invariant on.
:func:`gap_figures` also runs the same script and schedule with the naive baseline (variant
``naive``, [DFT §I]) and judges it on the safety invariants (``DFT_SAFETY``: §I's claim is
the gap after the heal — S2 gets p1, p3 and never p2 — not the delay during the failure).
JSON: ``naive_violation`` (the invariant that caught the baseline), ``naive_records`` (the
records the violation names), ``dft_violation`` (``None`` when the δ-FT run is clean), what
each subscriber was delivered in each run, and ``dft_verdict``; ``naive_timeline`` and
``dft_timeline`` (``[time_s, who, what]`` per publication and delivery) and ``link_down_s``
for the plot; ``s2_after_heal``: the publications published after the heal that S2 was
delivered in the δ-FT run (partition recovery lifts the exclusion: p4, p5). Pass marks: the
naive run is caught by ``gapless``, the δ-FT run is clean, and S2 gets p4 and p5.

``dft-join`` (topology :func:`gapless.models.dft_binding.join_topology`): J13 joins under B4
at 0.3 s and J14 under B9 at 0.5 s (each the end of an absence from time 0, the world's way
of running a join); their subscribers connect as they join; link B1-B4, J13's way up,
fails from 0.8 s to 1.2 s. JSON: what each subscriber was delivered, per source
(``delivered``), the joins, ``rejected`` (messages naming a broker their receiver had not
heard of: none is the claim), the verdict. Pass marks: the run is clean under every
invariant; S7 (subscribed before the joins) gets every publication of the newcomers;
SJ13 and SJ14 get every publication published after they joined that their
acceptance did not exclude — SJ13, accepted untagged, everything from B0, B12 and J14
published from 0.6 s on (through the failure: B4 bypasses B1).

The naive run is a :class:`~gapless.models.world.World` wired to the DFT checker here, not
through :mod:`gapless.models.run` (which reads the protocol table this module is part of).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from gapless.impl.effects import deliveries
from gapless.impl.trace import TraceRecord
from gapless.invariants.dft import DFT_SAFETY, DFTChecker
from gapless.models.dft_binding import (
    GAP_S1_HEAL_US,
    GAP_S1_LINK_FAIL_US,
    JOIN_AT_US,
    JOIN_EVENTS,
    check_context,
    gap_s1,
    make_binding,
)
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.registry import Scenario
from gapless.models.runspec import RunSpec
from gapless.models.world import World
from gapless.spec.filters import reference_matcher

__all__ = [
    "SCENARIOS",
    "dft_run",
    "gap_figures",
    "gap_pass_marks",
    "join_figures",
    "join_pass_marks",
]


def dft_run(topology: str, *, duration_us: int, drain_us: int, delta: int = 1) -> RunSpec:
    """The run a registered DFT scenario makes: the δ-fault-tolerant protocol on ``topology``
    (δ = 1 unless said) for ``duration_us``, then ``drain_us`` without new publications."""
    return RunSpec(
        protocol="dft",
        topology=topology,
        duration_us=duration_us,
        drain_us=drain_us,
        config=(("delta", delta),),
    )


_SPEC: Final = dft_run("dft-gap-s1", duration_us=2_000_000, drain_us=1_000_000)
_EVENTS: Final = (
    FaultEvent(
        kind="link_fail",
        at_us=GAP_S1_LINK_FAIL_US,
        duration_us=GAP_S1_HEAL_US - GAP_S1_LINK_FAIL_US,
        target="B1|B2",
        stream=0,
    ),
)


def _delivered(records: Any) -> dict[str, list[str]]:
    """Per subscriber, the publications delivered to it, as ``p1``, ``p2``... in order."""
    got: dict[str, list[str]] = {}
    for r in records:
        if r.kind == "deliver":
            for d in deliveries(r.detail):
                got.setdefault(d.subscriber, []).append(f"p{d.tick}")
    return got


def _timeline(records: Any) -> list[list[Any]]:
    """``[time_s, who, what]`` for every publication (who: ``P@<broker>``) and delivery."""
    rows: list[list[Any]] = []
    count: dict[str, int] = {}
    for r in records:
        if r.kind == "publish":
            count[r.detail.pubend] = count.get(r.detail.pubend, 0) + 1
            rows.append([r.time / 1e6, f"P@{r.detail.pubend}", f"p{count[r.detail.pubend]}"])
        elif r.kind == "deliver":
            rows.extend([r.time / 1e6, d.subscriber, f"p{d.tick}"] for d in deliveries(r.detail))
    return rows


def _naive_run() -> tuple[Any, list[Any]]:
    """The script and schedule under the naive baseline: its violation and its records."""
    spec = attrs.evolve(_SPEC, variant="naive")
    graph = gap_s1()
    workload = graph.graph["script"]
    binding = make_binding(spec, graph, workload)
    checker = DFTChecker(check_context(graph, workload, binding, reference_matcher()), DFT_SAFETY)
    world = World(
        graph=graph,
        workload=workload,
        schedule=FaultSchedule(seed=0, events=_EVENTS),
        seed=0,
        binding=binding,
        observer=checker.observe,
        record=True,
    )
    world.run(duration_us=spec.duration_us, drain_us=spec.drain_us)
    if checker.violation is None:
        checker.finish(
            TraceRecord(seq=len(world.records), time=world.now, node="-", kind="end", detail=None)
        )
    return checker.violation, world.records


def gap_figures(scenario: Scenario, outcome: Any, brokers: tuple[str, ...]) -> dict[str, Any]:
    """The figures of ``dft-gap-s1`` (see module doc); ``outcome`` is the δ-FT run's."""
    naive, naive_records = _naive_run()
    return {
        "scenario": scenario.name,
        "naive_violation": naive.invariant if naive is not None else None,
        "naive_explanation": naive.explain() if naive is not None else None,
        "naive_records": [repr(e) for e in naive.events] if naive is not None else [],
        "naive_delivered": _delivered(naive_records),
        "dft_violation": outcome.invariant,
        "dft_verdict": outcome.verdict,
        "dft_delivered": _delivered(outcome.trace or ()),
        "naive_timeline": _timeline(naive_records),
        "dft_timeline": _timeline(outcome.trace or ()),
        "link_down_s": [GAP_S1_LINK_FAIL_US / 1e6, GAP_S1_HEAL_US / 1e6],
        "s2_after_heal": _after_heal(outcome.trace or (), "S2"),
    }


def _after_heal(records: Any, subscriber: str) -> list[str]:
    """The publications published after the heal that ``subscriber`` was delivered."""
    late: set[int] = set()
    count = 0
    for r in records:
        if r.kind == "publish" and r.detail.pubend == "B1":
            count += 1
            if r.time >= GAP_S1_HEAL_US:
                late.add(count)
    return [
        f"p{d.tick}"
        for r in records
        if r.kind == "deliver"
        for d in deliveries(r.detail)
        if d.subscriber == subscriber and d.tick in late
    ]


def gap_pass_marks(name: str, figures: dict[str, Any]) -> dict[str, bool]:
    """The §I claims: the naive baseline delivers a gapped flow and the gapless invariant
    reports it; the δ-fault-tolerant protocol never delivers one."""
    return {
        "naive baseline caught by gapless": figures["naive_violation"] == "gapless",
        "δ-FT run clean": figures["dft_violation"] is None and figures["dft_verdict"] == "pass",
        "S2 served after the heal": figures["s2_after_heal"] == ["p4", "p5"],
    }


_JOIN_SPEC: Final = dft_run("dft-join", duration_us=2_000_000, drain_us=1_000_000)


def _per_source(records: Any) -> dict[str, dict[str, list[int]]]:
    """Per subscriber, per source, the publication numbers delivered, in order."""
    got: dict[str, dict[str, list[int]]] = {}
    for r in records:
        if r.kind == "deliver":
            for d in deliveries(r.detail):
                got.setdefault(d.subscriber, {}).setdefault(d.pubend, []).append(d.tick)
    return got


def join_figures(scenario: Scenario, outcome: Any, brokers: tuple[str, ...]) -> dict[str, Any]:
    """The figures of ``dft-join`` (see module doc)."""
    records = outcome.trace or ()
    published: dict[str, list[tuple[float, int]]] = {}
    for r in records:
        if r.kind == "publish":
            seq = published.setdefault(r.detail.pubend, [])
            seq.append((r.time / 1e6, len(seq) + 1))
    return {
        "scenario": scenario.name,
        "joins": [[b, a, at / 1e6] for b, a, at in JOIN_AT_US],
        "delivered": _per_source(records),
        "published": {p: [n for _, n in v] for p, v in sorted(published.items())},
        "published_from_0_6_s": {
            p: [n for t, n in v if t >= 0.6] for p, v in sorted(published.items())
        },
        "rejected": [repr(r.detail) for r in records if r.kind == "rejected"],
        "violation": outcome.invariant,
        "verdict": outcome.verdict,
    }


def join_pass_marks(name: str, figures: dict[str, Any]) -> dict[str, bool]:
    """The claims of ``dft-join`` (see module doc)."""
    got = figures["delivered"]
    late = figures["published_from_0_6_s"]
    return {
        "run clean": figures["violation"] is None and figures["verdict"] == "pass",
        "no message names an unknown broker": not figures["rejected"],
        "S7 gets the newcomers' flows": all(
            got.get("S7", {}).get(j) == figures["published"][j] for j in ("J13", "J14")
        ),
        "SJ13 gets every flow from 0.6 s": all(
            got.get("SJ13", {}).get(p, [])[-len(late[p]) :] == late[p] for p in ("B0", "B12", "J14")
        ),
    }


SCENARIOS: Final = (
    Scenario(
        name="dft-gap-s1",
        protocol="dft",
        description="§I on Figure 1's network: s2 issued while B1-B2 is down; p2 matches "
        "only s2 (naive baseline: gap; δ-FT: none)",
        spec=_SPEC,
        events=_EVENTS,
        figures=gap_figures,
        pass_marks=gap_pass_marks,
        plot="dft-gap",
    ),
    Scenario(
        name="dft-join",
        protocol="dft",
        description="J13 and J14 join the 13-broker tree during the run (then link B1-B4 "
        "fails and heals); old and new subscribers, old and new publishers",
        spec=_JOIN_SPEC,
        events=JOIN_EVENTS,
        figures=join_figures,
        pass_marks=join_pass_marks,
    ),
)
"""DFT's scenarios."""
