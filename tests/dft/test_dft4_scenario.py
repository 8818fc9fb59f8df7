"""The registered scenario ``dft-join`` [DFT §I, §II]: brokers join during a run on the
world, then a failure and its heal; the same run under ``no-sync`` is caught (the
newcomers never get the subscriptions of before)."""

from __future__ import annotations

import attrs

from gapless.models.run import simulate
from gapless.models.runner import run_scenario, scenario


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
    joins = [r for r in outcome.trace or () if r.kind == "fault" and r.detail.kind == "crash"]
    assert {(r.detail.target, r.detail.phase, r.time) for r in joins} == {
        ("J13", "end", 300_000),
        ("J14", "end", 500_000),
        ("J13", "start", 0),
        ("J14", "start", 0),
    }


def test_dft_join_under_no_sync_is_caught() -> None:
    sc = scenario("dft-join")
    outcome = simulate(attrs.evolve(sc.spec, variant="no-sync"), sc.schedule, 0)
    # J13 never accepted S7 (no transfer), yet its publication reached S7 through it
    assert outcome.verdict == "violation"
    assert outcome.invariant in ("safety", "bounded_delivery", "gapless")
