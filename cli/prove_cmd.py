"""``gapless prove [--json] [--variant NAME]``: prove the lattice laws, answer the facts.

Prints one row per obligation (name, kind, status, seconds, witness). Exit code 1 only if a
*law* or an *inductive* invariant (the release protocol's, [DUR §3]) is not proved, or a
*twin* (the same step with a planted bug) is not refuted (a refuted *fact* is an answer, not a
failure); 2 if the
``prove`` extra (z3-solver) is missing or the variant is unknown. ``--variant`` runs the same
laws against a deliberately broken algebra (non-vacuity: it must exit 1).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from gapless.cli.main import missing_extra_message

__all__ = ["prove"]

_STATUS_STYLE = {"proved": "green", "refuted": "red", "unknown": "yellow"}


def _load_proofs() -> Any:
    try:
        import z3  # noqa: F401 - imported here so a missing extra is reported, not a traceback

        from gapless.spec import proofs
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("gapless"):
            raise
        click.echo(missing_extra_message("prove", exc), err=True)
        raise SystemExit(2) from None
    return proofs


def _print_table(outcomes: list[Any], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in ("obligation", "kind", "status", "seconds"):
        table.add_column(col, justify="right" if col == "seconds" else "left", no_wrap=True)
    table.add_column("witness")
    for o in outcomes:
        style = _STATUS_STYLE[o.status]
        if o.kind in ("fact", "twin") and o.status == "refuted":
            style = "cyan"  # an answer, not a failure
        table.add_row(
            o.obligation,
            o.kind,
            f"[{style}]{o.status}[/]",
            f"{o.seconds:.3f}",
            o.witness or "",
        )
    Console(width=max(140, Console().width)).print(table)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of outcomes.")
@click.option(
    "--variant",
    default="paper",
    show_default=True,
    help="Algebra to prove: 'paper', or a broken variant (broken-join, broken-filter, "
    "broken-merge, link-L-keeps-A) to see the laws refute it.",
)
def prove(as_json: bool, variant: str) -> None:
    """Prove the lattice laws with Z3 and answer the recorded facts."""
    proofs = _load_proofs()
    try:
        algebra = proofs.variant(variant)
    except ValueError as exc:
        click.echo(f"gapless prove: {exc}", err=True)
        raise SystemExit(2) from None
    outcomes = proofs.run_all(algebra)
    if as_json:
        click.echo(json.dumps([o.as_json() for o in outcomes], indent=2))
    else:
        laws = [o for o in outcomes if o.kind == "law"]
        proved = sum(o.status == "proved" for o in laws)
        facts = sum(o.kind == "fact" for o in outcomes)
        steps = [o for o in outcomes if o.kind == "inductive"]
        twins = [o for o in outcomes if o.kind == "twin"]
        total = sum(o.seconds for o in outcomes)
        _print_table(outcomes, f"gapless prove ({algebra.name})")
        release = ""
        if steps:
            release = (
                f"{sum(o.status == 'proved' for o in steps)}/{len(steps)} release steps proved "
                f"inductive, {sum(o.status == 'refuted' for o in twins)}/{len(twins)} twins "
                "refuted, "
            )
        click.echo(
            f"{proved}/{len(laws)} laws proved, {facts} facts answered, {release}"
            f"{total:.2f} s in Z3"
        )
    # a law or an inductive invariant must be proved; a twin (a planted bug) must be refuted
    want = {"law": "proved", "inductive": "proved", "twin": "refuted"}
    failed = [o for o in outcomes if o.kind in want and o.status != want[o.kind]]
    if failed:
        if not as_json:
            names = ", ".join(o.obligation for o in failed)
            click.echo(f"gapless prove: not as required: {names}", err=True)
        sys.exit(1)
