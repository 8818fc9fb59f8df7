"""``gapless bench <name> [--json]``: run a benchmark, print figures and whether targets hold.

Each benchmark lives in ``gapless.benchmarks.<name>`` and exposes ``run() -> dict`` whose
result carries ``targets`` (name -> {"value", "target", "met"}). Every result also carries
``python_ns_per_iteration``, this machine's speed on a fixed interpreter workload
(``gapless.benchmarks._targets.machine_speed``), so a slow machine can be told from a
regression. Exit code is 0 whether or not targets are met: a benchmark reports, it does not
judge.
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
    "ges": "gapless.benchmarks.ges",
}


def _print_human(name: str, result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"gapless bench {name}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if key == "targets":
            continue
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


@click.command()
@click.argument("name", type=click.Choice(sorted(BENCHMARKS)))
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def bench(name: str, as_json: bool) -> None:
    """Run benchmark NAME and report its figures and targets."""
    module = importlib.import_module(BENCHMARKS[name])
    result: dict[str, Any] = module.run()
    from gapless.benchmarks._targets import machine_speed

    result.update(machine_speed())
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        _print_human(name, result)
