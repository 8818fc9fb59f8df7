"""``gapless simulate --plot`` for the GES scenarios draws a figure from the figures and
the trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _runs import MIXED, run

from gapless.cli.ges_plot import ges_figure, plot_ges
from gapless.models.ges_latency import MATCHING_RATES, RATES


def _latency_metrics() -> dict[str, Any]:
    def sweep(base: float, slope: float) -> dict[int, dict[str, float]]:
        return {
            r: {"p50": base + slope * r, "p99": base + 2 * slope * r, "stdev": slope * r / 10}
            for r in MATCHING_RATES
        }

    lat = {"ges": sweep(14.0, 0.02), "flooding": sweep(16.0, 0.0)}
    return {
        "load": {"events_per_s": 300, "event_bytes": 500},
        "capacity": {"service_us_per_event": 400, "link_bytes_per_s": 1_250_000},
        "clustering_coefficient": {"ges-dense": 0.6, "ges-sparse": 0.1},
        "latency_ms_by_topology": {"ges-dense": lat, "ges-sparse": lat},
        "by_rate_p50_ms": {
            k: {m: {r: 14.0 + r / 100 for r in RATES} for m in (100, 10)}
            for k in ("ges", "flooding")
        },
        "by_size_p50_ms": {
            k: {m: {z: 14.0 + z / 1000 for z in (30, 500)} for m in (100, 10)}
            for k in ("ges", "flooding")
        },
    }


def test_the_latency_figure_has_its_five_panels(tmp_path: Path) -> None:
    fig = ges_figure(None, _latency_metrics())
    axes = fig.get_axes()
    assert len(axes) == 5
    assert len(axes[4].get_lines()) == 4  # p50 against size: two kinds, two matching rates
    assert len(axes[0].get_lines()) >= 4  # GES and flooding on two topologies
    out = tmp_path / "lat.png"
    plot_ges(None, _latency_metrics(), out)
    assert out.stat().st_size > 20_000


def test_the_roam_figure_reads_the_trace(tmp_path: Path) -> None:
    outcome = run("none", MIXED, record=True)
    m = {
        "roams": 1,
        "lost": 0,
        "duplicates": 0,
        "out_of_order": 0,
        "recovery_ms": {"p50": 1.0, "p99": 2.0},
    }
    fig = ges_figure(outcome, m)
    deliveries = fig.get_axes()[0].get_lines()[0].get_ydata()
    assert sum(deliveries) == outcome.counters.delivered
    out = tmp_path / "roam.png"
    plot_ges(outcome, m, out)
    assert out.stat().st_size > 20_000
