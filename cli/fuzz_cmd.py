"""``gapless fuzz``: run (or resume) a fuzz campaign on Spark and summarise it.

Exit codes: 0 every schedule passed; 1 a violation, error or timeout was found; 2 bad input
(nothing written); 3 an internal error (a Spark job that failed: see ``gapless --help``);
130 interrupted (finished chunks stay committed; re-run to resume).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

__all__ = ["fuzz", "print_summary"]


def print_summary(summary: dict[str, Any], *, title: str = "campaign") -> None:
    """The human summary: verdicts, invariants, fault kinds, counterexamples."""
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=False, highlight=False, soft_wrap=True)
    table = Table(title=f"{title} {summary['campaign_id']}")
    table.add_column("verdict")
    table.add_column("schedules", justify="right")
    table.add_row("pass", str(summary["passed"]))
    table.add_row("violation", str(summary["failed"]))
    table.add_row("error", str(summary["errors"]))
    table.add_row("timeout", str(summary["timeouts"]))
    table.add_row("[bold]committed[/]", str(summary["schedules_committed"]))
    table.add_row("requested", str(summary["schedules"]))
    console.print(table)
    if summary["by_invariant"]:
        inv = Table(title="violations by invariant")
        inv.add_column("invariant")
        inv.add_column("schedules", justify="right")
        for name, n in summary["by_invariant"].items():
            inv.add_row(name, str(n))
        console.print(inv)
    kinds = Table(title="verdicts by fault kind (a schedule counts once per kind it holds)")
    kinds.add_column("fault kind")
    for verdict in ("pass", "violation", "error", "timeout"):
        kinds.add_column(verdict, justify="right")
    for kind, counts in summary["by_fault_kind"].items():
        kinds.add_row(
            kind, *(str(counts.get(v, 0)) for v in ("pass", "violation", "error", "timeout"))
        )
    console.print(kinds)
    if "spark_tasks" in summary:
        console.print(
            f"spark: {summary['spark_tasks']} task attempts, {summary['spark_failed_tasks']} "
            "failed and re-run"
        )
    for path in summary.get("counterexamples", []):
        console.print(f"counterexample: {path}  (replay: gapless replay {path})")
    cov = summary.get("coverage") or {}
    if cov.get("reachable"):
        never = ", ".join(cov["never_reached"]) or "none"
        console.print(
            f"transitions reached: {cov['reached']} of {cov['reachable']}; never reached: {never}"
        )
    vs = summary.get("versus_blind") or {}
    for key in ("reached", "labels"):
        if key in vs:
            v = vs[key]
            console.print(
                f"guided vs blind ({key}): blind reached {v['blind_final']} in "
                f"{v['blind_schedules']} schedules, guided in {v['guided_schedules']} "
                f"(half: {v['half']})"
            )
    if summary.get("stopped_at_first_failure"):
        console.print("stopped at the first failing chunk (--fail-fast)")
    console.print(
        f"executed {summary['executed']} schedules, skipped {summary['skipped']} already "
        f"committed; results in {summary['directory']}"
    )


def _progress_ui(console_enabled: bool) -> tuple[Any, Any]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from gapless.spark_fuzz.campaign import Progress as Callbacks

    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
        disable=not console_enabled,
        console=None,
    )
    state: dict[str, Any] = {"task": None, "violations": 0}

    def on_plan(to_run: int, skipped: int, chunks: int) -> None:
        state["task"] = bar.add_task(
            "schedules", total=to_run, status=f"{skipped} skipped, {chunks} chunks"
        )

    def on_chunk(first: int, last: int, verdicts: dict[str, int]) -> None:
        state["violations"] += sum(n for v, n in verdicts.items() if v != "pass")
        bar.update(
            state["task"],
            advance=last - first + 1,
            status=f"{state['violations']} failing",
        )

    def on_status(status: Any) -> None:
        if state["task"] is not None:
            bar.update(
                state["task"],
                status=(
                    f"spark {status.tasks_active} running, {status.tasks_done}/"
                    f"{status.tasks_total} tasks"
                    + (f", {status.tasks_failed} retried" if status.tasks_failed else "")
                    + f"; {state['violations']} failing"
                ),
            )

    def on_phase(phase: str) -> None:
        if state["task"] is not None:
            bar.update(state["task"], status=phase)

    return bar, Callbacks(
        on_plan=on_plan, on_chunk=on_chunk, on_status=on_status, on_phase=on_phase
    )


@click.command()
@click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), help="Campaign TOML file."
)
@click.option("--protocol", help="Protocol (default gd).")
@click.option("--variant", help="Protocol variant: 'none' (correct) or a bug of the zoo.")
@click.option("--topology", help="Topology name (e.g. fig3, total-order).")
@click.option("--schedules", type=int, help="Number of schedules (seeds).")
@click.option("--seed", type=int, help="First seed.")
@click.option("--duration", "duration_s", type=float, help="Simulated seconds per schedule.")
@click.option("--campaign-id", "campaign_id", help="Campaign id (default: digest of the config).")
@click.option("--out", help="Output directory (default out/campaigns).")
@click.option("--master", help="Spark master (default local[*]; spark://HOST:PORT for a cluster).")
@click.option("--chunk-size", type=int, help="Seeds per committed chunk (0 = automatic).")
@click.option(
    "--executor",
    type=click.Choice(["spark", "processes", "loop"]),
    default="spark",
    show_default=True,
    help="Where schedules run: Spark, a process pool, or this process.",
)
@click.option(
    "--processes", type=int, default=2, show_default=True, help="Pool size for processes."
)
@click.option("--no-shrink", is_flag=True, help="Do not shrink failures into counterexamples.")
@click.option(
    "--guided",
    is_flag=True,
    default=None,
    help="Coverage-guided schedules, run beside a blind twin campaign (growth compared).",
)
@click.option(
    "--fail-fast",
    is_flag=True,
    default=None,
    help="Stop at the first chunk with a failing schedule (exit 1 as soon as it breaks).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def fuzz(
    config_path: str | None,
    protocol: str | None,
    variant: str | None,
    topology: str | None,
    schedules: int | None,
    seed: int | None,
    duration_s: float | None,
    campaign_id: str | None,
    out: str | None,
    master: str | None,
    chunk_size: int | None,
    executor: str,
    processes: int,
    no_shrink: bool,
    guided: bool | None,
    fail_fast: bool | None,
    as_json: bool,
) -> None:
    """Run a fuzz campaign: seeds -> fault schedules -> simulate -> invariants -> Parquet.

    Flags override the --config file. Re-running the same campaign skips the seeds already
    committed. Exit 0 if every schedule passed, 1 if any failed, 2 on bad input, 3 on an
    internal error (a Spark job that failed), 130 if interrupted.
    """
    from gapless.spark_fuzz.campaign import run_campaign
    from gapless.spark_fuzz.config import CampaignConfigError, load_config
    from gapless.spark_fuzz.store import CampaignStore, OutputError

    overrides: dict[str, Any] = {
        "protocol": protocol,
        "variant": variant,
        "topology": topology,
        "schedules": schedules,
        "seed": seed,
        "duration_s": duration_s,
        "id": campaign_id,
        "out": out,
        "master": master,
        "chunk_size": chunk_size,
        "shrink": False if no_shrink else None,
        "guided": guided,
        "fail_fast": fail_fast,
    }
    if processes < 1:
        click.echo(f"gapless fuzz: --processes {processes} is not allowed; expected >= 1", err=True)
        raise SystemExit(2)
    try:
        config = load_config(config_path, overrides)
        CampaignStore.check_writable(config.out)
    except (CampaignConfigError, OutputError) as exc:
        click.echo(f"gapless fuzz: {exc}", err=True)
        raise SystemExit(2) from None

    bar, callbacks = _progress_ui(not as_json and sys.stderr.isatty())
    try:
        with bar:
            result = run_campaign(
                config, executor=executor, processes=processes, progress=callbacks
            )
    except OutputError as exc:
        click.echo(f"gapless fuzz: {exc}", err=True)
        raise SystemExit(2) from None
    summary = result.summary
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print_summary(summary)
    if result.interrupted:
        click.echo(
            f"gapless fuzz: interrupted; {summary['schedules_committed']} of "
            f"{summary['schedules']} schedules committed. "
            "Re-run the same command to resume.",
            err=True,
        )
        raise SystemExit(130)
    if summary["failed"] or summary["errors"] or summary["timeouts"]:
        raise SystemExit(1)
