"""``gapless bench durable``'s constream figure, run small: the keys are there, the SHB's
acknowledgements took effect (released(p) moved), and the ratio is the two costs' quotient."""

from __future__ import annotations

from gapless.benchmarks import durable as bench


def test_constream_cost_runs_small() -> None:
    got = bench.constream_cost(large=500, small=50, matching=25, events=20, repeats=1)
    assert got["constream_us_50"] > 0
    assert got["constream_us_500"] > 0
    want = round(got["constream_us_500"] / got["constream_us_50"], 2)
    assert abs(got["constream_cost_ratio_500"] - want) <= 0.02
    assert got["constream_events"] == 20


def test_the_measured_shb_delivers_and_is_acknowledged() -> None:
    """The workload is the one described: every event reaches its 25 subscribers on the
    constream and their acks raise released(s, p)."""
    state = bench._constream_shb(100, 25)
    state, _cpu = bench._constream_events(state, 4, 12, seed=0)
    view = state.views["P0"]
    assert view.release.latest_delivered == 11
    acked = [r.released for r in view.release.records.values()]
    assert sum(1 for a in acked if a >= 0) >= 25
    assert view.pfs.next_index == 12  # one PFS record per event, each naming 25
    assert all(len(view.pfs.record(i).entries) == 25 for i in range(view.pfs.first_index, 12))
