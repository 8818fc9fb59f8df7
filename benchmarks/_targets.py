"""The ``targets`` shape shared by every ``gapless bench``."""

from __future__ import annotations

from typing import Any


def target(value: float, wanted: float, *, at_least: bool) -> dict[str, Any]:
    """One target: ``{"value", "target", "met"}``; ``target`` is a string like ``">= 1.7"``."""
    met = value >= wanted if at_least else value <= wanted
    return {"value": value, "target": f"{'>=' if at_least else '<='} {wanted:g}", "met": bool(met)}


def machine_speed() -> dict[str, float]:
    """How fast this machine runs plain Python, so figures from different machines can be told
    apart from regressions: the best of 5 timings of a fixed interpreter workload (integer
    arithmetic, tuple building, dict updates and calls — what the simulator does), in
    nanoseconds per iteration; lower is faster. The README says what its figures' machine
    measured. Informational, never a target.

    Timed in this process's CPU time, like the figures it normalises: in wall-clock time a
    loaded machine read 1,749 ns here while the run it divided took CPU time, so
    ``iterations_per_message_fig3`` came out 7x too small and called itself met."""
    import time

    def step(i: int, d: dict[int, tuple[int, int]]) -> int:
        t = (i, i + 1)
        d[i & 1023] = t
        return t[0] ^ (t[1] << 1)

    n = 200_000
    best = float("inf")
    for _ in range(5):
        d: dict[int, tuple[int, int]] = {}
        acc = 0
        t0 = time.process_time()
        for i in range(n):
            acc ^= step(i, d)
        best = min(best, time.process_time() - t0)
    return {"python_ns_per_iteration": round(best / n * 1e9, 1)}
