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
delivery could not have been disturbed — is delivered on every connection that began before
it was published and is still live at the end (a connection a client ended may miss what
followed) and whose subscription reads its pubend (:func:`readers`; a total-order
subscription reads only the merged pubends) and whose filter it matches (the reference
evaluator). A message is known by its pubend and publish index (the workload's ``n``
attribute, as :meth:`~gapless.invariants.plugin.Ledger.publish_time` reads it). Guaranteed
delivery satisfies it a fortiori (after heal and drain, everything is delivered), so it
judges every setup.
"""

from __future__ import annotations

from typing import ClassVar, Final, final

from gapless.impl.effects import Deliver, DeliverCohort, deliveries
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
        self.got: set[tuple[str, int, str, int]] = set()  # (subscriber, conn, pubend, n)

    def observe(self, r: TraceRecord) -> bool:
        if r.kind == "fault":
            if self.first_fault is None:
                self.first_fault = r.time
            return False
        d = r.detail
        if not isinstance(d, Deliver | DeliverCohort):
            return False
        for one in deliveries(d):
            if one.kind != "event":
                continue
            attributes = self.ctx.payload_attributes(one.payload) or {}
            n = attributes.get("n")
            if isinstance(n, int):
                self.got.add((one.subscriber, one.connection, one.pubend, n))
        return False

    def finish(self, end: TraceRecord) -> bool:
        cutoff = end.time if self.first_fault is None else self.first_fault - SETTLE_US
        reads = {p: set(pairs) for p, pairs in readers(self.ctx).items()}
        conns = self.ledger.all_conns
        for (pubend, n), rec in sorted(self.ledger.published.items()):
            if rec.time >= cutoff:
                continue
            for c in conns:
                if not c.live or c.start >= rec.time:
                    continue
                if (c.shb, c.filter) not in reads.get(pubend, set()):
                    continue
                if (c.sub, c.n, pubend, n) in self.got:
                    continue
                if not self.ctx.matches(c.filter, rec.detail.attributes):
                    continue
                first = "no fault" if self.first_fault is None else f"{self.first_fault}µs"
                return self.report.fail(
                    "quiet_delivery",
                    c.sub,
                    f"message {n} of {pubend}, published at {rec.time}µs (first fault: "
                    f"{first}), matches {c.filter!r} but was never delivered on connection "
                    f"{c.n}; a message published while nothing has failed reaches every "
                    "matching subscriber, by best effort too [GD §4.1]",
                    end,
                )
        return False
