"""GD's SHB ack rule as a plug-in: what an SHB delivered is acked within the ack delay
[GD §2.1.1, §3.1, §3.2].

Theory of operation
-------------------
"A subend acks the prefix it has delivered" [GD §2.1.1]; acks flow upstream and are
consolidated there [GD §3.1]. The kit bounds *when*: an SHB sends its delivered prefix up at
most once per ``ack_delay_us`` (one ack timer per broker, armed by the first delivery that
finds it idle, issue 17), and at once when the pubend asks with ``AckExpected`` [GD §3.2].
AckExpected is the pubend's *liveness* backstop, sent only AET (10 s by default) after a tick:
an SHB whose acks wait for it holds every upstream log and istream for AET instead of
``ack_delay_us`` — nothing a subscriber sees, and no delivery invariant fails (issue 18: a
mutant of the SHB's in-order shortcut that never armed the ack timer passed 300 demo
schedules).

``shb_ack_timing`` judges the rule from the trace alone — the ``deliver`` records, the SHB's
``send`` records of acks, and the ``fault`` records — with ``ack_delay_us`` from the
context: **a tick ``t`` of pubend ``p`` that SHB ``s`` delivers at time ``τ`` is covered by
an ack ``ack(T >= t)`` of ``p`` that ``s`` sends no later than ``τ + ack_delay_us``** (an
earlier ack that already covers it counts). Excused, so never a false alarm:

* a fault that can stop ``s`` sending its ack up, active at any time in
  ``[τ, τ + ack_delay_us]``: a crash, stall or failure of ``s`` (its timer is lost or late) or
  of a broker of a cell above ``s``'s cell (``s`` is told the link is down and may have no
  up link left), a failed or stalled link of ``s``, a partition that names ``s`` or such a
  broker;
* a pubend with no cell above ``s`` for it (``s`` hosts it or shares its cell: nothing to ack
  to), and a role other than ``shb`` (the pubend host and the IBs ack by the ack-consolidation
  rule, ``ack_consolidation``);
* deadlines past the end of the trace (not judged).

It needs the context's ``ack_delay_us`` (a trace file without it, or a binding without an ack
delay, leaves the rule unjudged). The best-effort roles send no acks [GD §4.1]: a campaign of
them does not switch the rule on.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Mapping
from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.plugin import Ledger, Plugin, Report, fault_nodes

__all__ = ["NAMES", "GDShbAckTiming"]

NAMES: Final = ("shb_ack_timing",)


@final
class GDShbAckTiming(Plugin):
    """``shb_ack_timing`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"deliver", "send", "fault"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        ctx = self.ctx
        self.delay = ctx.ack_delay_us
        self.enabled = self.delay is not None
        self.wait: int = self.delay or 0
        cell_of = dict(ctx.cell_of)
        parents: dict[str, str] = {down: up for up, down in ctx.cell_tree}
        host_cell = {p: cell_of.get(h, h) for p, h in ctx.pubend_host.items()}
        brokers: dict[str, set[str]] = {}
        for b, c in cell_of.items():
            brokers.setdefault(c, set()).add(b)
        self.shbs = frozenset(n for n, role in ctx.roles.items() if role == "shb")
        #: SHB -> the pubends it acks upstream (its cell has a cell above it for them)
        self.acks_for: dict[str, frozenset[str]] = {}
        #: SHB -> the brokers whose faults excuse it: itself and the brokers of the cells above
        self.watch: dict[str, frozenset[str]] = {}
        for s in sorted(self.shbs):
            c = cell_of.get(s, s)
            above: set[str] = set()
            up = parents.get(c)
            while up is not None:
                above.add(up)
                up = parents.get(up)
            self.acks_for[s] = frozenset(
                p for p, hc in host_cell.items() if hc != c and hc in above
            )
            near = {s}
            if c in parents:
                near |= brokers.get(parents[c], set())
            self.watch[s] = frozenset(near)
        #: (SHB, pubend) -> the highest ack sent
        self.acked: dict[tuple[str, str], int] = {}
        #: (SHB, pubend) -> deliveries not covered yet: (time, tick, record), in time order
        self.due: dict[tuple[str, str], deque[tuple[int, int, TraceRecord]]] = {}
        #: the earliest delivery time waiting in :attr:`due` (None: none waits)
        self.soonest: int | None = None
        #: SHB -> its excusing faults active now, and the closed intervals one was active
        self.active: dict[str, set[tuple[str, str]]] = {s: set() for s in self.shbs}
        self.since: dict[str, int] = dict.fromkeys(self.shbs, 0)
        self.busy: dict[str, list[tuple[int, int]]] = {s: [] for s in self.shbs}

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        return {"deliver": self._on_deliver, "send": self._on_send, "fault": self._on_fault}

    # ------------------------------------------------------------------ facts

    def _on_deliver(self, r: TraceRecord) -> bool:
        if not self.enabled:
            return False
        s = r.node
        d = r.detail
        p = d.pubend
        if p not in self.acks_for.get(s, ()):
            return self._judge(r.time, r)
        key = (s, p)
        t = d.tick
        if t > self.acked.get(key, -1):
            q = self.due.get(key)
            if q is None:
                q = self.due[key] = deque()
            q.append((r.time, t, r))
            if self.soonest is None:
                self.soonest = r.time
        return self._judge(r.time, r)

    def _on_send(self, r: TraceRecord) -> bool:
        if not self.enabled:
            return False
        # deadlines before this record are judged first: an ack sent after one is late
        soonest = self.soonest
        if soonest is not None and soonest + self.wait < r.time and self._judge(r.time, r):
            return True
        w: Wire = r.detail.wire
        if w.kind != "ack" or r.node not in self.shbs:
            return False
        if w.pubend is not None and w.upto is not None:
            key = (r.node, w.pubend)
            if w.upto > self.acked.get(key, -1):
                self.acked[key] = w.upto
                q = self.due.get(key)
                while q and q[0][1] <= w.upto:
                    q.popleft()
        return False

    def _on_fault(self, r: TraceRecord) -> bool:
        if not self.enabled:
            return False
        d = r.detail
        named = fault_nodes(d.kind, d.target)
        if named:
            ident = (d.kind, d.target)
            for s, near in self.watch.items():
                if not named & near:
                    continue
                active = self.active[s]
                if not active:
                    self.since[s] = r.time
                if d.phase == "end":
                    active.discard(ident)
                else:
                    active.add(ident)
                if not active:
                    self.busy[s].append((self.since[s], r.time))
        return self._judge(r.time, r)

    def finish(self, end: TraceRecord) -> bool:
        return self.enabled and self._judge(end.time, end)

    # ------------------------------------------------------------------ judgements

    def _excused(self, s: str, lo: int, hi: int) -> bool:
        """Whether an excusing fault of ``s`` was active at some time in ``[lo, hi]``."""
        if self.active[s] and self.since[s] <= hi:
            return True
        busy = self.busy[s]
        # the intervals are appended in time order and do not overlap: the first one ending
        # at or after lo is the only candidate that can start by hi
        i = bisect.bisect_left(busy, lo, key=lambda iv: iv[1])
        return i < len(busy) and busy[i][0] <= hi

    def _judge(self, now: int, r: TraceRecord) -> bool:
        """Judge every delivery whose deadline passed before ``now``."""
        soonest = self.soonest
        assert self.delay is not None
        delay = self.delay
        if soonest is None or soonest + delay >= now:
            return False
        first: int | None = None
        for key, q in self.due.items():
            while q:
                tau, t, rec = q[0]
                if tau + delay >= now:
                    if first is None or tau < first:
                        first = tau
                    break
                q.popleft()
                if t <= self.acked.get(key, -1) or self._excused(key[0], tau, tau + delay):
                    continue
                self.soonest = None
                return self._late(key, tau, t, rec, r)
        self.soonest = first
        return False

    def _late(
        self, key: tuple[str, str], tau: int, t: int, rec: TraceRecord, r: TraceRecord
    ) -> bool:
        s, p = key
        assert self.delay is not None
        acked = self.acked.get(key, -1)
        return self.report.fail(
            "shb_ack_timing",
            s,
            f"{s} delivered tick {t} of {p} at {tau}µs but sent no ack(T >= {t}) of {p} by "
            f"{tau + self.delay}µs (ack_delay_us = {self.delay}µs later; its highest ack so far "
            f"is {acked}): an SHB acks its delivered prefix within the ack delay "
            "[GD §2.1.1, §3.1], not only when AckExpected asks [GD §3.2]",
            r,
            pubend=p,
            tick=t,
            events=(rec,),
        )
