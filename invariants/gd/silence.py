"""GD's silence rule as a plug-in: F on the wire hides no message it owes [GD §2.1, §2.4].

Theory of operation
-------------------
A tick is F (silence, final) when no message was published at it, or when a filter on the
way rejects the message published there: a filter turns a D it rejects into F for the edges
below it [GD §2.4]. F is final: knowledge only grows, a D never follows an F for the same
tick [GD §2.1]. So every ``final_ranges`` range of a knowledge message on the wire (first-time
silence, the finals of a data message, a nack's answer, a sideways repair) must be true for
the receiver: ``silence_hides_nothing`` judges, for every tick in such a range that the
pubend durably logged, that the message there is one the edge's filter rejects, or one the
receiving cell already acked.

With ``A``, ``B`` the cells of sender and receiver and ``p``'s tree the cells reachable
downward from the cell of ``p``'s host: an edge ``(A, B)`` of the tree may say F of a logged
message only if no subscription reading ``p`` at an SHB in ``B`` or below matches it, or
``B`` sent ``A`` an ack reaching the tick (an acked tick is final below, and the pubend or a
broker may answer a nack there with F [GD §3.2]); a sideways send (``A == B`` [GD §3.1]: the
wire does not say for which downstream cell) only if that holds for some downstream cell of
``A``. Sends off the tree, upstream, or sideways in a leaf cell are not judged.

It is the dual of ``minimal_traffic`` (which forbids D where the filter rejects), and what a
pubend that rebuilt its knowledge from a log it had overwritten shows first: it answers nacks
with F for ticks it logged. The delivery invariants see such a lie only when a subscriber
that still needed the tick believes it (``gapless``), which a crash must line up with a loss.
Filters are the workload's subscriptions, as ``minimal_traffic``'s
(:func:`gapless.invariants.gd.traffic.readers`). A tick logged after an F covering it was
sent is not judged (a pre-assigned F [GD §2.2] covers ticks no message is logged at).
"""

from __future__ import annotations

import bisect
from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.gd.traffic import readers, tree_cells
from gapless.invariants.plugin import Ledger, Plugin, Report

__all__ = ["NAMES", "GDSilence"]

NAMES: Final = ("silence_hides_nothing",)

_Group = tuple[str, tuple[str, ...]]
"""A downstream cell and the filters of the subscriptions reading the pubend below it."""


@final
class GDSilence(Plugin):
    """``silence_hides_nothing`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"send"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self._readers = readers(self.ctx)
        self._tree_edges = set(self.ctx.cell_tree)
        self._trees: dict[str, frozenset[str]] = {}
        #: (sender, receiver, pubend) -> the downstream cells the send may serve, each with
        #: the filters of the subscriptions below it; None: not judged
        self._groups: dict[tuple[str, str, str], tuple[_Group, ...] | None] = {}

    def observe(self, r: TraceRecord) -> bool:
        w: Wire = r.detail.wire
        ranges = w.final_ranges
        pubend = w.pubend
        if not ranges or pubend is None:
            return False
        logged = self.ledger.logged_sorted.get(pubend)
        if not logged:
            return False
        key = (r.node, r.detail.to, pubend)
        if key not in self._groups:
            self._groups[key] = self._edge_groups(r.node, r.detail.to, pubend)
        groups = self._groups[key]
        if groups is None:
            return False
        for lo, hi in ranges:
            i = bisect.bisect_left(logged, lo)
            while i < len(logged) and logged[i] <= hi:
                t = logged[i]
                i += 1
                if not any(self._true_for(g, pubend, t, r.node) for g in groups):
                    return self._hides(r, pubend, t, lo, hi, groups)
        return False

    def _true_for(self, group: _Group, pubend: str, t: int, src: str) -> bool:
        """Whether F at logged tick ``t`` is true for the downstream cell of ``group``: its
        filters reject the message, or the cell already acked ``t`` towards the sender's cell
        (an acked tick is final there; the answer only tells it so [GD §3.2])."""
        cell, filters = group
        a = self.ctx.cell_of.get(src, src)
        if self.ledger.acked_from_cell.get((cell, a, pubend), -1) >= t:
            return True
        matches = self.ledger.matches
        return not any(matches(f, pubend, t) for f in filters)

    def _hides(
        self,
        r: TraceRecord,
        pubend: str,
        t: int,
        lo: int,
        hi: int,
        groups: tuple[_Group, ...],
    ) -> bool:
        attrs_ = self.ledger.attributes(pubend, t)
        entry = self.ledger.logged.get(pubend, {}).get(t)
        shown = "; ".join(
            f"into {c}: " + (" or ".join(f"({f})" for f in fs) or "false") for c, fs in groups
        )
        return self.report.fail(
            "silence_hides_nothing",
            r.node,
            f"{r.node} sent {pubend} silence [{lo}, {hi}] to {r.detail.to}, but tick {t} holds "
            f"the logged message {dict(attrs_ or {})!r}, which the edge's filter {shown} "
            "passes and it has not acked: F there is false [GD §2.1, §2.4]",
            r,
            pubend=pubend,
            tick=t,
            events=(entry[2] if entry is not None else None,),
        )

    def _tree(self, pubend: str) -> frozenset[str]:
        got = self._trees.get(pubend)
        if got is None:
            got = self._trees[pubend] = tree_cells(self.ctx, self.ledger, pubend)
        return got

    def _below(self, pubend: str, cell: str) -> tuple[str, ...]:
        shbs = set(self.ledger.shbs_below(cell))
        return tuple(sorted({f for shb, f in self._readers.get(pubend, ()) if shb in shbs}))

    def _edge_groups(self, src: str, to: str, pubend: str) -> tuple[_Group, ...] | None:
        cell_of = self.ctx.cell_of
        a, b = cell_of.get(src, src), cell_of.get(to, to)
        if a not in self._tree(pubend):
            return None
        if (a, b) in self._tree_edges:
            return ((b, self._below(pubend, b)),)
        if a == b:
            down = self.ledger.down_cells.get(a, ())
            return tuple((c, self._below(pubend, c)) for c in down) or None
        return None
