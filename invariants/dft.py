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

The invariants are plug-ins over the kit's shared ledger (:mod:`gapless.invariants.plugin`,
run by :class:`~gapless.invariants.checker.Checker`, as GD's are): the facts several of them
read — subscriptions and their acceptance, publications, per-broker acceptance times,
forwarding trails, the failures standing — are one :class:`DFTFacts` the ledger keeps
(``CheckContext.protocol_facts``); :class:`DFTDeliveries` owns ``exactly_once``, ``order``
and ``gapless`` (and adds deliveries), :class:`DFTSafety` ``safety``,
:class:`DFTLegitimacy` ``legitimate_propagation``, :class:`DFTBounded`
``bounded_delivery``. :class:`DFTChecker` is the registry's checker over them.

* ``exactly_once`` — no publication is delivered twice to one subscription [DFT §I].
* ``order`` — per source, delivered publications follow the source's order [DFT §I].
* ``gapless`` — a matching publication is never skipped: none is missing between two
  delivered ones of the same source, nor before a delivered one when it was published after
  the subscription was accepted [DFT §I: "no intermediate matching publication"]. *Per
  source*: a subscription accepted with tags excludes the sources on or beyond their pids;
  when a partition recovers its source broker writes the acceptance again with new tags
  [DFT §VIII-A step (iv)]. The flow from source X is owed from the first acceptance whose
  tags exclude nothing of X; while every acceptance so far excludes X, it is owed from the
  first acceptance — unless a pid excluding X has been announced recovered (a
  ``PartitionHealed`` or ``RecoveryNotifier`` sent), when the flow may resume at its first
  delivery and is judged from there.
* ``safety`` — a publication published after the subscription was accepted (per source:
  after its flow start, see ``gapless``) reaches its subscriber only through brokers that
  had accepted the subscription before forwarding it: its source and every broker of its
  trail [DFT §I "safety condition", §VI]; and no delivered copy carries a tag of the
  subscription's acceptance tags as last written [Figure 8 l. 32-38]. The trail is
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

from gapless.impl.dft.messages import (
    PartitionHealed,
    Pid,
    PubMsg,
    RecoveryNotifier,
    SubConfirm,
    SubMsg,
)
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Deliver
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.trace import TraceRecord
from gapless.invariants.checker import Checker
from gapless.invariants.dft_tables import TABLES, DFTTables
from gapless.invariants.plugin import CheckContext, Ledger, Plugin, Report
from gapless.invariants.violation import Violation

__all__ = [
    "DFT_INVARIANTS",
    "DFT_PLUGINS",
    "DFT_SAFETY",
    "DFTChecker",
    "DFTContext",
    "DFTFacts",
    "check_dft_trace",
    "live_after_heal",
    "pair_within_budget",
]

DFT_INVARIANTS: Final = (
    "exactly_once",
    "order",
    "gapless",
    "safety",
    "legitimate_propagation",
    "bounded_delivery",
    TABLES,
)
DFT_SAFETY: Final = (
    "exactly_once",
    "order",
    "gapless",
    "safety",
    "legitimate_propagation",
    TABLES,
)
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
    #: The brokers of ``tree`` that join during the run: absent until they first send
    #: (``partition_tables`` does not expect their tables before).
    late: frozenset[str] = frozenset()


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
    #: Every acceptance written at the source: (time, tags), the first one and those a
    #: partition recovery wrote again [DFT §VIII-A].
    acceptances: list[tuple[int, frozenset[Any]]] = attrs.field(factory=list)
    closed: bool = False
    delivered: dict[str, list[int]] = attrs.field(factory=dict)
    seen: set[tuple[str, int]] = attrs.field(factory=set)


class DFTFacts:
    """What several DFT plug-ins read, kept once per ledger (``Ledger.proto``): the
    subscriptions (when and with which tags each was accepted, whether it is closed), the
    publications, when each broker accepted each subscription, the trails of forwarded
    copies, and the failures standing now. Its :meth:`facts` are added before the plug-ins
    judge a record."""

    def __init__(self, ctx: DFTContext) -> None:
        self.ctx = ctx
        self.subs: dict[str, _Sub] = {}
        self.pubs: dict[str, list[tuple[int, Mapping[str, Any], TraceRecord]]] = {}
        self.accepted_at: dict[tuple[str, str], int] = {}
        self.first_send: dict[tuple[str, tuple[str, int]], int] = {}
        #: When each broker last crashed: its first sends count from there.
        self.crash_time: dict[str, int] = {}
        self.last_copy: dict[tuple[str, tuple[str, int]], tuple[str, ...]] = {}
        self.sent_copy: dict[tuple[str, tuple[str, int]], tuple[str, ...]] = {}
        self.last_tags: dict[tuple[str, tuple[str, int]], frozenset[Pid]] = {}
        self.crashed: set[str] = set()
        self.failed: set[frozenset[str]] = set()
        #: Pids some broker announced recovered [DFT §VIII-A steps (iv), (v)].
        self.healed: set[Pid] = set()
        #: :meth:`within_budget` answers under the failures standing now (cleared when
        #: they change): a publication asks it for every subscription.
        self._budget: dict[tuple[str, str], bool] = {}

    def facts(self) -> dict[str, Callable[[TraceRecord], None]]:
        """Per record kind, the method adding its facts."""
        return {
            "connect": self._on_connect,
            "disconnect": self._on_disconnect,
            "publish": self._on_publish,
            "persist": self._on_persist,
            "send": self._on_send,
            "receive": self._on_receive,
            "fault": self._on_fault,
        }

    def publish_time(self, pubend: str, tick: int) -> int | None:
        """When ``pubend`` published its ``tick``-th publication (None if unknown)."""
        got = self.pubs.get(pubend, [])
        return got[tick - 1][0] if 0 < tick <= len(got) else None

    def within_budget(self, source: str, broker: str) -> bool:
        """:func:`pair_within_budget` under the failures standing now."""
        key = (source, broker)
        got = self._budget.get(key)
        if got is None:
            got = self._budget[key] = pair_within_budget(
                self.ctx.tree, self.ctx.delta, self.crashed, self.failed, source, broker
            )
        return got

    def excludes(self, tags: Iterable[Pid], source: str) -> list[Pid]:
        """The pids of ``tags`` that ``source`` is on or beyond [DFT §VI, Figure 8 l. 11]."""
        tree = self.ctx.tree
        return [p for p in tags if tree.on_or_beyond(p.detector, p.pnodes, source)]

    def flow_start(self, sub: _Sub, source: str) -> int | None:
        """When ``sub``'s flow from ``source`` is owed from (see ``gapless``); None: from its
        first delivery."""
        if sub.accepted is None or not sub.acceptances:
            return sub.accepted if sub.accepted is not None else sub.connected
        for time, tags in sub.acceptances:
            if not self.excludes(tags, source):
                return time
        if any(p in self.healed for p in self.excludes(sub.acceptances[-1][1], source)):
            return None
        return sub.accepted

    def accept(self, broker: str, sid: str, time: int) -> None:
        self.accepted_at.setdefault((broker, sid), time)

    def _on_connect(self, r: TraceRecord) -> None:
        d = r.detail
        sid = f"{d.subscriber}/{d.connection}"
        sub = _Sub(sid, d.subscriber, d.connection, r.node, d.filter, r.time)
        self.subs[sid] = sub
        if not self.ctx.reports_acceptance:
            sub.accepted, sub.tags = r.time, frozenset()
            self.accept(r.node, sid, r.time)

    def _on_disconnect(self, r: TraceRecord) -> None:
        for sub in self.subs.values():
            if sub.subscriber == r.detail.subscriber:
                sub.closed = True

    def _on_publish(self, r: TraceRecord) -> None:
        d = r.detail
        self.pubs.setdefault(d.pubend, []).append((r.time, d.attributes, r))

    def _on_persist(self, r: TraceRecord) -> None:
        d = r.detail
        if isinstance(d.key, tuple) and d.key[:1] == ("accepted",):
            self.accept(r.node, d.key[1], r.time)
            mine = self.subs.get(d.key[1])
            if mine is not None and r.node == mine.broker:
                if mine.accepted is None:
                    mine.accepted = r.time
                mine.tags = frozenset(d.value)
                mine.acceptances.append((r.time, mine.tags))

    def _on_send(self, r: TraceRecord) -> None:
        msg = r.detail.msg
        if isinstance(msg, SubConfirm):
            self.accept(r.node, msg.sid, r.time)
        elif isinstance(msg, PubMsg):
            # the first send since the broker's last crash: a restarted broker processes
            # what it re-sends afresh, against the SRT it rebuilt [DFT §VIII-B]
            k = (r.node, msg.key)
            if self.first_send.get(k, r.time) < self.crash_time.get(r.node, -1):
                self.first_send[k] = r.time
            else:
                self.first_send.setdefault(k, r.time)
            self.sent_copy.setdefault((r.detail.to, msg.key), msg.trail)
        elif isinstance(msg, PartitionHealed | RecoveryNotifier):
            self.healed.add(msg.pid)

    def _on_receive(self, r: TraceRecord) -> None:
        msg = r.detail.msg
        if isinstance(msg, PubMsg):
            self.last_copy[(r.node, msg.key)] = msg.trail
            self.last_tags[(r.node, msg.key)] = msg.tags
        elif isinstance(msg, SubMsg) and (
            not self.ctx.reports_acceptance
            or (msg.island and any(r.node in p.pnodes for p in msg.tags))
        ):
            # an island copy is accepted on arrival [DFT §V-B]; the naive baseline accepts
            # whatever it receives
            self.accept(r.node, msg.sid, r.time)

    def _on_fault(self, r: TraceRecord) -> None:
        f = r.detail
        if f.kind == "fail" and f.phase == "end":
            return  # the world's "fail" never heals: its broker stays failed
        self._budget.clear()
        if f.kind in _HEALS or f.phase == "end":
            if f.kind in ("restart", "crash"):  # the world's crash ends with the restart
                self.crashed.discard(f.target)
            else:
                self.failed.discard(frozenset(f.target.split("|")))
        elif f.kind in ("crash", "fail"):  # "fail": a broker that never restarts
            self.crashed.add(f.target)
            self.crash_time[f.target] = r.time
        elif f.kind == "link_fail":
            self.failed.add(frozenset(f.target.split("|")))


class _DFTPlugin(Plugin):
    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.f: DFTFacts = ledger.proto


class DFTDeliveries(_DFTPlugin):
    """``exactly_once``, ``order`` and ``gapless`` (see the module doc); it adds each
    delivery once judged."""

    names = ("exactly_once", "order", "gapless")
    kinds = frozenset({"deliver"})
    records_deliveries = True

    def observe(self, r: TraceRecord) -> bool:
        d: Deliver = r.detail
        sub = self.f.subs.get(f"{d.subscriber}/{d.connection}")
        if sub is None:
            return self.report.fail(
                "safety", d.subscriber, "delivery to an unknown subscription", r
            )
        key = (d.pubend, d.tick)
        if key in sub.seen:
            return self.report.fail("exactly_once", sub.sid, f"{key} delivered twice", r)
        got = sub.delivered.setdefault(d.pubend, [])
        if got and d.tick < got[-1]:
            msg = f"{key} delivered after ({d.pubend}, {got[-1]})"
            return self.report.fail("order", sub.sid, msg, r)
        if self._gap(r, sub, d.pubend, d.tick):
            return True
        sub.seen.add(key)
        got.append(d.tick)
        self.ledger.record_deliveries(r)
        return False

    def _gap(self, r: TraceRecord, sub: _Sub, pubend: str, tick: int) -> bool:
        """``gapless``: no matching publication of ``pubend`` is skipped below ``tick``."""
        got = sub.delivered.get(pubend, [])
        start = None if got else self.f.flow_start(sub, pubend)
        pubs = self.f.pubs.get(pubend, [])
        for k in range(got[-1] + 1 if got else 1, tick):
            if k > len(pubs):
                break
            t, attributes, rec = pubs[k - 1]
            if (pubend, k) in sub.seen or not self.f.ctx.matches(sub.filter, attributes):
                continue
            if got or (start is not None and t >= start):
                return self.report.fail(
                    "gapless",
                    sub.sid,
                    f"({pubend}, {tick}) delivered but matching ({pubend}, {k}), published "
                    f"at t={t}, never was",
                    r,
                    events=(rec,),
                )
        return False


class DFTSafety(_DFTPlugin):
    """``safety``: the delivered copy's tags do not meet the subscription's acceptance
    tags (its latest), and every broker that forwarded it had accepted the subscription
    before forwarding it (publications published after the source's flow start only, see
    ``gapless``)."""

    names = ("safety",)
    kinds = frozenset({"deliver"})

    def observe(self, r: TraceRecord) -> bool:
        f = self.f
        d: Deliver = r.detail
        sub = f.subs.get(f"{d.subscriber}/{d.connection}")
        if sub is None:
            return self.report.fail(
                "safety", d.subscriber, "delivery to an unknown subscription", r
            )
        if not f.ctx.reports_acceptance:
            return False  # no broker reports acceptance: nothing to judge safety by
        key = (d.pubend, d.tick)
        met = f.last_tags.get((r.node, key), frozenset()) & (sub.tags or frozenset())
        if met:
            return self.report.fail(
                "safety",
                sub.sid,
                f"{key} was delivered although its tags {sorted(met)} meet the acceptance "
                f"tags [Figure 8 l. 32-38]",
                r,
            )
        t_pub = f.publish_time(d.pubend, d.tick)
        if t_pub is None:
            return False
        # condition (ii) [DFT §VI] for every delivered publication, however old: a copy
        # published before the acceptance is safe only if its source and every forwarder
        # had accepted s before forwarding it (the seed-1238 release, spec/dft.md
        # "Safety on older publications")
        trail = f.last_copy.get((r.node, key), f.sent_copy.get((r.node, key), ()))
        for x in sorted({d.pubend, r.node, *trail}):
            t_acc = f.accepted_at.get((x, sub.sid))
            if t_acc is not None and t_acc <= t_pub:
                continue  # accepted before the publication existed: before any forwarding
            # a broker forwards a publication when it first sends it since its last crash
            # (or delivers it here): for its source too, which holds what is published
            # before it is restored [DFT §VIII-B] — a newcomer's first publications wait
            # for its first sync; a restarted source re-sends its unconfirmed ones afresh
            t_fwd = f.first_send.get((x, key), r.time)
            if x == r.node:
                t_fwd = min(t_fwd, r.time)
            if t_acc is None or t_acc > t_fwd:
                when = "before" if t_pub < (sub.accepted or 0) else "after"
                return self.report.fail(
                    "safety",
                    sub.sid,
                    f"{key} (published at t={t_pub}, {when} {sub.sid} was accepted) was "
                    f"forwarded by {x} at t={t_fwd} before {x} accepted {sub.sid} "
                    f"(accepted: {t_acc}) [DFT §VI condition (ii)]",
                    r,
                )
        return False


class DFTLegitimacy(_DFTPlugin):
    """``legitimate_propagation`` for every forwarded subscription and publication
    [DFT §VII]."""

    names = ("legitimate_propagation",)
    kinds = frozenset({"send"})

    def observe(self, r: TraceRecord) -> bool:
        msg = r.detail.msg
        if isinstance(msg, PubMsg) or (isinstance(msg, SubMsg) and not msg.island):
            return self._legitimate(r, msg.trail, r.detail.to)
        return False

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        #: Forwarding chains already judged legitimate (the tree never changes): copies of
        #: later publications take the same chains.
        self.clean: set[tuple[str, ...]] = set()

    def _legitimate(self, r: TraceRecord, trail: tuple[str, ...], to: str) -> bool:
        if not trail:
            return False
        chain = (*trail, to)
        if chain in self.clean:
            return False
        path = self.f.ctx.tree.path(chain[0], to)
        if chain == path:
            return False  # every broker of the path forwarded it: nothing bypassed
        it = iter(path)
        if not all(b in it for b in chain):
            msg = f"forwarding chain {list(chain)} leaves the primary path {list(path)}"
            return self.report.fail("legitimate_propagation", r.node, msg, r)
        forwarded = set(chain)
        delta = self.f.ctx.delta
        w = 2 * delta + 1
        for i in range(max(1, len(path) - w + 1)):
            window = path[i : i + w]
            bypassed = [b for b in window if b not in forwarded]
            if len(bypassed) > delta:
                return self.report.fail(
                    "legitimate_propagation",
                    r.node,
                    f"chain {list(chain)} bypasses {bypassed} (more than δ={delta}) in the "
                    f"primary sub-path {list(window)}",
                    r,
                )
        if len(self.clean) >= 1_000_000:
            self.clean.clear()
        self.clean.add(chain)
        return False


class DFTBounded(_DFTPlugin):
    """``bounded_delivery`` (see the module doc): what is owed, met, or out of budget."""

    names = ("bounded_delivery",)
    kinds = frozenset({"publish", "deliver", "fault", "disconnect"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.pending: dict[tuple[str, tuple[str, int]], TraceRecord] = {}
        self.out_of_budget: set[tuple[str, str]] = set()
        #: How many owed deliveries were seen made (non-vacuity).
        self.met = 0

    def observe(self, r: TraceRecord) -> bool:
        kind = r.kind
        if kind == "publish":
            self._expect(r)
        elif kind == "deliver":
            d = r.detail
            if self.pending.pop((f"{d.subscriber}/{d.connection}", (d.pubend, d.tick)), None):
                self.met += 1
        elif kind == "disconnect":
            for k in [k for k in self.pending if self.f.subs[k[0]].closed]:
                del self.pending[k]
        else:
            return self._on_fault(r)
        return False

    def _expect(self, r: TraceRecord) -> None:
        """Publication ``(source, n)`` must reach every subscription accepted untagged."""
        f = self.f
        source, attributes = r.detail.pubend, r.detail.attributes
        n = len(f.pubs[source])
        matched: dict[str, bool] = {}  # per filter: one evaluation per publication
        for sub in f.subs.values():
            if sub.closed or sub.accepted is None or sub.tags or sub.accepted > r.time:
                continue
            hit = matched.get(sub.filter)
            if hit is None:
                hit = matched[sub.filter] = f.ctx.matches(sub.filter, attributes)
            if not hit:
                continue
            if f.within_budget(source, sub.broker):
                self.pending[(sub.sid, (source, n))] = r
            else:
                self.out_of_budget.add((source, sub.broker))

    def _on_fault(self, r: TraceRecord) -> bool:
        f = r.detail
        if f.kind == "fail" and f.phase == "end":
            return False
        if f.kind in _HEALS or f.phase == "end":
            return self._judge(r, r.time - self.f.ctx.grace)
        for k in list(self.pending):
            sid, (source, _) = k
            broker = self.f.subs[sid].broker
            if not self.f.within_budget(source, broker):
                del self.pending[k]
                self.out_of_budget.add((source, broker))
        return False

    def _judge(self, r: TraceRecord, upto: int) -> bool:
        for (sid, key), rec in sorted(self.pending.items(), key=lambda kv: kv[1].seq):
            if rec.time > upto:
                continue
            return self.report.fail(
                "bounded_delivery",
                sid,
                f"{key} was not delivered while the failures within δ={self.f.ctx.delta} "
                f"persisted (judged at {r.kind} {r.detail!r})",
                r,
                events=(rec,),
            )
        return False

    def finish(self, end: TraceRecord) -> bool:
        return self._judge(end, end.time)


DFT_PLUGINS: Final[tuple[type[Plugin], ...]] = (
    DFTDeliveries,
    DFTSafety,
    DFTLegitimacy,
    DFTBounded,
    DFTTables,
)
"""DFT's invariants as plug-ins over the shared ledger, in report order."""


def _no_log(_persist: Any) -> None:
    return None


class DFTChecker:
    """Every DFT invariant, online (``observe``) or over a recorded trace: the kit's
    :class:`~gapless.invariants.checker.Checker` with :data:`DFT_PLUGINS` over a ledger
    that keeps :class:`DFTFacts`. Also answers what tests and counters ask: ``subs``,
    ``within_budget``, ``out_of_budget``, ``bounded_met``, ``publish_time``."""

    def __init__(self, ctx: DFTContext, names: Iterable[str] = ()) -> None:
        self.ctx = ctx
        check_ctx = CheckContext(
            subscriptions=(),
            cell_of={},
            cell_tree=(),
            pubend_host={},
            merged=(),
            roles={},
            min_repetition_us=1,
            matches=ctx.matches,
            logged=_no_log,
            payload_attributes=_no_log,
            protocol_facts=lambda: DFTFacts(ctx),
        )
        chosen = [n for n in names if n in DFT_INVARIANTS]
        self.checker = Checker(check_ctx, chosen, plugins=DFT_PLUGINS)
        self.facts: DFTFacts = self.checker.ledger.proto
        self.on = self.checker.on
        self._bounded = next((p for p in self.checker.plugins if isinstance(p, DFTBounded)), None)

    @property
    def violation(self) -> Violation | None:
        """The first violation found, if any."""
        return self.checker.violation

    @property
    def subs(self) -> dict[str, _Sub]:
        return self.facts.subs

    @property
    def out_of_budget(self) -> set[tuple[str, str]]:
        """(source, subscriber's broker) pairs judged on safety alone."""
        return set() if self._bounded is None else self._bounded.out_of_budget

    @property
    def bounded_met(self) -> int:
        """How many owed deliveries ``bounded_delivery`` saw made (non-vacuity)."""
        return 0 if self._bounded is None else self._bounded.met

    def within_budget(self, source: str, broker: str) -> bool:
        return self.facts.within_budget(source, broker)

    def publish_time(self, pubend: str, tick: int) -> int | None:
        return self.facts.publish_time(pubend, tick)

    def restrict(self, names: Iterable[str]) -> None:
        """From now on judge only ``names``; a violation already found stands."""
        self.checker.restrict(names)

    def observe(self, r: TraceRecord) -> bool:
        """Judge one record; True once a violation has been found."""
        return self.checker.observe(r)

    def finish(self, r_end: TraceRecord) -> Violation | None:
        """Judge what is still owed at the end of the run (after it drained)."""
        return self.checker.finish(r_end)


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


def live_after_heal(checker: DFTChecker, since: int) -> Violation | None:
    """``live_after_heal``, judged at the end of a run over what ``checker`` observed: when
    no failure stands from ``since`` on (the caller picks ``since`` after the last heal
    and the recoveries it set off), every open subscription accepted before ``since`` —
    tagged during a partition or not — was delivered every matching publication published
    at or after ``since``, from every source. After recovery "the state of the network
    along the forwarding paths that pass through the recovered partition returns back to
    normal" [DFT §VIII-A]: ``bounded_delivery`` owes only subscriptions accepted untagged,
    while failures stand; this is what recovery owes the rest. A failure still standing is
    the caller's misuse (:class:`~gapless.impl.errors.ProtocolMisuse`)."""
    f = checker.facts
    if f.crashed or f.failed:
        raise ProtocolMisuse(
            f"live_after_heal needs every failure healed; standing: crashed "
            f"{sorted(f.crashed)}, failed links {sorted(sorted(x) for x in f.failed)}"
        )
    for sub in f.subs.values():
        if sub.closed or sub.accepted is None or sub.accepted > since:
            continue
        for source, pubs in sorted(f.pubs.items()):
            for n, (t, attributes, rec) in enumerate(pubs, start=1):
                if t < since or (source, n) in sub.seen:
                    continue
                if f.ctx.matches(sub.filter, attributes):
                    return Violation(
                        invariant="live_after_heal",
                        subject=sub.sid,
                        message=f"({source}, {n}), published at t={t} after every failure "
                        f"healed (t={since}), was never delivered (acceptance tags: "
                        f"{sorted(sub.tags or ())})",
                        time=t,
                        pubend=source,
                        tick=n,
                        events=(rec,),
                    )
    return None
