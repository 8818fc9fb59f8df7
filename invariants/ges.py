"""GES's trace-only invariants [GES "Reliable delivery", "Routing events", "Stable storages"].

Theory of operation
-------------------
:class:`GESChecker` reads a run's records one at a time — publishes, sends (through the
protocol's own summary :class:`~gapless.impl.ges.messages.GesWire`), deliveries, connects and
disconnects, faults, and writes (a write counts once its ``persisted`` record shows it
completed) — and never a role's state. Its ledger keeps what the invariants share: the events
the storages logged (storage, epoch -> publisher, attributes), each client's registration
epoch per storage (the ``start`` of its first completed ``registration`` write there), the
profile in force for it at each storage from each epoch on (every completed ``registration``
write: its cut and the profile the client presented — a profile change takes effect at the
cut of the handoff that brought it [GES "Epochs"]), what was delivered to whom, where each
client has connected and with which profile, which links and nodes are down, and the
storages' client registrations. "Its profile" below is, for an event of epoch ``e`` of
storage ``S``, the profile of the client's last registration at ``S`` whose cut is below
``e``: the profile in force when the event was published.

Invariants (:data:`INVARIANTS`):

* ``roam_exactly_once`` — a client, across all its connections at any nodes, never receives
  an event twice, nor one that was not logged, does not match its profile, or was published
  at or before the epoch it registered at;
* ``roam_order`` — per client and publisher, events arrive in increasing epoch (publisher)
  order (our addition: the paper promises exactly once);
* ``roam_complete`` — at the end, every client connected then has registered at every storage
  and received every logged event after its registration epoch that matches its profile
  (liveness: judged only within the fault budget);
* ``selective_routing`` — an event is sent toward a node only if a client has connected there
  whose profile matches it (one it presented at that node, or the one in force for it when
  the event was published) [GES "The problem of event delivery"];
* ``avoid_suspected`` — no node sends over a link it has been told is down (a failed link, a
  partition's crossing link, or a link to a crashed or failed node), after the instant it
  went down [GES "Routing events"];
* ``route_while_path`` — a node drops (or, as its origin, holds back until it retransmits) a
  message for want of a route (its ``Unrouted`` record) only when no path exists [GES
  "Routing events": "Nodes and links that have not been failure suspected are the only
  entities that can be part of the shortest path"; "Reliable delivery": routes are computed
  "based on the state of the network at any given time"]. "A path exists" is judged on the
  *settled live graph* at the record's instant ``t``: the brokers up at ``t`` (not crashed,
  failed, or stalling) and the links up at ``t`` (not failed, partitioned or stalling), each
  up continuously since ``t - settle_us`` (:attr:`GESContext.settle_us`: news of a link or
  broker coming back, flooded from its ends, may still be in flight before then; a node
  cannot know of it). It is a violation if that graph holds (a) a path from the dropping
  node to the destination that avoids the nodes the message visited before it ("routing
  avoids a suspected unit or link whenever another path exists"), or (b) for an event, a
  path from its storage to the destination while no broker or link changed state since
  ``t - settle_us`` ("an event reaches every live interested unit while a path to it
  exists": its storage chose a route that dead-ended although another one existed, and it
  would choose it again when it retransmits). A destination that is down, or cut off, has
  no path: dropping toward it is allowed;
* ``reference_counts`` — the per-edge reference counts a registration reports equal the
  number of registered profiles at that node using the edge (so never negative), and an event
  is released with predicate count exactly zero [GES "Profiles and the profile graph",
  "Stable storages"];
* ``release_after_confirm`` — a storage releases an event only after it was delivered to
  every client it was destined to and, with the finer tier, after every cluster storage it
  was destined to holds it durably (its completed ``replica`` write under the system
  storage's epoch); a cluster storage releases its replica of an event (its completed
  ``replica_release`` write) only after every client the event was destined to received it;
  and, with the system-level links, after every system storage of another
  top-level unit it was destined into holds it (its completed ``sysin`` write) [GES "Stable
  storages"];
* ``system_sequence`` — with the system-level links (``gapless.impl.ges.syslink``), each
  system storage holds the events another one destined into its unit as the sequence
  ``1, 2, 3, ...`` of that pair, each once: every completed ``sysin`` write of a pair carries
  the number after the last one held (a higher one is a gap, a lower one a duplicate) and a
  logged event of the origin later than the last one held [GES "Stable storages": sequence
  numbers let system storages "conjecture the events that they should have received"]; at the
  end, within the fault budget, every number sent on a pair is held (judged with
  ``roam_complete``).
* ``notified_before_leaving`` — when clients wait for their epoch notification (the run's
  ``notification_wait``, on by default), a client whose connection presented another profile
  than its previous one, or that changed its profile within its connection (a ``connect``
  record for the connection it holds), leaves (a ``disconnect`` while its node is up) only
  after every storage's ``HandoffAck`` for that connection and change reached its node: sent
  over the last hop into it, or answered by a storage at that node itself (its completed
  ``registration`` write of that connection and change) [GES "Epochs", "Profiles and the
  profile graph": the client waits for the epoch notification of its profile change]. It
  reads sends, not arrivals (the world does not record arrivals): a client that left while
  the last hop was in flight is not caught.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Final, final

import attrs

from gapless.impl.effects import Deliver, DeliverCohort, Persist, deliveries
from gapless.impl.ges.messages import GesWire, Unreplicate
from gapless.impl.ges.node import Registration, Release
from gapless.impl.ges.profiles import path_of
from gapless.impl.ges.records import Unrouted
from gapless.impl.trace import Fault, TraceRecord
from gapless.invariants.violation import Violation

__all__ = ["INVARIANTS", "SAFETY", "SETTLE_US", "GESChecker", "GESContext"]

INVARIANTS: Final = (
    "roam_exactly_once",
    "roam_order",
    "roam_complete",
    "selective_routing",
    "avoid_suspected",
    "route_while_path",
    "reference_counts",
    "release_after_confirm",
    "system_sequence",
    "notified_before_leaving",
)
SAFETY: Final = tuple(n for n in INVARIANTS if n != "roam_complete")
SETTLE_US: Final = 100_000
"""The default :attr:`GESContext.settle_us`."""


@final
@attrs.frozen(kw_only=True)
class GESContext:
    """What the invariants know besides the trace: each client's profile, the storage that
    serves each publisher, the physical links, and the filter evaluator and decoders."""

    profiles: Mapping[str, str]
    storage_of_pubend: Mapping[str, str]
    links: tuple[tuple[str, str], ...]
    matches: Callable[[str, Any], bool]
    logged: Callable[[Persist], tuple[str, int, Mapping[str, Any]] | None]
    durable: Callable[[Persist], str | None]
    waits: bool = False
    """Whether a client that changed its profile waits for its notification before leaving."""
    storages: tuple[str, ...] = ()
    """The system storages a handoff goes to (empty: those of ``storage_of_pubend``)."""
    settle_us: int = SETTLE_US
    """How long news of a broker or link coming back may take to reach a node
    (``route_while_path`` judges only paths whose brokers and links have been up that long).
    News travels about 1.2 ms a hop and crosses at most a dozen hops in our topologies; a
    reorder window may hold a message up to 50 ms more."""


class GESChecker:
    """The online checker of GES's invariants (see module doc)."""

    def __init__(self, ctx: GESContext, names: tuple[str, ...] = ()) -> None:
        self.ctx = ctx
        self.names = set(names or INVARIANTS)
        self.violation: Violation | None = None
        self.logged: dict[tuple[str, int], tuple[str, Mapping[str, Any]]] = {}
        self.published: dict[tuple[str, Any], int] = {}
        self.start: dict[tuple[str, str], int] = {}
        self.delivered: set[tuple[str, str, int]] = set()
        self.last: dict[tuple[str, str], int] = {}
        self.connected_at: dict[str, set[tuple[str, str]]] = {}
        self.cuts: dict[tuple[str, str], list[int]] = {}
        self.in_force: dict[tuple[str, str], list[str]] = {}
        self.connected: dict[str, bool] = {}
        self.writes: dict[tuple[str, Any], Persist] = {}
        self.registered: dict[str, dict[str, tuple[str, str]]] = {}
        self.down: dict[tuple[str, str], int] = {}
        self.dead: set[str] = set()
        self.failing: set[str] = set()
        self.forever: set[str] = set()
        """Brokers that failed forever: a crash of theirs that ends later does not restart
        them (the world records the crash's end, and restarts nothing)."""
        self.changed_at = -1
        """When links or nodes last went down: a node is told of each link in turn within
        that instant, so a send in the same instant is not judged."""
        self._interested: dict[tuple[str, int, str], bool] = {}
        self.replicas: set[tuple[str, str, int]] = set()
        """(cluster storage, system storage, epoch) of every completed ``replica`` write."""
        self.sys_held: dict[tuple[str, str], tuple[int, int]] = {}
        """(peer, origin) -> (sequence number, epoch) of the last completed ``sysin`` write."""
        self.sysin: set[tuple[str, str, int]] = set()
        """(peer, origin, epoch) of every completed ``sysin`` write."""
        self.sys_sent: dict[tuple[str, str], int] = {}
        """(peer, origin) -> the highest sequence number the origin sent on that pair."""
        self.connection: dict[str, tuple[int, str]] = {}
        """Each client's current connection number and node."""
        self.presented: dict[tuple[str, int], str] = {}
        """(client, connection) -> the profile it presented."""
        self.notified: set[tuple[str, int, int, str]] = set()
        """(client, connection, change, storage) of every ``HandoffAck`` that reached the
        client's node."""
        self.change: dict[str, int] = {}
        """Each client's profile changes within its current connection."""
        self.adjacent: dict[str, list[tuple[str, tuple[str, str]]]] = {}
        for a, b in ctx.links:
            key = (a, b) if a < b else (b, a)
            self.adjacent.setdefault(a, []).append((b, key))
            self.adjacent.setdefault(b, []).append((a, key))
        self.since: dict[str | tuple[str, str], int] = {}
        """When each broker (by name) or link (sorted pair) last changed between up and down
        (absent: up since the start)."""
        self.stalling: set[str | tuple[str, str]] = set()
        """Brokers and links stalling now (silently losing what they carry)."""
        self.topology_at = -1
        """When any broker or link last changed between up and down."""

    # ------------------------------------------------------------ plumbing

    def restrict(self, names: tuple[str, ...]) -> None:
        """Judge only ``names`` from now on (the fault budget was left)."""
        self.names &= set(names)

    def _flag(self, name: str, subject: str, message: str, r: TraceRecord) -> bool:
        if name in self.names and self.violation is None:
            self.violation = Violation(
                invariant=name, subject=subject, message=message, time=r.time, events=(r,)
            )
        return self.violation is not None

    def profile_at(self, client: str, storage: str, epoch: int) -> str:
        """The client's profile in force at ``storage`` for the event of ``epoch``: that of
        its last registration there whose cut is below ``epoch``."""
        cuts = self.cuts.get((client, storage), [])
        i = bisect_left(cuts, epoch) - 1
        if i < 0:
            return self.ctx.profiles[client]
        return self.in_force[(client, storage)][i]

    def publish_time(self, pubend: str, tick: int) -> int | None:
        got = self.logged.get((self.ctx.storage_of_pubend.get(pubend, ""), tick))
        if got is None:
            return None
        return self.published.get((pubend, got[1]))

    def observe(self, r: TraceRecord) -> bool:
        """Judge one record; True once a violation is found."""
        k = r.kind
        if k == "deliver":
            self._deliver(r)
        elif k == "send":
            self._send(r)
        elif k == "persist":
            self.writes[(r.node, r.detail.key)] = r.detail
        elif k == "persisted":
            self._persisted(r)
        elif k == "publish":
            d = r.detail
            self.published.setdefault((d.pubend, d.attributes), r.time)
        elif k == "connect":
            self._connect(r)
        elif k == "disconnect":
            self.connected[r.detail.subscriber] = False
            self._leaving(r)
        elif k == "fault":
            self._fault(r.detail, r.time)
        elif k == "rejected" and type(getattr(r.detail, "input", None)) is Unrouted:
            self._unrouted(r, r.detail.input)
        return self.violation is not None

    def _connect(self, r: TraceRecord) -> None:
        """A connection, or (a ``connect`` for the connection the client holds) a profile
        change within it."""
        c, n = r.detail.subscriber, r.detail.connection
        within = self.connected.get(c, False) and self.connection.get(c) == (n, r.node)
        self.change[c] = self.change.get(c, 0) + 1 if within else 0
        self.connected[c] = True
        self.connected_at.setdefault(c, set()).add((r.node, r.detail.filter))
        self.connection[c] = (n, r.node)
        self.presented.setdefault((c, n), r.detail.filter)

    # ------------------------------------------------------------ deliveries

    def _deliver(self, r: TraceRecord) -> None:
        for d in deliveries(r.detail) if type(r.detail) in (Deliver, DeliverCohort) else ():
            if d.kind == "event":
                self._one_delivery(r, d)

    def _one_delivery(self, r: TraceRecord, d: Deliver) -> None:
        c, storage = d.subscriber, self.ctx.storage_of_pubend.get(d.pubend, "")
        key = (c, storage, d.tick)
        what = f"{d.pubend} epoch {d.tick} of storage {storage}"
        if key in self.delivered:
            self._flag("roam_exactly_once", c, f"{what} delivered twice", r)
        got = self.logged.get((storage, d.tick))
        if got is None or got[0] != d.pubend or got[1] != d.payload:
            self._flag("roam_exactly_once", c, f"{what} was not logged as delivered", r)
        elif not self.ctx.matches(self.profile_at(c, storage, d.tick), got[1]):
            msg = f"{what} does not match its profile in force at that epoch"
            self._flag("roam_exactly_once", c, msg, r)
        start = self.start.get((c, storage))
        if start is None or d.tick <= start:
            self._flag("roam_exactly_once", c, f"{what} is at or before its epoch {start}", r)
        last = self.last.get((c, d.pubend), -1)
        if d.tick < last and key not in self.delivered:
            self._flag("roam_order", c, f"{what} delivered after epoch {last}", r)
        self.last[(c, d.pubend)] = max(last, d.tick)
        self.delivered.add(key)

    # ------------------------------------------------------------ sends

    def _send(self, r: TraceRecord) -> None:
        w = r.detail.wire
        if type(w) is not GesWire:
            return
        to = r.detail.to
        if self._is_down(r.node, to) and r.time > self.changed_at:
            self._flag("avoid_suspected", r.node, f"sent {w.kind} to {to} over a down link", r)
        if w.kind == "handoff_ack" and w.connection is not None:
            self._reached(w.client, w.connection, w.change, w.storage, to)
        if w.kind == "sys_forward" and w.seq is not None:
            pair = (w.unit, w.storage)
            self.sys_sent[pair] = max(self.sys_sent.get(pair, 0), w.seq)
        if w.kind == "event" and w.epoch is not None:
            for dest in w.dests:
                if not self._is_interested(w.storage, w.epoch, dest):
                    msg = f"event {w.epoch} of {w.storage} sent toward {dest}, where no "
                    msg += "client that connected there is interested"
                    self._flag("selective_routing", r.node, msg, r)

    def _is_interested(self, storage: str, epoch: int, dest: str) -> bool:
        key = (storage, epoch, dest)
        got = self._interested.get(key)
        if got is None:
            ev = self.logged.get((storage, epoch))
            got = ev is not None and any(
                self._wants(c, dest, storage, epoch, ev[1], where)
                for c, where in sorted(self.connected_at.items())
            )
            if got:
                self._interested[key] = got
        return got

    def _wants(
        self,
        c: str,
        dest: str,
        storage: str,
        epoch: int,
        attributes: Mapping[str, Any],
        where: set[tuple[str, str]],
    ) -> bool:
        if not any(node == dest for node, _ in where):
            return False
        if self.ctx.matches(self.profile_at(c, storage, epoch), attributes):
            return True
        return any(node == dest and self.ctx.matches(p, attributes) for node, p in where)

    # ------------------------------------------------------------ notifications

    def _reached(self, client: str, connection: int, change: int, storage: str, node: str) -> None:
        if self.connection.get(client) == (connection, node) and self.change.get(client) == change:
            self.notified.add((client, connection, change, storage))

    def _leaving(self, r: TraceRecord) -> None:
        c = r.detail.subscriber
        got = self.connection.get(c)
        if not self.ctx.waits or got is None or r.node in self.dead:
            return
        n, change = got[0], self.change.get(c, 0)
        if not change and (n == 0 or self.presented.get((c, n)) == self.presented.get((c, n - 1))):
            return
        storages = self.ctx.storages or tuple(sorted(set(self.ctx.storage_of_pubend.values())))
        lacking = [s for s in storages if (c, n, change, s) not in self.notified]
        if lacking:
            what = f"change {change} within connection {n}" if change else f"connection {n}"
            msg = f"left {what} (a profile change) before the epoch notification of "
            msg += f"storage {lacking[0]}"
            self._flag("notified_before_leaving", c, msg, r)

    # ------------------------------------------------------------ routes

    def _unrouted(self, r: TraceRecord, u: Unrouted) -> None:
        """``route_while_path``: a drop for want of a route while a path existed."""
        if "route_while_path" not in self.names:
            return
        settled = r.time - self.ctx.settle_us
        for d in u.dests:
            if self._path(r.node, d, u.visited - {r.node}, settled):
                what = f"dropped {u.kind} for {d} for want of a route, visited "
                what += f"{', '.join(sorted(u.visited)) or 'nothing'}; a path avoiding them existed"
                self._flag("route_while_path", r.node, what, r)
                return
            calm = self.topology_at <= settled
            if (
                u.kind == "event"
                and u.storage
                and calm
                and self._path(u.storage, d, set(), settled)
            ):
                what = f"dropped event {u.epoch} of {u.storage} for {d} for want of a route, "
                what += f"visited {', '.join(sorted(u.visited))}; a path from {u.storage} existed "
                what += "and nothing had changed"
                self._flag("route_while_path", r.node, what, r)
                return

    def _settled(self, elem: str | tuple[str, str], settled: int) -> bool:
        return self._live(elem) and self.since.get(elem, -1) <= settled

    def _path(self, src: str, dest: str, avoid: AbstractSet[str], settled: int) -> bool:
        """Whether the settled live graph (module doc) holds a path from ``src`` to ``dest``
        through no node of ``avoid``."""
        if src == dest or src in avoid or dest in avoid:
            return False
        if not (self._settled(src, settled) and self._settled(dest, settled)):
            return False
        seen, todo = {src}, [src]
        while todo:
            n = todo.pop()
            for m, link in self.adjacent.get(n, ()):
                if m in seen or m in avoid or not self._settled(link, settled):
                    continue
                if not self._settled(m, settled):
                    continue
                if m == dest:
                    return True
                seen.add(m)
                todo.append(m)
        return False

    # ------------------------------------------------------------ faults

    def _is_down(self, a: str, b: str) -> bool:
        key = (a, b) if a < b else (b, a)
        return self.down.get(key, 0) > 0 or a in self.dead or b in self.dead

    def _links_of(self, target: str) -> list[tuple[str, str]]:
        if "|" in target:
            a, b = target.split("|")
            return [(a, b) if a < b else (b, a)]
        side = set(target.split(","))
        return [(a, b) for a, b in self.ctx.links if (a in side) != (b in side)]

    def _fault(self, f: Fault, time: int = -1) -> None:
        k, tgt, phase = f.kind, f.target, f.phase
        self.changed_at = time  # restarts and heals tell nodes of links in turn too
        before = self._live_now(k, tgt)
        self._fault_state(k, tgt, phase)
        for elem, was in before:
            if self._live(elem) != was:
                self.since[elem] = time
                self.topology_at = time

    def _live_now(self, kind: str, target: str) -> list[tuple[str | tuple[str, str], bool]]:
        """The brokers and links a fault of ``kind`` on ``target`` can change, and whether
        each is live now."""
        elems: list[str | tuple[str, str]]
        if kind in ("crash", "fail", "stall_broker"):
            elems = [target]
        elif kind in ("link_fail", "partition", "stall_link"):
            elems = list(self._links_of(target))
        else:
            return []
        return [(e, self._live(e)) for e in elems]

    def _live(self, elem: str | tuple[str, str]) -> bool:
        """Whether broker or link ``elem`` is up and not stalling."""
        if elem in self.stalling:
            return False
        if isinstance(elem, str):
            return elem not in self.dead
        return self.down.get(elem, 0) == 0

    def _fault_state(self, k: str, tgt: str, phase: str) -> None:
        if k == "stall_broker" or k == "stall_link":
            elems: list[str | tuple[str, str]] = (
                [tgt] if k == "stall_broker" else list(self._links_of(tgt))
            )
            for e in elems:
                (self.stalling.add if phase == "start" else self.stalling.discard)(e)
        if k in ("crash", "fail") or (k == "stall_broker" and phase != "start"):
            if k == "fail":
                self.forever.add(tgt)
            if phase in ("start", "fail"):
                self.dead.add(tgt)
            elif tgt not in self.forever:  # the world never restarts a failed broker
                self.dead.discard(tgt)
        elif k in ("link_fail", "partition") or (k == "stall_link" and phase != "start"):
            if k == "stall_link" and phase == "end" and tgt not in self.failing:
                return  # the stall ended before the link failed
            by = 1 if phase in ("start", "fail") else -1
            if k == "stall_link":
                (self.failing.add if by > 0 else self.failing.discard)(tgt)
            for key in self._links_of(tgt):
                self.down[key] = max(0, self.down.get(key, 0) + by)

    # ------------------------------------------------------------ writes

    def _persisted(self, r: TraceRecord) -> None:
        p = self.writes.pop((r.node, r.detail.key), None)
        if p is None:
            return
        kind = self.ctx.durable(p)
        if kind == "log":
            got = self.ctx.logged(p)
            if got is not None:
                self.logged[(r.node, got[1])] = (got[0], got[2])
        elif kind == "registration":
            self._registration(r, p.value)
        elif kind == "release":
            self._release(r, p.value)
        elif kind == "replica":
            self.replicas.add((r.node, p.value.source, p.value.epoch))
        elif kind == "replica_release":
            self._replica_release(r, p.value)
        elif kind == "sysin":
            self._sysin(r, p.value.origin, p.value.seq, p.value.epoch)

    def _replica_release(self, r: TraceRecord, u: Unreplicate) -> None:
        for c in u.targets:
            if (c, u.source, u.epoch) not in self.delivered:
                msg = f"replica of epoch {u.epoch} of {u.source} released before {c} received it"
                self._flag("release_after_confirm", r.node, msg, r)

    def _sysin(self, r: TraceRecord, origin: str, seq: int, epoch: int) -> None:
        last_seq, last_epoch = self.sys_held.get((r.node, origin), (0, 0))
        what = f"number {seq} (epoch {epoch}) from system storage {origin}"
        if seq > last_seq + 1:
            self._flag("system_sequence", r.node, f"{what} held after {last_seq}: a gap", r)
        elif seq <= last_seq:
            self._flag("system_sequence", r.node, f"{what} held again: a duplicate", r)
        if (origin, epoch) not in self.logged or epoch <= last_epoch:
            msg = f"{what} is not an event {origin} logged after epoch {last_epoch}"
            self._flag("system_sequence", r.node, msg, r)
        self.sys_held[(r.node, origin)] = (max(seq, last_seq), max(epoch, last_epoch))
        self.sysin.add((r.node, origin, epoch))

    def _registration(self, r: TraceRecord, reg: Registration) -> None:
        if r.node == reg.record.broker:  # the storage answers the client's node itself
            rec = reg.record
            self._reached(reg.client, rec.connection, rec.change, reg.storage, r.node)
        regs = self.registered.setdefault(reg.storage, {})
        key = (reg.client, reg.storage)
        self.start.setdefault(key, reg.record.start)
        self.cuts.setdefault(key, []).append(reg.record.cut)
        self.in_force.setdefault(key, []).append(reg.record.profile)
        before = regs.get(reg.client)
        regs[reg.client] = (reg.record.broker, reg.record.profile)
        checks = [(reg.record.broker, reg.record.profile, reg.counts)]
        if reg.old_broker:
            old = before[1] if before is not None else self.ctx.profiles[reg.client]
            checks.append((reg.old_broker, old, reg.old_counts))
        for broker, profile, counts in checks:
            path = path_of(profile)
            for depth, count in counts:
                if not 1 <= depth <= len(path):
                    msg = f"edge {depth} of {profile!r} counted for {broker}: it has {len(path)}"
                    self._flag("reference_counts", reg.storage, msg, r)
                    continue
                edge = path[depth - 1]
                want = sum(1 for b, p in regs.values() if b == broker and edge in path_of(p))
                if count != want:
                    msg = f"edge {depth} of {profile!r} counts {count} for {broker}, "
                    msg += f"{want} registered profiles use it"
                    self._flag("reference_counts", reg.storage, msg, r)

    def _release(self, r: TraceRecord, rel: Release) -> None:
        if rel.remaining != 0:
            msg = f"epoch {rel.epoch} released with predicate count {rel.remaining}"
            self._flag("reference_counts", rel.storage, msg, r)
        for c in rel.targets:
            if (c, rel.storage, rel.epoch) not in self.delivered:
                msg = f"epoch {rel.epoch} released before {c} received it"
                self._flag("release_after_confirm", rel.storage, msg, r)
        for u in rel.units:
            if (u, rel.storage, rel.epoch) not in self.replicas:
                msg = f"epoch {rel.epoch} released before cluster storage {u} held it"
                self._flag("release_after_confirm", rel.storage, msg, r)
        for p in rel.peers:
            if (p, rel.storage, rel.epoch) not in self.sysin:
                msg = f"epoch {rel.epoch} released before system storage {p} held it"
                self._flag("release_after_confirm", rel.storage, msg, r)

    # ------------------------------------------------------------ liveness

    def finish(self, end: TraceRecord) -> Violation | None:
        """Judge liveness at the end of the run (see ``roam_complete``)."""
        if self.violation is not None or "roam_complete" not in self.names:
            return self.violation
        for (peer, origin), sent in sorted(self.sys_sent.items()):
            got = self.sys_held.get((peer, origin), (0, 0))[0]
            if got < sent:
                msg = f"system storage {peer} holds {origin}'s events up to number {got} of {sent}"
                self._flag("roam_complete", peer, msg, end)
                return self.violation
        storages = sorted(set(self.ctx.storage_of_pubend.values()))
        for c in sorted(self.connected):
            if not self.connected[c]:
                continue
            for s in storages:
                start = self.start.get((c, s))
                if start is None:
                    self._flag("roam_complete", c, f"never registered at storage {s}", end)
                    return self.violation
            for (s, e), (pubend, attributes) in sorted(self.logged.items()):
                missed = e > self.start[(c, s)] and (c, s, e) not in self.delivered
                if missed and self.ctx.matches(self.profile_at(c, s, e), attributes):
                    msg = f"{pubend} epoch {e} of storage {s} matches but never arrived"
                    self._flag("roam_complete", c, msg, end)
                    return self.violation
        return self.violation
