"""``gapless simulate --plot`` for the durable scenarios [DUR §5.1, §5.3 Figure 7].

Two panels over the run, read from the SHB's release reports in the trace (one per pubend per
SHB tick, :func:`~gapless.models.durable_scenarios.report_series`): ``latestDelivered(p)`` and
``released(p)`` for pubend ``p0`` (the pubend clock in seconds: a tick is a µs), the other
pubends thin and grey. The SHB's crash is shaded; the moment the constream had caught up
(``constream_catchup_s`` after the restart), the subscribers' reconnection and the end of the
last catchup are marked. For ``dur-shb-crash`` this is the paper's Figure 7: flat while
the SHB is down, steeper while the constream nacks what it missed, ``released(p)`` flat until
the subscribers reconnect. A scenario without a crash shows its disconnections instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gapless.models.durable_scenarios import report_series, run_marks

__all__ = ["durable_figure", "plot_durable"]

_MAIN = "p0"


def _panel(ax: Any, series: dict[str, list[tuple[float, float]]], what: str) -> None:
    for p in sorted(series):
        if p == _MAIN:
            continue
        pts = series[p]
        ax.plot([t for t, _ in pts], [v for _, v in pts], color="#bbbbbb", lw=0.7)
    pts = series.get(_MAIN, [])
    ax.plot([t for t, _ in pts], [v for _, v in pts], color="#1f77b4", lw=1.4, label=f"{what}")
    ax.set_ylabel(f"{what} (pubend clock, s)")
    ax.grid(alpha=0.3)


def _marks(ax: Any, marks: dict[str, Any], caught_up: float | None) -> None:
    for i, (lo, hi) in enumerate(marks["shb_down"]):
        ax.axvspan(lo, hi, color="#e06666", alpha=0.25, lw=0, label="SHB down" if i == 0 else None)
    if caught_up is not None and marks["shb_down"]:
        t = marks["shb_down"][0][1] + caught_up
        ax.axvline(t, color="#ff7f0e", lw=1, ls="-.", label="constream caught up")
    for i, t in enumerate(marks["reconnect"]):
        ax.axvline(
            t, color="#2ca02c", lw=1, ls="--", label="subscribers reconnect" if i == 0 else None
        )
    if marks["catchup_done"] is not None:
        ax.axvline(marks["catchup_done"], color="#9467bd", lw=1, ls=":", label="last catchup done")


def durable_figure(outcome: Any, metrics: dict[str, Any]) -> Any:
    """The figure of a durable scenario (see module doc)."""
    from matplotlib.figure import Figure

    trace = outcome.trace or ()
    reports = report_series(trace)
    marks = run_marks(trace)
    delivered = {p: [(t / 1e6, d / 1e6) for t, _r, d in pts] for p, pts in reports.items()}
    released = {p: [(t / 1e6, r / 1e6) for t, r, _d in pts if r >= 0] for p, pts in reports.items()}
    fig = Figure(figsize=(10, 7.5))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    _panel(ax1, delivered, "latestDelivered(p0)")
    _panel(ax2, released, "released(p0)")
    for ax in (ax1, ax2):
        _marks(ax, marks, metrics.get("constream_catchup_s"))
        ax.legend(fontsize=8, loc="upper left")
    ax2.set_xlabel("simulated time (s); pubends p1-p3 in grey, mostly hidden under p0")
    cu = metrics.get("catchup_s", {})
    mean = cu.get("mean")
    parts = [f"lost {metrics['lost']}, duplicates {metrics['duplicates']}"]
    if "catchup_slope_ratio" in metrics:
        ratio = metrics["catchup_slope_ratio"]
        parts.append(
            f"flat {metrics['latest_delivered_flat_s']:.1f} s, catchup slope {ratio:.1f}x normal"
            if ratio is not None
            else "no catchup slope"
        )
    if mean is not None:
        parts.append(f"catchup mean {mean:.1f} s over {cu['n']} reconnections")
    ax1.set_title("; ".join(parts), fontsize=9)
    cap = metrics.get("capacity") or {}
    where = (
        f"SHB capacity {cap['events_per_s']:,} events/s"
        if cap.get("events_per_s")
        else "no capacity model"
    )
    paper = "[DUR §5.3, Figure 7]" if marks["shb_down"] else "[DUR §5.1]"
    fig.suptitle(f"{metrics['scenario']} {paper}: {where}", fontsize=11)
    fig.tight_layout()
    return fig


def plot_durable(outcome: Any, metrics: dict[str, Any], path: Path) -> None:
    """Write :func:`durable_figure` to ``path`` (PNG, SVG or PDF by its suffix)."""
    durable_figure(outcome, metrics).savefig(path, dpi=100, bbox_inches="tight")
