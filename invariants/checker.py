"""A protocol's trace invariants, checked incrementally (online) or over a recorded trace
(offline), as plug-ins over a shared ledger.

Theory of operation
-------------------
:class:`Checker` consumes :class:`~gapless.impl.trace.TraceRecord` values one at a time
(:meth:`Checker.observe`) and judges them against what *should* happen, computed from the
workload (the ``publish`` records, the subscriptions' filters evaluated with the reference
evaluator the caller passes in ``CheckContext.matches``) and the observable effects — never a
role's internal state (DESIGN.md). After the run, :meth:`Checker.finish` judges liveness.
Offline checking (:func:`check_trace`) feeds a recorded trace through the same object, so
online and offline verdicts agree by construction.

The facts every invariant needs (publishes, logged ticks, connections and what they delivered,
acks, publish times, the reference matcher's cache) are kept once in a
:class:`~gapless.invariants.plugin.Ledger`; each invariant is owned by a
:class:`~gapless.invariants.plugin.Plugin` that reads the record kinds it declares and reports
through the checker's :class:`~gapless.invariants.plugin.Report` (see
:mod:`gapless.invariants.plugin` for the order of facts and judgements). The checker takes the
plug-ins from its caller — its protocol's, as the protocol's registry entry
(:mod:`gapless.models.protocols`) builds its checker — and
defaults to guaranteed delivery's (:data:`gapless.invariants.gd.PLUGINS`: the delivery
invariants, the wire-conformance ones and minimal traffic; their docs state each invariant).
A plug-in none of whose invariants is chosen is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import final

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.trace import TraceRecord
from gapless.invariants.gd import PLUGINS as GD_PLUGINS
from gapless.invariants.plugin import (
    CheckContext,
    Ledger,
    Plugin,
    Report,
    SubscriptionInfo,
    invariant_names,
)
from gapless.invariants.violation import Violation

__all__ = ["GD_PLUGINS", "CheckContext", "Checker", "SubscriptionInfo", "check_trace"]

Step = Callable[[TraceRecord], bool | None]
"""A ledger's fact-adding method (returns None) or a plug-in's judgement (True: violation)."""


@final
class Checker:
    """Online checker of the invariants ``names`` (empty = all the plug-ins own) with the
    plug-ins ``plugins`` (default: GD's); see the module doc. An unknown name raises
    :class:`~gapless.impl.errors.ProtocolMisuse`."""

    def __init__(
        self,
        ctx: CheckContext,
        names: Iterable[str] = (),
        *,
        plugins: Sequence[type[Plugin]] | None = None,
    ) -> None:
        classes = tuple(GD_PLUGINS if plugins is None else plugins)
        known = invariant_names(classes)
        chosen = tuple(names) or known
        unknown = [n for n in chosen if n not in known]
        if unknown:
            raise ProtocolMisuse(
                f"Checker: invariants {unknown!r} are unknown; allowed: {', '.join(known)}"
            )
        self.ctx = ctx
        self.names = known
        self.report = report = Report({n: (n in chosen) for n in known})
        self.on = report.on  # which invariants are judged, by name
        self.ledger = ledger = Ledger(ctx)
        active = [cls(ledger, report) for cls in classes if any(report.on[n] for n in cls.names)]
        self.plugins: tuple[Plugin, ...] = tuple(active)
        recorders = [p for p in active if p.records_deliveries]
        if len(recorders) > 1:
            raise ProtocolMisuse(
                f"Checker: plug-ins {[type(p).__name__ for p in recorders]} all record "
                "deliveries; allowed: at most one"
            )
        # per record kind, what to call in order: the ledger adds the record's facts, then
        # the plug-ins that read the kind judge it (a delivery: judged, then added)
        steps: dict[str, list[Step]] = {k: [add] for k, add in ledger.facts().items()}
        for p in active:
            judges = p.judges()
            for kind in sorted(p.kinds):
                steps.setdefault(kind, []).append(judges[kind])
        if not recorders:
            steps.setdefault("deliver", []).append(ledger.record_deliveries)
        self._steps = {k: tuple(v) for k, v in steps.items()}

    @property
    def violation(self) -> Violation | None:
        """The first violation found, if any."""
        return self.report.violation

    def publish_time(self, pubend: str, tick: int) -> int | None:
        """When the message logged at ``(pubend, tick)`` was published (None if unknown)."""
        return self.ledger.publish_time(pubend, tick)

    def observe(self, r: TraceRecord) -> bool:
        """Judge one record; True when it revealed a violation (see :attr:`violation`)."""
        report = self.report
        if report.violation is not None:
            return True
        steps = self._steps.get(r.kind)
        if steps is None:
            return False
        for step in steps:
            if step(r):
                return True
        return report.violation is not None

    def restrict(self, names: Iterable[str]) -> None:
        """From now on judge only the invariants ``names`` (a run that left its protocol's
        fault budget is judged on safety alone); a violation already found stands."""
        keep = set(names)
        for n in self.on:
            self.on[n] = self.on[n] and n in keep

    def finish(self, r_end: TraceRecord) -> Violation | None:
        """Judge liveness at the end of a healed and drained run (``r_end`` stands for the
        end of the run in the violation's events)."""
        for p in self.plugins:
            if self.report.violation is not None:
                break
            p.finish(r_end)
        return self.report.violation


def check_trace(
    ctx: CheckContext,
    records: Iterable[TraceRecord],
    names: Iterable[str] = (),
    *,
    live_end: bool = True,
    plugins: Sequence[type[Plugin]] | None = None,
) -> Violation | None:
    """Offline check of a recorded trace; ``live_end``: the trace ends healed and drained, so
    liveness is judged too."""
    checker = Checker(ctx, names, plugins=plugins)
    last: TraceRecord | None = None
    for r in records:
        last = r
        if checker.observe(r):
            return checker.violation
    if live_end and last is not None:
        end = TraceRecord(seq=last.seq + 1, time=last.time, node="-", kind="fault", detail="end")
        return checker.finish(end)
    return checker.violation
