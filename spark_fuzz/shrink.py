"""Shrinking a failing schedule to a small one that still violates the same invariant.

Theory of operation
-------------------
Three passes, each keeping a candidate only if it still fails with the *same* invariant
(so shrinking never trades one bug for another):

1. **Fault events** — delta debugging (Zeller and Hildebrandt's ``ddmin``) over the
   schedule's events: try removing chunks of events, then single events, until no single
   event can be removed (1-minimal). Each event carries its own random stream, so removing
   one does not change what the others do (``models/faults.py``).
2. **Workload length** — scale the workload down (halving while it still fails).
3. **Simulated time** — binary search on the duration, down to the shortest that still
   fails (within 5 %).

Every pass spends from one budget of simulations (``max_runs``); when it runs out the
smallest failing candidate found so far is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, final

import attrs

from gapless.spark_fuzz.backend import Backend, Outcome

__all__ = ["ShrinkResult", "ddmin", "shrink"]

T = TypeVar("T")


class _Budget(Exception):
    pass


def ddmin(items: Sequence[T], fails: Callable[[Sequence[T]], bool]) -> list[T]:
    """A 1-minimal subsequence of ``items`` for which ``fails`` holds (``fails(items)`` is
    assumed). ``fails`` may raise to stop early; the exception propagates.

    >>> ddmin(list(range(10)), lambda xs: 3 in xs and 7 in xs)
    [3, 7]
    """
    current = list(items)
    n = 2
    while len(current) >= 2:
        size = len(current) // n
        chunks = [current[i : i + size] for i in range(0, len(current), size)] if size else []
        reduced = False
        for i in range(len(chunks)):
            complement = [x for j, c in enumerate(chunks) if j != i for x in c]
            if complement and fails(complement):
                current = complement
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), n * 2)
    if len(current) == 1 and fails([]):
        return []
    return current


@final
@attrs.frozen(kw_only=True)
class ShrinkResult:
    spec: Any
    schedule: Any
    outcome: Outcome
    original_events: int
    shrunk_events: int
    runs: int
    duration_s: float | None
    workload_scale: float


def shrink(
    backend: Backend,
    spec: Any,
    schedule: Any,
    seed: int,
    invariant: str,
    *,
    max_runs: int = 200,
    duration_s: float | None = None,
) -> ShrinkResult:
    """Shrink ``schedule`` (which violates ``invariant`` under ``spec`` and ``seed``)."""
    runs = 0
    best_outcome: Outcome | None = None

    def check(candidate_spec: Any, candidate_schedule: Any) -> bool:
        nonlocal runs, best_outcome
        if runs >= max_runs:
            raise _Budget
        runs += 1
        try:
            outcome = backend.run(candidate_spec, candidate_schedule, seed)
        except Exception:
            return False
        ok = outcome.verdict == "violation" and outcome.invariant == invariant
        if ok:
            best_outcome = outcome
        return ok

    events = list(backend.schedule_events(schedule))
    best_spec, best_schedule = spec, schedule
    scale = 1.0
    duration = duration_s
    try:
        if not check(spec, schedule):
            raise ValueError(
                f"shrink: seed {seed} does not violate {invariant!r} when re-run; "
                "expected a deterministic failing schedule"
            )
        if events:

            def fails(subset: Sequence[Any]) -> bool:
                nonlocal best_schedule
                candidate = backend.with_events(schedule, subset)
                ok = check(spec, candidate)
                if ok and len(subset) < len(backend.schedule_events(best_schedule)):
                    best_schedule = candidate
                return ok

            ddmin(events, fails)
        # workload length: halve while it still fails
        while scale > 1 / 64:
            candidate = backend.shorten(spec, duration_s=None, workload_scale=scale / 2)
            if not check(candidate, best_schedule):
                break
            scale /= 2
            best_spec = candidate
        # simulated time: binary search for the shortest failing duration
        if duration is not None:
            lo, hi = 0.0, duration
            while hi - lo > max(0.05 * duration, 0.01):
                mid = (lo + hi) / 2
                candidate = backend.shorten(best_spec, duration_s=mid, workload_scale=None)
                if check(candidate, best_schedule):
                    hi, best_spec = mid, candidate
                else:
                    lo = mid
            duration = hi
    except _Budget:
        pass
    # the final candidate is re-run once so the outcome matches exactly what is written
    final_outcome = backend.run(best_spec, best_schedule, seed)
    if best_outcome is None:
        best_outcome = final_outcome
    return ShrinkResult(
        spec=best_spec,
        schedule=best_schedule,
        outcome=final_outcome,
        original_events=len(events),
        shrunk_events=len(backend.schedule_events(best_schedule)),
        runs=runs + 1,
        duration_s=duration,
        workload_scale=scale,
    )
