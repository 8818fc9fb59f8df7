"""GD's refused-input rule as a plug-in: a broker never refuses a message a neighbour sent
[GD §3.1-3.2].

Theory of operation
-------------------
Every message a GD broker receives in a run of the kit's world was sent by a neighbour running
the same roles: knowledge and AckExpected flow down from the upstream cell (or sideways for a
cell downstream), acks and nacks up from a downstream cell, link status between neighbours
[GD §3.1-3.2]. Faults lose, duplicate, delay and reorder messages and crash brokers, but never
corrupt one or forge its sender. A duplicate or stale message is *ignored* by the lattice join
(knowledge only grows; the same D joined again changes nothing [GD §2.1-2.2]) — it is never
refused. So a ``rejected`` record whose input is a :class:`~gapless.impl.inputs.Receive` means
a broker's dispatch or handler turned away a message the protocol sent: a role that treats a
duplicated D as conflicting data, a sender check that refuses the upstream cell, a handler
missing from the dispatch. Recovery may still mend the run (the message is resent, or the
stream moves past it), so the delivery invariants often do not see it.

``refused_input`` judges it from the ``rejected`` records (issue 18: mutants that refused a
duplicated D or the upstream's knowledge passed the demo campaign; the tests killed them). A
refused *timer* is ``own_timers``'s (:mod:`gapless.invariants.gd.timers`). A trace file keeps
only a rejection's text, not its input: read back from a file, the rule is not judged.
"""

from __future__ import annotations

from typing import ClassVar, Final, final

from gapless.impl.inputs import Receive
from gapless.impl.trace import TraceRecord
from gapless.invariants.plugin import Plugin

__all__ = ["NAMES", "GDRefusedInput"]

NAMES: Final = ("refused_input",)


@final
class GDRefusedInput(Plugin):
    """``refused_input`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"rejected"})

    def observe(self, r: TraceRecord) -> bool:
        got = getattr(r.detail, "input", None)
        if not isinstance(got, Receive):
            return False
        return self.report.fail(
            "refused_input",
            r.node,
            f"{r.node} refused {type(got.msg).__name__} from {got.sender} "
            f"({getattr(r.detail, 'reason', '')}); a broker ignores a duplicate or stale "
            "message and takes every other one a neighbour sends [GD §3.1-3.2]",
            r,
        )
