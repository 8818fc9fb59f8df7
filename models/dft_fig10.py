"""Figure 10 of DFT on the kit's world: publication delivery after k broker failures
[DFT §IX-B].

Theory of operation
-------------------
The paper ran 500 brokers on a cluster and gives no workload; this setup is ours
(topologies ``dft-fig10-100`` and ``dft-fig10-500`` of :mod:`gapless.models.dft_binding`):
the complete tree, fanout 3, a subscriber matching everything at every broker, 10 publishers
at brokers drawn once, 2 publications/s each. The subscribers subscribe at time 0; at 0.5 s
``k`` brokers that host no publisher fail for good (the world's ``fail``): the first ``k`` of
one random order drawn with the seed, so a larger k fails a superset; the publishers publish
until ``duration_s``, then the run drains for 2 s.

:func:`fig10_point` runs one (δ, k) point with the roles on the simulator, every invariant
on (a run beyond δ is judged on safety alone: verdict ``out_of_budget``), and reads the
trace: ``delivered_fraction`` is the deliveries of publications published after the
failures divided by those expected with no disconnection (each such publication at every
subscriber of a live broker). The deliveries are counted as the records pass the checker
(no trace is kept: a 500-broker, 120 s point is about 3M events).

:func:`fig10_delta` runs the points of one δ from one shared start-up. Sound because
nothing before the first failure depends on k: the subscriptions are issued at 0 and
confirmed long before 0.5 s, the publishers' schedule is the same, and the failures are
the last events :meth:`World.start` queues, so they precede every event queued during the
run and follow the publications queued at start. The copy of the run taken just before
0.5 s gets its failures at exactly that place in its event queue, and each point is the
run :func:`fig10_point` makes — same trace digest (``tests/dft/test_dftperf_fig10.py``).
The paper's own setup [DFT §IX-B] does not say when its failures happen relative to its
subscriptions; ours fails brokers after the subscriptions settled.
"""

from __future__ import annotations

import contextlib
import copy as copy_module
import gc
import heapq
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from copy import deepcopy
from types import CellType, FunctionType
from typing import Any, Final

import networkx as nx

from gapless.impl.effects import deliveries
from gapless.impl.trace import TraceRecord
from gapless.models.dft_binding import fig10, tree_of
from gapless.models.dft_figures import legitimately_connected
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import Run, build
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec
from gapless.models.world import _FAULT

__all__ = [
    "FAIL_AT_US",
    "fig10_delta",
    "fig10_point",
    "fig10_spec",
    "legitimate_deliveries",
    "legitimate_of_point",
]

_S: Final = 1_000_000
FAIL_AT_US: Final = _S // 2


def fig10_spec(n: int, delta: int, duration_s: float) -> RunSpec:
    """The run spec of a Figure 10 point on ``dft-fig10-{n}``."""
    return RunSpec(
        protocol="dft",
        topology=f"dft-fig10-{n}",
        workload=WorkloadSpec(rate_per_pubend=2.0, filters="all", jitter_us=0),
        duration_us=int(duration_s * _S),
        drain_us=2 * _S,
        config=(("delta", delta),),
        max_events=200_000_000,
    )


def _victims(n: int, k: int, seed: int) -> list[str]:
    g = fig10(n)
    hosts = {h for _, h in g.graph["pubends"]}
    order = random.Random(f"fig10-fail/{n}/{seed}").sample(
        sorted(set(g.nodes) - hosts), n - len(hosts)
    )
    return order[:k]  # nested: the k failures of a point include those of every smaller k


def _failures(n: int, k: int, seed: int) -> FaultSchedule:
    """The point's schedule: ``k`` brokers fail for good, one per µs from :data:`FAIL_AT_US`."""
    victims = _victims(n, k, seed)
    return FaultSchedule(
        seed=seed,
        events=tuple(
            FaultEvent(kind="fail", at_us=FAIL_AT_US + i, duration_us=1000 * _S, target=v, stream=i)
            for i, v in enumerate(victims)
        ),
    )


def legitimate_deliveries(
    graph: nx.Graph, late: Iterable[tuple[str, int]], victims: Iterable[str], delta: int
) -> int:
    """The deliveries legitimate propagation allows while the failures persist [DFT §VII]:
    each publication of ``late`` (``(pubend, number)``) at the subscriber of every live broker
    whose primary path from the publication's source has at most δ failed brokers in every
    window of 2δ + 1 (:func:`~gapless.models.dft_figures.legitimately_connected`, the count
    Figure 9's second column uses). The roles are owed no more and must deliver no less: a
    Figure 10 point is the protocol meeting this count exactly."""
    tree = tree_of(graph)
    down = set(victims)
    host = dict(graph.graph["pubends"])
    live = [b for b in tree.order if b not in down]
    per_source = Counter(host[pubend] for pubend, _ in late)
    return sum(
        count
        * sum(legitimately_connected([x in down for x in tree.path(src, b)], delta) for b in live)
        for src, count in per_source.items()
    )


def legitimate_of_point(
    n: int, delta: int, k: int, duration_s: float, seed: int = 0
) -> dict[str, int]:
    """A point's ``expected`` and ``legitimate`` without running it: the publications after the
    failures from the workload alone (as :class:`_Tally` counts them from the records: each
    pubend's messages numbered from 1, those published after :data:`FAIL_AT_US` + k), then
    :func:`legitimate_deliveries`. For a stored point that ran before the bench reported
    ``legitimate``; ``tests/dft/_fig10_check.py`` shows it equal to the run's own figures."""
    spec = fig10_spec(n, delta, duration_s)
    _, graph, workload, _ = build(spec, seed)
    publishes = sorted(workload.publishes, key=lambda x: x.at_us)
    number: Counter[str] = Counter()
    late: set[tuple[str, int]] = set()
    for x in publishes:
        if x.at_us >= spec.duration_us:
            continue
        number[x.pubend] += 1
        if x.at_us > FAIL_AT_US + k:
            late.add((x.pubend, number[x.pubend]))
    return {
        "expected": len(late) * (n - k),
        "legitimate": legitimate_deliveries(graph, late, _victims(n, k, seed), delta),
    }


def _result(
    run: Run, tally: _Tally, n: int, delta: int, k: int, wall: float, cpu: float, seed: int
) -> dict[str, Any]:
    out = run.outcome()
    expected = len(tally.late) * (n - k)
    legit = legitimate_deliveries(run.graph, tally.late, _victims(n, k, seed), delta)
    checker: Any = run.checker
    return {
        "delta": delta,
        "k": k,
        "delivered": tally.delivered,
        "expected": expected,
        "delivered_fraction": round(tally.delivered / expected, 4) if expected else None,
        "legitimate": legit,
        "legitimate_fraction": round(legit / expected, 4) if expected else None,
        "verdict": out.verdict,
        "invariant": out.invariant,
        "bounded_met": getattr(checker, "bounded_met", None),
        "events": out.events,
        "digest": out.trace_digest,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
    }


def fig10_point(n: int, delta: int, k: int, duration_s: float, seed: int = 0) -> dict[str, Any]:
    """One Figure 10 point (see module doc): ``delivered``, ``expected``,
    ``delivered_fraction``, the run's ``verdict``, ``events``, ``wall_s`` and ``cpu_s``.
    The deliveries are counted as the records pass the checker, so a 3M-event point does
    not keep its trace in memory."""
    spec = fig10_spec(n, delta, duration_s)
    t0, c0 = time.perf_counter(), time.process_time()
    with _no_cycle_collection():
        run = Run(spec, _failures(n, k, seed), seed)
        tally = _Tally(FAIL_AT_US + k)
        run.world.observer = tally.wrap(run.world.observer)
        run.world.run(duration_us=spec.duration_us, drain_us=spec.drain_us)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return _result(run, tally, n, delta, k, wall, cpu, seed)


def fig10_delta(
    n: int, delta: int, ks: Iterable[int], duration_s: float, seed: int = 0
) -> Iterator[dict[str, Any]]:
    """The Figure 10 points of one δ, sharing their start-up: every point runs the same
    events until the first failure (the subscription flood, every subscription confirmed,
    and the publications before :data:`FAIL_AT_US`: nothing before it depends on k), so
    one run goes there, then each point continues from a copy of it with its own failures.
    Each point's trace digest, events, deliveries and verdict are those of
    :func:`fig10_point` (``tests/dft/test_dftperf_fig10.py``): the failures enter the copy's
    event queue exactly where :meth:`World.start` would have put them — after the
    publications queued at start, before every event queued during the run. ``shared_cpu_s``
    is the start-up's CPU time, counted once; ``cpu_s`` a point's own."""
    spec = fig10_spec(n, delta, duration_s)
    t0, c0 = time.perf_counter(), time.process_time()
    with _no_cycle_collection():
        base = Run(spec, FaultSchedule(seed=seed, events=()), seed)
        tally = _Tally(spec.duration_us + spec.drain_us)
        base.world.observer = tally.wrap(base.world.observer)
        base.world.start(duration_us=spec.duration_us)
        queued_at_start = base.world._seq
        base.world.advance(FAIL_AT_US - 1)
    shared_wall, shared_cpu = time.perf_counter() - t0, time.process_time() - c0
    for k in ks:
        t1, c1 = time.perf_counter(), time.process_time()
        with _no_cycle_collection():
            run, mine = _fork(base, tally)
            mine.after = FAIL_AT_US + k
            schedule = _failures(n, k, seed)
            w = run.world
            run.schedule = w.schedule = schedule
            w.fault_events = list(schedule.events)
            for i, ev in enumerate(schedule.events):
                assert ev.at_us + ev.duration_us >= spec.duration_us  # no end phase
                at_seq = queued_at_start + (i + 1) / (len(schedule.events) + 1)
                heapq.heappush(w._queue, (ev.at_us, at_seq, _FAULT, i, "start"))
            w.advance(spec.duration_us)
            if not w.stopped:
                w.heal_all()
                w.advance(spec.duration_us + spec.drain_us)
        wall, cpu = time.perf_counter() - t1, time.process_time() - c1
        point = _result(run, mine, n, delta, k, wall, cpu, seed)
        yield {
            **point,
            "shared_events": base.world.events,
            "shared_wall_s": round(shared_wall, 2),
            "shared_cpu_s": round(shared_cpu, 2),
        }


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """While open, Python's cyclic garbage collector does not run on its own; one
    collection when it closes. A point builds millions of long-lived objects (the roles'
    states, the invariants' ledgers) and makes almost no cycles (a 100-broker 10 s point:
    229 objects collected in 6 full collections), so each automatic full collection walks
    the whole, growing heap for nothing: 20% of that point's CPU (dft10, 6.11 against
    4.90 CPU s, same digest). Reference counting still frees everything else at once.
    Invisible to the run: no trace, digest or verdict depends on when memory is freed."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            gc.collect()


def _fork(run: Run, tally: _Tally) -> tuple[Run, _Tally]:
    """A copy of ``run`` (and its ``tally``) that continues independently. Immutable values
    (the broker states, the topology, the binding, the spec, the invariants' context) are
    shared, not copied; the digest's hash state is copied by ``hashlib``'s own ``copy`` and
    its encoding memo starts afresh (a cache by identity). The run's observer, its
    counters and the checker's steps are closures over the run's checker and ledger:
    :func:`_deepcopy_closures` copies them with what they close over."""
    w = run.world
    checker: Any = run.checker
    memo: dict[int, Any] = {
        id(w.digest._h): w.digest._h.copy(),
        id(w.digest._enc.memo): {},
    }
    # the primary tree is immutable (its path memo only grows, invisibly); the plug-ins
    # hold it directly, and a deep copy of it copied every memoised path (dft10: 0.35 ->
    # 0.33 CPU s a fork at 100 brokers; the memo holds up to n² paths)
    for shared in (
        run.spec,
        run.entry,
        run.graph,
        run.binding,
        w.workload,
        checker.ctx,
        checker.ctx.tree,
    ):
        memo[id(shared)] = shared
    for node in w.nodes.values():
        memo[id(node.state)] = node.state
    with _deepcopy_closures():
        copied: tuple[Run, _Tally] = deepcopy((run, tally), memo)
    return copied


def _copy_function(f: FunctionType, memo: dict[int, Any]) -> FunctionType:
    """``f``, or for a closure a new function over copies of its cells (through ``memo``,
    so a closure over the run's checker closes over the copy's)."""
    if not f.__closure__:
        return f
    cells = tuple(CellType() for _ in f.__closure__)
    g = FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, cells)
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = f.__qualname__
    memo[id(f)] = g  # before the cells: a closure may reach itself
    for old, new in zip(f.__closure__, cells, strict=True):
        with contextlib.suppress(ValueError):  # an empty cell stays empty
            new.cell_contents = deepcopy(old.cell_contents, memo)
    return g


@contextlib.contextmanager
def _deepcopy_closures() -> Iterator[None]:
    """While open, ``copy.deepcopy`` copies closures (see :func:`_copy_function`) instead
    of sharing them, as it does any function by default."""
    table: dict[type, Any] = copy_module._deepcopy_dispatch  # type: ignore[attr-defined]
    before = table[FunctionType]
    table[FunctionType] = _copy_function
    try:
        yield
    finally:
        table[FunctionType] = before


class _Tally:
    """Publications published after ``after`` (µs) and their deliveries, from the records."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.count: dict[str, int] = {}
        self.late: set[tuple[str, int]] = set()
        self.delivered = 0

    def wrap(self, inner: Callable[[TraceRecord], bool] | None) -> Callable[[TraceRecord], bool]:
        """An observer that tallies ``r``, then hands it to ``inner``."""

        def observe(r: TraceRecord) -> bool:
            if r.kind == "publish":
                self.count[r.detail.pubend] = self.count.get(r.detail.pubend, 0) + 1
                if r.time > self.after:
                    self.late.add((r.detail.pubend, self.count[r.detail.pubend]))
            elif r.kind == "deliver":
                late = self.late
                self.delivered += sum(1 for d in deliveries(r.detail) if (d.pubend, d.tick) in late)
            return False if inner is None else inner(r)

        return observe
