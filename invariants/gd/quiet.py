"""GD's quiet-delivery rule as a plug-in: what is published while nothing has failed is
delivered, by best effort too [GD §4.1].

Theory of operation
-------------------
Best effort [GD §4.1] logs nothing and never recovers a lost message, so the delivery
invariants that judge guaranteed delivery (gapless, exactly once, liveness over the logged
ticks) do not apply to it. What it does promise is the common case: while no broker, link or
client has failed, a published message travels down every matching edge at once and reaches
every subscriber whose filter it matches [GD §2.4, §4.1] — in the paper's measurements best
effort delivers everything in the failure-free runs. A best-effort role that stops publishing
after its boot, or a filter edge that drops a matching message, breaks that and no other
invariant of the best-effort setup sees it.

``quiet_delivery`` judges it at the end of the run: every message published at least
:data:`SETTLE_US` before the first fault took effect (the first ``fault`` record) — so its
delivery could not have been disturbed — is delivered **before that first fault** on every
connection that began before it was published and is still live at the end (a connection a
client ended may miss what followed) and whose subscription reads its pubend
(:func:`readers`; a total-order subscription reads only the merged pubends) and whose filter
it matches (the reference evaluator). A run without faults judges every message, delivered
by the end.

Why before the first fault, not by the end: "at once" is the rule [GD §2.4]. A broker that
stops forwarding first-time knowledge downstream (the one-operator mutant of
``impl/gd/forwarding.py``'s cell loop, ``and`` -> ``or``, killed by the tests) still delivers
everything by the end of a guaranteed-delivery run — the pubend's AckExpected makes every
subscriber nack what it never heard of, 10 s later [GD §3.2] — so every delivery invariant
passed it over the whole demo; its quiet messages arrive seconds after the first fault. In
the correct protocol a quiet message arrives about one logging delay (100 ms) after it is
published, far inside :data:`SETTLE_US`.

A message is known by its pubend and publish index (the workload's ``n`` attribute, as
:meth:`~gapless.invariants.plugin.Ledger.publish_time` reads it). Guaranteed
delivery, whose failure-free case is best effort's [GD §4.1], satisfies it too, so it judges
every setup.

Cost. A ``DeliverCohort`` is remembered as its ``to`` tuple, not as one entry per member: the
SHB reuses one ``to`` tuple per set of matching subscribers (``subend._cohort``), so the
plug-in turns each distinct tuple into a set of members once (by identity) and the end of
the run asks, per message and connection, whether one of the message's cohorts holds it.
On checked Figure 3 (100 subscribers) this is one entry per message instead of one per
delivery (issue 17).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import ClassVar, Final, final

from gapless.impl.effects import Deliver, DeliverCohort
from gapless.impl.trace import TraceRecord
from gapless.invariants.gd.traffic import readers
from gapless.invariants.plugin import Ledger, Plugin, Report

__all__ = ["NAMES", "SETTLE_US", "GDQuietDelivery"]

NAMES: Final = ("quiet_delivery",)
SETTLE_US: Final = 500_000
"""How long before the first fault a message must be published to be judged: hundreds of
times a hop's latency in the kit's world, so no fault can have met it on its way."""


@final
class GDQuietDelivery(Plugin):
    """``quiet_delivery`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"fault", "deliver"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.first_fault: int | None = None
        #: (pubend, n) -> the (subscriber, connection) pairs single ``Deliver`` effects reached
        self.got: dict[tuple[str, int], set[tuple[str, int]]] = {}
        #: (pubend, n) -> the member sets of the cohorts that delivered it
        self.got_cohorts: dict[tuple[str, int], list[frozenset[tuple[str, int]]]] = {}
        #: id(to) -> (to, its members as a set): one set per distinct ``to`` tuple
        self._members: dict[int, tuple[tuple[tuple[str, int], ...], frozenset[tuple[str, int]]]]
        self._members = {}

    def observe(self, r: TraceRecord) -> bool:
        if r.kind == "fault":
            if self.first_fault is None:
                self.first_fault = r.time
            return False
        if self.first_fault is not None:
            return False  # only deliveries before the first fault count (see the module doc)
        d = r.detail
        if type(d) is DeliverCohort:
            n = (self.ctx.payload_attributes(d.payload) or {}).get("n")
            if isinstance(n, int):
                to = d.to
                hit = self._members.get(id(to))
                if hit is None or hit[0] is not to:
                    hit = (to, frozenset(to))
                    self._members[id(to)] = hit
                self.got_cohorts.setdefault((d.pubend, n), []).append(hit[1])
            return False
        if type(d) is not Deliver or d.kind != "event":
            return False
        n = (self.ctx.payload_attributes(d.payload) or {}).get("n")
        if isinstance(n, int):
            self.got.setdefault((d.pubend, n), set()).add((d.subscriber, d.connection))
        return False

    def _delivered(self, sub: str, conn: int, pubend: str, n: int) -> bool:
        member = (sub, conn)
        if member in self.got.get((pubend, n), ()):
            return True
        return any(member in m for m in self.got_cohorts.get((pubend, n), ()))

    def finish(self, end: TraceRecord) -> bool:
        cutoff = end.time if self.first_fault is None else self.first_fault - SETTLE_US
        reads = {p: set(pairs) for p, pairs in readers(self.ctx).items()}
        conns = self.ledger.all_conns
        # The fast path: per pubend, the live connections reading it ordered by start (a
        # message published at t is owed to those begun before t, a prefix of that order);
        # a message is settled when its cohorts and single deliveries cover that prefix. A
        # message it cannot settle is judged by the loop below, connection by connection in
        # the ledger's order, exactly as without the fast path.
        owed: dict[str, tuple[list[int], list[tuple[str, int]]]] = {}
        for p, pairs in reads.items():
            cs = sorted(
                (c for c in conns if c.live and (c.shb, c.filter) in pairs),
                key=lambda c: c.start,
            )
            owed[p] = ([c.start for c in cs], [(c.sub, c.n) for c in cs])
        prefixes: dict[tuple[str, int], frozenset[tuple[str, int]]] = {}
        missing: dict[tuple[object, ...], frozenset[tuple[str, int]]] = {}
        for (pubend, n), rec in sorted(self.ledger.published.items()):
            if rec.time >= cutoff:
                continue
            starts, keys = owed.get(pubend, ([], []))
            k = bisect_left(starts, rec.time)
            cand = prefixes.get((pubend, k))
            if cand is None:
                cand = prefixes[(pubend, k)] = frozenset(keys[:k])
            ms = self.got_cohorts.get((pubend, n), ())
            mkey = (pubend, k, *map(id, ms))
            rest = missing.get(mkey)
            if rest is None:
                rest = missing[mkey] = cand.difference(*ms)
            if not rest or rest <= self.got.get((pubend, n), set()):
                continue
            if self._judge(pubend, n, rec, reads, end):
                return True
        return False

    def _judge(
        self,
        pubend: str,
        n: int,
        rec: TraceRecord,
        reads: dict[str, set[tuple[str, str]]],
        end: TraceRecord,
    ) -> bool:
        """Every connection owed message ``n`` of ``pubend`` in the ledger's order: the first
        live, reading, matching one that never got it fails the run."""
        for c in self.ledger.all_conns:
            if not c.live or c.start >= rec.time:
                continue
            if (c.shb, c.filter) not in reads.get(pubend, set()):
                continue
            if self._delivered(c.sub, c.n, pubend, n):
                continue
            if not self.ctx.matches(c.filter, rec.detail.attributes):
                continue
            when = (
                "by the end of the run"
                if self.first_fault is None
                else f"before the first fault at {self.first_fault}µs"
            )
            return self.report.fail(
                "quiet_delivery",
                c.sub,
                f"message {n} of {pubend}, published at {rec.time}µs, matches {c.filter!r} "
                f"but was not delivered on connection {c.n} {when}; a message published "
                "while nothing has failed reaches every matching subscriber at once, by best "
                "effort too [GD §2.4, §4.1]",
                end,
            )
        return False
