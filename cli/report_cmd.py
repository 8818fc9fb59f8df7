"""``gapless report DIR``: write a static HTML report (PNG plots) of the campaigns in DIR.

Exit codes: 0 written; 2 bad input (not a directory, no campaign results, unwritable) —
nothing written; 3 an internal error.
"""

from __future__ import annotations

import click

__all__ = ["report"]


@click.command()
@click.argument("directory", type=click.Path(file_okay=False))
def report(directory: str) -> None:
    """Write DIRECTORY/report/index.html for the campaigns under DIRECTORY (a --out dir)."""
    from gapless.spark_fuzz.report import ReportError, write_report

    try:
        path = write_report(directory)
    except ReportError as exc:
        click.echo(f"gapless {exc}", err=True)
        raise SystemExit(2) from None
    click.echo(f"report: {path}")
