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
subscriber of a live broker).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, Final

from gapless.impl.effects import deliveries
from gapless.impl.trace import TraceRecord
from gapless.models.dft_binding import fig10
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import Run
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec

__all__ = ["FAIL_AT_US", "fig10_point", "fig10_spec"]

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


def fig10_point(n: int, delta: int, k: int, duration_s: float, seed: int = 0) -> dict[str, Any]:
    """One Figure 10 point (see module doc): ``delivered``, ``expected``,
    ``delivered_fraction``, the run's ``verdict``, ``events``, ``wall_s`` and ``cpu_s``.
    The deliveries are counted as the records pass the checker, so a 3M-event point does
    not keep its trace in memory."""
    victims = _victims(n, k, seed)
    events = tuple(
        FaultEvent(kind="fail", at_us=FAIL_AT_US + i, duration_us=1000 * _S, target=v, stream=i)
        for i, v in enumerate(victims)
    )
    spec = fig10_spec(n, delta, duration_s)
    t0, c0 = time.perf_counter(), time.process_time()
    run = Run(spec, FaultSchedule(seed=seed, events=events), seed)
    tally = _Tally(FAIL_AT_US + k)
    run.world.observer = tally.wrap(run.world.observer)
    run.world.run(duration_us=spec.duration_us, drain_us=spec.drain_us)
    out = run.outcome()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    expected = len(tally.late) * (n - k)
    return {
        "delta": delta,
        "k": k,
        "delivered": tally.delivered,
        "expected": expected,
        "delivered_fraction": round(tally.delivered / expected, 4) if expected else None,
        "verdict": out.verdict,
        "invariant": out.invariant,
        "events": out.events,
        "digest": out.trace_digest,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
    }


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
