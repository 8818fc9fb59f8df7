"""``gapless simulate --plot`` for the GES scenarios [GES "Results", "Recovering clients"].

* ``ges-latency``: the paper's Figure 7 shape — the measuring subscriber's latency (p50, with
  one standard deviation as error bars) and its p99 against the matching rate, GES routing
  beside flooding, on both topologies; and p50 against the publish rate and against the
  event size at 100% and 10%.
* ``ges-roam``: deliveries per 100 ms over the run with the unit failure and the storage
  crash marked, reconnections per 100 ms, and the recovery queues' lengths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gapless.impl.effects import deliveries

__all__ = ["ges_figure", "plot_ges"]

_STYLE = {"ges": ("#1f77b4", "o", "GES routing"), "flooding": ("#d62728", "x", "flooding")}
_TOPO_LINE = {"ges-dense": "-", "ges-sparse": "--"}


def _latency(fig: Any, m: dict[str, Any]) -> None:
    ax1, ax2, ax3, ax4, ax5, ax6 = fig.subplots(2, 3).flatten()
    fig.delaxes(ax6)
    cc = m["clustering_coefficient"]
    for topo, lat in m["latency_ms_by_topology"].items():
        for kind, series in lat.items():
            colour, marker, label = _STYLE[kind]
            by = {int(r): v for r, v in series.items()}  # JSON keys are strings
            rates = sorted(by, reverse=True)
            p50 = [by[r]["p50"] for r in rates]
            sd = [by[r]["stdev"] for r in rates]
            p99 = [by[r]["p99"] for r in rates]
            name = f"{label}, {topo} (clustering {cc[topo]})"
            ls = _TOPO_LINE.get(topo, "-")
            ax1.errorbar(
                rates, p50, yerr=sd, color=colour, marker=marker, ls=ls, label=name, capsize=3
            )
            ax2.plot(rates, p99, color=colour, marker=marker, ls=ls, label=name)
            ax4.plot(rates, sd, color=colour, marker=marker, ls=ls, label=name)
    for ax, what in (
        (ax1, "p50 latency (ms), ±1 stdev"),
        (ax2, "p99 latency (ms)"),
        (ax4, "latency stdev (ms)"),
    ):
        ax.set_xlabel("matching rate (% of the 100 subscribers)")
        ax.set_ylabel(what)
        ax.invert_xaxis()
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=7)
    load = m["load"]
    ax1.set_title(
        f"measuring subscriber n10, publisher n22: {load['events_per_s']} events/s, "
        f"{load['event_bytes']} bytes",
        fontsize=9,
    )
    _p50_panel(ax3, m["by_rate_p50_ms"], "publish rate (events/s), ges-dense")
    _p50_panel(ax5, metrics_sizes(m), "event size (bytes), ges-dense")
    cap = m["capacity"]
    fig.suptitle(
        f"ges-latency: broker service {cap['service_us_per_event']} µs/event message, "
        f"links {cap['link_bytes_per_s'] * 8 / 1e6:g} Mbit/s",
        fontsize=10,
    )


def metrics_sizes(m: dict[str, Any]) -> dict[str, Any]:
    """The p50-against-size figures (absent from figures written before they existed)."""
    got: dict[str, Any] = m.get("by_size_p50_ms", {})
    return got


def _roam(fig: Any, m: dict[str, Any], trace: Any) -> None:
    ax1, ax2, ax3 = fig.subplots(3, 1)
    bucket = 100_000
    got: dict[int, int] = {}
    conns: dict[int, int] = {}
    faults: list[tuple[float, str, str, str]] = []
    acks: dict[tuple[str, int | None, str], int] = {}
    for r in trace:
        if r.kind == "deliver":
            b = r.time // bucket
            got[b] = got.get(b, 0) + len(deliveries(r.detail))
        elif r.kind == "connect" and r.detail.connection > 0:
            b = r.time // bucket
            conns[b] = conns.get(b, 0) + 1
        elif r.kind == "fault" and r.detail.kind in ("fail", "crash"):
            faults.append((r.time / 1e6, r.detail.kind, r.detail.target, r.detail.phase))
        elif (
            r.kind == "send"
            and getattr(r.detail.wire, "kind", "") == "handoff_ack"
            and not r.detail.wire.fresh
        ):  # one ack per reconnection and storage, however many hops it is sent over
            w = r.detail.wire
            acks[(w.client, w.connection, w.storage)] = len(w.queue)
    queues = list(acks.values())
    for ax, series, what in (
        (ax1, got, "deliveries per 100 ms"),
        (ax2, conns, "reconnections per 100 ms"),
    ):
        xs = range(max(series, default=0) + 1)  # empty buckets drawn as 0
        ax.plot([x * bucket / 1e6 for x in xs], [series.get(x, 0) for x in xs], lw=0.8)
        ax.set_ylabel(what)
        ax.set_xlabel("time (s)")
        for t, kind, _target, phase in faults:
            if phase == "start":
                ax.axvline(t, color="#d62728" if kind == "fail" else "#ff7f0e", lw=0.6, alpha=0.6)
    ax1.set_title(
        f"ges-roam: {m['roams']} roams, lost {m['lost']}, duplicates {m['duplicates']}, "
        f"out of order {m['out_of_order']}; red: a unit fails for good, orange: storage crash",
        fontsize=9,
    )
    ax3.hist(queues, bins=30, color="#1f77b4")
    ax3.set_xlabel("events in a recovery queue (per reconnection and storage)")
    ax3.set_ylabel("handoffs")
    rec = m["recovery_ms"]
    ax3.set_title(f"recovery_ms p50 {rec['p50']}, p99 {rec['p99']}", fontsize=9)


def ges_figure(outcome: Any, metrics: dict[str, Any]) -> Any:
    """The figure of a GES scenario (see module doc)."""
    from matplotlib.figure import Figure

    if "latency_ms_by_topology" in metrics:
        fig = Figure(figsize=(17, 9))
        _latency(fig, metrics)
    else:
        fig = Figure(figsize=(10, 10))
        _roam(fig, metrics, outcome.trace or ())
    fig.tight_layout()
    return fig


def plot_ges(outcome: Any, metrics: dict[str, Any], path: Path) -> None:
    """Write :func:`ges_figure` to ``path`` (PNG, SVG or PDF by its suffix)."""
    ges_figure(outcome, metrics).savefig(path, dpi=100, bbox_inches="tight")


def _p50_panel(ax: Any, series: dict[str, Any], xlabel: str) -> None:
    """p50 latency against ``xlabel``'s quantity, one curve per kind and matching rate
    (solid at 100% matching, dotted otherwise)."""
    for kind, by_match in series.items():
        colour, marker, label = _STYLE[kind]
        for match, row in by_match.items():
            pts = sorted((int(x), v) for x, v in row.items())
            ax.plot(
                [x for x, _ in pts],
                [v for _, v in pts],
                color=colour,
                marker=marker,
                ls="-" if int(match) == 100 else ":",
                label=f"{label}, {match}% matching",
            )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("p50 latency (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
