"""Small GES runs shared by the tests (the eight-node topology, a few seconds)."""

from __future__ import annotations

from typing import Any

from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import simulate
from gapless.models.runspec import RunOutcome, RunSpec
from gapless.models.workload import WorkloadSpec


def spec(variant: str = "none", **kw: Any) -> RunSpec:
    base: dict[str, Any] = {
        "protocol": "ges",
        "variant": variant,
        "topology": "ges-small",
        "workload": WorkloadSpec(rate_per_pubend=10.0, filters="mixed", subscribers_per_shb=2),
        "duration_us": 3_000_000,
        "drain_us": 2_000_000,
    }
    base.update(kw)
    return RunSpec(**base)


def fault(
    kind: str, at_s: float, dur_s: float, target: str, stream: int = 1, **kw: Any
) -> FaultEvent:
    return FaultEvent(
        kind=kind,
        at_us=int(at_s * 1e6),
        duration_us=int(dur_s * 1e6),
        target=target,
        stream=stream,
        **kw,
    )


MIXED = (
    fault("disconnect", 1.0, 0.3, "n3.u0", 1),
    fault("link_fail", 0.8, 1.0, "n3|n5", 2),
    fault("crash", 1.2, 0.3, "n2", 3),
    fault("fail", 1.5, 0.3, "n6", 4),
)
"""A roam, a link failure, a storage crash and a broker that fails forever."""


def run(
    variant: str = "none",
    events: tuple[FaultEvent, ...] = MIXED,
    *,
    record: bool = False,
    **kw: Any,
) -> RunOutcome:
    return simulate(
        spec(variant, **kw), FaultSchedule(seed=1, events=events), 1, record_trace=record
    )
