"""``gapless check TRACE``: judge a recorded trace file offline with the invariants.

A trace file (format ``gapless-trace``, see :mod:`gapless.invariants.tracefile`) holds what the
invariants observe — the subscriptions and topology, publishes, log writes, wire summaries,
deliveries and faults. ``gapless simulate --scenario NAME --trace FILE`` writes one; another
implementation's logs converted to the format can be judged the same way.

Exit codes: 0 every invariant holds; 1 a violation (explained: the invariant, where, the tick
and the records that show it); 2 bad input (a missing or malformed file, an unknown
invariant).
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
    from gapless.invariants import INVARIANTS
    from gapless.invariants.tracefile import check_trace_file
    from gapless.spec.filters import reference_matcher

    if _protocol_of(trace) == "zmq":
        _check_zmq(trace, names, as_json)
    try:
        tf, violation = check_trace_file(
            trace,
            names,
            matches=reference_matcher(),
            live_end=False if no_liveness else None,
        )
    except ValueError as exc:  # a malformed file (TraceFileError) or an unknown invariant
        click.echo(f"gapless check: {exc}", err=True)
        raise SystemExit(2) from None
    checked = list(names or INVARIANTS)
    liveness = (tf.live_end and not no_liveness) and "liveness" in checked
    if not liveness and "liveness" in checked:
        checked.remove("liveness")
    if as_json:
        out = {
            "verdict": "pass" if violation is None else "violation",
            "records": len(tf.records),
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


def _protocol_of(trace: str) -> str | None:
    """The ``protocol`` a trace file's header names (None: GD's format, or unreadable)."""
    try:
        with open(trace, encoding="utf-8") as f:
            header = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    return header.get("protocol") if isinstance(header, dict) else None


def _check_zmq(trace: str, names: tuple[str, ...], as_json: bool) -> None:
    """Judge a ZeroMQ trace file (``gapless.invariants.zmq_tracefile``); exits."""
    from gapless.invariants.zmq import NAMES
    from gapless.invariants.zmq_tracefile import check_zmq_trace_file

    try:
        tf, violations = check_zmq_trace_file(trace, names)
    except ValueError as exc:
        click.echo(f"gapless check: {exc}", err=True)
        raise SystemExit(2) from None
    checked = list(names or NAMES)
    if as_json:
        out = {
            "verdict": "pass" if not violations else "violation",
            "records": len(tf.records),
            "invariants": checked,
            "violations": [
                {"invariant": v.invariant, "subject": v.subject, "message": v.message}
                for v in violations
            ],
        }
        click.echo(json.dumps(out, indent=2, sort_keys=True))
    elif not violations:
        click.echo(
            f"pass: {len(tf.records)} records, {len(checked)} invariants hold "
            f"({', '.join(checked)})"
        )
    else:
        click.echo("\n".join(v.explain() for v in violations))
    raise SystemExit(0 if not violations else 1)
