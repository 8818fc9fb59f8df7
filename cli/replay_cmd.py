"""``gapless replay FILE``: re-run a counterexample and print its annotated timeline.

``--trace OUT`` also writes the run's observable trace for ``gapless check``.

Exit codes: 0 the violation was reproduced; 1 it was not; 2 bad input (a missing, malformed
or truncated file; an unwritable ``--diagram`` or ``--trace`` path; a
counterexample whose variant, fault targets or spec are invalid or inconsistent) — nothing
written; 3 an internal error.
"""

from __future__ import annotations

from pathlib import Path

import click

from gapless.cli.outputs import require_writable

__all__ = ["replay"]


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--diagram", type=click.Path(dir_okay=False), help="Write a Mermaid sequence diagram."
)
@click.option(
    "--last",
    type=int,
    default=200,
    show_default=True,
    help="Show only the last N events before the violation (fault events are always kept).",
)
@click.option("--all", "show_all", is_flag=True, help="Show every event.")
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False),
    help="Write the run's observable trace (format gapless-trace) for `gapless check`.",
)
def replay(
    file: str, diagram: str | None, last: int, show_all: bool, trace_file: str | None
) -> None:
    """Re-run counterexample FILE deterministically; print the timeline to the violation."""
    from gapless.spark_fuzz.counterexample import CounterexampleError, load_counterexample
    from gapless.spark_fuzz.counterexample import replay as run_replay
    from gapless.spark_fuzz.replay import format_timeline, mermaid

    if last < 1:
        click.echo(f"gapless replay: --last {last} is not allowed; expected >= 1", err=True)
        raise SystemExit(2)
    require_writable("replay", "--diagram", diagram)
    require_writable("replay", "--trace", trace_file)
    try:
        cx = load_counterexample(file)
    except CounterexampleError as exc:
        click.echo(f"gapless replay: {exc}", err=True)
        raise SystemExit(2) from None
    if trace_file is not None:
        from gapless.spark_fuzz.backend import load_backend

        if not hasattr(load_backend(cx.protocol, cx.backend), "write_trace"):
            click.echo(
                f"gapless replay: the {cx.protocol!r} backend cannot write trace files", err=True
            )
            raise SystemExit(2)
    replayed = run_replay(cx)
    click.echo(format_timeline(replayed, last=None if show_all else last))
    click.echo(f"trace digest: {replayed.digest}")
    if diagram is not None:
        Path(diagram).write_text(mermaid(replayed), encoding="utf-8")
        click.echo(f"diagram: {diagram}")
    if trace_file is not None:
        writer = replayed.backend.write_trace
        spec = replayed.backend.spec_from_data(cx.spec)
        schedule = replayed.backend.schedule_from_data(cx.schedule)
        n = writer(spec, schedule, cx.seed, trace_file)
        click.echo(f"trace: {trace_file} ({n} records; check it with `gapless check`)")
    if not replayed.reproduced:
        raise SystemExit(1)
