"""DFT's invariants, judged from the trace alone [DFT §I, §II, §VI, §VII].

Theory of operation
-------------------
:class:`DFTChecker` consumes trace records (``connect``, ``publish``, ``send``, ``receive``,
``persist``, ``deliver``, ``fault``) one at a time and judges them against what should
happen, computed from the workload (publications and the subscriptions' filters, evaluated
with the reference evaluator the caller passes in :class:`DFTContext`) and the primary tree —
never a role's internal state. When is a subscription *accepted*? At its source broker, the
SRT entry is written to stable storage (``persist`` of ``("accepted", sid)``, with its
confirmation tags); at another broker, when it sends its confirmation c_s, or receives an
island copy for a partition it is on [DFT §V]. A protocol that reports no acceptance (the
naive baseline) counts a subscription accepted when its subscriber connects.

* ``exactly_once`` — no publication is delivered twice to one subscription [DFT §I].
* ``order`` — per source, delivered publications follow the source's order [DFT §I].
* ``gapless`` — a matching publication is never skipped: none is missing between two
  delivered ones of the same source, nor before a delivered one when it was published after
  the subscription was accepted [DFT §I: "no intermediate matching publication"].
* ``safety`` — a publication published after the subscription was accepted reaches its
  subscriber only through brokers that had accepted the subscription before forwarding it:
  its source and every broker of its trail [DFT §I "safety condition", §VI]. The trail is
  that of the copy received (``receive`` records), else of the first copy sent to the
  subscriber's broker. Not judged for a protocol that reports no acceptance.
* ``legitimate_propagation`` — every forwarded subscription and publication follows its
  primary path and bypasses at most δ brokers in every primary sub-path of 2δ + 1 brokers
  [DFT §VII]; a violation names the offending sub-path.
* ``bounded_delivery`` — while at most δ failures stand on every sub-path of 2δ + 1 brokers
  of P(source, subscriber's broker), every matching publication (to a subscription accepted
  with no confirmation tags, published after acceptance) is delivered *before any failure
  heals* — bypassing the failures, not waiting for them [DFT §I, §II]. Publications from
  pairs whose failures leave that budget are judged on the other (safety) invariants only
  and counted in :attr:`DFTChecker.out_of_budget`. Nothing is owed to a subscriber after it
  disconnects; a reconnect is a new connection, hence a new subscription.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, final

import attrs

from gapless.impl.dft.messages import PubMsg, SubConfirm, SubMsg
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Deliver
from gapless.impl.trace import TraceRecord
from gapless.invariants.violation import Violation

__all__ = [
    "DFT_INVARIANTS",
    "DFT_SAFETY",
    "DFTChecker",
    "DFTContext",
    "check_dft_trace",
    "pair_within_budget",
]

DFT_INVARIANTS: Final = (
    "exactly_once",
    "order",
    "gapless",
    "safety",
    "legitimate_propagation",
    "bounded_delivery",
)
DFT_SAFETY: Final = ("exactly_once", "order", "gapless", "safety", "legitimate_propagation")
"""What a run beyond its failure budget is still judged on [DFT §II]."""

_HEALS: Final = frozenset({"link_heal", "restart"})


def pair_within_budget(
    tree: PrimaryTree,
    delta: int,
    crashed: Iterable[str],
    failed: Iterable[frozenset[str]],
    source: str,
    broker: str,
) -> bool:
    """At most ``delta`` failures on every sub-path of 2δ + 1 brokers of P(source, broker),
    neither end failed. A failed link counts as a failure of its end farther from the source
    [DFT §II: a link failure and a crash look alike]."""
    down = set(crashed)
    if source in down or broker in down:
        return False
    path = tree.path(source, broker)
    pos = {b: i for i, b in enumerate(path)}
    bad = {pos[b] for b in down if b in pos}
    for link in failed:
        a, b = sorted(link)
        if a in pos and b in pos:
            bad.add(max(pos[a], pos[b]))
    if len(path) - 1 in bad:
        return False
    w = 2 * delta + 1
    return all(
        len([i for i in bad if j <= i < j + w]) <= delta for j in range(max(1, len(path) - w + 1))
    )


@final
@attrs.frozen(kw_only=True)
class DFTContext:
    """What the invariants know besides the trace: the primary tree, δ, the reference
    filter evaluator, and ``grace`` (µs): publications younger than this at a heal are
    judged at the end of the run instead (the time a bypass needs on slow links)."""

    tree: PrimaryTree
    delta: int
    matches: Callable[[str, Mapping[str, Any]], bool]
    grace: int = 0
    #: False for a protocol that reports no acceptance (the naive baseline): a subscription
    #: then counts as accepted, with no tags, at a broker when the broker receives it and at
    #: its source when its subscriber connects.
    reports_acceptance: bool = True


@attrs.define
class _Sub:
    sid: str
    subscriber: str
    connection: int
    broker: str
    filter: str
    connected: int
    accepted: int | None = None
    tags: frozenset[Any] | None = None
    closed: bool = False
    delivered: dict[str, list[int]] = attrs.field(factory=dict)
    seen: set[tuple[str, int]] = attrs.field(factory=set)


class DFTChecker:
    """Every DFT invariant, online (``observe``) or over a recorded trace."""

    def __init__(self, ctx: DFTContext, names: Iterable[str] = ()) -> None:
        self.ctx = ctx
        wanted = set(names) or set(DFT_INVARIANTS)
        self.on = {n: n in wanted for n in DFT_INVARIANTS}
        self.violation: Violation | None = None
        self.subs: dict[str, _Sub] = {}
        self.pubs: dict[str, list[tuple[int, Mapping[str, Any], TraceRecord]]] = {}
        self.accepted_at: dict[tuple[str, str], int] = {}
        self.first_send: dict[tuple[str, tuple[str, int]], int] = {}
        self.last_copy: dict[tuple[str, tuple[str, int]], tuple[str, ...]] = {}
        self.sent_copy: dict[tuple[str, tuple[str, int]], tuple[str, ...]] = {}
        self.crashed: set[str] = set()
        self.failed: set[frozenset[str]] = set()
        self.pending: dict[tuple[str, tuple[str, int]], TraceRecord] = {}
        self.out_of_budget: set[tuple[str, str]] = set()
        #: How many owed deliveries ``bounded_delivery`` saw made (non-vacuity).
        self.bounded_met = 0

    # ------------------------------------------------------------------ plumbing
    def restrict(self, names: Iterable[str]) -> None:
        """From now on judge only ``names``; a violation already found stands."""
        keep = set(names)
        for n in self.on:
            self.on[n] = self.on[n] and n in keep

    def publish_time(self, pubend: str, tick: int) -> int | None:
        """When ``pubend`` published its ``tick``-th publication (None if unknown)."""
        got = self.pubs.get(pubend, [])
        return got[tick - 1][0] if 0 < tick <= len(got) else None

    def _fail(
        self, name: str, subject: str, message: str, r: TraceRecord, events: Iterable[TraceRecord]
    ) -> bool:
        if self.violation is None and self.on.get(name, False):
            self.violation = Violation(
                invariant=name,
                subject=subject,
                message=message,
                time=r.time,
                events=(*events, r),
            )
        return self.violation is not None

    # ------------------------------------------------------------------ observe
    def observe(self, r: TraceRecord) -> bool:
        """Judge one record; True once a violation has been found."""
        kind, d = r.kind, r.detail
        if kind == "connect":
            sid = f"{d.subscriber}/{d.connection}"
            sub = _Sub(sid, d.subscriber, d.connection, r.node, d.filter, r.time)
            self.subs[sid] = sub
            if not self.ctx.reports_acceptance:
                sub.accepted, sub.tags = r.time, frozenset()
                self._accept(r.node, sid, r.time)
        elif kind == "disconnect":
            self._close(d.subscriber)
        elif kind == "publish":
            self.pubs.setdefault(d.pubend, []).append((r.time, d.attributes, r))
            self._expect(r, d.pubend, len(self.pubs[d.pubend]), d.attributes)
        elif kind == "persist" and isinstance(d.key, tuple) and d.key[:1] == ("accepted",):
            self._accept(r.node, d.key[1], r.time)
            mine = self.subs.get(d.key[1])
            if mine is not None and mine.accepted is None:
                mine.accepted, mine.tags = r.time, frozenset(d.value)
        elif kind == "send":
            return self._on_send(r)
        elif kind == "receive":
            self._on_receive(r)
        elif kind == "deliver":
            return self._on_deliver(r)
        elif kind == "fault":
            return self._on_fault(r)
        return self.violation is not None

    def _close(self, subscriber: str) -> None:
        """A subscriber left: nothing more is owed to its connections."""
        for sub in self.subs.values():
            if sub.subscriber == subscriber and not sub.closed:
                sub.closed = True
                for k in [k for k in self.pending if k[0] == sub.sid]:
                    del self.pending[k]

    def _accept(self, broker: str, sid: str, time: int) -> None:
        self.accepted_at.setdefault((broker, sid), time)

    def _on_receive(self, r: TraceRecord) -> None:
        msg = r.detail.msg
        if isinstance(msg, PubMsg):
            self.last_copy[(r.node, msg.key)] = msg.trail
        elif isinstance(msg, SubMsg) and (
            not self.ctx.reports_acceptance
            or (msg.island and any(r.node in p.pnodes for p in msg.tags))
        ):
            # an island copy is accepted on arrival [DFT §V-B]; the naive baseline accepts
            # whatever it receives
            self._accept(r.node, msg.sid, r.time)

    def _on_send(self, r: TraceRecord) -> bool:
        msg = r.detail.msg
        if isinstance(msg, SubConfirm):
            self._accept(r.node, msg.sid, r.time)
            return self.violation is not None
        if isinstance(msg, PubMsg):
            self.first_send.setdefault((r.node, msg.key), r.time)
            self.sent_copy.setdefault((r.detail.to, msg.key), msg.trail)
            return self._legitimate(r, msg.trail, r.detail.to)
        if isinstance(msg, SubMsg) and not msg.island:
            return self._legitimate(r, msg.trail, r.detail.to)
        return self.violation is not None

    # ------------------------------------------------------------------ legitimate propagation
    def _legitimate(self, r: TraceRecord, trail: tuple[str, ...], to: str) -> bool:
        """``legitimate_propagation`` for one forwarded message [DFT §VII]."""
        if not trail or not self.on["legitimate_propagation"]:
            return self.violation is not None
        chain = (*trail, to)
        path = self.ctx.tree.path(chain[0], to)
        it = iter(path)
        if not all(b in it for b in chain):
            return self._fail(
                "legitimate_propagation",
                r.node,
                f"forwarding chain {list(chain)} leaves the primary path {list(path)}",
                r,
                (),
            )
        forwarded = set(chain)
        w, delta = 2 * self.ctx.delta + 1, self.ctx.delta
        for i in range(max(1, len(path) - w + 1)):
            window = path[i : i + w]
            bypassed = [b for b in window if b not in forwarded]
            if len(bypassed) > delta:
                return self._fail(
                    "legitimate_propagation",
                    r.node,
                    f"chain {list(chain)} bypasses {bypassed} (more than δ={delta}) in the "
                    f"primary sub-path {list(window)}",
                    r,
                    (),
                )
        return self.violation is not None

    # ------------------------------------------------------------------ deliveries
    def _on_deliver(self, r: TraceRecord) -> bool:
        d: Deliver = r.detail
        sid = f"{d.subscriber}/{d.connection}"
        sub = self.subs.get(sid)
        if sub is None:
            return self._fail("safety", d.subscriber, "delivery to an unknown subscription", r, ())
        key = (d.pubend, d.tick)
        if key in sub.seen:
            return self._fail("exactly_once", sid, f"{key} delivered twice", r, ())
        got = sub.delivered.setdefault(d.pubend, [])
        if got and d.tick < got[-1]:
            return self._fail("order", sid, f"{key} delivered after ({d.pubend}, {got[-1]})", r, ())
        if self._gap(r, sub, d.pubend, d.tick) or self._unsafe(r, sub, key):
            return True
        sub.seen.add(key)
        got.append(d.tick)
        if self.pending.pop((sid, key), None) is not None:
            self.bounded_met += 1
        return self.violation is not None

    def _gap(self, r: TraceRecord, sub: _Sub, pubend: str, tick: int) -> bool:
        """``gapless``: no matching publication of ``pubend`` is skipped below ``tick``."""
        got = sub.delivered.get(pubend, [])
        accepted = sub.accepted if sub.accepted is not None else sub.connected
        pubs = self.pubs.get(pubend, [])
        for k in range(got[-1] + 1 if got else 1, tick):
            if k > len(pubs):
                break
            t, attributes, rec = pubs[k - 1]
            if (pubend, k) in sub.seen or not self.ctx.matches(sub.filter, attributes):
                continue
            if got or t >= accepted:
                return self._fail(
                    "gapless",
                    sub.sid,
                    f"({pubend}, {tick}) delivered but matching ({pubend}, {k}), published "
                    f"at t={t}, never was",
                    r,
                    (rec,),
                )
        return False

    def _unsafe(self, r: TraceRecord, sub: _Sub, key: tuple[str, int]) -> bool:
        """``safety``: every broker that forwarded the delivered copy had accepted the
        subscription before forwarding it (publications after acceptance only)."""
        if not self.ctx.reports_acceptance:
            return False  # no broker reports acceptance: nothing to judge safety by
        source, tick = key
        t_pub = self.publish_time(source, tick)
        if t_pub is None or sub.accepted is None or t_pub < sub.accepted:
            return False
        trail = self.last_copy.get((r.node, key), self.sent_copy.get((r.node, key), ()))
        brokers = {source, *trail}
        for x in sorted(brokers):
            t_fwd = t_pub if x == source else self.first_send.get((x, key), r.time)
            t_acc = self.accepted_at.get((x, sub.sid))
            if t_acc is None or t_acc > t_fwd:
                return self._fail(
                    "safety",
                    sub.sid,
                    f"{key} was forwarded by {x} at t={t_fwd} before {x} accepted "
                    f"{sub.sid} (accepted: {t_acc})",
                    r,
                    (),
                )
        return False

    # ------------------------------------------------------------------ bounded delivery
    def within_budget(self, source: str, broker: str) -> bool:
        """:func:`pair_within_budget` under the failures standing now."""
        return pair_within_budget(
            self.ctx.tree, self.ctx.delta, self.crashed, self.failed, source, broker
        )

    def _expect(self, r: TraceRecord, source: str, n: int, attributes: Mapping[str, Any]) -> None:
        """Publication ``(source, n)`` must reach every subscription accepted untagged."""
        for sub in self.subs.values():
            if sub.closed or sub.accepted is None or sub.tags or sub.accepted > r.time:
                continue
            if not self.ctx.matches(sub.filter, attributes):
                continue
            if self.within_budget(source, sub.broker):
                self.pending[(sub.sid, (source, n))] = r
            else:
                self.out_of_budget.add((source, sub.broker))

    def _on_fault(self, r: TraceRecord) -> bool:
        f = r.detail
        if f.kind == "fail" and f.phase == "end":
            return False  # the world's "fail" never heals: its broker stays failed
        if f.kind in _HEALS or f.phase == "end":
            if self._judge_pending(r, r.time - self.ctx.grace):
                return True
            if f.kind in ("restart", "crash"):  # the world's crash ends with the restart
                self.crashed.discard(f.target)
            else:
                self.failed.discard(frozenset(f.target.split("|")))
            return False
        if f.kind in ("crash", "fail"):  # "fail": a broker that never restarts
            self.crashed.add(f.target)
        elif f.kind == "link_fail":
            self.failed.add(frozenset(f.target.split("|")))
        for k in list(self.pending):
            sid, (source, _) = k
            if not self.within_budget(source, self.subs[sid].broker):
                del self.pending[k]
                self.out_of_budget.add((source, self.subs[sid].broker))
        return self.violation is not None

    def _judge_pending(self, r: TraceRecord, upto: int) -> bool:
        for (sid, key), rec in sorted(self.pending.items(), key=lambda kv: kv[1].seq):
            if rec.time > upto:
                continue
            return self._fail(
                "bounded_delivery",
                sid,
                f"{key} was not delivered while the failures within δ={self.ctx.delta} "
                f"persisted (judged at {r.kind} {r.detail!r})",
                r,
                (rec,),
            )
        return False

    def finish(self, r_end: TraceRecord) -> Violation | None:
        """Judge what is still owed at the end of the run (after it drained)."""
        self._judge_pending(r_end, r_end.time)
        return self.violation


def check_dft_trace(
    records: Iterable[TraceRecord], ctx: DFTContext, names: Iterable[str] = ()
) -> tuple[Violation | None, DFTChecker]:
    """Run every record through a :class:`DFTChecker`; the violation found (or None)."""
    checker = DFTChecker(ctx, names)
    last: TraceRecord | None = None
    for rec in records:
        last = rec
        if checker.observe(rec):
            return checker.violation, checker
    end = TraceRecord(
        seq=(last.seq + 1) if last else 0,
        time=last.time if last else 0,
        node="",
        kind="end",
        detail=None,
    )
    return checker.finish(end), checker
