"""The shared ledger of a trace and the plug-in seam every protocol's invariants use.

Theory of operation
-------------------
A protocol's invariants judge a run's trace (DESIGN.md "Checking, in four layers"): the
workload, the effects the roles emit and the faults — never a role's internal state. Much of
what they need is the same for every protocol, so it is kept once, in a :class:`Ledger`:

* the ``publish`` records (a client handed a pubend its n-th message), and so the publish time
  of every logged message (:meth:`Ledger.publish_time`);
* what each pubend asked stable storage to log (``persist``, decoded by the binding's
  ``CheckContext.logged``) and what was durably logged, per pubend and tick, and when
  (``persisted``): :attr:`Ledger.requested`, :attr:`Ledger.logged`,
  :attr:`Ledger.logged_sorted`;
* the subscribers' connections (:class:`Conn`): where and when each began, whether it is still
  live, and what it delivered (per pubend the ticks, the last tick and its record; across the
  merged pubends the last tick) [GD §2.3];
* the acknowledgements on the wire: per pair of cells the highest ``ack(T)``, and per pubend
  the highest ack its host received [GD §3.1];
* the topology as plain data (cells below a cell, SHBs below a cell) and the reference filter
  evaluator with a cache (:meth:`Ledger.matches`);
* a protocol's own shared facts, when its context brings them (``protocol_facts``, kept as
  :attr:`Ledger.proto`: DFT's acceptances and forwarding trails, for instance).

A *plug-in* (:class:`Plugin`) owns one or more invariant names, declares the record kinds it
reads, judges each such record (:meth:`Plugin.observe`) and, after a healed and drained run,
liveness (:meth:`Plugin.finish`). It reports a broken invariant through the checker's
:class:`Report`, which keeps the first violation only and ignores invariants that are switched
off. A protocol brings its own plug-ins (``gapless.invariants.gd.PLUGINS`` for guaranteed
delivery) and :class:`~gapless.invariants.checker.Checker` runs whichever the caller passes.

The order of facts and judgements: the facts a record adds (a logged tick, a connection, an
ack) are in the ledger *before* the plug-ins judge it; a delivery is judged against what was
delivered *before* it and then added (:meth:`Ledger.record_deliveries`). One plug-in may take
over adding deliveries (``records_deliveries = True``), so it can judge and add each member of
a cohort in one pass (GD's delivery plug-in does, for speed); it must then add every member
the ledger would (:meth:`Ledger.record_delivery` for a connection the member names), and the
checker leaves deliveries to it. Plug-ins keep their own state in themselves; anything two
plug-ins both need belongs in the ledger, so a plug-in that is switched off (none of its
invariants chosen) can be left out without changing what the others see.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Final, final

import attrs

from gapless.impl.effects import DeliverCohort, Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.trace import TraceRecord
from gapless.invariants.violation import Violation

__all__ = [
    "LINK_FAULTS",
    "NODE_FAULTS",
    "CheckContext",
    "Conn",
    "Ledger",
    "LogEntry",
    "Plugin",
    "Report",
    "SharedTicks",
    "SubscriptionInfo",
    "fault_nodes",
    "invariant_names",
    "own_ticks",
]

#: fault kinds that stop a broker, and those that cut a link; the others (loss, duplication,
#: reordering windows, a subscriber's disconnection) never stop a send
NODE_FAULTS: Final = frozenset({"crash", "stall_broker", "fail"})
LINK_FAULTS: Final = frozenset({"link_fail", "stall_link"})


def fault_nodes(kind: str, target: str) -> frozenset[str]:
    """The brokers a fault record names: the broker of a broker fault, both ends of a link
    (``a|b``), one side of a partition (``a,b,...``); empty for kinds that cannot stop a
    send."""
    if kind in NODE_FAULTS:
        return frozenset((target,))
    if kind in LINK_FAULTS:
        return frozenset(target.split("|"))
    if kind == "partition":
        return frozenset(target.split(","))
    return frozenset()


LogEntry = tuple[Mapping[str, Any], int, TraceRecord]
"""A durably logged message: its attributes, when it was logged (µs) and the ``persisted``
record."""


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
    #: the pubend's liveness parameters [GD §3.2] (None: the protocol has no such rule)
    aet_us: int | None = None
    ack_expected_period_us: int | None = None
    #: the longest an SHB may wait before acking what it delivered (GD's ``ack_delay_us``
    #: [GD §3.1]; None: the protocol has no such rule, or a trace file written before it was
    #: recorded — ``shb_ack_timing`` is then not judged)
    ack_delay_us: int | None = None
    #: the physical links ``(a, b)`` (a < b), for the link-bundle rule [GD §3.1] (empty: the
    #: protocol has no bundles, or a trace file written before they were recorded)
    links: tuple[tuple[str, str], ...] = ()
    #: every message one ``Persist`` logs, for a protocol whose writes may hold several
    #: (GD's group commit [GD §4.1]); None: each write logs at most one, as ``logged`` says
    logged_batch: Callable[[Persist], tuple[tuple[str, int, Mapping[str, Any]], ...]] | None = None
    #: a protocol's own shared facts (None: none): built once per ledger as
    #: :attr:`Ledger.proto`, an object whose ``facts()`` maps record kinds to the methods
    #: adding that kind's facts; the ledger adds them after its own, before plug-ins judge
    protocol_facts: Callable[[], Any] | None = None

    def logged_all(self, persist: Persist) -> tuple[tuple[str, int, Mapping[str, Any]], ...]:
        """``(pubend, tick, attributes)`` of every message ``persist`` logs, in order."""
        if self.logged_batch is not None:
            return self.logged_batch(persist)
        got = self.logged(persist)
        return () if got is None else (got,)


@final
class SharedTicks(set[int]):
    """A set of delivered ticks that ``holders`` connections hold as one object: the members
    of a cohort delivered together (GD's delivery plug-in adds a cohort's tick once, not once
    per member). Copy-on-write: a connection that adds a tick on its own first takes a
    private copy (:func:`own_ticks`); only a writer that holds every holder at once (the
    whole cohort, and nobody else) may add to it in place."""

    __slots__ = ("holders",)

    def __init__(self, ticks: Iterable[int], holders: int) -> None:
        super().__init__(ticks)
        self.holders = holders


def own_ticks(c: Conn, pubend: str) -> set[int]:
    """The set of ``pubend`` ticks ``c`` delivered, private to ``c`` (a :class:`SharedTicks`
    is copied first and loses a holder), to add a tick to."""
    seen = c.seen.get(pubend)
    if seen is None:
        seen = c.seen[pubend] = set()
    elif type(seen) is SharedTicks:
        seen.holders -= 1
        seen = c.seen[pubend] = set(seen)
    return seen


@final
class Conn:
    """One connection of a subscriber [GD §2.3]: subscriber ``sub`` at SHB ``shb``, connection
    number ``n``, filter text ``filter``, begun at ``start`` (µs), ``live`` until it ends; per
    pubend the ticks it delivered (``seen``), the last of them (``last``) and that delivery's
    record (``records``); across the merged pubends the last tick (``last_any``)."""

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


@final
class Report:
    """The checker's verdict so far: which invariants are judged (``on``) and the first
    violation found (``violation``). Plug-ins report through :meth:`fail`."""

    __slots__ = ("on", "violation")

    def __init__(self, on: Mapping[str, bool]) -> None:
        self.on: dict[str, bool] = dict(on)
        self.violation: Violation | None = None

    def fail(
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
        """Report that invariant ``name`` broke at record ``r`` (about ``subject``, explained
        by ``msg`` and ``events``, ``r`` appended when missing). True when this became the
        violation; False when ``name`` is switched off or a violation was already found."""
        if not self.on.get(name, False) or self.violation is not None:
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


@final
class Ledger:
    """The facts of a trace every invariant may read (see the module doc). The checker feeds
    it: :meth:`observe` before the plug-ins judge a record, :meth:`record_deliveries` after
    they judged a delivery."""

    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.subs = {s.name: s for s in ctx.subscriptions}
        self.merged = set(ctx.merged)
        # publish side
        self.published: dict[tuple[str, int], TraceRecord] = {}
        #: (node, key) of each ``persist`` record -> the messages it asked to log
        self.persist_key: dict[
            tuple[str, Any], tuple[tuple[str, int, Mapping[str, Any], TraceRecord], ...]
        ] = {}
        #: per pubend, every tick it asked stable storage to log, with the latest attributes
        self.requested: dict[str, dict[int, Mapping[str, Any]]] = {}
        #: per pubend, every durably logged tick (the first write that completed)
        self.logged: dict[str, dict[int, LogEntry]] = {}
        self.logged_sorted: dict[str, list[int]] = {}
        # connections
        self.conns: dict[str, Conn] = {}
        self.all_conns: list[Conn] = []
        #: bumped by every connect and disconnect record: what a plug-in learnt about a group
        #: of connections holds while it is unchanged (GD's delivery cohorts)
        self.conn_epoch = 0
        # acknowledgements on the wire
        self.acked_from_cell: dict[tuple[str, str, str], int] = {}
        self.pubend_acked: dict[str, int] = {}
        # topology
        self.down_cells: dict[str, tuple[str, ...]] = {}
        for up, down in ctx.cell_tree:
            self.down_cells[up] = (*self.down_cells.get(up, ()), down)
        self.up_cells: dict[str, set[str]] = {}
        for up, down in ctx.cell_tree:
            self.up_cells.setdefault(down, set()).add(up)
        self._shbs_below: dict[str, tuple[str, ...]] = {}
        self._match_cache: dict[tuple[str, str, int], bool] = {}
        self._pt_cache: dict[tuple[str, int], int | None] = {}
        #: the protocol's own shared facts (``CheckContext.protocol_facts``), or None
        self.proto: Any = None if ctx.protocol_facts is None else ctx.protocol_facts()

    # ------------------------------------------------------------------ feeding

    def facts(self) -> dict[str, Callable[[TraceRecord], None]]:
        """Per record kind, the method that adds that kind's facts (a delivery's excepted:
        :meth:`record_deliveries`); the checker calls it before the plug-ins judge."""
        own: dict[str, Callable[[TraceRecord], None]] = {
            "send": self._on_send,
            "publish": self._on_publish,
            "persist": self._on_persist,
            "persisted": self._on_persisted,
            "connect": self._on_connect,
            "disconnect": self._on_disconnect,
        }
        if self.proto is None:
            return own
        for kind, add in self.proto.facts().items():
            first = own.get(kind)
            own[kind] = add if first is None else _both(first, add)
        return own

    def observe(self, r: TraceRecord) -> None:
        """Add the facts of a record that is not a delivery (before it is judged)."""
        add = self.facts().get(r.kind)
        if add is not None:
            add(r)

    def _on_send(self, r: TraceRecord) -> None:
        w = r.detail.wire
        if w.kind != "ack" or w.pubend is None or w.upto is None:
            return
        src, to, pubend, upto = r.node, r.detail.to, w.pubend, w.upto
        cell_of = self.ctx.cell_of
        key = (cell_of.get(src, src), cell_of.get(to, to), pubend)
        if upto > self.acked_from_cell.get(key, -1):
            self.acked_from_cell[key] = upto
        if self.ctx.pubend_host.get(pubend) == to and upto > self.pubend_acked.get(pubend, -1):
            self.pubend_acked[pubend] = upto

    def _on_publish(self, r: TraceRecord) -> None:
        d = r.detail
        self.published[(d.pubend, d.index)] = r

    def _on_persist(self, r: TraceRecord) -> None:
        got = self.ctx.logged_all(r.detail)
        if got:
            self.persist_key[(r.node, r.detail.key)] = tuple((p, t, a, r) for p, t, a in got)
            for pubend, tick, attrs_ in got:
                self.requested.setdefault(pubend, {})[tick] = attrs_

    def _on_persisted(self, r: TraceRecord) -> None:
        for pubend, tick, attrs_, _pr in self.persist_key.get((r.node, r.detail.key), ()):
            table = self.logged.setdefault(pubend, {})
            if tick not in table:
                table[tick] = (attrs_, r.time, r)
                bisect.insort(self.logged_sorted.setdefault(pubend, []), tick)

    def _on_connect(self, r: TraceRecord) -> None:
        d = r.detail
        c = Conn(d.subscriber, r.node, d.connection, d.filter, r.time)
        self.conns[d.subscriber] = c
        self.all_conns.append(c)
        self.conn_epoch += 1

    def _on_disconnect(self, r: TraceRecord) -> None:
        old = self.conns.get(r.detail.subscriber)
        if old is not None:
            old.live = False
        self.conn_epoch += 1

    def record_delivery(self, c: Conn, pubend: str, tick: int, r: TraceRecord) -> None:
        """Add that connection ``c`` delivered ``(pubend, tick)`` at record ``r``."""
        own_ticks(c, pubend).add(tick)
        if tick > c.last.get(pubend, -1):
            c.last[pubend] = tick
            c.records[pubend] = r
        if pubend in self.merged and tick > c.last_any:
            c.last_any = tick

    def record_deliveries(self, r: TraceRecord) -> None:
        """Add every delivery of a ``deliver`` record (after it is judged): each member whose
        subscriber's current connection has the member's connection number."""
        d = r.detail
        if type(d) is DeliverCohort:
            members: Iterable[tuple[str, int]] = d.to
        else:
            members = ((d.subscriber, d.connection),)
        for sub, conn in members:
            c = self.conns.get(sub)
            if c is not None and c.n == conn:
                self.record_delivery(c, d.pubend, d.tick, r)

    # ------------------------------------------------------------------ queries

    def matches(self, flt: str, pubend: str, tick: int) -> bool:
        """Whether the message logged at ``(pubend, tick)`` matches filter text ``flt`` (the
        reference evaluator, cached; the tick must be logged)."""
        key = (flt, pubend, tick)
        hit = self._match_cache.get(key)
        if hit is None:
            attrs_ = self.logged[pubend][tick][0]
            hit = bool(self.ctx.matches(flt, attrs_))
            self._match_cache[key] = hit
        return hit

    def attributes(self, pubend: str, tick: int) -> Mapping[str, Any] | None:
        """The attributes of the message at ``(pubend, tick)``: the logged one, else the one
        last asked to be logged, else None."""
        entry = self.logged.get(pubend, {}).get(tick)
        if entry is not None:
            return entry[0]
        return self.requested.get(pubend, {}).get(tick)

    def publish_time(self, pubend: str, tick: int) -> int | None:
        """When the message logged at ``(pubend, tick)`` was published (None if unknown)."""
        key = (pubend, tick)
        got = self._pt_cache.get(key, -1)
        if got != -1:
            return got
        entry = self.logged.get(pubend, {}).get(tick)
        if entry is None:
            return None
        got = None
        n = entry[0].get("n")
        if isinstance(n, int):
            rec = self.published.get((pubend, n))
            if rec is not None:
                got = rec.time
        if got is not None:  # a known publish time never changes
            self._pt_cache[key] = got
        return got

    def persist_record(self, pubend: str, tick: int) -> TraceRecord | None:
        """The ``persist`` record that asked to log ``(pubend, tick)``, if any."""
        for entries in self.persist_key.values():
            for p, t, _a, rec in entries:
                if p == pubend and t == tick:
                    return rec
        return None

    def shbs_below(self, cell: str) -> tuple[str, ...]:
        """The SHBs in ``cell`` or any cell below it in the cell tree, sorted."""
        got = self._shbs_below.get(cell)
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
            self._shbs_below[cell] = got
        return got


def _both(
    first: Callable[[TraceRecord], None], then: Callable[[TraceRecord], None]
) -> Callable[[TraceRecord], None]:
    def add(r: TraceRecord) -> None:
        first(r)
        then(r)

    return add


class Plugin:
    """Base of an invariant plug-in (see the module doc). A subclass sets ``names`` (the
    invariants it owns, in report order), ``kinds`` (the record kinds its :meth:`observe`
    reads) and, only if it adds deliveries to the ledger itself, ``records_deliveries``. The
    class is its own factory: ``PluginClass(ledger, report)``."""

    names: ClassVar[tuple[str, ...]] = ()
    kinds: ClassVar[frozenset[str]] = frozenset()
    records_deliveries: ClassVar[bool] = False

    def __init__(self, ledger: Ledger, report: Report) -> None:
        self.ledger = ledger
        self.report = report
        self.ctx = ledger.ctx

    def observe(self, r: TraceRecord) -> bool:
        """Judge record ``r`` (of one of :attr:`kinds`); True when it revealed a violation."""
        return False

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        """Per record kind of :attr:`kinds`, the method that judges it (the checker calls it
        instead of :meth:`observe`): :meth:`observe` for each, unless a plug-in maps a kind to
        its own method to save a dispatch on hot kinds."""
        return dict.fromkeys(self.kinds, self.observe)

    def finish(self, end: TraceRecord) -> bool:
        """Judge the end of a healed and drained run (``end`` stands for it in a violation's
        events); True when that revealed a violation."""
        return False


def invariant_names(plugins: Iterable[type[Plugin]]) -> tuple[str, ...]:
    """The invariants ``plugins`` own, in order; :class:`ProtocolMisuse` if two own one name."""
    out: list[str] = []
    for cls in plugins:
        for name in cls.names:
            if name in out:
                raise ProtocolMisuse(
                    f"invariants: {name!r} is owned by two plug-ins ({cls.__name__} and another); "
                    "allowed: one owner per invariant"
                )
            out.append(name)
    return tuple(out)
