"""``gapless bench <name> [--json]``: run a benchmark, print figures and whether targets hold.

Each benchmark lives in ``gapless.benchmarks.<name>`` and exposes ``run() -> dict`` whose
result carries ``targets`` (name -> {"value", "target", "met"}). Every result also carries
``python_ns_per_iteration``, this machine's speed on a fixed interpreter workload
(``gapless.benchmarks._targets.machine_speed``), so a slow machine can be told from a
regression. Exit code is 0 whether or not targets are met: a benchmark reports, it does not
judge (2 an unknown benchmark, 3 an internal error).
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import click

BENCHMARKS: dict[str, str] = {
    "streams": "gapless.benchmarks.streams",
    "spark": "gapless.benchmarks.spark",
    "sim": "gapless.benchmarks.sim",
    "campaign": "gapless.benchmarks.campaign",
    "zmq": "gapless.benchmarks.zmq",
    "ges": "gapless.benchmarks.ges",
    "dft": "gapless.benchmarks.dft",
    "power": "gapless.benchmarks.power",
    "durable": "gapless.benchmarks.durable",
}


def _print_human(name: str, result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"gapless bench {name}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if key in ("targets", "baseline"):
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        table.add_row(key, f"{value:,.3f}" if isinstance(value, float) else str(value))
    console.print(table)
    targets = Table(title="targets")
    for col in ("target", "value", "wanted", "met"):
        targets.add_column(col)
    for tname, t in result.get("targets", {}).items():
        targets.add_row(
            tname,
            f"{t['value']:,.3f}" if isinstance(t["value"], float) else str(t["value"]),
            str(t["target"]),
            "[green]met[/]" if t["met"] else "[red]missed[/]",
        )
    console.print(targets)


def _parse_params(name: str, module: Any, params: tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` pairs as a dict; exit 2 when malformed or the benchmark takes none."""
    given: dict[str, str] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            click.echo(f"gapless bench: --param {item!r} is not KEY=VALUE", err=True)
            raise SystemExit(2)
        given[key] = value
    if given and not getattr(module, "TAKES_PARAMS", False):
        click.echo(
            f"gapless bench: {name} takes no --param (only: campaign, dft, durable, power)",
            err=True,
        )
        raise SystemExit(2)
    return given


@click.command()
@click.argument("name", type=click.Choice(sorted(BENCHMARKS)))
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option(
    "--baseline",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="A checkout of an older commit: run the same benchmark there first, in this run on "
    "this machine, and report its figures and speedup_vs_baseline.",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter of benchmarks that take them (power: mutants, seed, schedules, master; "
    "durable: seconds, kills, seed; campaign: schedules, without).",
)
def bench(name: str, as_json: bool, baseline: str | None, params: tuple[str, ...]) -> None:
    """Run benchmark NAME and report its figures and targets."""
    from gapless.benchmarks._baseline import BaselineError, run_baseline, speedups
    from gapless.benchmarks._targets import machine_speed

    module = importlib.import_module(BENCHMARKS[name])
    given = _parse_params(name, module, params)
    old: dict[str, Any] | None = None
    if baseline is not None:
        try:
            old = run_baseline(baseline, name)
        except BaselineError as exc:
            click.echo(f"gapless bench: {exc}", err=True)
            raise SystemExit(2) from None
    try:
        result: dict[str, Any] = module.run(**given)
    except ValueError as exc:
        if not given:
            raise
        click.echo(f"gapless bench: {exc}", err=True)
        raise SystemExit(2) from None
    for key, value in machine_speed().items():  # a benchmark that measured it keeps its own
        result.setdefault(key, value)
    if old is not None:
        derive = getattr(module, "baseline_figures", None)
        if derive is not None:  # figures an older checkout did not report, derived here
            old = derive(old, result)
        result["baseline"] = {"path": baseline, **old}
        result["speedup_vs_baseline"] = speedups(result, old, getattr(module, "SPEEDUP_KEYS", {}))
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        _print_human(name, result)
