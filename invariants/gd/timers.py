"""GD's own-timer rule as a plug-in: a broker never refuses a timer it set itself [GD §3.2].

Theory of operation
-------------------
Every timer of a GD broker — the periodic link-status, silence and AckExpected timers, the
ack timer, and the per-pubend gap curiosity (GCT), nack repetition (NRT) and curiosity-forget
timers [GD §3.1-3.2] — is set by the broker itself (a ``SetTimer`` effect) and comes back as
a ``TimerFired`` input with the same key. A timer armed before a crash belongs to another
epoch and is ignored without a word; any other timer has a handler that takes it. So a
``rejected`` record whose input is a ``TimerFired`` means the broker's dispatch refused its
own timer: the rule the timer stood for (a gap nacked after GCT, a nack repeated after NRT,
an AckExpected sent after AET...) silently stopped running. Recovery then falls back on
slower paths (a lost tick waits for AckExpected instead of the gap nack), which the delivery
invariants do not see within a drain longer than AET, and the run passes.

``own_timers`` judges it from the ``rejected`` records (issue 18: a mutant of the dispatch's
timer-argument table that refused every GCT timer passed the demo campaign). A trace file
keeps only a rejection's text, not its input: read back from a file, the rule is not judged.
"""

from __future__ import annotations

from typing import ClassVar, Final, final

from gapless.impl.inputs import TimerFired
from gapless.impl.trace import TraceRecord
from gapless.invariants.plugin import Plugin

__all__ = ["NAMES", "GDOwnTimers"]

NAMES: Final = ("own_timers",)


@final
class GDOwnTimers(Plugin):
    """``own_timers`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"rejected"})

    def observe(self, r: TraceRecord) -> bool:
        fired = getattr(r.detail, "input", None)
        if not isinstance(fired, TimerFired):
            return False
        return self.report.fail(
            "own_timers",
            r.node,
            f"{r.node} refused its own timer {fired.key!r} "
            f"({getattr(r.detail, 'reason', '')}); a broker takes every timer it set in its "
            "current epoch [GD §3.2]",
            r,
        )
