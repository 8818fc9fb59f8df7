"""Durable subscriptions' trace invariants as one plug-in [DUR §2-4].

Theory of operation
-------------------
:class:`DurableRelease` reads the ``dur_*`` records (:mod:`gapless.impl.durable.records`), keeps
their facts (:mod:`gapless.invariants.durable.facts`) and judges four invariants. It trusts no
role's state: ``Tr(p)``/``Td(p)`` are recomputed as the minima, over the topology's SHBs
(``CheckContext.roles``), of the highest pair each SHB reported; what a subscriber still needs
is the highest CT it acknowledged; what it should be delivered is the events of the trace that
match its filter (``CheckContext.matches``).

* ``release_horizon`` -- Tr(p) <= Td(p) at every node: every report has ``released <=
  delivered``; an intermediate node's report is at or below the minima of the SHBs below it
  (when the context gives the topology: ``cell_of``, ``cell_tree``); and at each L step the
  pubend's ``Tr <= Td``, each at or below the minima its SHBs reported [DUR §3].
* ``release_rule`` -- at each L step, no tick above Td(p) becomes L; a tick above Tr(p) only if
  ``T(p) - t > maxRetain(p)``; and none above what a subscribed subscriber acknowledged unless
  early release allowed it [DUR §3].
* ``gap_legal`` -- a gap covers only L ticks; only a subscriber in catchup gets one; its ticks
  above what the subscriber had acknowledged were all released early; and a subscriber that
  reconnected with its latest acknowledged CT, lagging T(p) by less than maxRetain(p), gets none
  over ticks that were already L when it reconnected [DUR §2, §3, §4.1].
* ``durable_exactly_once`` -- per subscriber and pubend, the messages of a connection chain from
  the CT it presented (each ``t0`` is the previous ``t``: no hole, no overlap, in order); an
  event message carries a matching event and a silence or event leaves out no matching event;
  an ack never passes what was delivered; after a healed, drained run every connected
  subscriber has been delivered every matching event (no loss) [DUR §2].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, final

from gapless.impl.durable.messages import EventMessage, GapMessage, SilenceMessage
from gapless.impl.durable.records import DURABLE_RECORDS
from gapless.impl.trace import TraceRecord
from gapless.invariants.durable.facts import DurableFacts, SubFacts, uncovered
from gapless.invariants.plugin import Ledger, Plugin, Report

__all__ = ["DurableRelease"]

HORIZON = "release_horizon"
RULE = "release_rule"
GAP = "gap_legal"
ONCE = "durable_exactly_once"


@final
class DurableRelease(Plugin):
    """The four durable invariants (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = (HORIZON, RULE, GAP, ONCE)
    kinds: ClassVar[frozenset[str]] = frozenset(DURABLE_RECORDS)

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.facts = DurableFacts()
        self.shbs = tuple(sorted(b for b, role in self.ctx.roles.items() if role == "shb"))
        self.last: dict[tuple[str, str], TraceRecord] = {}  # a subscriber's last message
        self.connects: dict[str, TraceRecord] = {}

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        """One method per ``dur_*`` record kind (a table; a test checks it is complete)."""
        return {
            "dur_event": self._on_event,
            "dur_join": self._on_join,
            "dur_leave": self._on_leave,
            "dur_connect": self._on_connect,
            "dur_disconnect": self._on_disconnect,
            "dur_switchover": self._on_switchover,
            "dur_message": self._on_message,
            "dur_ack": self._on_ack,
            "dur_report": self._on_report,
            "dur_release": self._on_release,
            "dur_crash": self._on_crash,
        }

    def observe(self, r: TraceRecord) -> bool:
        return self.judges()[r.kind](r)

    # ------------------------------------------------------------------ subscribers

    def _sub(self, name: str) -> SubFacts | None:
        return self.facts.subs.get(name)

    def _on_event(self, r: TraceRecord) -> bool:
        d = r.detail
        self.facts.pubend(d.pubend).add_event(d.tick, d.attributes)
        return False

    def _on_join(self, r: TraceRecord) -> bool:
        d = r.detail
        self.facts.subs[d.subscriber] = SubFacts(d.filter, d.shb, d.ct)
        self.connects[d.subscriber] = r
        return False

    def _on_leave(self, r: TraceRecord) -> bool:
        s = self._sub(r.detail.subscriber)
        if s is not None:
            s.subscribed = s.connected = False
        return False

    def _on_disconnect(self, r: TraceRecord) -> bool:
        s = self._sub(r.detail.subscriber)
        if s is not None:
            s.connected = False
        return False

    def _on_crash(self, r: TraceRecord) -> bool:
        for s in self.facts.subs.values():
            if s.connected and s.shb == r.detail.shb:
                s.connected = False
        return False

    def _on_switchover(self, r: TraceRecord) -> bool:
        s = self._sub(r.detail.subscriber)
        if s is not None:
            s.catchup.discard(r.detail.pubend)
        return False

    def _on_connect(self, r: TraceRecord) -> bool:
        d = r.detail
        s = self._sub(d.subscriber)
        if s is None or not s.subscribed:
            return self.report.fail(
                ONCE, d.subscriber, "reconnected without a durable subscription", r
            )
        s.connected, s.shb, s.catchup = True, d.shb, set(d.catchup)
        self.connects[d.subscriber] = r
        pubends = set(self.facts.pubends) | set(d.ct.entries) | set(s.acked)
        s.position = {p: d.ct.at(p) for p in pubends}
        for p in pubends:
            pf = self.facts.pubend(p)
            ct = d.ct.at(p)
            s.latest_at_connect[p] = ct >= s.acked_at(p)
            s.lag_ok[p] = pf.max_retain is None or pf.clock - ct < pf.max_retain
            s.lost_at_connect[p] = pf.through
        return False

    def _on_ack(self, r: TraceRecord) -> bool:
        d = r.detail
        s = self._sub(d.subscriber)
        if s is None:
            return False  # the SHB rejects it; nothing was acknowledged
        for p, t in d.ct.entries.items():
            if t > s.position_at(p) and t > s.acked_at(p):
                return self.report.fail(
                    ONCE,
                    d.subscriber,
                    f"acknowledged CT {t} for {p} beyond what was delivered "
                    f"(through {s.position_at(p)}): CT advanced before consumption",
                    r,
                    pubend=p,
                    tick=t,
                    events=(self.last.get((d.subscriber, p)),),
                )
            s.acked[p] = max(s.acked_at(p), t)
        return False

    def _on_message(self, r: TraceRecord) -> bool:
        d = r.detail
        m = d.message
        s = self._sub(d.subscriber)
        key = (d.subscriber, m.pubend)
        prev = self.last.get(key, self.connects.get(d.subscriber))
        if s is None or not s.connected or s.shb != d.shb:
            return self.report.fail(
                ONCE, d.subscriber, f"{type(m).__name__} delivered while not connected here", r
            )
        expect = s.position_at(m.pubend)
        if m.t0 != expect:
            what = "a hole" if m.t0 > expect else "an overlap (duplicate or reordered)"
            return self.report.fail(
                ONCE,
                d.subscriber,
                f"{type(m).__name__} over ({m.t0}, {m.t}] after ({expect}]: {what}",
                r,
                pubend=m.pubend,
                tick=m.t0,
                events=(prev,),
            )
        if isinstance(m, GapMessage):
            bad = self._gap(r, s, m)
        else:
            bad = self._content(r, s, m)
        s.position[m.pubend] = m.t
        self.last[key] = r
        return bad

    def _content(self, r: TraceRecord, s: SubFacts, m: EventMessage | SilenceMessage) -> bool:
        pf = self.facts.pubend(m.pubend)
        hi = m.t - 1 if isinstance(m, EventMessage) else m.t
        flt = s.filter
        for t in pf.events_in(m.t0 + 1, hi):
            if self.ctx.matches(flt, pf.events[t]):
                return self.report.fail(
                    ONCE,
                    r.detail.subscriber,
                    f"matching event at {t} left out by {type(m).__name__} ({m.t0}, {m.t}]",
                    r,
                    pubend=m.pubend,
                    tick=t,
                )
        if isinstance(m, EventMessage):
            attrs_ = pf.events.get(m.t)
            if attrs_ is None or not self.ctx.matches(flt, attrs_):
                why = "no such event" if attrs_ is None else "it does not match the filter"
                return self.report.fail(
                    ONCE,
                    r.detail.subscriber,
                    f"event message at {m.t}: {why}",
                    r,
                    pubend=m.pubend,
                    tick=m.t,
                )
        return False

    def _gap(self, r: TraceRecord, s: SubFacts, m: GapMessage) -> bool:
        sub, p = r.detail.subscriber, m.pubend
        pf = self.facts.pubend(p)

        def fail(msg: str, tick: int) -> bool:
            return self.report.fail(
                GAP, sub, msg, r, pubend=p, tick=tick, events=(self.connects.get(sub),)
            )

        if p not in s.catchup:
            return fail(f"gap ({m.t0}, {m.t}] to a subscriber not in catchup", m.t0 + 1)
        if m.t > pf.through:
            return fail(f"gap ({m.t0}, {m.t}] over ticks not L (L through {pf.through})", m.t)
        # (a consequence of the L rule, judged first for a clearer explanation)
        latest = s.latest_at_connect.get(p, False) and s.lag_ok.get(p, False)
        if latest and m.t0 + 1 <= s.lost_at_connect.get(p, -1):
            return fail(
                f"gap ({m.t0}, {m.t}] over ticks already L when the subscriber reconnected "
                "with its latest CT, lagging T(p) by less than maxRetain",
                m.t0 + 1,
            )
        lo = max(m.t0, s.acked_at(p)) + 1
        hole = uncovered(lo, m.t, pf.early)
        if hole is not None:
            return fail(
                f"gap ({m.t0}, {m.t}]: tick {hole} is above the acknowledged CT "
                f"{s.acked_at(p)} and was not released early",
                hole,
            )
        return False

    # ------------------------------------------------------------------ release

    def _on_report(self, r: TraceRecord) -> bool:
        d = r.detail
        self.facts.report(d.node, d.pubend, d.released, d.delivered)
        if d.released > d.delivered:
            return self.report.fail(
                HORIZON,
                d.node,
                f"reported released {d.released} above latestDelivered {d.delivered}",
                r,
                pubend=d.pubend,
                tick=d.released,
            )
        if self.ctx.roles.get(d.node) == "shb":
            return False
        # an intermediate node: its pair is at most the minima of the SHBs below it [DUR §3]
        below = self.ledger.shbs_below(self.ctx.cell_of.get(d.node, d.node))
        if not below:
            return False
        tr, td = self.facts.minima(d.pubend, below)
        if d.released > tr or d.delivered > td:
            return self.report.fail(
                HORIZON,
                d.node,
                f"node reported ({d.released}, {d.delivered}); the SHBs below it "
                f"{list(below)} reported at most ({tr}, {td})",
                r,
                pubend=d.pubend,
            )
        return False

    def _on_release(self, r: TraceRecord) -> bool:
        d = r.detail
        pf = self.facts.pubend(d.pubend)
        pf.clock = max(pf.clock, d.clock)
        bad = False
        if not pf.policy_known:
            pf.max_retain, pf.policy_known = d.max_retain, True
        elif d.max_retain != pf.max_retain:
            bad = self.report.fail(
                RULE,
                d.pubend,
                f"maxRetain {d.max_retain} at this L step; the pubend's policy is {pf.max_retain}",
                r,
                pubend=d.pubend,
            )
        tr, td = self.facts.minima(d.pubend, self.shbs)
        if d.tr > d.td or d.tr > tr or d.td > td:
            bad = bad or self.report.fail(
                HORIZON,
                d.pubend,
                f"pubend's Tr={d.tr}, Td={d.td}; its SHBs reported at most Tr={tr}, Td={td}",
                r,
                pubend=d.pubend,
            )
        bad = bad or self._rule_broken(r, tr, td)
        # the facts are kept even when a switched-off invariant broke, for the others
        pf.add_release(d.through, min(d.tr, tr))
        return bad

    def _rule_broken(self, r: TraceRecord, tr: int, td: int) -> bool:
        d = r.detail
        t = d.through
        mr = self.facts.pubend(d.pubend).max_retain  # the policy, not the step's claim
        early = mr is not None and d.clock - t > mr
        msg = None
        if t > td:
            msg = f"tick {t} made L above Td={td}"
        elif t > tr and not early:
            msg = f"tick {t} made L above Tr={tr} without early release"
        else:
            for name in sorted(self.facts.subs):
                s = self.facts.subs[name]
                if s.subscribed and t > s.acked_at(d.pubend) and not early:
                    msg = (
                        f"tick {t} made L above subscriber {name}'s acknowledged CT "
                        f"{s.acked_at(d.pubend)} without early release"
                    )
                    break
        if msg is None:
            return False
        return self.report.fail(RULE, d.pubend, msg, r, pubend=d.pubend, tick=t)

    # ------------------------------------------------------------------ liveness

    def finish(self, end: TraceRecord) -> bool:
        for name in sorted(self.facts.subs):
            s = self.facts.subs[name]
            if not (s.subscribed and s.connected):
                continue
            for p in sorted(self.facts.pubends):
                pf = self.facts.pubends[p]
                for t in pf.events_in(s.position_at(p) + 1, pf.clock):
                    if self.ctx.matches(s.filter, pf.events[t]):
                        return self.report.fail(
                            ONCE,
                            name,
                            f"matching event at {t} never delivered (delivered through "
                            f"{s.position_at(p)}) after heal and drain",
                            end,
                            pubend=p,
                            tick=t,
                        )
        return False
