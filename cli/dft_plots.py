"""``gapless simulate --scenario dft-gap-s1 --plot FILE``: the §I sequence as two timelines
[DFT §I].

One panel per run (the naive baseline, then the δ-fault-tolerant protocol): a row per actor
(the publisher, then each subscriber), a labelled mark per publication and per delivery at its
time, and the window in which link B1-B2 is down shaded. The naive panel shows S2 receiving
p1 and p3 after the heal and never p2; the δ-FT panel shows S2 receiving nothing from B1
(its subscription was confirmed with the partition's tag; no recovery yet).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["gap_figure", "plot_gap"]


def gap_figure(metrics: dict[str, Any]) -> Any:
    """The two timelines of ``dft-gap-s1``'s figures."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5.5))
    axes = fig.subplots(2, 1, sharex=True)
    runs = (
        ("naive", f"naive baseline: caught by {metrics['naive_violation']}"),
        ("dft", f"δ-fault-tolerant (δ = 1): {metrics['dft_verdict']}"),
    )
    for ax, (run, title) in zip(axes, runs, strict=True):
        rows = metrics[f"{run}_timeline"]
        actors = ["P@B1", "S1", "S2"]
        lo, hi = metrics["link_down_s"]
        ax.axvspan(lo, hi, color="#e06666", alpha=0.25, lw=0, label="link B1-B2 down")
        merged: dict[tuple[str, float], list[str]] = {}
        for t, who, what in rows:  # marks within 10 ms on one row share one label
            merged.setdefault((who, round(t, 2)), []).append(what)
        for (who, t), whats in merged.items():
            what = ", ".join(whats)
            y = actors.index(who) if who in actors else len(actors)
            colour = "#1f77b4" if who.startswith("P@") else "#2ca02c"
            ax.plot([t], [y], "o", color=colour)
            ax.annotate(what, (t, y), textcoords="offset points", xytext=(0, 7), ha="center")
        ax.set_yticks(range(len(actors)), actors)
        ax.set_ylim(-0.6, len(actors) - 0.3)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, axis="x")
        ax.legend(fontsize=8, loc="lower right")
    axes[1].set_xlabel("time (s); S2 arrives at 0.2 s, while the link is down")
    fig.suptitle("dft-gap-s1 [DFT §I]: publications at B1 and deliveries to S1 (B3), S2 (B4)")
    fig.tight_layout()
    return fig


def plot_gap(metrics: dict[str, Any], path: Path) -> None:
    """Write :func:`gap_figure` to ``path`` (PNG, SVG or PDF by its suffix)."""
    gap_figure(metrics).savefig(path, dpi=100, bbox_inches="tight")
