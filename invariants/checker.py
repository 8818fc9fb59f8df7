"""Every trace invariant, checked incrementally (online) or over a recorded trace (offline).

Theory of operation
-------------------
:class:`Checker` consumes :class:`~gapless.impl.trace.TraceRecord` values one at a time
(:meth:`Checker.observe`) and judges them against what *should* happen, computed from the
workload (the ``publish`` records, the subscriptions' filters evaluated with the reference
evaluator the caller passes in ``CheckContext.matches``) and the observable effects — never a
role's internal state (DESIGN.md). After the run, :meth:`Checker.finish` judges liveness.
Offline checking (:func:`check_trace`) feeds a recorded trace through the same object, so
online and offline verdicts agree by construction.

Delivery invariants [GD §2.3], per subscriber *connection* (GD is non-durable: a reconnect,
or the SHB's crash, starts a new connection; guarantees hold within each):

* ``safety`` — a delivered message matches the subscriber's filter (the OR over paths of the
  AND of the filters along each path: our topologies derive every edge filter from the
  subscriptions below it, so each path predicate is the subscriber's own filter) and is
  delivered on a live connection;
* ``order`` — ticks strictly increase per connection per pubend (publisher order);
* ``total_order`` — for subscribers of a merged stream, ticks strictly increase across all
  merged pubends, so every subscriber sees the same relative order;
* ``logged_first`` — a delivered tick was durably logged (``persisted``) by its pubend first
  [GD §2.2];
* ``gapless`` — no logged matching message between two delivered ones (or published after the
  connection began and before its first delivery) is skipped;
* ``exactly_once`` — no tick is delivered twice on one connection;
* ``no_e`` — nothing reaches E: every data tick on the wire is a tick its pubend logged, and a
  delivered payload equals the logged one [GD §2.1, §2.2];
* ``liveness`` — after heal and drain, every logged message matching a live connection and
  published after it began was delivered, and every pubend received acks reaching its last
  logged tick that some subscription matches (later ticks match no one: the PHB's own edge
  filter finalises them, so no ack for them crosses the wire) [GD §2.3, §3.2].

Conformance invariants, judged from the wire [GD §3.1]:

* ``nack_consolidation`` — an intermediate broker never sends upstream a nack overlapping one
  it sent upstream less than the minimum repetition interval before (nacks sent at the same
  instant to several brokers of the upstream cell count as one);
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
from typing import Any, final

import attrs

from gapless.impl.effects import DeliverCohort, Persist
from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants import INVARIANTS
from gapless.invariants.violation import Violation

__all__ = ["CheckContext", "Checker", "SubscriptionInfo", "check_trace"]


@final
@attrs.frozen(kw_only=True)
class SubscriptionInfo:
    """A subscriber as the workload defines it."""

    name: str
    shb: str
    filter: str
    order: str = "publisher"


@final
@attrs.frozen(kw_only=True)
class CheckContext:
    """What the invariants know besides the trace: the workload's subscriptions, the
    topology as plain data (broker -> cell, the cell tree, pubend -> host, merged pubends),
    the minimum nack repetition interval, the reference filter evaluator and the binding's
    decoders for ``Persist`` effects and delivered payloads."""

    subscriptions: tuple[SubscriptionInfo, ...]
    cell_of: Mapping[str, str]
    cell_tree: tuple[tuple[str, str], ...]
    pubend_host: Mapping[str, str]
    merged: tuple[str, ...]
    roles: Mapping[str, str]
    min_repetition_us: int
    matches: Callable[[str, Mapping[str, Any]], bool]
    logged: Callable[[Persist], tuple[str, int, Mapping[str, Any]] | None]
    payload_attributes: Callable[[Any], Mapping[str, Any] | None]


@final
class _Conn:
    __slots__ = (
        "filter",
        "last",
        "last_any",
        "live",
        "n",
        "records",
        "seen",
        "shb",
        "start",
        "sub",
    )

    def __init__(self, sub: str, shb: str, n: int, flt: str, start: int) -> None:
        self.sub = sub
        self.shb = shb
        self.n = n
        self.filter = flt
        self.start = start
        self.live = True
        self.last: dict[str, int] = {}
        self.last_any = -1
        self.seen: dict[str, set[int]] = {}
        self.records: dict[str, TraceRecord] = {}


def _overlaps(ranges: Iterable[tuple[int, int]], lo: int, hi: int) -> bool:
    return any(a <= hi and lo <= b for a, b in ranges)


def _span(w: Wire) -> list[tuple[int, int]]:
    out = [(t, t) for t in w.data_ticks]
    out.extend(w.final_ranges)
    return out


@final
class Checker:
    """Online checker of the invariants ``names`` (empty = all); see module doc."""

    def __init__(self, ctx: CheckContext, names: Iterable[str] = ()) -> None:
        chosen = tuple(names) or INVARIANTS
        self.on = {n: (n in chosen) for n in INVARIANTS}
        self.ctx = ctx
        self.violation: Violation | None = None
        self.subs = {s.name: s for s in ctx.subscriptions}
        self.merged = set(ctx.merged)
        # publish side
        self.published: dict[tuple[str, int], TraceRecord] = {}
        self.persist_key: dict[
            tuple[str, Any], tuple[str, int, Mapping[str, Any], TraceRecord]
        ] = {}
        self.requested: dict[str, set[int]] = {}
        self.logged: dict[str, dict[int, tuple[Mapping[str, Any], int, TraceRecord]]] = {}
        self.logged_sorted: dict[str, list[int]] = {}
        # connections
        self.conns: dict[str, _Conn] = {}
        self.all_conns: list[_Conn] = []
        # wire
        self.nack_hist: dict[tuple[str, str], list[tuple[int, tuple[tuple[int, int], ...]]]] = {}
        self.nacked: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        self.acked_from_cell: dict[tuple[str, str, str], int] = {}
        self.ack_checked: dict[tuple[str, str], int] = {}
        self.pubend_acked: dict[str, int] = {}
        self.down_cells: dict[str, tuple[str, ...]] = {}
        for up, down in ctx.cell_tree:
            self.down_cells[up] = (*self.down_cells.get(up, ()), down)
        self.up_cells: dict[str, set[str]] = {}
        for up, down in ctx.cell_tree:
            self.up_cells.setdefault(down, set()).add(up)
        self.shbs_below: dict[str, tuple[str, ...]] = {}
        self._match_cache: dict[tuple[str, str, int], bool] = {}
        self._pt_cache: dict[tuple[str, int], int | None] = {}

    # ------------------------------------------------------------------ helpers

    def _fail(
        self,
        name: str,
        subject: str,
        msg: str,
        r: TraceRecord,
        *,
        pubend: str | None = None,
        tick: int | None = None,
        events: Iterable[TraceRecord | None] = (),
    ) -> bool:
        if not self.on[name] or self.violation is not None:
            return False
        evs = tuple(e for e in events if e is not None)
        if r not in evs:
            evs = (*evs, r)
        self.violation = Violation(
            invariant=name,
            subject=subject,
            message=msg,
            time=r.time,
            pubend=pubend,
            tick=tick,
            events=evs,
        )
        return True

    def _matches(self, flt: str, pubend: str, tick: int) -> bool:
        key = (flt, pubend, tick)
        hit = self._match_cache.get(key)
        if hit is None:
            attrs_ = self.logged[pubend][tick][0]
            hit = bool(self.ctx.matches(flt, attrs_))
            self._match_cache[key] = hit
        return hit

    def _pub_time(self, pubend: str, attrs_: Mapping[str, Any]) -> int | None:
        n = attrs_.get("n")
        if isinstance(n, int):
            rec = self.published.get((pubend, n))
            if rec is not None:
                return rec.time
        return None

    def _below(self, cell: str) -> tuple[str, ...]:
        got = self.shbs_below.get(cell)
        if got is None:
            out: set[str] = set()
            todo = [cell]
            while todo:
                c = todo.pop()
                out.update(
                    b
                    for b, bc in self.ctx.cell_of.items()
                    if bc == c and self.ctx.roles.get(b) == "shb"
                )
                todo.extend(self.down_cells.get(c, ()))
            got = tuple(sorted(out))
            self.shbs_below[cell] = got
        return got

    def publish_time(self, pubend: str, tick: int) -> int | None:
        """When the message logged at ``(pubend, tick)`` was published (None if unknown)."""
        key = (pubend, tick)
        got = self._pt_cache.get(key, -1)
        if got != -1:
            return got
        entry = self.logged.get(pubend, {}).get(tick)
        if entry is None:
            return None
        got = self._pub_time(pubend, entry[0])
        if got is not None:  # a known publish time never changes
            self._pt_cache[key] = got
        return got

    # ------------------------------------------------------------------ observe

    def observe(self, r: TraceRecord) -> bool:
        """Judge one record; True when it revealed a violation (see :attr:`violation`)."""
        if self.violation is not None:
            return True
        k = r.kind
        if k == "send":
            return self._on_send(r)
        if k == "deliver":
            return self._on_deliver(r)
        if k == "publish":
            d = r.detail
            self.published[(d.pubend, d.index)] = r
        elif k == "persist":
            got = self.ctx.logged(r.detail)
            if got is not None:
                pubend, tick, attrs_ = got
                self.persist_key[(r.node, r.detail.key)] = (pubend, tick, attrs_, r)
                self.requested.setdefault(pubend, set()).add(tick)
        elif k == "persisted":
            entry = self.persist_key.get((r.node, r.detail.key))
            if entry is not None:
                pubend, tick, attrs_, _pr = entry
                table = self.logged.setdefault(pubend, {})
                if tick not in table:
                    table[tick] = (attrs_, r.time, r)
                    bisect.insort(self.logged_sorted.setdefault(pubend, []), tick)
        elif k == "connect":
            d = r.detail
            c = _Conn(d.subscriber, r.node, d.connection, d.filter, r.time)
            self.conns[d.subscriber] = c
            self.all_conns.append(c)
        elif k == "disconnect":
            old = self.conns.get(r.detail.subscriber)
            if old is not None:
                old.live = False
        elif k == "fault":
            d = r.detail
            if d.kind in ("crash", "stall_broker") and d.phase in ("start", "fail"):
                # a crashed broker's istream is gone: its nack history restarts
                for key in [key for key in self.nack_hist if key[0] == d.target]:
                    del self.nack_hist[key]
        return self.violation is not None

    def _on_deliver(self, r: TraceRecord) -> bool:
        """Judge a delivery (one ``Deliver``, or a ``DeliverCohort``: the message-level checks
        once, the per-connection ones for each subscriber). Each check that is switched off
        lets the others still run."""
        d = r.detail
        if type(d) is DeliverCohort:
            pubend, tick = d.pubend, d.tick
            entry = self._judge_message(r, d.to[0][0], pubend, tick, d.payload)
            if self.violation is not None:
                return True
            return self._deliver_cohort(r, d.to, pubend, tick, entry)
        entry = self.logged.get(d.pubend, {}).get(d.tick)
        return self._deliver_one(r, d.subscriber, d.connection, d.pubend, d.tick, entry, False)

    def _deliver_cohort(
        self,
        r: TraceRecord,
        to: tuple[tuple[str, int], ...],
        pubend: str,
        tick: int,
        entry: tuple[Mapping[str, Any], int, TraceRecord] | None,
    ) -> bool:
        """Each member of a cohort: a fast path for the common case (live connection,
        matching filter, a new tick above the last one, nothing logged in between), which
        applies exactly the bookkeeping of :meth:`_deliver_one`; anything else goes through
        :meth:`_deliver_one`, which judges it in full."""
        conns = self.conns
        node = r.node
        merged = pubend in self.merged
        gapless = self.on["gapless"]
        ticks = self.logged_sorted.get(pubend, [])
        tick_lo = bisect.bisect_left(ticks, tick)
        matched: dict[str, bool] = {}
        for sub, conn in to:
            c = conns.get(sub)
            ok = (
                entry is not None
                and c is not None
                and c.live
                and c.n == conn
                and c.shb == node
                and tick > c.last.get(pubend, -1)
                and not (merged and tick <= c.last_any)
            )
            if ok:
                assert c is not None
                m = matched.get(c.filter)
                if m is None:
                    m = matched[c.filter] = self._matches(c.filter, pubend, tick)
                seen = c.seen.get(pubend)
                ok = m and (seen is None or tick not in seen)
                if ok and gapless:
                    # no logged tick strictly between the last delivery and this one
                    ok = bisect.bisect_right(ticks, c.last.get(pubend, -1)) >= tick_lo
            if not ok:
                if self._deliver_one(r, sub, conn, pubend, tick, entry, True):
                    return True
                continue
            assert c is not None
            if seen is None:
                seen = c.seen[pubend] = set()
            seen.add(tick)
            c.last[pubend] = tick
            c.records[pubend] = r
            if merged:
                c.last_any = tick
        return False

    def _judge_message(
        self, r: TraceRecord, sub: str, pubend: str, tick: int, payload: Any
    ) -> tuple[Mapping[str, Any], int, TraceRecord] | None:
        """``logged_first`` and ``no_e`` of a delivered message; its log entry."""
        entry = self.logged.get(pubend, {}).get(tick)
        if entry is None:
            self._fail(
                "logged_first",
                sub,
                f"tick {tick} of {pubend} delivered before its pubend durably logged it",
                r,
                pubend=pubend,
                tick=tick,
                events=(self._persist_record(pubend, tick),),
            )
            return None
        attrs_, _lt, lrec = entry
        got = self.ctx.payload_attributes(payload)
        if got is not None and got is not attrs_ and dict(got) != dict(attrs_):
            self._fail(
                "no_e",
                sub,
                f"delivered payload {dict(got)!r} differs from the logged {dict(attrs_)!r} "
                "(D(a) ⊔ D(b) = E)",
                r,
                pubend=pubend,
                tick=tick,
                events=(lrec,),
            )
        return entry

    def _deliver_one(
        self,
        r: TraceRecord,
        sub: str,
        connection: int,
        pubend: str,
        tick: int,
        entry: tuple[Mapping[str, Any], int, TraceRecord] | None,
        judged: bool,
    ) -> bool:
        """The per-connection checks of delivering ``(pubend, tick)`` to ``sub``
        (``judged``: the message-level checks already ran)."""
        c = self.conns.get(sub)
        if c is None or not c.live or c.n != connection or c.shb != r.node:
            if self._fail(
                "safety",
                sub,
                f"delivered on connection {connection} at {r.node}, which is not a live "
                "connection of this subscriber",
                r,
                pubend=pubend,
                tick=tick,
            ):
                return True
            if c is None or c.n != connection:
                return False
        if not judged:
            self._judge_message(r, sub, pubend, tick, r.detail.payload)
            if self.violation is not None:
                return True
        if (
            entry is not None
            and not self._matches(c.filter, pubend, tick)
            and self._fail(
                "safety",
                sub,
                f"message {dict(entry[0])!r} does not match the filter {c.filter!r}",
                r,
                pubend=pubend,
                tick=tick,
                events=(entry[2],),
            )
        ):
            return True
        seen = c.seen.setdefault(pubend, set())
        prev_rec = c.records.get(pubend)
        if tick in seen and self._fail(
            "exactly_once",
            sub,
            f"tick {tick} of {pubend} delivered twice on connection {c.n}",
            r,
            pubend=pubend,
            tick=tick,
            events=(prev_rec,),
        ):
            return True
        last = c.last.get(pubend, -1)
        if tick <= last and self._fail(
            "order",
            sub,
            f"tick {tick} of {pubend} delivered after tick {last} (publisher order)",
            r,
            pubend=pubend,
            tick=tick,
            events=(prev_rec,),
        ):
            return True
        if (
            pubend in self.merged
            and tick <= c.last_any
            and self._fail(
                "total_order",
                sub,
                f"tick {tick} of {pubend} delivered after tick {c.last_any} of the merged stream",
                r,
                pubend=pubend,
                tick=tick,
            )
        ):
            return True
        if self.on["gapless"] and tick > last:
            # matching logged ticks between the previous delivery and this one
            ticks = self.logged_sorted.get(pubend, [])
            lo = bisect.bisect_right(ticks, last)
            hi = bisect.bisect_left(ticks, tick)
            for t in ticks[lo:hi]:
                if last < 0:
                    pt = self.publish_time(pubend, t)
                    if pt is None or pt <= c.start:
                        continue
                if self._matches(c.filter, pubend, t) and self._fail(
                    "gapless",
                    sub,
                    f"tick {tick} of {pubend} delivered but the matching tick {t} before it "
                    f"(after {'the connection began' if last < 0 else f'delivered tick {last}'}) "
                    "was skipped",
                    r,
                    pubend=pubend,
                    tick=t,
                    events=(prev_rec, self.logged[pubend][t][2]),
                ):
                    return True
        seen.add(tick)
        if tick > last:
            c.last[pubend] = tick
            c.records[pubend] = r
        if pubend in self.merged and tick > c.last_any:
            c.last_any = tick
        return False

    def _persist_record(self, pubend: str, tick: int) -> TraceRecord | None:
        for p, t, _a, rec in self.persist_key.values():
            if p == pubend and t == tick:
                return rec
        return None

    def _on_send(self, r: TraceRecord) -> bool:
        w: Wire = r.detail.wire
        to = r.detail.to
        src = r.node
        kind = w.kind
        pubend = w.pubend
        if pubend is None:
            return False
        if kind in ("data", "silence") and w.data_ticks:
            req = self.requested.get(pubend, set())
            for t in w.data_ticks:
                if t not in req:
                    return self._fail(
                        "no_e",
                        src,
                        f"data at tick {t} of {pubend} sent to {to}, but the pubend never logged "
                        "a message at that tick (it is S there: D ⊔ S = E)",
                        r,
                        pubend=pubend,
                        tick=t,
                    )
        if kind == "nack":
            return self._on_nack(r, w, src, to, pubend)
        if kind == "ack":
            return self._on_ack(r, w, src, to, pubend)
        if kind in ("data", "silence"):
            retrans = w.retransmission
            first_silence = kind == "silence" and not retrans
            if retrans or first_silence:
                name = "retransmission_targets" if retrans else "silence_targets"
                if not self.on[name]:
                    return False
                if self.ctx.cell_of.get(to) == self.ctx.cell_of.get(src):
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
        if src_cell is None or to_cell not in self.up_cells.get(src_cell, set()):
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
        if upto is None:
            return False
        src_cell = self.ctx.cell_of.get(src, src)
        to_cell = self.ctx.cell_of.get(to, to)
        key = (src_cell, to_cell, pubend)
        if upto > self.acked_from_cell.get(key, -1):
            self.acked_from_cell[key] = upto
        if self.ctx.pubend_host.get(pubend) == to and upto > self.pubend_acked.get(pubend, -1):
            self.pubend_acked[pubend] = upto
        if not self.on["ack_consolidation"]:
            return False
        role = self.ctx.roles.get(src)
        ck = (src, pubend)
        prev = self.ack_checked.get(ck, -1)
        if upto <= prev:
            return False
        ticks = self.logged_sorted.get(pubend, [])
        lo = bisect.bisect_right(ticks, prev)
        hi = bisect.bisect_right(ticks, upto)
        if role == "shb":
            live = [c for c in self.conns.values() if c.live and c.shb == src]
            live.sort(key=lambda c: c.sub)
            for t in ticks[lo:hi]:
                pt = None
                for c in live:
                    if t in c.seen.get(pubend, ()):
                        continue
                    if pt is None:
                        pt = self.publish_time(pubend, t)
                    if pt is not None and pt > c.start and self._matches(c.filter, pubend, t):
                        return self._fail(
                            "ack_consolidation",
                            src,
                            f"acked {pubend} up to {upto} upstream to {to} before delivering "
                            f"tick {t} to {c.sub} (connection {c.n})",
                            r,
                            pubend=pubend,
                            tick=t,
                            events=(self.logged[pubend][t][2],),
                        )
        elif role == "ib":
            for down in sorted(self.down_cells.get(src_cell, ())):
                got = self.acked_from_cell.get((down, src_cell, pubend), -1)
                below = self._below(down)
                live = [c for c in self.conns.values() if c.live and c.shb in below]
                live.sort(key=lambda c: c.sub)
                if not live:
                    continue
                for t in ticks[max(lo, bisect.bisect_right(ticks, got)) : hi]:
                    pt = self.publish_time(pubend, t)
                    if pt is None:
                        continue
                    if any(pt > c.start and self._matches(c.filter, pubend, t) for c in live):
                        return self._fail(
                            "ack_consolidation",
                            src,
                            f"acked {pubend} up to {upto} upstream to {to}, but downstream cell "
                            f"{down} (which needs tick {t}) acked only up to {got}",
                            r,
                            pubend=pubend,
                            tick=t,
                        )
        self.ack_checked[ck] = upto
        return False

    def restrict(self, names: Iterable[str]) -> None:
        """From now on judge only the invariants ``names`` (a run that left its protocol's
        fault budget is judged on safety alone); a violation already found stands."""
        keep = set(names)
        for n in self.on:
            self.on[n] = self.on[n] and n in keep

    # ------------------------------------------------------------------ finish

    def finish(self, r_end: TraceRecord) -> Violation | None:
        """Judge liveness at the end of a healed and drained run (``r_end`` stands for the
        end of the run in the violation's events)."""
        if self.violation is not None or not self.on["liveness"]:
            return self.violation
        for sub in sorted(self.conns):
            c = self.conns[sub]
            if not c.live:
                continue
            for pubend in sorted(self.logged_sorted):
                seen = c.seen.get(pubend, set())
                first = min(seen) if seen else None
                for t in self.logged_sorted[pubend]:
                    if t in seen:
                        continue
                    pt = self.publish_time(pubend, t)
                    needed = (first is not None and t > first) or (pt is not None and pt > c.start)
                    if needed and self._matches(c.filter, pubend, t):
                        self._fail(
                            "liveness",
                            sub,
                            f"matching tick {t} of {pubend} (published at {pt}µs) never delivered "
                            f"on connection {c.n} after heal and drain",
                            r_end,
                            pubend=pubend,
                            tick=t,
                            events=(self.logged[pubend][t][2],),
                        )
                        return self.violation
        filters = sorted(
            {s.filter for s in self.ctx.subscriptions} | {c.filter for c in self.all_conns}
        )
        for pubend in sorted(self.logged_sorted):
            ticks = self.logged_sorted[pubend]
            # the last tick some downstream cell needed: ticks after it match no subscription,
            # so the PHB's own edge filter finalises them and no ack for them travels on the
            # wire (the same notion of need as ack_consolidation's)
            need = next(
                (t for t in reversed(ticks) if any(self._matches(f, pubend, t) for f in filters)),
                None,
            )
            if need is None:
                continue
            got = self.pubend_acked.get(pubend, -1)
            if got < need:
                self._fail(
                    "liveness",
                    self.ctx.pubend_host.get(pubend, pubend),
                    f"the acknowledged prefix of {pubend} reached only {got}, not its last "
                    f"logged tick a subscription needed, {need}, after heal and drain",
                    r_end,
                    pubend=pubend,
                    tick=need,
                    events=(self.logged[pubend][need][2],),
                )
                return self.violation
        return None


def check_trace(
    ctx: CheckContext,
    records: Iterable[TraceRecord],
    names: Iterable[str] = (),
    *,
    live_end: bool = True,
) -> Violation | None:
    """Offline check of a recorded trace; ``live_end``: the trace ends healed and drained, so
    liveness is judged too."""
    checker = Checker(ctx, names)
    last: TraceRecord | None = None
    for r in records:
        last = r
        if checker.observe(r):
            return checker.violation
    if live_end and last is not None:
        end = TraceRecord(seq=last.seq + 1, time=last.time, node="-", kind="fault", detail="end")
        return checker.finish(end)
    return checker.violation
