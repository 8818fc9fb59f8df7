"""The registered scenario ``dft-join`` [DFT §I, §II]: brokers join during a run on the
world, then a failure and its heal; the same run under ``no-sync`` is caught (the
newcomers never get the subscriptions of before)."""

from __future__ import annotations

from pathlib import Path

import attrs

from gapless.invariants.dft_tracefile import trace_check, write_dft_trace
from gapless.models.run import run_context, simulate
from gapless.models.runner import run_scenario, scenario
from gapless.spec.filters import reference_matcher


def test_dft_join_is_clean_and_everyone_is_served() -> None:
    _sc, outcome, m = run_scenario("dft-join")
    assert m["pass"] is True, m["pass_marks"]
    assert m["verdict"] == "pass"
    got = m["delivered"]
    # the subscribers of before get the newcomers' flows whole, the newcomers' subscribers
    # every flow from their join on (B0's first publication came before J13 was there)
    assert got["S7"]["J13"] == m["published"]["J13"]
    assert got["S12"]["J14"] == m["published"]["J14"]
    assert got["SJ13"]["B0"] == m["published"]["B0"][1:]
    assert got["SJ14"]["J13"] == m["published"]["J13"]
    faults = [r.detail for r in outcome.trace or () if r.kind == "fault"]
    joins = [r for r in outcome.trace or () if r.kind == "fault" and r.detail.kind == "join"]
    assert [(r.detail.target, r.detail.phase, r.time) for r in joins] == [
        ("J13", "start", 300_000),
        ("J14", "start", 500_000),
    ]
    # the joins are joins, no longer a crash from time 0 ending at the join
    assert not [f for f in faults if f.kind == "crash"]


def test_dft_join_under_no_sync_is_caught() -> None:
    sc = scenario("dft-join")
    outcome = simulate(attrs.evolve(sc.spec, variant="no-sync"), sc.schedule, 0)
    # J13 never accepted S7 (no transfer), yet its publication reached S7 through it
    assert outcome.verdict == "violation"
    assert outcome.invariant in ("safety", "bounded_delivery", "gapless")


def test_dft_join_trace_file_round_trip(tmp_path: Path) -> None:
    """The arrival notifications are written and read back; the file's verdict is the
    online one."""
    sc = scenario("dft-join")
    out = simulate(sc.spec, sc.schedule, 0, record_trace=True)
    path = tmp_path / "join.jsonl"
    write_dft_trace(path, run_context(sc.spec, 0), out.trace or ())
    tf, violation = trace_check(path, matches=reference_matcher())
    assert violation is None
    sent = [r.detail.msg for r in tf.records if r.kind == "send"]
    assert any(type(m).__name__ == "Arrival" for m in sent)
