"""The :class:`Violation` value every trace invariant returns (STYLE.md "Names").

A violation names the invariant, the broker or subscriber it concerns (``subject``), the
pubend and tick (when one tick explains it), a one-line ``message`` and the few trace records
that explain it (``events``), so a counterexample reads on its own.
"""

from __future__ import annotations

from typing import final

import attrs

from gapless.impl.trace import TraceRecord

__all__ = ["Violation"]


@final
@attrs.frozen(kw_only=True)
class Violation:
    """A broken invariant: ``invariant`` at ``subject`` (pubend ``pubend``, tick ``tick``)
    at virtual time ``time`` (µs), explained by ``message`` and the records ``events``."""

    invariant: str
    subject: str
    message: str
    time: int
    pubend: str | None = None
    tick: int | None = None
    events: tuple[TraceRecord, ...] = ()

    def explain(self) -> str:
        """A few lines: the invariant, where, and the explaining events."""
        where = self.subject
        if self.pubend is not None:
            where += f" pubend={self.pubend}"
        if self.tick is not None:
            where += f" tick={self.tick}"
        lines = [f"{self.invariant} violated at t={self.time}µs ({where}): {self.message}"]
        for r in self.events:
            lines.append(f"  t={r.time}µs {r.node} {r.kind} {r.detail!r}"[:300])
        return "\n".join(lines)
