"""Coverage labels leave the trace (digest version 2): a run's digest depends only on what is
observable, and counterexamples record the version their digest was computed under."""

from __future__ import annotations

import attrs

from gapless.impl.trace import DIGEST_VERSION
from gapless.models.faults import FaultSchedule
from gapless.models.runner import RunSpec, run
from gapless.models.workload import WorkloadSpec

SPEC = RunSpec(
    topology="two-broker",
    workload=WorkloadSpec(rate_per_pubend=20.0),
    duration_us=1_000_000,
    drain_us=500_000,
)


def test_coverage_is_counted_beside_the_trace_not_in_it() -> None:
    on = run(SPEC, FaultSchedule(seed=1, events=()), 1, record_trace=True)
    off = run(
        attrs.evolve(SPEC, config=(("coverage", False),)),
        FaultSchedule(seed=1, events=()),
        1,
        record_trace=True,
    )
    assert on.coverage, "the roles report coverage labels when asked"
    assert not off.coverage
    assert on.trace is not None
    assert all(r.kind != "coverage" for r in on.trace)
    # switching the labels on or off changes nothing observable, so nothing in the digest
    assert on.trace_digest == off.trace_digest
    assert on.digest_version == DIGEST_VERSION == 2


def test_an_older_counterexample_digest_is_not_compared(tmp_path: object) -> None:
    from gapless.spark_fuzz.counterexample import Counterexample, replay

    spec = attrs.evolve(SPEC, variant="unlogged-is-published")
    from gapless.spark_fuzz.backend import load_backend

    backend = load_backend("gd")
    base = Counterexample(
        campaign_id="t",
        protocol="gd",
        backend=None,
        variant="unlogged-is-published",
        topology="two-broker",
        seed=1,
        invariant="logged_first",
        explanation="",
        spec=backend.spec_to_data(spec),
        schedule=backend.schedule_to_data(FaultSchedule(seed=1, events=())),
        original_fault_events=0,
        shrunk_fault_events=0,
        duration_s=None,
        workload_scale=1.0,
        trace_digest="0" * 64,
        shrink_runs=0,
    )
    old = replay(base)  # written before versions were recorded: version 1
    assert old.reproduced
    assert old.digest == "older version 1"
    wrong = replay(attrs.evolve(base, digest_version=DIGEST_VERSION))
    assert wrong.digest == "mismatch"
    assert not wrong.reproduced
    right = replay(
        attrs.evolve(base, digest_version=DIGEST_VERSION, trace_digest=old.outcome.trace_digest)
    )
    assert right.digest == "match"
    assert right.reproduced
