"""``gapless simulate``: run one of the paper's failure experiments [GD §4.2].

``gapless simulate --list`` lists the scenarios; ``gapless simulate --scenario NAME [--json]
[--plot FILE] [--trace FILE]`` runs one, prints its figures (JSON with ``--json``), draws
latency and cumulative nack range against send time, like the paper's Figures 6–8, with
``--plot``, and writes the run's trace for ``gapless check`` with ``--trace``.

Exit codes: 0 every pass mark holds; 1 a pass mark failed; 2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gapless.impl.effects import deliveries

__all__ = ["plot_scenario", "simulate"]


def plot_scenario(outcome: Any, metrics: dict[str, Any], path: Path) -> None:
    """Latency of every delivery and cumulative nack range per broker against send time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trace = outcome.trace or ()
    lat: dict[str, list[tuple[float, float]]] = {}
    nack: dict[str, list[tuple[float, float]]] = {}
    totals: dict[str, float] = {}
    for r in trace:
        if r.kind == "deliver":
            t0 = getattr(r.detail.payload, "published_at", None)
            if t0 is not None:
                for d in deliveries(r.detail):
                    lat.setdefault(d.subscriber, []).append((t0 / 1e6, (r.time - t0) / 1e3))
        elif r.kind == "send" and r.detail.wire.kind == "nack":
            rng = sum(hi - lo + 1 for lo, hi in r.detail.wire.nack_ranges) / 1e3
            totals[r.node] = totals.get(r.node, 0.0) + rng
            nack.setdefault(r.node, []).append((r.time / 1e6, totals[r.node]))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for sub in sorted(lat):
        xs, ys = zip(*lat[sub], strict=True)
        ax1.plot(xs, ys, ".", markersize=2, label=sub)
    ax1.set_ylabel("latency (ms)")
    ax1.set_title(f"{metrics.get('scenario', '')}: latency by send time")
    ax1.legend(fontsize=7, ncol=5)
    for b in sorted(nack):
        xs, ys = zip(*nack[b], strict=True)
        ax2.step(xs, ys, where="post", label=b)
        ax2.plot(xs, ys, "o", markersize=3)
    ax2.set_ylabel("cumulative nack range (ms)")
    ax2.set_xlabel("send time (s)")
    if nack:
        ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


@click.command()
@click.option("--list", "list_", is_flag=True, help="List the scenarios and exit.")
@click.option("--scenario", "name", default=None, help="The scenario to run (see --list).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@click.option(
    "--plot",
    "plot",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write a PNG/SVG/PDF plot of latency and cumulative nack range.",
)
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False, path_type=Path),
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
    if plot is not None:
        if plot.suffix.lower() not in (".png", ".svg", ".pdf"):
            click.echo(
                f"gapless simulate: --plot {str(plot)!r} must end in .png, .svg or .pdf", err=True
            )
            raise SystemExit(2)
        if not plot.parent.resolve().is_dir():
            click.echo(
                f"gapless simulate: --plot {str(plot)!r}: directory {str(plot.parent)!r} "
                "does not exist",
                err=True,
            )
            raise SystemExit(2)
    if trace_file is not None and not trace_file.parent.resolve().is_dir():
        click.echo(
            f"gapless simulate: --trace {str(trace_file)!r}: directory "
            f"{str(trace_file.parent)!r} does not exist",
            err=True,
        )
        raise SystemExit(2)
    sc, outcome, m = run_scenario(name)
    if plot is not None:
        plot_scenario(outcome, m, plot)
    if trace_file is not None and sc.protocol == "zmq":
        from gapless.models.zmq_protocol import write_world_trace

        write_world_trace(trace_file, sc, outcome)
    elif trace_file is not None:
        from gapless.invariants.tracefile import write_trace
        from gapless.models.run import run_context

        write_trace(
            trace_file,
            run_context(sc.spec, 0),
            outcome.trace or (),
            live_end=True,
            meta={"scenario": name, "seed": 0, "trace_digest": outcome.trace_digest},
            protocol=sc.protocol,
        )
    if as_json:
        click.echo(json.dumps(m, indent=2, sort_keys=True))
    else:
        _print_human(m, outcome)
    raise SystemExit(0 if m["pass"] else 1)


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
