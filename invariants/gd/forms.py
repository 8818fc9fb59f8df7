"""GD's canonical-state rule as a plug-in: every lattice value a broker holds after a step is
in the canonical form its verified operations return [GD §2.1, §3.1; DESIGN.md "Lattices and
streams"].

Theory of operation
-------------------
The roles keep their knowledge, curiosity and tick sets in the verified types of ``impl/``
(:mod:`gapless.impl.streams`, :mod:`gapless.impl.ledger`, :mod:`gapless.impl.ticksets`). Each
type has one canonical form — runs that ascend, adjacent runs that differ, tick sets whose
pairs neither overlap nor touch — and its operations, tested against the ``spec`` reference
semantics, always return it. A value that leaves the form most often still answers every
query the same way (an adjacent run not merged holds the same ticks), so no delivery or wire
rule sees it, yet the next operation that assumes the form may answer wrong, and equal states
no longer compare equal. Issue 18's power measure found such mutants (an in-order
``ticksets.add`` that appends a touching run, a pending-tick fill that looks at the wrong
neighbour): ``make test`` killed them through the law tests, the demo campaign did not.

This rule is the one GD invariant that reads role state, and it reads it only through a
record: after every step that changed a broker's state, the world asks the binding's
``malformed(before, after)`` (:func:`gapless.impl.gd.state.malformed`, which looks only at the
streams the step replaced) and writes a ``malformed`` record with the first problem it names.
``canonical_state`` fails on that record, so the verdict is the same online, offline and read
back from a trace file (the record keeps its text). The world checks only when this rule is
judged (``Run`` turns ``World.check_forms`` on), so a run that leaves it out pays nothing. A
correct run writes no such record: its trace and digest are unchanged.

Values that never stay in a state — a tick set a step builds and sends at once — are judged
where they become observable: the F ranges of every message sent (``Wire.final_ranges``) must
be one canonical tick set too. A broken ``ticksets.add`` fast path that appends a touching run
leaves the stored state canonical (the ledgers take their in-order fast path) but sends
silence as touching ranges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, Final, final

from gapless.impl.ticksets import is_canonical
from gapless.impl.trace import TraceRecord
from gapless.invariants.plugin import Plugin

__all__ = ["NAMES", "GDCanonicalState"]

NAMES: Final = ("canonical_state",)


@final
class GDCanonicalState(Plugin):
    """``canonical_state`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"malformed", "send"})

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        return {"malformed": self.observe, "send": self.sent}

    def sent(self, r: TraceRecord) -> bool:
        """A message's F ranges are one canonical tick set [GD §3.1]."""
        w = r.detail.wire
        ranges = w.final_ranges
        if not ranges or is_canonical(ranges):
            return False
        return self.report.fail(
            "canonical_state",
            r.node,
            f"{r.node} sent {r.detail.to} a {w.kind} message whose F ranges {ranges!r} are not "
            "one canonical tick set (ascending, disjoint, not touching): a value out of form "
            "reached the wire [GD §3.1]",
            r,
            pubend=w.pubend,
        )

    def observe(self, r: TraceRecord) -> bool:
        text = getattr(r.detail, "text", None)
        return self.report.fail(
            "canonical_state",
            r.node,
            f"{r.node} holds a value out of canonical form after a step: "
            f"{text if text is not None else r.detail!r}; the verified operations return "
            "only canonical forms, and the next one may answer wrong on this",
            r,
        )
