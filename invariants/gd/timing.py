"""GD's pubend-driven liveness rule as a plug-in: AckExpected neither early nor late [GD §3.2].

Theory of operation
-------------------
"The pubend expects all ticks that are more than AET interval before the current time to be
acked. If they are not, it sends an AckExpected message with a timestamp T equal to the
current time minus AET. The message flows down on all paths that have not acked up to T"
[GD §3.2]. The pubend checks this condition periodically (``GDConfig.ack_expected_period_us``,
our reading: the paper names no period). ``ack_expected_timing`` judges the rule from the
trace alone — the ``send`` and ``drop`` records of AckExpected and acks, the ``persist``
records that give a pubend's ticks, and the ``fault`` records:

* **never early** — an ``AckExpected(T)`` the pubend host sends at time ``now`` has
  ``T <= now - AET`` (it may not expect ticks younger than AET acked). One exception, from
  [GD §4.2] (Figure 8):
  at the instant it restarts, the pubend sends ``AckExpected`` of the last tick it logged —
  allowed when ``T`` is a tick the pubend asked to log;
* **never late** — a tick ``t`` the pubend asked to log (so it holds D there, or will once
  logged), whose message the filter of the edge into a downstream cell ``c`` passes (a tick
  the filter rejects is A for ``c`` at once [GD §2.4, §3.1]), and for which no ack ``>= t``
  from ``c`` reached the host (an ack reaches it when it was sent there and not dropped)
  must be covered by an ``AckExpected(T >= t)`` sent towards ``c`` within one period of
  ``lo``, where ``lo`` is ``t + AET`` or, if later, the end of the last fault since ``t``
  that could stop the pubend sending there: a crash, stall or failure of the host or of a
  broker of ``c``, a failed or stalled link between them, a partition separating them (at a
  restart the pubend sends AckExpected at once and its period starts anew). Loss,
  duplication, reordering and faults elsewhere excuse nothing: they are what leaves ticks
  unacked. A tick waits while such a fault is active; deadlines past the end of the trace
  are not judged. It assumes
  ``AET >= period`` (the configuration's validators allow nothing else in the shipped
  configurations; otherwise only the early half is judged).

The trace does not say when an ack *arrives*, only that it was sent and whether the network
dropped it, so whether a path "has not acked up to T" (which decides where AckExpected goes)
is not judged; an ack still in flight at a deadline counts as arrived, which can only excuse
the pubend, never accuse it.
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.gd.traffic import readers
from gapless.invariants.plugin import NODE_FAULTS, Ledger, Plugin, Report, fault_nodes

__all__ = ["NAMES", "GDAckExpectedTiming"]

NAMES: Final = ("ack_expected_timing",)


@final
class GDAckExpectedTiming(Plugin):
    """``ack_expected_timing`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"send", "drop", "persist", "fault"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        ctx = self.ctx
        self.aet = ctx.aet_us
        self.period = ctx.ack_expected_period_us
        self.enabled = self.aet is not None and self.period is not None
        self.late_on = self.enabled and (self.aet or 0) >= (self.period or 0)
        self.host_of = dict(ctx.pubend_host)
        self.pubends_at: dict[str, tuple[str, ...]] = {}
        for p, h in sorted(ctx.pubend_host.items()):
            self.pubends_at[h] = (*self.pubends_at.get(h, ()), p)
        cell_of = ctx.cell_of
        self.children: dict[str, tuple[str, ...]] = {
            p: tuple(sorted(ledger.down_cells.get(cell_of.get(h, h), ())))
            for p, h in ctx.pubend_host.items()
        }
        brokers: dict[str, set[str]] = {}
        for b, c in cell_of.items():
            brokers.setdefault(c, set()).add(b)
        #: (pubend, cell) -> the nodes whose faults can stop the host sending towards the cell
        self.nodes: dict[tuple[str, str], frozenset[str]] = {
            (p, c): frozenset({h} | brokers.get(c, set()))
            for p, h in ctx.pubend_host.items()
            for c in self.children[p]
        }
        #: (pubend, cell) -> the ``upto`` of every ack sent from the cell to the host, in
        #: send order, and how many of each the network dropped
        self.acks: dict[tuple[str, str], list[int]] = {}
        self.dropped: dict[tuple[str, str, int], int] = {}
        #: (pubend, cell) -> AckExpected sent towards that cell: (time, T), in time order
        self.sent: dict[tuple[str, str], list[tuple[int, int]]] = {}
        #: (pubend, cell) -> ticks to judge, ascending
        self.due: dict[tuple[str, str], deque[int]] = {}
        #: the least first tick of the queues in :attr:`due` (None: all empty): no tick is
        #: due before it plus AET plus one period, so :meth:`_judge_due` skips the scan until
        #: then (a queue's first tick only grows, except when an empty queue gains one)
        self.soonest: int | None = None
        #: per (pubend, cell): the relevant faults active, since when, and the closed
        #: intervals ``(first, last)`` during which one was active or a fault record fell
        self.active: dict[tuple[str, str], set[tuple[str, str]]] = {k: set() for k in self.nodes}
        self.busy_since: dict[tuple[str, str], int] = dict.fromkeys(self.nodes, 0)
        self.busy: dict[tuple[str, str], list[tuple[int, int]]] = {k: [] for k in self.nodes}
        #: (pubend, cell) -> the distinct filters of the subscriptions below the cell reading
        #: the pubend: the edge filter into the cell
        reading = readers(ctx)
        self.filters: dict[tuple[str, str], tuple[str, ...]] = {}
        for p, c in self.nodes:
            below = set(ledger.shbs_below(c))
            self.filters[(p, c)] = tuple(sorted({f for b, f in reading[p] if b in below}))
        #: host -> the time it last restarted
        self.restarted: dict[str, int] = {}
        self.requested_top: dict[str, int] = {}

    def observe(self, r: TraceRecord) -> bool:
        if not self.enabled:
            return False
        kind = r.kind
        if kind == "fault":
            self._on_fault(r)
        elif kind == "persist":
            self._on_persist(r)
            return False
        elif kind == "drop":
            self._on_ack(r, r.detail.wire, r.detail.sender, r.detail.to, -1)
            return False
        else:
            w: Wire = r.detail.wire
            p = w.pubend
            if w.kind == "ack":
                self._on_ack(r, w, r.node, r.detail.to, 1)
            elif (
                w.kind == "ack_expected"
                and p is not None
                and self.host_of.get(p) == r.node
                and self._early(r, w, p)
            ):
                return True
        return self.late_on and self._judge_due(r.time, r)

    def finish(self, end: TraceRecord) -> bool:
        return self.late_on and self._judge_due(end.time, end)

    # ------------------------------------------------------------------ facts

    def _involved(self, kind: str, target: str) -> tuple[set[str], bool]:
        """The nodes a fault involves, and whether it separates them (a link or partition)
        rather than stopping each (a broker fault); empty for faults that cannot stop a send."""
        nodes = set(fault_nodes(kind, target))
        return nodes, bool(nodes) and kind not in NODE_FAULTS

    def _relevant(self, key: tuple[str, str], kind: str, nodes: set[str], cut: bool) -> bool:
        mine = self.nodes[key]
        host = self.host_of[key[0]]
        if not cut:
            return bool(nodes & mine)
        if kind == "partition":
            return any((host in nodes) != (b in nodes) for b in mine - {host})
        return host in nodes and bool((nodes - {host}) & mine)

    def _on_fault(self, r: TraceRecord) -> None:
        d = r.detail
        nodes, cut = self._involved(d.kind, d.target)
        ident = (d.kind, d.target)
        for key in self.nodes:
            if not nodes or not self._relevant(key, d.kind, nodes, cut):
                continue
            active = self.active[key]
            if not active:
                self.busy_since[key] = r.time
            if d.phase == "end":
                active.discard(ident)
            else:
                active.add(ident)
            if not active:
                self.busy[key].append((self.busy_since[key], r.time))
        if d.kind in ("crash", "stall_broker") and d.phase == "end":
            self.restarted[d.target] = r.time

    def _on_persist(self, r: TraceRecord) -> None:
        for p, tick, _attrs in self.ctx.logged_all(r.detail):
            if tick > self.requested_top.get(p, -1):
                self.requested_top[p] = tick
            for c in self.children.get(p, ()):
                q = self.due.setdefault((p, c), deque())
                if not q:
                    q.append(tick)
                    if self.soonest is None or tick < self.soonest:
                        self.soonest = tick
                elif q[-1] < tick:
                    q.append(tick)

    def _on_ack(self, r: TraceRecord, w: Wire, src: str, to: str, sign: int) -> None:
        """An ack sent (``sign`` 1) or dropped (-1) from a downstream cell to a pubend's host."""
        p = w.pubend
        if w.kind != "ack" or p is None or w.upto is None or self.host_of.get(p) != to:
            return
        key = (p, self.ctx.cell_of.get(src, src))
        if key not in self.nodes:
            return
        if sign > 0:
            self.acks.setdefault(key, []).append(w.upto)
        else:
            dk = (*key, w.upto)
            self.dropped[dk] = self.dropped.get(dk, 0) + 1

    def _reached(self, key: tuple[str, str], t: int) -> bool:
        """Whether some ack ``>= t`` from the cell reached the host (sent and not dropped)."""
        sent = self.acks.get(key, ())
        counted: dict[int, int] = {}
        for upto in reversed(sent):
            if upto < t:
                continue
            counted[upto] = counted.get(upto, 0) + 1
            if counted[upto] > self.dropped.get((*key, upto), 0):
                return True
        return False

    # ------------------------------------------------------------------ judgements

    def _early(self, r: TraceRecord, w: Wire, p: str) -> bool:
        upto = w.upto
        if upto is None:
            return False
        assert self.aet is not None
        at_restart = self.restarted.get(r.node) == r.time
        if upto > r.time - self.aet and not (at_restart and upto <= self.requested_top.get(p, -1)):
            return self.report.fail(
                "ack_expected_timing",
                r.node,
                f"AckExpected({upto}) of {p} sent at {r.time}µs: it expects ticks younger "
                f"than AET ({self.aet}µs) acked (allowed: T <= now - AET = {r.time - self.aet}"
                ", or at a restart the last tick the pubend logged)",
                r,
                pubend=p,
                tick=upto,
            )
        c = self.ctx.cell_of.get(r.detail.to, r.detail.to)
        self.sent.setdefault((p, c), []).append((r.time, upto))
        return False

    def _judge_due(self, now: int, r: TraceRecord) -> bool:
        """Judge every queued tick whose deadline has passed by ``now``; a tick waits while a
        relevant fault is active, and its window restarts when the last one ends."""
        assert self.aet is not None
        assert self.period is not None
        aet, period = self.aet, self.period
        soonest = self.soonest
        if soonest is None or soonest + aet + period >= now:
            return False  # every queue's first tick waits (the loop below would break at once)
        late = self._scan(now, r, aet, period)
        self.soonest = min((q[0] for q in self.due.values() if q), default=None)
        return late

    def _scan(self, now: int, r: TraceRecord, aet: int, period: int) -> bool:
        """The loop of :meth:`_judge_due` over every queue."""
        for key, q in self.due.items():
            busy = self.busy[key]
            while q:
                t = q[0]
                if t + aet + period >= now or self.active[key]:
                    break
                lo = t + aet
                if busy and busy[-1][1] >= t:
                    lo = max(lo, busy[-1][1])  # the pubend could send again from then on
                deadline = lo + period
                if deadline >= now:
                    break
                q.popleft()
                if self._late(key, t, lo, deadline, r):
                    return True
        return False

    def _late(self, key: tuple[str, str], t: int, lo: int, deadline: int, r: TraceRecord) -> bool:
        p, c = key
        if self._reached(key, t) or t not in self.ledger.logged.get(p, {}):
            return False  # acked, or never logged (a crash lost it: it is silence now)
        got = self.ledger.attributes(p, t)
        if got is None or not any(self.ctx.matches(f, got) for f in self.filters[key]):
            return False  # not D for the cell: its filter made it F, A at once
        if any(lo <= when <= deadline and upto >= t for when, upto in self.sent.get(key, ())):
            return False
        return self.report.fail(
            "ack_expected_timing",
            self.host_of[p],
            f"tick {t} of {p} was never acked by cell {c}, and the pubend sent it no "
            f"AckExpected(T >= {t}) between {lo}µs (t + AET, or the end of the last fault "
            f"that could stop it) and {deadline}µs (one AckExpected period later)",
            r,
            pubend=p,
            tick=t,
        )
