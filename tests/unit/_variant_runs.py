"""Zoo variants beside the correct protocol on one hand-made schedule of Figure 3, each run's
trace written to a file: what the invariant tests that judge a variant online and offline share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gapless.invariants.tracefile import write_trace
from gapless.models.faults import FaultSchedule
from gapless.models.run import run_context, simulate
from gapless.models.runner import RunSpec
from gapless.models.workload import WorkloadSpec

SEC = 1_000_000


def fig3_spec(variant: str, seconds: int, invariants: tuple[str, ...] = ()) -> RunSpec:
    """Figure 3, 25 msgs/s per pubend, one mixed-filter subscriber per SHB, ``seconds`` of
    publishing and as long a drain."""
    return RunSpec(
        variant=variant,
        topology="fig3",
        workload=WorkloadSpec(rate_per_pubend=25.0, subscribers_per_shb=1, filters="mixed"),
        duration_us=seconds * SEC,
        drain_us=seconds * SEC,
        invariants=invariants,
    )


def run_and_write(
    variants: tuple[str, ...],
    schedule: FaultSchedule,
    seconds: int,
    invariants: tuple[str, ...],
    out: Path,
) -> dict[str, Any]:
    """Per variant: its outcome (seed 1, trace recorded) and the trace file written in ``out``."""
    got: dict[str, Any] = {}
    for variant in variants:
        spec = fig3_spec(variant, seconds, invariants)
        run = simulate(spec, schedule, 1, record_trace=True)
        path = out / f"{variant}.jsonl"
        write_trace(path, run_context(spec, 1), run.trace or (), live_end=True)
        got[variant] = (run, path)
    return got
