"""GD's delivery invariants as one plug-in over the ledger [GD §2.1-2.3].

Theory of operation
-------------------
Per subscriber *connection* (GD is non-durable: a reconnect, or the SHB's crash, starts a new
connection; guarantees hold within each), judged from the ``deliver`` records, the ``send``
records' data ticks and, after the run, the ledger:

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

The plug-in adds deliveries to the ledger itself (``records_deliveries``): a cohort of
ordinary deliveries (live connection, matching filter, a new tick above the last one, nothing
logged in between) is judged and added in one pass (:meth:`GDDelivery._deliver_cohort`).

Checks per cohort, not per member (issue 17): the SHB names a cohort by one ``to`` tuple for
as long as its members and their connections stay the same. The plug-in remembers, per such
tuple, its members' connections as they were at the last connect or disconnect record
(:attr:`~gapless.invariants.plugin.Ledger.conn_epoch`): each one the subscriber's current,
live connection at this SHB with the member's number, no subscriber twice. While no connect
or disconnect separates them, members that also agree on their last tick of the pubend (and
of the merged stream) share every verdict of the per-member fast path — the filter matches,
the tick is new, nothing logged in between was skipped — so it is judged once per filter
(:meth:`GDDelivery._shared_verdict`). Members that disagree, or any failed check, go through
the per-member path, which judges each in full. Members that agree also hold one set of
delivered ticks (:class:`~gapless.invariants.plugin.SharedTicks`, copy-on-write), so a
shared verdict adds the tick once, not once per member.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, final

from gapless.impl.effects import DeliverCohort
from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.plugin import (
    CheckContext,
    Conn,
    Ledger,
    LogEntry,
    Plugin,
    Report,
    SharedTicks,
    own_ticks,
)

__all__ = ["NAMES", "GDDelivery", "tail_repair_us"]

NAMES: Final = (
    "safety",
    "order",
    "logged_first",
    "gapless",
    "exactly_once",
    "total_order",
    "no_e",
    "liveness",
)


@final
class GDDelivery(Plugin):
    """GD's delivery invariants (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"deliver", "send"})
    records_deliveries: ClassVar[bool] = True

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.conns = ledger.conns
        self.logged = ledger.logged
        self.logged_sorted = ledger.logged_sorted
        self.requested = ledger.requested
        self.merged = ledger.merged
        self.on = report.on
        self._fail = report.fail
        self._matches = ledger.matches
        # id(to) -> (to, SHB, ledger.conn_epoch, members' connections, their filters)
        self._cohorts: dict[int, tuple[Any, str, int, tuple[Conn, ...], tuple[str, ...]]] = {}

    # ------------------------------------------------------------------ observe

    def observe(self, r: TraceRecord) -> bool:
        if r.kind == "deliver":
            return self._on_deliver(r)
        return self._on_send(r)

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        return {"deliver": self._on_deliver, "send": self._on_send}

    def _on_send(self, r: TraceRecord) -> bool:
        """``no_e`` on the wire: every data tick sent is a tick its pubend asked to log."""
        w: Wire = r.detail.wire
        if not w.data_ticks or w.pubend is None or w.kind not in ("data", "silence"):
            return False
        pubend = w.pubend
        req = self.requested.get(pubend, {})
        for t in w.data_ticks:
            if t not in req:
                return self._fail(
                    "no_e",
                    r.node,
                    f"data at tick {t} of {pubend} sent to {r.detail.to}, but the pubend never "
                    "logged a message at that tick (it is S there: D ⊔ S = E)",
                    r,
                    pubend=pubend,
                    tick=t,
                )
        return False

    def _on_deliver(self, r: TraceRecord) -> bool:
        """Judge a delivery (one ``Deliver``, or a ``DeliverCohort``: the message-level checks
        once, the per-connection ones for each subscriber). Each check that is switched off
        lets the others still run."""
        d = r.detail
        if type(d) is DeliverCohort:
            pubend, tick = d.pubend, d.tick
            entry = self._judge_message(r, d.to[0][0], pubend, tick, d.payload)
            if self.report.violation is not None:
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
        entry: LogEntry | None,
    ) -> bool:
        """A cohort's deliveries: one shared verdict when its members are interchangeable
        (see the module doc), else each member on its own."""
        if entry is not None:
            cohort = self._cohort(to, r.node)
            if cohort is not None and self._shared_verdict(r, cohort, pubend, tick):
                return False
        return self._deliver_members(r, to, pubend, tick, entry)

    def _cohort(
        self, to: tuple[tuple[str, int], ...], node: str
    ) -> tuple[tuple[Conn, ...], tuple[str, ...]] | None:
        """The connections of the members of ``to`` delivered at ``node`` and their distinct
        filters, when every member names its subscriber's current, live connection at
        ``node`` and no subscriber comes twice; None otherwise. Remembered per ``to`` until
        the next connect or disconnect record."""
        epoch = self.ledger.conn_epoch
        got = self._cohorts.get(id(to))
        if got is not None and got[0] is to and got[1] == node and got[2] == epoch:
            return got[3], got[4]
        conns = self.conns
        members: list[Conn] = []
        for sub, conn in to:
            c = conns.get(sub)
            if c is None or not c.live or c.n != conn or c.shb != node:
                return None
            members.append(c)
        if len({c.sub for c in members}) != len(members):
            return None
        cs = tuple(members)
        filters = tuple(sorted({c.filter for c in cs}))
        if len(self._cohorts) >= 4096:
            self._cohorts.clear()
        self._cohorts[id(to)] = (to, node, epoch, cs, filters)
        return cs, filters

    def _shared_verdict(
        self,
        r: TraceRecord,
        cohort: tuple[tuple[Conn, ...], tuple[str, ...]],
        pubend: str,
        tick: int,
    ) -> bool:
        """When every member of a :meth:`_cohort` has the same last tick of ``pubend`` (and of
        the merged stream), judge the per-member fast path's checks once: a new tick above
        that last one (so not yet seen: a connection's last tick is the highest it has seen),
        a match for each filter, nothing logged in between. If they all hold, add every
        member's delivery as :meth:`Ledger.record_delivery` does and return True; otherwise
        return False and leave everything to the per-member path."""
        cs, filters = cohort
        merged = pubend in self.merged
        first = cs[0]
        last = first.last.get(pubend, -1)
        if tick <= last:
            return False
        # whether the members hold one set of delivered ticks, and nobody else does (then the
        # tick is added to it once: see SharedTicks)
        s0 = first.seen.get(pubend)
        one = s0 is None or (type(s0) is SharedTicks and s0.holders == len(cs))
        for c in cs:  # every member at the same last tick
            if c.last.get(pubend, -1) != last:
                return False
            if one and c.seen.get(pubend) is not s0:
                one = False
        if merged:
            last_any = first.last_any
            if tick <= last_any:
                return False
            for c in cs:
                if c.last_any != last_any:
                    return False
        for flt in filters:
            if not self._matches(flt, pubend, tick):
                return False
        if self.on["gapless"]:
            ticks = self.logged_sorted.get(pubend, [])
            if bisect.bisect_right(ticks, last) < bisect.bisect_left(ticks, tick):
                return False
        if one:
            if s0 is None:
                s0 = SharedTicks((tick,), len(cs))
                for c in cs:
                    c.seen[pubend] = s0
            else:
                s0.add(tick)
            for c in cs:
                c.last[pubend] = tick
                c.records[pubend] = r
        else:
            for c in cs:
                own_ticks(c, pubend).add(tick)
                c.last[pubend] = tick
                c.records[pubend] = r
        if merged:
            for c in cs:
                c.last_any = tick
        return True

    def _deliver_members(
        self,
        r: TraceRecord,
        to: tuple[tuple[str, int], ...],
        pubend: str,
        tick: int,
        entry: LogEntry | None,
    ) -> bool:
        """Each member of a cohort: a fast path for the common case (live connection,
        matching filter, a new tick above the last one, nothing logged in between), which
        adds the delivery exactly as :meth:`Ledger.record_delivery` does; anything else goes
        through :meth:`_deliver_one`, which judges it in full."""
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
            # Ledger.record_delivery, inlined: tick is above c.last (checked above)
            if seen is None:
                seen = c.seen[pubend] = set()
            elif type(seen) is SharedTicks:  # own_ticks, inlined: a private copy first
                seen.holders -= 1
                seen = c.seen[pubend] = set(seen)
            seen.add(tick)
            c.last[pubend] = tick
            c.records[pubend] = r
            if merged:
                c.last_any = tick
        return False

    def _judge_message(
        self, r: TraceRecord, sub: str, pubend: str, tick: int, payload: Any
    ) -> LogEntry | None:
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
                events=(self.ledger.persist_record(pubend, tick),),
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
        entry: LogEntry | None,
        judged: bool,
    ) -> bool:
        """The per-connection checks of delivering ``(pubend, tick)`` to ``sub``
        (``judged``: the message-level checks already ran); then the delivery is added to
        the ledger."""
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
            if self.report.violation is not None:
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
        seen = c.seen.get(pubend, ())
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
        if self.on["gapless"] and tick > last and self._skipped(r, c, pubend, tick, last, prev_rec):
            return True
        self.ledger.record_delivery(c, pubend, tick, r)
        return False

    def _skipped(
        self,
        r: TraceRecord,
        c: Conn,
        pubend: str,
        tick: int,
        last: int,
        prev_rec: TraceRecord | None,
    ) -> bool:
        """``gapless`` for a delivery above the connection's last tick ``last``: no matching
        logged tick between the last delivery (or, before the first, the connection's start)
        and this one."""
        sub = c.sub
        ticks = self.logged_sorted.get(pubend, [])
        lo = bisect.bisect_right(ticks, last)
        hi = bisect.bisect_left(ticks, tick)
        for t in ticks[lo:hi]:
            if last < 0:
                pt = self.ledger.publish_time(pubend, t)
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
        return False

    # ------------------------------------------------------------------ finish

    def finish(self, end: TraceRecord) -> bool:
        """Liveness at the end of a healed and drained run."""
        if not self.on["liveness"]:
            return False
        return self._all_delivered(end) or self._all_acked(end)

    def _all_delivered(self, end: TraceRecord) -> bool:
        """Every logged message matching a live connection (published after it began, or
        after its first delivery) was delivered on it."""
        conns = self.conns
        for sub in sorted(conns):
            c = conns[sub]
            if not c.live:
                continue
            for pubend in sorted(self.logged_sorted):
                seen = c.seen.get(pubend, set())
                first = min(seen) if seen else None
                for t in self.logged_sorted[pubend]:
                    if t in seen:
                        continue
                    pt = self.ledger.publish_time(pubend, t)
                    needed = (first is not None and t > first) or (pt is not None and pt > c.start)
                    if needed and self._matches(c.filter, pubend, t):
                        return self._fail(
                            "liveness",
                            sub,
                            f"matching tick {t} of {pubend} (published at {pt}µs) never delivered "
                            f"on connection {c.n} after heal and drain",
                            end,
                            pubend=pubend,
                            tick=t,
                            events=(self.logged[pubend][t][2],),
                        )
        return False

    def _all_acked(self, end: TraceRecord) -> bool:
        """Every pubend's acknowledged prefix reached its last logged tick some subscription
        needed."""
        filters = sorted(
            {s.filter for s in self.ctx.subscriptions} | {c.filter for c in self.ledger.all_conns}
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
            got = self.ledger.pubend_acked.get(pubend, -1)
            if got < need:
                # the oldest logged tick above the prefix is the first one due; AET counts a
                # tick's age from the tick itself (ticks are µs of the pubend's clock)
                first = ticks[bisect.bisect_right(ticks, got)]
                return self._fail(
                    "liveness",
                    self.ctx.pubend_host.get(pubend, pubend),
                    f"the acknowledged prefix of {pubend} reached only {got}, not its last "
                    f"logged tick a subscription needed, {need}, after heal and drain"
                    + _too_early(self.ctx, end.time - first),
                    end,
                    pubend=pubend,
                    tick=need,
                    events=(self.logged[pubend][need][2],),
                )
        return False


def tail_repair_us(ctx: CheckContext) -> int | None:
    """How long after its tick a message lost at the tail of the run (no later message shows
    the gap) may take to be acknowledged back to its pubend [GD §3.2]: the pubend sends
    ``AckExpected`` for it only once it is AET old, at its next periodic check, and the ack
    then waits up to one ack delay at each level of the cell tree on its way up
    [GD §3.1]. Link delays and the repair's round trip come on top. None when the protocol has
    no AET rule (or a trace file did not record it)."""
    if ctx.aet_us is None or ctx.ack_expected_period_us is None:
        return None
    parent = {down: up for up, down in ctx.cell_tree}
    depth = 0
    for cell in parent:
        n, seen = 0, cell
        while seen in parent and n <= len(parent):
            seen, n = parent[seen], n + 1
        depth = max(depth, n)
    return ctx.aet_us + ctx.ack_expected_period_us + depth * (ctx.ack_delay_us or 0)


def _too_early(ctx: CheckContext, waited_us: int) -> str:
    """A hint for a liveness failure judged ``waited_us`` after the oldest tick above the
    acknowledged prefix: empty unless that is less than :func:`tail_repair_us` (the drain, not
    the protocol, may be what is short)."""
    need = tail_repair_us(ctx)
    if need is None or waited_us >= need:
        return ""
    return (
        f"; judged only {waited_us / 1e6:.3f} s after the first tick above that prefix, less "
        f"than the {need / 1e6:.3f} s a tick lost at the tail may need to be acknowledged "
        "(AET, its check period and one ack delay per level of the cell tree [GD §3.2]): a "
        "longer drain is needed to judge it"
    )
