"""The durable invariants judging a simulated run online [DUR §2-4].

The world records a fixed set of kinds (``publish``, ``persist``, ``persisted``, ``send``,
``deliver``, ``connect``, ``disconnect``, ...). The durable binding
(``gapless.models.durable_binding``) carries the protocol's own ``dur_*`` records inside them:
a ``dur_message`` is a ``deliver`` whose payload is the
:class:`~gapless.impl.durable.records.DurMessage`, every other record a ``persist`` whose key is
``("dur", kind, ...)`` and whose value is the record's detail. :class:`DurableChecker` reads
them back as the ``dur_*`` records :class:`~gapless.invariants.durable.judge.DurableRelease`
judges, and turns the world's ``disconnect`` (a subscriber's connection ended, by a fault or an
SHB crash) into ``dur_disconnect`` at the broker that recorded it. Every record also feeds the
shared ledger (publish times, for latency). Nothing here reads a role's state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import final

from gapless.impl.durable.records import DURABLE_RECORDS, DurDisconnect, DurMessage
from gapless.impl.effects import Deliver, Persist
from gapless.impl.trace import TraceRecord
from gapless.invariants.checker import Checker
from gapless.invariants.durable import PLUGINS
from gapless.invariants.plugin import CheckContext
from gapless.invariants.violation import Violation

__all__ = ["DurableChecker", "durable_record"]


def durable_record(r: TraceRecord) -> TraceRecord | None:
    """The ``dur_*`` record a world record carries (module doc), or None."""
    k, d = r.kind, r.detail
    kind: str | None = None
    detail: object = None
    if k == "persist" and type(d) is Persist:
        key = d.key
        if type(key) is tuple and len(key) >= 2 and key[0] == "dur" and key[1] in DURABLE_RECORDS:
            kind, detail = key[1], d.value
    elif k == "deliver" and type(d) is Deliver and type(d.payload) is DurMessage:
        kind, detail = "dur_message", d.payload
    elif k == "disconnect":
        kind, detail = "dur_disconnect", DurDisconnect(subscriber=d.subscriber, shb=r.node)
    if kind is None:
        return None
    return TraceRecord(seq=r.seq, time=r.time, node=r.node, kind=kind, detail=detail)


@final
class DurableChecker:
    """The durable plug-ins over a world's records (module doc); the registry's checker."""

    def __init__(self, ctx: CheckContext, names: Iterable[str] = ()) -> None:
        self.inner = Checker(ctx, names, plugins=PLUGINS)
        self.ctx = ctx

    @property
    def violation(self) -> Violation | None:
        """The first violation found, if any."""
        return self.inner.violation

    def publish_time(self, pubend: str, tick: int) -> int | None:
        """When the event at ``(pubend, tick)`` was published (None if unknown)."""
        return self.inner.publish_time(pubend, tick)

    def observe(self, r: TraceRecord) -> bool:
        """Judge one world record; True when a violation was found."""
        if self.inner.observe(r):
            return True
        dr = durable_record(r)
        return dr is not None and self.inner.observe(dr)

    def restrict(self, names: Iterable[str]) -> None:
        """Judge only ``names`` from now on."""
        self.inner.restrict(names)

    def finish(self, r_end: TraceRecord) -> Violation | None:
        """Liveness after a healed, drained run."""
        return self.inner.finish(r_end)
