"""GD's one-sideways-hop rule as a plug-in: what came sideways is not sent sideways [GD §3.1].

Theory of operation
-------------------
"The physical brokers belonging to a cell maintain connections with one another, so that if
one physical broker loses connectivity to a downstream cell, it may be able to route messages
to that cell via another broker in its cell that has not lost connectivity" [GD §3.1]. A
sideways message is one hop: the cell neighbour it reaches either has a link to the cell the
message is for and sends it down, or it cannot help, and then sending it sideways again only
returns it into the cell it came from. Two brokers of a cell that have both lost the same
downstream cell would pass it back and forth until a link heals — without duplicate
suppression (best effort [GD §4.1]) until a link heals: demo seeds 201 and 245 with link
faults sent 112,975 and 323,928 copies between b3 and b4 in 5 s (issue 18, found by power4) —
or, with an istream that drops what it already has, once more for nothing.

``sideways_one_hop`` judges it from the ``send`` records alone. A broker learns a message's
data from outside its cell only when a broker of another cell sends it there (its upstream
cell: knowledge flows down only, ``minimal_traffic``); whatever else it has came sideways.
So for every first-time ``send`` carrying data ticks from broker ``a`` to a broker ``b`` of
``a``'s own cell, each data tick ``t`` of pubend ``p`` must have been sent to ``a`` from outside
the cell before; otherwise ``a`` had it only from a cell neighbour and put it sideways a second
time. The violation names the pair, the pubend, the tick and the message, and the sideways send
that brought it to ``a``. Retransmissions are not judged (a broker answers curiosity from what
its stream holds, however it got there [GD §3.1]), nor is silence. A broker that crashed keeps
what it was sent before, so a bounce after a restart may go unseen (never a false alarm).
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.plugin import Ledger, Plugin, Report

__all__ = ["NAMES", "GDSidewaysOneHop"]

NAMES: Final = ("sideways_one_hop",)


@final
class GDSidewaysOneHop(Plugin):
    """``sideways_one_hop`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"send"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        cell_of = dict(self.ctx.cell_of)
        sizes = Counter(cell_of.values())
        self.cell_of = cell_of
        #: the brokers that have a cell neighbour (only they can send sideways)
        self.bundled = frozenset(n for n, c in cell_of.items() if sizes[c] > 1)
        #: (broker, pubend, tick) sent to the broker from outside its cell
        self.from_outside: set[tuple[str, str, int]] = set()
        #: (broker, pubend, tick) -> the last sideways send that brought it there
        self.sideways_in: dict[tuple[str, str, int], TraceRecord] = {}

    def observe(self, r: TraceRecord) -> bool:
        b = r.detail.to
        if b not in self.bundled:
            return False
        w: Wire = r.detail.wire
        ticks = w.data_ticks
        p = w.pubend
        if not ticks or p is None:
            return False
        a = r.node
        cell_of = self.cell_of
        if cell_of.get(a, a) != cell_of[b]:
            self.from_outside.update((b, p, t) for t in ticks)
            return False
        for t in ticks:
            self.sideways_in[(b, p, t)] = r
        if w.retransmission:
            return False
        for t in ticks:
            if (a, p, t) not in self.from_outside:
                return self._reject(r, a, b, p, t)
        return False

    def _reject(self, r: TraceRecord, a: str, b: str, p: str, t: int) -> bool:
        came = self.sideways_in.get((a, p, t))
        attrs_ = self.ledger.attributes(p, t)
        if attrs_ is None:  # not logged (best effort): the message itself, when recorded
            attrs_ = getattr(getattr(r.detail.msg, "data", None), "attributes", None)
        message = f" (message {dict(attrs_)!r})" if attrs_ is not None else ""
        source = (
            f"it came to {a} only sideways, from {came.node} at {came.time}µs"
            if came is not None
            else f"no broker outside cell {self.cell_of[a]} ever sent it to {a}"
        )
        return self.report.fail(
            "sideways_one_hop",
            a,
            f"{a} sent data tick {t} of {p}{message} sideways to its cell neighbour {b}, but "
            f"{source}: a message that came sideways goes down a link of the broker that has "
            f"one, or nowhere; sent sideways again it returns into cell {self.cell_of[a]} "
            "(one sideways hop [GD §3.1])",
            r,
            pubend=p,
            tick=t,
            events=(came,),
        )
