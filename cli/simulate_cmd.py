"""``gapless simulate``: run one of the paper's failure experiments [GD §4.2].

``gapless simulate --list`` lists the scenarios; ``gapless simulate --scenario NAME [--json]
[--plot FILE] [--trace FILE]`` runs one, prints its figures (JSON with ``--json``), draws
latency and cumulative nack range against send time, like the paper's Figures 6–8, with
``--plot``, and writes the run's trace for ``gapless check`` with ``--trace``.

Exit codes: 0 every pass mark holds; 1 a pass mark failed; 2 bad input (nothing written); 3 an
internal error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gapless.cli.outputs import require_writable
from gapless.impl.effects import deliveries

__all__ = ["plot_scenario", "scenario_figure", "simulate"]


_PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
)
_MARKERS = ("o", "x", "s", "^", "D", "v", "+", "*", "<", ">")
_WINDOW_STYLE = {"stalled": "#f4c542", "down": "#e06666"}


def _scenario_series(
    trace: Any,
) -> tuple[
    dict[str, list[tuple[float, float]]],
    dict[str, list[tuple[int, float]]],
    list[tuple[float, float, str]],
]:
    """Latency per subscriber ``(send s, ms)``, cumulative nack range per broker ``(µs, ms)``
    and the fault windows ``(start s, end s, "stalled" | "down")`` of a recorded run."""
    lat: dict[str, list[tuple[float, float]]] = {}
    nack: dict[str, list[tuple[int, float]]] = {}
    totals: dict[str, float] = {}
    opened: dict[tuple[str, str], tuple[float, str]] = {}
    windows: list[tuple[float, float, str]] = []
    for r in trace:
        if r.kind == "deliver":
            t0 = getattr(r.detail.payload, "published_at", None)
            if t0 is not None:
                for d in deliveries(r.detail):
                    lat.setdefault(d.subscriber, []).append((t0 / 1e6, (r.time - t0) / 1e3))
        elif r.kind == "send" and r.detail.wire.kind == "nack":
            rng = sum(hi - lo + 1 for lo, hi in r.detail.wire.nack_ranges) / 1e3
            totals[r.node] = totals.get(r.node, 0.0) + rng
            nack.setdefault(r.node, []).append((r.time, totals[r.node]))
        elif r.kind == "fault":
            key, now, phase = (r.detail.kind, r.detail.target), r.time / 1e6, r.detail.phase
            if phase in ("fail", "end") and key in opened:
                start, what = opened.pop(key)
                windows.append((start, now, what))
            if phase == "start":
                opened[key] = (now, "stalled" if key[0].startswith("stall") else "down")
            elif phase == "fail":
                opened[key] = (now, "down")
    return lat, nack, windows


def _shade(ax: Any, windows: list[tuple[float, float, str]], *, offset: float = 0.0) -> None:
    seen: set[str] = set()
    for start, end, what in windows:
        label = None if what in seen else f"fault: {what}"
        seen.add(what)
        ax.axvspan(
            start - offset, end - offset, color=_WINDOW_STYLE[what], alpha=0.25, lw=0, label=label
        )


def _coincide(
    a: list[tuple[float, float]], b: list[tuple[float, float]], tol: tuple[float, float]
) -> bool:
    """Two series a reader could not tell apart: the same number of points, each within
    ``tol`` (x, y) of its partner once both are sorted."""
    if len(a) != len(b):
        return False
    return all(
        abs(x - u) <= tol[0] and abs(y - v) <= tol[1]
        for (x, y), (u, v) in zip(sorted(a), sorted(b), strict=True)
    )


def _groups(
    series: dict[str, list[tuple[float, float]]], names: list[str]
) -> list[tuple[str, list[str]]]:
    """``names`` grouped by coinciding series (tolerance: 0.5% of each axis's span): each group
    is drawn once, its legend naming every member, so no curve hides another."""
    pts = [p for n in names for p in series[n]]
    if not pts:
        return [(n, []) for n in names]
    xs, ys = [x for x, _ in pts], [y for _, y in pts]
    tol = (0.005 * (max(xs) - min(xs) or 1.0), 0.005 * (max(ys) - min(ys) or 1.0))
    groups: list[tuple[str, list[str]]] = []
    for n in names:
        for head, members in groups:
            if _coincide(series[head], series[n], tol):
                members.append(n)
                break
        else:
            groups.append((n, []))
    return groups


def _draw(
    ax: Any,
    series: dict[str, list[tuple[float, float]]],
    names: list[str],
    *,
    step: bool = False,
    note: dict[str, str] | None = None,
) -> None:
    """One colour and marker per group of coinciding series (never repeated)."""
    for i, (head, members) in enumerate(_groups(series, names)):
        xs, ys = zip(*series[head], strict=True)
        colour, marker = _PALETTE[i % len(_PALETTE)], _MARKERS[i % len(_MARKERS)]
        label = " = ".join([head, *members]) + (" (coincide)" if members else "")
        label += (note or {}).get(head, "")
        if step:
            ax.step(xs, ys, where="post", color=colour, linewidth=1.0, alpha=0.8)
        hollow = marker not in ("x", "+", "*")
        ax.plot(
            xs,
            ys,
            marker,
            color=colour,
            markersize=4,
            label=label,
            linestyle="none",
            markerfacecolor="none" if hollow else colour,
            markeredgewidth=0.8,
        )


def _affected(lat: dict[str, list[tuple[float, float]]]) -> tuple[list[str], str | None]:
    """Subscribers whose latency rose above three times the run's median, and one that did not
    (for reference)."""
    allv = sorted(v for pts in lat.values() for _, v in pts)
    median = allv[len(allv) // 2] if allv else 0.0
    hit = sorted(s for s, pts in lat.items() if max(v for _, v in pts) > 3 * median)
    calm = sorted(s for s in lat if s not in hit)
    return hit, (calm[0] if calm else None)


def _plot_latency(
    ax: Any,
    lat: dict[str, list[tuple[float, float]]],
    names: list[str],
    calm: str | None,
    xlim: tuple[float, float] | None = None,
) -> None:
    shown = [*([calm] if calm else []), *names]  # the reference first, under the others
    window = {
        n: [p for p in lat[n] if xlim is None or xlim[0] <= p[0] <= xlim[1]] or lat[n][:1]
        for n in shown
    }
    _draw(ax, window, shown, note={calm: " (unaffected)"} if calm else None)
    ax.set_yscale("log")
    ax.set_ylabel("latency (ms, log scale)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _nack_title(metrics: dict[str, Any], crashed: str) -> str:
    lines = ["zoom: the nacks (each point one nack message; the range is cumulative)"]
    facts = []
    ratio = metrics.get("nack_consolidation_ratio")
    if ratio is not None:
        groups = metrics.get("nack_consolidation_by_group", {})
        facts.append(
            f"nack consolidation ratio {ratio:.2f}"
            + (" (" + "; ".join(f"{g}: {r:.2f}" for g, r in groups.items()) + ")" if groups else "")
        )
    if metrics.get("nacks_while_down") is not None:
        facts.append(f"nacks while {crashed} was down: {metrics['nacks_while_down']}")
    if metrics.get("ack_expected_sent"):
        facts.append(f"AckExpected sent: {metrics['ack_expected_sent']}")
    return "\n".join([*lines, ", ".join(facts)] if facts else lines)


def _plot_nacks(
    ax: Any, nack: dict[str, list[tuple[int, float]]], metrics: dict[str, Any], crashed: str
) -> None:
    """Cumulative nack range per broker, zoomed on the repair: x in ms since the first nack."""
    ax.set_title(_nack_title(metrics, crashed), fontsize=9)
    if not nack:
        ax.text(0.5, 0.5, "no nacks in this run", ha="center", va="center", transform=ax.transAxes)
        return
    first = min(t for pts in nack.values() for t, _ in pts)
    series = {n: [((t - first) / 1e3, v) for t, v in pts] for n, pts in nack.items()}
    _draw(ax, series, sorted(nack), step=True)
    ax.set_xlabel(f"send time (ms after the first nack, at {first / 1e6:.3f} s)")
    ax.set_ylabel("cumulative nack range (ms)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def scenario_figure(outcome: Any, metrics: dict[str, Any]) -> Any:
    """The paper's Figures 6–8 for a scenario [GD §4.2]: latency of the affected subscribers
    against send time over the whole run (log axis, fault windows shaded, one unaffected
    subscriber for reference), the same zoomed on the seconds around the repair, and the
    cumulative nack range per broker zoomed on the burst of nacks, with the consolidation
    ratio written on it. Series that coincide say so in the legend."""
    from matplotlib.figure import Figure

    from gapless.models.protocols import scenarios

    lat, nack, windows = _scenario_series(outcome.trace or ())
    hit, calm = _affected(lat)
    name = metrics.get("scenario", "")
    fig = Figure(figsize=(10, 11))
    ax1, ax2, ax3 = fig.subplots(3, 1)
    _shade(ax1, windows)
    _plot_latency(ax1, lat, hit, calm)
    sc = scenarios().get(name)
    ax1.set_title(f"{name}: {sc.description if sc else ''}", fontsize=10)
    ax1.set_xlabel("send time (s)")
    if windows:
        lo = min(s for s, _, _ in windows) - 0.5
        nacks_at = [t / 1e6 for pts in nack.values() for t, _ in pts]
        hi = (max(nacks_at) if nacks_at else max(e for _, e, _ in windows)) + 1.0
        _shade(ax2, windows)
        _plot_latency(ax2, lat, hit, calm, xlim=(lo, hi))
        ax2.set_xlim(lo, hi)
        ax2.set_title("zoom: the seconds from the first fault to the repair", fontsize=9)
        ax2.set_xlabel("send time (s)")
    _plot_nacks(ax3, nack, metrics, (sc.crashed if sc else None) or "the broker")
    fig.tight_layout()
    return fig


def plot_scenario(outcome: Any, metrics: dict[str, Any], path: Path) -> None:
    """Write :func:`scenario_figure` to ``path`` (PNG, SVG or PDF by its suffix)."""
    scenario_figure(outcome, metrics).savefig(path, dpi=100, bbox_inches="tight")


@click.command()
@click.option("--list", "list_", is_flag=True, help="List the scenarios and exit.")
@click.option("--scenario", "name", default=None, help="The scenario to run (see --list).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@click.option(
    "--plot",
    "plot",
    type=click.Path(path_type=Path),
    default=None,
    help="Write a PNG/SVG/PDF plot of latency and cumulative nack range.",
)
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the run's trace (JSON Lines, format gapless-trace) for `gapless check`.",
)
def simulate(
    list_: bool, name: str | None, as_json: bool, plot: Path | None, trace_file: Path | None
) -> None:
    """Run one of the paper's failure experiments [GD §4.2] on the simulated network."""
    from gapless.models.protocols import scenarios
    from gapless.models.runner import run_scenario

    SCENARIOS = scenarios()
    if list_:
        for sc in SCENARIOS.values():
            click.echo(f"{sc.name:16} [{sc.protocol}] {sc.description}")
        return
    if name is None:
        click.echo(
            "gapless simulate: give --scenario NAME or --list; scenarios: "
            + ", ".join(sorted(SCENARIOS)),
            err=True,
        )
        raise SystemExit(2)
    if name not in SCENARIOS:
        click.echo(
            f"gapless simulate: unknown scenario {name!r}; allowed: "
            + ", ".join(sorted(SCENARIOS)),
            err=True,
        )
        raise SystemExit(2)
    if plot is not None and plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        click.echo(
            f"gapless simulate: --plot {str(plot)!r} must end in .png, .svg or .pdf", err=True
        )
        raise SystemExit(2)
    if trace_file is not None:
        from gapless.models.protocols import protocol

        owner = SCENARIOS[name].protocol
        if protocol(owner).write_trace is None:
            click.echo(
                f"gapless simulate: --trace: protocol {owner!r} has no trace-file format yet",
                err=True,
            )
            raise SystemExit(2)
    require_writable("simulate", "--plot", plot)
    require_writable("simulate", "--trace", trace_file)
    sc, outcome, m = run_scenario(name, keep_trace=trace_file is not None)
    if plot is not None:
        _draw_scenario(sc.plot, outcome, m, plot)
    if trace_file is not None:
        from gapless.models.protocols import protocol
        from gapless.models.run import run_context

        write = protocol(sc.protocol).write_trace
        if write is not None:  # always: checked before the run
            write(trace_file, sc, outcome, run_context(sc.spec, 0))
    if as_json:
        click.echo(json.dumps(m, indent=2, sort_keys=True))
    else:
        _print_human(m, outcome)
    raise SystemExit(0 if m["pass"] else 1)


PLOT_KINDS = ("timeline", "dft-gap", "dft-figure", "ges", "durable")
"""The kinds of drawing a scenario may name (``Scenario.plot``); ``timeline`` is GD's."""


def _draw_scenario(kind: str, outcome: Any, m: dict[str, Any], path: Path) -> None:
    """Draw a scenario's figure of the kind its registry entry names (``Scenario.plot``)."""
    if kind == "dft-gap":
        from gapless.cli.dft_plots import plot_gap

        plot_gap(m, path)
    elif kind == "dft-figure":
        from gapless.benchmarks.dft import plot_figure_scenario

        plot_figure_scenario(m, path)
    elif kind == "ges":
        from gapless.cli.ges_plot import plot_ges

        plot_ges(outcome, m, path)
    elif kind == "durable":
        from gapless.cli.durable_plot import plot_durable

        plot_durable(outcome, m, path)
    else:
        plot_scenario(outcome, m, path)


def _print_human(m: dict[str, Any], outcome: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title=f"gapless simulate {m['scenario']}")
    t.add_column("figure")
    t.add_column("value")
    if "nacks" not in m:  # another protocol's figures: print them as they are
        for k, v in m.items():
            if k not in ("scenario", "pass_marks", "pass"):
                t.add_row(k, json.dumps(v) if isinstance(v, list | dict) else str(v))
        _print_marks(console, t, m, outcome)
        return
    for k in (
        "verdict",
        "published",
        "logged",
        "delivered",
        "lost",
        "duplicates",
        "out_of_order",
        "ack_expected_sent",
        "nack_consolidation_ratio",
        "nacks_while_down",
        "latency_p50_before_ms",
        "latency_p50_after_ms",
    ):
        t.add_row(k, str(m[k]))
    if m["published_not_logged_note"]:
        t.add_row("published_not_logged", m["published_not_logged_note"])
    t.add_row("nack_consolidation_by_group", json.dumps(m["nack_consolidation_by_group"]))
    t.add_row("latency_ms", json.dumps(m["latency_ms"]))
    t.add_row("nacks", json.dumps({k: v for k, v in m["nacks"].items() if v}))
    t.add_row("nack_range_ms", json.dumps({k: v for k, v in m["nack_range_ms"].items() if v}))
    t.add_row("nack_targets", json.dumps({k: v for k, v in m["nack_targets"].items() if v}))
    _print_marks(console, t, m, outcome)


def _print_marks(console: Any, t: Any, m: dict[str, Any], outcome: Any) -> None:
    from rich.table import Table

    console.print(t)
    marks = Table(title="pass marks")
    marks.add_column("claim")
    marks.add_column("holds")
    for claim, ok in m["pass_marks"].items():
        marks.add_row(claim, "[green]yes[/]" if ok else "[red]no[/]")
    console.print(marks)
    if outcome.violation is not None:
        console.print(outcome.violation.explain(), markup=False)
