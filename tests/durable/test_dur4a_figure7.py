"""Figure 7's readings [DUR §5.3] (``catchup_slope_ratio``, ``constream_catchup_s``) on
synthetic SHB reports, and ``gapless simulate --plot`` for a durable scenario on a small run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from _dur_harness import small_shb_crash

from gapless.cli.durable_plot import durable_figure
from gapless.cli.simulate_cmd import PLOT_KINDS
from gapless.models.durable_scenarios import (
    SERVICE_US,
    _crash_figures,
    _gap_span,
    dur_line_capacity,
    durable_figures,
    report_series,
    run_marks,
)
from gapless.models.protocols import scenario
from gapless.models.run import simulate

_S = 1_000_000
TICK = 100_000


def _reports(ratio: float) -> Any:
    """One pubend's reports every 100 ms: latestDelivered keeps pace (lagging 20 ms) until
    the crash at 10 s, is flat until the restart at 15 s, then climbs at ``ratio`` times the
    clock's pace until it has caught up, then keeps pace again; released(p) stays flat."""
    pts = []
    d = 0
    for t in range(0, 40 * _S, TICK):
        if t < 10 * _S:
            d = t - 20_000
        elif t > 15 * _S:
            d = min(t - 20_000, d + int(ratio * TICK))
        pts.append((t, 5, d))
    return SimpleNamespace(reports={"p0": pts})


def test_the_slope_ratio_is_read_until_the_constream_caught_up() -> None:
    for ratio in (2.0, 5.0, 25.0):
        f = _crash_figures(_reports(ratio), 10 * _S, 15 * _S, 30 * _S)  # type: ignore[arg-type]
        assert abs(f["catchup_slope_ratio"] - ratio) < 0.1 * ratio, (ratio, f)
        # 5 s of backlog (plus the lag) made up at ratio - 1 seconds a second
        assert abs(f["constream_catchup_s"] - 5 / (ratio - 1)) <= 0.2
        assert 5.0 <= f["latest_delivered_flat_s"] <= 5.2
        assert f["released_flat_until_reconnect"] is True


def test_a_constream_that_never_catches_up_has_no_ratio() -> None:
    rd = _reports(5.0)
    rd.reports["p0"] = [(t, r, min(d, 10 * _S)) for t, r, d in rd.reports["p0"]]
    f = _crash_figures(rd, 10 * _S, 15 * _S, 30 * _S)
    assert f["catchup_slope_ratio"] is None
    assert f["constream_catchup_s"] is None


def test_the_scenarios_model_the_papers_shb_capacity() -> None:
    g = dur_line_capacity()
    assert g.graph["deliver_us"] == g.graph["receive_us"] == SERVICE_US
    assert _S // SERVICE_US == 20_000  # [DUR §5.1]
    assert scenario("dur-shb-crash").spec.topology == "dur-line-capacity"
    assert "durable" in PLOT_KINDS
    assert scenario("dur-shb-crash").plot == "durable"


def test_plot_of_a_small_shb_crash(tmp_path: Path) -> None:
    sc = small_shb_crash()
    spec = sc.spec
    outcome = simulate(spec, sc.schedule, 0, record_trace=True)
    m = durable_figures(sc, outcome, ())
    assert m["lost"] == 0
    assert m["capacity"] == {"deliver_us": 50, "receive_us": 50, "events_per_s": 20_000}
    assert m["catchup_slope_ratio"] > 2
    marks = run_marks(outcome.trace or ())
    assert marks["shb_down"] == [(2.0, 4.0)]
    assert marks["reconnect"] == [5.0]
    assert marks["catchup_done"] is not None
    assert marks["catchup_done"] > 5.0
    assert sorted(report_series(outcome.trace or ())) == ["p0", "p1", "p2", "p3"]
    fig = durable_figure(outcome, m)
    ax1, ax2 = fig.axes
    assert "latestDelivered" in ax1.get_ylabel()
    assert "released" in ax2.get_ylabel()
    assert "(s)" in ax2.get_xlabel()
    path = tmp_path / "f7.png"
    fig.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gap_span_covers_the_stretch_of_each_subscribers_gaps() -> None:
    gaps = {
        "a": [("p0", 9, 10, -1), ("p0", 19, 20, -1), ("p1", 4, 5, -1)],
        "b": [("p0", 99, 100, -1)],
    }
    # a/p0 spans 9..20, a/p1 4..5, b/p0 99..100; the gap ticks themselves are 4
    assert _gap_span(gaps) == 11 + 1 + 1
    assert sum(t - t0 for gs in gaps.values() for _p, t0, t, _a in gs) == 4
