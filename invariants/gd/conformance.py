"""GD's wire-conformance invariants as one plug-in over the ledger [GD §3.1].

Theory of operation
-------------------
Judged from the ``send`` records' wire summaries (:class:`~gapless.impl.trace.Wire`), the
ledger's connections and logged ticks, and the ``fault`` records:

* ``nack_consolidation`` — an intermediate broker never sends upstream a nack overlapping one
  it sent upstream less than the minimum repetition interval before (nacks sent at the same
  instant to several brokers of the upstream cell count as one; a crash or stall of the broker
  forgets its history, as its istream is gone);
* ``ack_consolidation`` — an intermediate broker acks tick t upstream only once every
  downstream cell that needed t acked it (a cell needs t if a connection below it that was
  live when t was published, and still is, matches it); an SHB acks t only once every such
  connection it hosts delivered t;
* ``retransmission_targets`` — a retransmitted knowledge message goes only to a broker that
  nacked an overlapping tick of that pubend from the sender (or to a cell neighbour: sideways
  routing [GD §3.1]);
* ``silence_targets`` — a first-time silence message likewise.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.plugin import Conn, Ledger, Plugin, Report

__all__ = ["NAMES", "GDConformance"]

NAMES: Final = (
    "nack_consolidation",
    "ack_consolidation",
    "retransmission_targets",
    "silence_targets",
)


def _overlaps(ranges: Iterable[tuple[int, int]], lo: int, hi: int) -> bool:
    return any(a <= hi and lo <= b for a, b in ranges)


def _span(w: Wire) -> list[tuple[int, int]]:
    out = [(t, t) for t in w.data_ticks]
    out.extend(w.final_ranges)
    return out


@final
class GDConformance(Plugin):
    """GD's wire-conformance invariants (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"send", "fault"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.on = report.on
        self._fail = report.fail
        self.nack_hist: dict[tuple[str, str], list[tuple[int, tuple[tuple[int, int], ...]]]] = {}
        self.nacked: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        self.ack_checked: dict[tuple[str, str], int] = {}
        # SHBs -> (ledger.conn_epoch, their live connections by subscriber): the same until
        # the next connect or disconnect record
        self._live: dict[tuple[str, ...], tuple[int, tuple[Conn, ...]]] = {}

    def _live_at(self, shbs: tuple[str, ...]) -> tuple[Conn, ...]:
        """The live connections at the SHBs ``shbs``, sorted by subscriber."""
        ledger = self.ledger
        got = self._live.get(shbs)
        if got is not None and got[0] == ledger.conn_epoch:
            return got[1]
        live = sorted(
            (c for c in ledger.conns.values() if c.live and c.shb in shbs), key=lambda c: c.sub
        )
        self._live[shbs] = (ledger.conn_epoch, tuple(live))
        return tuple(live)

    def observe(self, r: TraceRecord) -> bool:
        if r.kind == "send":
            return self._on_send(r)
        return self._on_fault(r)

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        return {"send": self._on_send, "fault": self._on_fault}

    def _on_fault(self, r: TraceRecord) -> bool:
        d = r.detail
        if d.kind in ("crash", "stall_broker") and d.phase in ("start", "fail"):
            # a crashed broker's istream is gone: its nack history restarts
            for key in [key for key in self.nack_hist if key[0] == d.target]:
                del self.nack_hist[key]
        return False

    def _on_send(self, r: TraceRecord) -> bool:
        w: Wire = r.detail.wire
        to = r.detail.to
        src = r.node
        kind = w.kind
        pubend = w.pubend
        if pubend is None:
            return False
        if kind == "nack":
            return self._on_nack(r, w, src, to, pubend)
        if kind == "ack":
            return self._on_ack(r, w, src, to, pubend)
        retrans = w.retransmission
        if not retrans and kind != "silence":
            return False  # first-time data (or not knowledge at all)
        if kind not in ("data", "silence"):
            return False  # not knowledge
        name = "retransmission_targets" if retrans else "silence_targets"
        if not self.on[name]:
            return False
        req = self.ledger.requested.get(pubend, {})
        for t in w.data_ticks:
            if t not in req:
                return False  # data the pubend never logged: no_e's to judge
        cell_of = self.ctx.cell_of
        if cell_of.get(to) == cell_of.get(src):
            return False
        asked = self.nacked.get((to, src, pubend), [])
        span = _span(w)
        if not span:
            return False
        if not any(_overlaps(asked, lo, hi) for lo, hi in span):
            what = "retransmission" if retrans else "first-time silence"
            return self._fail(
                name,
                src,
                f"{what} of {pubend} ticks {span[:3]}... sent to {to}, which never "
                f"nacked an overlapping tick from {src}",
                r,
                pubend=pubend,
                tick=span[0][0],
            )
        return False

    def _on_nack(self, r: TraceRecord, w: Wire, src: str, to: str, pubend: str) -> bool:
        self.nacked.setdefault((src, to, pubend), []).extend(w.nack_ranges)
        if self.ctx.roles.get(src) != "ib":
            return False
        src_cell = self.ctx.cell_of.get(src)
        to_cell = self.ctx.cell_of.get(to)
        if src_cell is None or to_cell not in self.ledger.up_cells.get(src_cell, set()):
            return False
        hist = self.nack_hist.setdefault((src, pubend), [])
        window = self.ctx.min_repetition_us
        hist[:] = [(t, rs) for t, rs in hist if r.time - t < window]
        for t0, rs in hist:
            if t0 == r.time:
                continue
            for lo, hi in w.nack_ranges:
                if _overlaps(rs, lo, hi):
                    return self._fail(
                        "nack_consolidation",
                        src,
                        f"nack of {pubend} [{lo}, {hi}] sent upstream to {to} {r.time - t0}µs "
                        "after "
                        f"an overlapping nack (minimum repetition interval {window}µs)",
                        r,
                        pubend=pubend,
                        tick=max(lo, next(a for a, b in rs if a <= hi and lo <= b)),
                    )
        hist.append((r.time, tuple(w.nack_ranges)))
        return False

    def _on_ack(self, r: TraceRecord, w: Wire, src: str, to: str, pubend: str) -> bool:
        upto = w.upto
        if upto is None or not self.on["ack_consolidation"]:
            return False
        ck = (src, pubend)
        prev = self.ack_checked.get(ck, -1)
        if upto <= prev:
            return False
        ticks = self.ledger.logged_sorted.get(pubend, [])
        lo = bisect.bisect_right(ticks, prev)
        hi = bisect.bisect_right(ticks, upto)
        role = self.ctx.roles.get(src)
        if role == "shb":
            if self._shb_early(r, src, to, pubend, upto, ticks[lo:hi]):
                return True
        elif role == "ib" and self._ib_early(r, src, to, pubend, upto, ticks, lo, hi):
            return True
        self.ack_checked[ck] = upto
        return False

    def _shb_early(
        self, r: TraceRecord, src: str, to: str, pubend: str, upto: int, ticks: list[int]
    ) -> bool:
        """An SHB acked a tick some live connection it hosts needed but was not delivered."""
        ledger = self.ledger
        if not ticks:
            return False
        # only connections that miss one of these ticks can be owed one (a C-level superset
        # test per distinct set of delivered ticks — a cohort's members share one — in the
        # order below); the rest were delivered every tick
        live: list[Conn] = []
        full: dict[int, bool] = {}
        for c in self._live_at((src,)):
            seen = c.seen.get(pubend)
            if seen is not None:
                got = full.get(id(seen))
                if got is None:
                    got = full[id(seen)] = seen.issuperset(ticks)
                if got:
                    continue
            live.append(c)
        for t in ticks:
            pt = None
            for c in live:
                if t in c.seen.get(pubend, ()):
                    continue
                if pt is None:
                    pt = ledger.publish_time(pubend, t)
                if pt is not None and pt > c.start and ledger.matches(c.filter, pubend, t):
                    return self._fail(
                        "ack_consolidation",
                        src,
                        f"acked {pubend} up to {upto} upstream to {to} before delivering "
                        f"tick {t} to {c.sub} (connection {c.n})",
                        r,
                        pubend=pubend,
                        tick=t,
                        events=(ledger.logged[pubend][t][2],),
                    )
        return False

    def _ib_early(
        self,
        r: TraceRecord,
        src: str,
        to: str,
        pubend: str,
        upto: int,
        ticks: list[int],
        lo: int,
        hi: int,
    ) -> bool:
        """An IB acked a tick some downstream cell needed but had not acked."""
        ledger = self.ledger
        src_cell = self.ctx.cell_of.get(src, src)
        for down in sorted(ledger.down_cells.get(src_cell, ())):
            got = ledger.acked_from_cell.get((down, src_cell, pubend), -1)
            live = self._live_at(ledger.shbs_below(down))
            if not live:
                continue
            for t in ticks[max(lo, bisect.bisect_right(ticks, got)) : hi]:
                pt = ledger.publish_time(pubend, t)
                if pt is None:
                    continue
                if any(pt > c.start and ledger.matches(c.filter, pubend, t) for c in live):
                    return self._fail(
                        "ack_consolidation",
                        src,
                        f"acked {pubend} up to {upto} upstream to {to}, but downstream cell "
                        f"{down} (which needs tick {t}) acked only up to {got}",
                        r,
                        pubend=pubend,
                        tick=t,
                    )
        return False
