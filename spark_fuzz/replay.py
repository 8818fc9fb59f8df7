"""Reading a replayed counterexample: an annotated timeline and a Mermaid sequence diagram.

The timeline lists, in virtual time, every recorded event up to the violation — node,
event, and what changed (wire messages with their knowledge ranges, knowledge and curiosity
transitions such as ``K:Q->D`` or ``C:N->C`` [GD §2.1, §2.4], faults) — and ends with the
violation itself. The diagram draws every message sent between nodes as an arrow and every
fault, delivery and lattice transition as a note, in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gapless.spark_fuzz.counterexample import Replay

__all__ = ["format_timeline", "mermaid", "timeline_until_violation"]

_INTERESTING = (
    "fault",
    "send",
    "deliver",
    "drop",
    "coverage",
    "publish",
    "persisted",
    "connect",
    "disconnect",
    "link",
    "rejected",
    "timer",
    "receive",
    "persist",
)


def timeline_until_violation(replayed: Replay) -> list[Mapping[str, Any]]:
    """The recorded events up to (and including) the violation time."""
    end = replayed.outcome.violation_time
    entries = list(replayed.outcome.timeline)
    if end is not None:
        entries = [e for e in entries if int(e.get("time", 0)) <= end]
    return entries


def _fmt_time(us: int) -> str:
    return f"{us / 1000:10.3f} ms"


def format_timeline(replayed: Replay, *, last: int | None = None) -> str:
    """The annotated timeline as text (the last ``last`` entries, if given)."""
    cx = replayed.counterexample
    entries = timeline_until_violation(replayed)
    skipped = 0
    if last is not None and len(entries) > last:
        faults = [e for e in entries[:-last] if e.get("event") == "fault"]
        skipped = len(entries) - last - len(faults)
        entries = faults + entries[-last:]
    lines = [
        f"counterexample: protocol {cx.protocol}, variant {cx.variant}, topology {cx.topology}, "
        f"seed {cx.seed}",
        f"fault events: {cx.shrunk_fault_events} (shrunk from {cx.original_fault_events}); "
        f"simulated duration: {cx.duration_s if cx.duration_s is not None else '?'} s",
        "",
        f"{'virtual time':>13}  {'node':<8} {'event':<10} detail",
    ]
    if skipped:
        lines.append(f"{'':13}  ... {skipped} earlier events not shown (use --last) ...")
    for e in entries:
        detail = str(e.get("detail", ""))
        if "to" in e:
            detail = f"-> {e['to']}: {detail}"
        lines.append(
            f"{_fmt_time(int(e.get('time', 0)))}  {e.get('node', '?')!s:<8} "
            f"{e.get('event', '?')!s:<10} {detail}"[:220]
        )
    outcome = replayed.outcome
    when = _fmt_time(outcome.violation_time) if outcome.violation_time is not None else "end"
    lines.append("")
    lines.append(f"VIOLATION at {when.strip()}: invariant {outcome.invariant or '?'}")
    lines.extend("  " + line for line in outcome.explanation.splitlines())
    if not replayed.reproduced:
        lines.append(
            f"warning: the replay did not reproduce the recorded violation of {cx.invariant!r} "
            f"(got verdict {outcome.verdict!r}, invariant {outcome.invariant!r})"
        )
    return "\n".join(lines)


def _ident(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "_"


def _text(value: str) -> str:
    # Mermaid message text: no semicolons, '#' or line breaks
    return value.replace(";", ",").replace("#", "no.").replace("\n", " ")[:120]


def mermaid(replayed: Replay, *, max_events: int = 400) -> str:
    """A Mermaid ``sequenceDiagram`` of the run up to the violation."""
    entries: Sequence[Mapping[str, Any]] = [
        e for e in timeline_until_violation(replayed) if e.get("event") != "receive"
    ]
    if len(entries) > max_events:
        faults = [e for e in entries[:-max_events] if e.get("event") == "fault"]
        entries = faults + list(entries[-max_events:])
    nodes: list[str] = []
    for e in entries:
        for name in (e.get("node"), e.get("to")):
            if isinstance(name, str) and name not in nodes:
                nodes.append(name)
    lines = ["sequenceDiagram"]
    for name in nodes:
        lines.append(f"    participant {_ident(name)} as {name}")
    for e in entries:
        node = _ident(str(e.get("node", "?")))
        when = f"{int(e.get('time', 0)) / 1000:.3f}ms"
        detail = _text(str(e.get("detail", "")))
        if e.get("event") == "send" and "to" in e:
            lines.append(f"    {node}->>{_ident(str(e['to']))}: {when} {detail}")
        elif e.get("event") == "drop":
            lines.append(f"    Note over {node}: {when} LOST {detail}")
        else:
            lines.append(f"    Note over {node}: {when} {e.get('event')} {detail}")
    outcome = replayed.outcome
    target = nodes[-1] if nodes else "world"
    if not nodes:
        lines.append("    participant world")
    summary = _text(outcome.explanation.splitlines()[0] if outcome.explanation else "")
    lines.append(f"    Note over {_ident(target)}: VIOLATION {outcome.invariant or '?'}: {summary}")
    return "\n".join(lines) + "\n"
