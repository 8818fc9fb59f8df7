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
from typing import Any, Final

from gapless.impl.effects import deliveries
from gapless.models.dft_binding import fig10
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import simulate
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
    ``delivered_fraction``, the run's ``verdict``, ``events`` and ``wall_s``."""
    victims = _victims(n, k, seed)
    events = tuple(
        FaultEvent(kind="fail", at_us=FAIL_AT_US + i, duration_us=1000 * _S, target=v, stream=i)
        for i, v in enumerate(victims)
    )
    spec = fig10_spec(n, delta, duration_s)
    t0 = time.perf_counter()
    out = simulate(spec, FaultSchedule(seed=seed, events=events), seed, record_trace=True)
    wall = time.perf_counter() - t0
    late: set[tuple[str, int]] = set()
    count: dict[str, int] = {}
    delivered = 0
    for r in out.trace or ():
        if r.kind == "publish":
            count[r.detail.pubend] = count.get(r.detail.pubend, 0) + 1
            if r.time > FAIL_AT_US + k:
                late.add((r.detail.pubend, count[r.detail.pubend]))
        elif r.kind == "deliver":
            delivered += sum(1 for d in deliveries(r.detail) if (d.pubend, d.tick) in late)
    expected = len(late) * (n - k)
    return {
        "delta": delta,
        "k": k,
        "delivered": delivered,
        "expected": expected,
        "delivered_fraction": round(delivered / expected, 4) if expected else None,
        "verdict": out.verdict,
        "invariant": out.invariant,
        "events": out.events,
        "wall_s": round(wall, 2),
    }
