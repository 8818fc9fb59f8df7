"""GD's detour rule as a plug-in: what a broker is sent sideways for a cell goes on
[GD §3.1].

Theory of operation
-------------------
"The physical brokers belonging to a cell maintain connections with one another, so that if
one physical broker loses connectivity to a downstream cell, it may be able to route messages
to that cell via another broker in its cell that has not lost connectivity" [GD §3.1]. The
detour works only if the cell neighbour acts on what it is handed: an intermediate broker that
accepts a sideways message for a downstream cell and then drops it without a word (no
``Rejected`` record, so ``refused_input`` is silent) leaves the cell to find the loss by its
gap curiosity and nacks — delivery still holds, later (issue 18: a mutant of
``knowledge_cell`` that dropped every sideways message passed 300 demo schedules).
``sideways_one_hop`` is the other half: what came sideways never goes sideways again.

``sideways_forwarded`` judges it from the ``send``, ``drop`` and ``fault`` records at the end
of a healed and drained run. A *detour* is a first-time data message of tick ``t`` of pubend
``p`` that broker ``a`` sends to ``b``, an intermediate broker of its own cell. The rule:
**for every detour the network delivered, ``b`` sends ``t`` of ``p`` first-time to a broker of
a cell below its own** (the wire summary does not name the cell the detour is for, so any
cell below counts; one forward answers every detour of the same tick). Excused, so never a
false alarm:

* the network dropped every copy ``a`` sent ``b`` (``drop`` records: loss, a link down, in
  flight at a failure, in the inbox at a crash);
* ``b`` had been sent ``t`` of ``p`` (as data, by anyone) before the detour in its current
  incarnation: an istream forwards first-time only what is new to it [GD §3.1], and ``b``
  then either forwarded it already or could not;
* a broker of a cell below had acked ``t`` of ``p`` to the cell before the detour (that cell
  may have it; an ostream acked at ``t`` takes nothing more [GD §3.1]);
* a fault that could stop ``b`` reaching a cell below — a crash, stall or failure of ``b`` or
  of a broker of a cell below, a failed or stalled link from ``b`` to such a broker, a
  partition separating ``b`` from one — active at any time from the detour to the end of the
  trace (when the detour arrives is not in the trace, only that it did: ``b`` may find its
  link down then).

Retransmitted detours are not judged: ``b`` forwards a retransmission only to brokers curious
for it [GD §3.1], which the trace cannot tell apart from a cell that is not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.plugin import LINK_FAULTS, NODE_FAULTS, Ledger, Plugin, Report, fault_nodes

__all__ = ["NAMES", "GDSidewaysForwarded"]

NAMES: Final = ("sideways_forwarded",)


@final
class GDSidewaysForwarded(Plugin):
    """``sideways_forwarded`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"send", "drop", "fault"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        ctx = self.ctx
        cell_of = dict(ctx.cell_of)
        self.cell_of = cell_of
        members: dict[str, set[str]] = {}
        for n, c in cell_of.items():
            members.setdefault(c, set()).add(n)
        children: dict[str, set[str]] = {}
        for up, down in ctx.cell_tree:
            children.setdefault(up, set()).add(down)
        #: the intermediate brokers with a cell neighbour (only they take detours)
        self.ibs = frozenset(
            n for n, c in cell_of.items() if ctx.roles.get(n) == "ib" and len(members[c]) > 1
        )
        #: IB -> the brokers of the cells below its cell
        self.below: dict[str, frozenset[str]] = {
            b: frozenset(x for c in children.get(cell_of[b], ()) for x in members.get(c, ()))
            for b in self.ibs
        }
        #: broker -> the cells whose brokers it may ack to (the cells above its own)
        self.parent_cell: dict[str, str] = {down: up for up, down in ctx.cell_tree}
        #: IB -> the brokers whose faults excuse it: itself and the brokers below
        self.watch: dict[str, frozenset[str]] = {b: self.below[b] | {b} for b in self.ibs}
        #: (IB, pubend) -> the data ticks it was sent in its current incarnation
        self.sent_to: dict[tuple[str, str], set[int]] = {}
        #: (IB, pubend, tick) -> the first judged detour: its record
        self.detours: dict[tuple[str, str, int], TraceRecord] = {}
        #: (sender, IB, pubend, tick) -> copies sent first-time sideways and copies dropped
        self.copies: dict[tuple[str, str, str, int], int] = {}
        self.dropped: dict[tuple[str, str, str, int], int] = {}
        #: (IB, pubend, tick) forwarded first-time to a broker below
        self.forwarded: set[tuple[str, str, int]] = set()
        #: (cell, pubend) -> the highest ack a broker below sent to a broker of the cell
        self.acked: dict[tuple[str, str], int] = {}
        #: IB -> excusing faults active now; and the time the last one was active (or ended)
        self.active: dict[str, set[tuple[str, str]]] = {b: set() for b in self.ibs}
        self.last_fault: dict[str, int] = {}

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        return {"send": self._on_send, "drop": self._on_drop, "fault": self._on_fault}

    # ------------------------------------------------------------------ facts

    def _on_send(self, r: TraceRecord) -> bool:
        w: Wire = r.detail.wire
        kind = w.kind
        p = w.pubend
        if p is None:
            return False
        a = r.node
        to = r.detail.to
        if kind == "ack":
            up = self.parent_cell.get(self.cell_of.get(a, a))
            if up is not None and w.upto is not None and self.cell_of.get(to) == up:
                key = (up, p)
                if w.upto > self.acked.get(key, -1):
                    self.acked[key] = w.upto
            return False
        if kind != "data":
            return False
        ticks = w.data_ticks
        if to not in self.ibs:
            detours = self.detours
            if detours and not w.retransmission and a in self.ibs and to in self.below[a]:
                # only a forward of a pending detour matters: one before it means b had the
                # tick before (excused)
                self.forwarded.update((a, p, t) for t in ticks if (a, p, t) in detours)
            return False
        known = self.sent_to.get((to, p))
        if known is None:
            known = self.sent_to[(to, p)] = set()
        if not w.retransmission and a != to and self.cell_of.get(a) == self.cell_of[to]:
            for t in ticks:
                ck = (a, to, p, t)
                self.copies[ck] = self.copies.get(ck, 0) + 1
                if t in known or (to, p, t) in self.detours:
                    continue
                if self.acked.get((self.cell_of[to], p), -1) >= t:
                    continue
                self.detours[(to, p, t)] = r
        known.update(ticks)
        return False

    def _on_drop(self, r: TraceRecord) -> bool:
        d = r.detail
        w: Wire = d.wire
        if w.kind != "data" or w.retransmission or w.pubend is None or d.to not in self.ibs:
            return False
        if self.cell_of.get(d.sender) != self.cell_of[d.to]:
            return False
        for t in w.data_ticks:
            ck = (d.sender, d.to, w.pubend, t)
            self.dropped[ck] = self.dropped.get(ck, 0) + 1
        return False

    def _on_fault(self, r: TraceRecord) -> bool:
        d = r.detail
        kind = d.kind
        named = fault_nodes(kind, d.target)
        if not named:
            return False
        if kind in NODE_FAULTS and d.target in self.ibs:
            # a crash loses the istream: what the broker was sent before is forgotten
            for key in [k for k in self.sent_to if k[0] == d.target]:
                del self.sent_to[key]
        ident = (kind, d.target)
        for b, near in self.watch.items():
            if not named & near:
                continue
            if kind in LINK_FAULTS and not (b in named and named & self.below[b]):
                continue  # a link of b's other than into a cell below, or one not of b's
            if kind == "partition" and all((x in named) == (b in named) for x in self.below[b]):
                continue  # b and every broker below on one side
            active = self.active[b]
            if d.phase == "end":
                active.discard(ident)
            else:
                active.add(ident)
            self.last_fault[b] = r.time
        return False

    # ------------------------------------------------------------------ judgement

    def finish(self, end: TraceRecord) -> bool:
        for (b, p, t), r in sorted(self.detours.items(), key=lambda kv: kv[1].seq):
            if (b, p, t) in self.forwarded:
                continue
            if self.active[b] or self.last_fault.get(b, -1) >= r.time:
                continue  # a fault near b since the detour: b may have found no way down
            a = r.node
            if self.copies.get((a, b, p, t), 0) <= self.dropped.get((a, b, p, t), 0):
                continue  # every copy lost on the way
            return self._lost(r, a, b, p, t, end)
        return False

    def _lost(self, r: TraceRecord, a: str, b: str, p: str, t: int, end: TraceRecord) -> bool:
        cell = self.cell_of[b]
        return self.report.fail(
            "sideways_forwarded",
            b,
            f"{a} routed data tick {t} of {p} sideways to its cell neighbour {b} at {r.time}µs "
            f"(first-time, delivered), and {b} never sent it first-time to a broker below cell "
            f"{cell}, with no fault near {b} since and nothing below having acked it: a detour "
            "round a lost link is forwarded into the cell it is for by the neighbour that has a "
            "link there, not silently dropped [GD §3.1]",
            end,
            pubend=p,
            tick=t,
            events=(r,),
        )
