"""``gapless protocols``: every protocol of the registry, with its variants, scenarios and
invariants (``--json``: a JSON list of objects, one per protocol).

Exit codes: 0 (it only reads the registry); 3 an internal error.
"""

from __future__ import annotations

import json

import click

from gapless.models.protocols import protocols as registered

__all__ = ["protocols"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object each.")
def protocols(as_json: bool) -> None:
    """List the registered protocols: variants (planted bugs), scenarios, invariants."""
    described = [e.describe() for e in registered()]
    if as_json:
        click.echo(json.dumps(described, indent=2))
        return
    for d in described:
        click.echo(f"{d['name']}: {d['summary']}")
        click.echo(f"  paper: {d['paper']}")
        click.echo(f"  scenarios: {', '.join(d['scenarios']) or '-'}")
        click.echo(f"  invariants: {', '.join(d['invariants'])}")
        click.echo(f"  variants: {', '.join(v['name'] for v in d['variants']) or '-'}")
