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
    assert on.digest_version == DIGEST_VERSION == 4


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


def test_version_3_digests_the_message_not_its_wire_summary() -> None:
    from gapless.impl.gd.messages import Ack
    from gapless.impl.trace import Dropped, Sent, TraceRecord, Wire, trace_digest

    msg = Ack(pubend="P0", upto=7)
    w1, w2 = Wire(kind="ack", pubend="P0", upto=7), Wire(kind="other")

    def one(detail: object, kind: str) -> str:
        return trace_digest([TraceRecord(seq=0, time=1, node="b1", kind=kind, detail=detail)])

    # the summary is derived from the message: only the message is a primary value
    assert one(Sent(to="b2", msg=msg, wire=w1), "send") == one(
        Sent(to="b2", msg=msg, wire=w2), "send"
    )
    drop = Dropped(sender="b1", to="b2", msg=msg, wire=w1, reason="loss")
    assert one(drop, "drop") == one(attrs.evolve(drop, wire=w2), "drop")
    # but everything primary still counts
    assert one(Sent(to="b2", msg=msg, wire=w1), "send") != one(
        Sent(to="b3", msg=msg, wire=w1), "send"
    )
    assert one(Sent(to="b2", msg=msg, wire=w1), "send") != one(
        Sent(to="b2", msg=Ack(pubend="P0", upto=8), wire=w1), "send"
    )
    assert one(drop, "drop") != one(attrs.evolve(drop, reason="stall"), "drop")
    # a record read back from a trace file has no message: its summary is what it has
    assert one(Sent(to="b2", msg=None, wire=w1), "send") != one(
        Sent(to="b2", msg=None, wire=w2), "send"
    )


def test_the_digest_hashes_the_same_bytes_however_records_are_buffered() -> None:
    import hashlib

    from gapless.impl.trace import Fault, TraceDigest, TraceRecord

    recs = [
        TraceRecord(seq=i, time=i, node="b1", kind="fault", detail=Fault(kind="crash", target="b1"))
        for i in range(1000)
    ]
    d = TraceDigest()
    lines = []
    for r in recs:
        d.add(r)
        lines.append(f"{r.seq}|{r.time}|b1|fault|@Fault(kind=s5:crashtarget=s2:b1phase=s5:start)\n")
    assert d.records == 1000
    assert d.hexdigest() == hashlib.sha256("".join(lines).encode()).hexdigest()
    assert d.hexdigest() == d.hexdigest()  # reading it changes nothing
