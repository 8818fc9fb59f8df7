"""``gapless check TRACE``: judge a recorded trace file offline with the invariants.

A trace file (format ``gapless-trace``, see :mod:`gapless.invariants.tracefile`) names its
protocol in its header; the registry (:mod:`gapless.models.protocols`) gives that protocol's
reader and invariants. The file holds what the invariants observe — the subscriptions and
topology, publishes, log writes, wire summaries, deliveries and faults. ``gapless simulate
--scenario NAME --trace FILE`` writes one; another implementation's logs converted to the
format can be judged the same way.

Exit codes: 0 every invariant holds; 1 a violation (explained: the invariant, where, the tick
and the records that show it); 2 bad input (a missing or malformed file, an unknown
invariant); 3 an internal error (see ``gapless --help``).
"""

from __future__ import annotations

import json

import click

__all__ = ["check"]


@click.command()
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option(
    "--invariant",
    "names",
    multiple=True,
    help="Check only this invariant (repeatable; default: all of them).",
)
@click.option(
    "--no-liveness",
    is_flag=True,
    help="Do not judge liveness at the end, whatever the file's header says.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as one JSON object.")
def check(trace: str, names: tuple[str, ...], no_liveness: bool, as_json: bool) -> None:
    """Check the recorded trace file TRACE against the invariants."""
    from gapless.impl.errors import ProtocolMisuse
    from gapless.invariants.tracefile import read_protocol
    from gapless.models.protocols import protocol
    from gapless.spec.filters import reference_matcher

    try:
        entry = protocol(read_protocol(trace))
        if entry.trace_check is None:
            raise ValueError(f"protocol {entry.name!r} has no trace-file format yet")
        tf, violation = entry.trace_check(
            trace,
            names,
            matches=reference_matcher(),
            live_end=False if no_liveness else None,
        )
    except (ValueError, ProtocolMisuse) as exc:
        # a malformed file (TraceFileError), an unknown protocol or invariant
        click.echo(f"gapless check: {exc}", err=True)
        raise SystemExit(2) from None
    if getattr(tf, "complete", None) is None:
        click.echo(
            f"gapless check: warning: {trace} is a version-1 trace file (no end record): "
            "truncation cannot be detected, and a file cut short would be judged as a run "
            "that stopped there",
            err=True,
        )
    checked = list(names or entry.invariants)
    liveness = (tf.live_end and not no_liveness) and "liveness" in checked
    if not liveness and "liveness" in checked:
        checked.remove("liveness")
    if as_json:
        out = {
            "verdict": "pass" if violation is None else "violation",
            "records": len(tf.records),
            "complete": getattr(tf, "complete", None),
            "invariants": checked,
            "violation": None
            if violation is None
            else {
                "invariant": violation.invariant,
                "subject": violation.subject,
                "pubend": violation.pubend,
                "tick": violation.tick,
                "time_us": violation.time,
                "message": violation.message,
                "events": [r.seq for r in violation.events if r is not None],
            },
        }
        click.echo(json.dumps(out, indent=2, sort_keys=True))
    elif violation is None:
        click.echo(
            f"pass: {len(tf.records)} records, {len(checked)} invariants hold "
            f"({', '.join(checked)})"
        )
    else:
        click.echo(violation.explain())
    raise SystemExit(0 if violation is None else 1)
