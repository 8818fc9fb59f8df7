"""A stable storage: epochs, stored events, predicate counts, release, recovery queues
[GES "Stable storages", "Epochs", "Recovering clients"].

Theory of operation
-------------------
One stable storage serves each top-level unit (a *system storage*: "for an event that is
issued by a client within u_i^N, the event is stored to stable storage within u_i^N and not at
any other system storage"). It stores every event published inside its unit, in the order
the publisher issued them (per-publisher sequence numbers, ``next_seq``), and gives each one
the next *epoch* of this storage. Every client of the system is registered at every storage
(:class:`ClientRecord`: the node it is attached to, its profile, the epoch it registered at),
so the storage computes each event's destination list from its profile graph at the moment
it stores it — the profile in force when the event was published.

For each event the storage keeps the clients it is destined to (``targets``) and, for each,
``prev``: the epoch of the previous event this storage destined to that client. The chain of
``prev`` lets a broker deliver a client's events gapless and in order, and know a duplicate.
The predicate count ``remaining`` starts at the number of targets and is decremented as each
target confirms receipt; at zero the event is *released* (a durable write), never before
[GES: "the predicate count that can be decremented for the sub-unit that this storage is
servicing"]. With the finer tier (:mod:`gapless.impl.ges.tier`) the count also holds one per
cluster storage the event is destined to (``units``), decremented once per unit that
confirms it holds the event (:func:`confirm_unit`).

A client that reconnects anywhere presents, for this storage, the epoch of the last event it
received from it (or nothing) and its profile [GES "Recovering clients", items (a)–(c)]; the
new node sends a :func:`handoff`. The storage (1) confirms for the client every event up to
that epoch, (2) takes the *cut*: its current epoch, (3) moves the client's registration to the
new node in the profile graph, with the profile it presents now, and (4) answers with the
recovery queue: the stored events after the presented epoch, up to the cut, destined to the
client. Every later event is destined to the client at its new node. A profile change is such
a handoff: its epoch is the cut (the answer is the client's epoch notification [GES
"Epochs"]); the events up to the cut keep the targets of the profile in force when they were
published, the later ones are matched against the new profile. Why this is exactly once is
``spec/ges.md``.

Durability: the node role writes a ``log`` record per stored event, a ``registration`` record
per handoff and a ``release`` record per released event; :func:`recover` rebuilds the storage
from the completed ones after a crash (confirmations are not written: they are asked again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from gapless.impl.filters import parse_filter
from gapless.impl.ges.policy import GESPolicy
from gapless.impl.ges.profiles import ProfileGraph, path_of

__all__ = [
    "ClientRecord",
    "Queued",
    "StorageState",
    "StoredEvent",
    "confirm",
    "confirm_peer",
    "confirm_unit",
    "handoff",
    "recover",
    "recovery_queue",
    "store",
]


@final
@attrs.frozen(kw_only=True)
class StoredEvent:
    """An event stored with ``epoch``: publisher ``pubend``'s ``seq``-th, its attributes,
    its targets (client -> the epoch of the previous event destined to it) and the
    destination nodes it was routed toward."""

    epoch: int
    pubend: str
    seq: int
    attributes: PMap[str, Any]
    targets: PMap[str, int]
    dests: tuple[str, ...]
    pending: PSet[str]
    remaining: int
    units: PSet[str] = attrs.field(factory=pset)
    """The cluster storages it was destined to (the finer tier; empty at super-cluster
    granularity)."""
    units_pending: PSet[str] = attrs.field(factory=pset)
    """Those that have not confirmed receipt yet."""
    peers: PMap[str, int] = attrs.field(factory=pmap)
    """The system storages of the other top-level units it is destined into, each with the
    event's system-level sequence number for that pair (:mod:`gapless.impl.ges.syslink`;
    empty unless the run's config turns the system links on)."""
    peers_pending: PSet[str] = attrs.field(factory=pset)
    """Those that have not acknowledged it yet."""


@final
@attrs.frozen(kw_only=True)
class ClientRecord:
    """A client as a storage knows it: the node it is attached to (or was last), the
    connection that attached it there, its profile, the epoch it registered at (``start``),
    the last epoch destined to it (``last``), the epoch up to which its last handoff
    confirmed receipt (``confirmed``), that handoff's cut (``cut``) and the profile change
    within the connection it brought (``change``; 0: the connection's own)."""

    broker: str
    connection: int
    profile: str
    start: int
    last: int
    confirmed: int
    cut: int
    change: int = 0


@final
@attrs.frozen(kw_only=True)
class Queued:
    """One event of a recovery queue."""

    epoch: int
    prev: int
    pubend: str
    attributes: PMap[str, Any]


@final
@attrs.frozen(kw_only=True)
class StorageState:
    """One stable storage (see module doc)."""

    name: str
    epoch: int = 0
    next_seq: PMap[str, int] = attrs.field(factory=pmap)
    events: PMap[int, StoredEvent] = attrs.field(factory=pmap)
    clients: PMap[str, ClientRecord] = attrs.field(factory=pmap)
    graph: ProfileGraph = attrs.field(factory=ProfileGraph)
    waiting: PMap[str, PSet[int]] = attrs.field(factory=pmap)
    """Per client, the stored epochs it has not confirmed: a recovery reads only these, so
    its cost grows with the events the client missed, not with all events stored."""
    fine_of: PMap[str, str] = attrs.field(factory=pmap)
    """Per node, the storage of its cluster (the finer tier; empty at super-cluster
    granularity): an event is also destined to the cluster storages of its destinations."""
    peer_next: PMap[str, int] = attrs.field(factory=pmap)
    """Per other system storage, the next system-level sequence number to give (from 1)."""
    sys_expect: PMap[str, int] = attrs.field(factory=pmap)
    """Per origin system storage, the next sequence number this storage will write."""
    sys_held: PMap[str, int] = attrs.field(factory=pmap)
    """Per origin system storage, the highest sequence number held durably (acknowledged)."""
    sys_nacked: PMap[str, int] = attrs.field(factory=pmap)
    """Per origin, the sequence number last asked for by a negative acknowledgement (one
    ask per gap; the origin's retransmission timer covers a lost one)."""


def _wait(waiting: PMap[str, PSet[int]], client: str, epoch: int, on: bool) -> PMap[str, PSet[int]]:
    got = waiting.get(client, pset())
    got = got.add(epoch) if on else got.discard(epoch)
    return waiting.set(client, got) if got else waiting.discard(client)


def _matches(profile: str, attributes: Mapping[str, Any]) -> bool:
    return parse_filter(profile).matches(attributes)


def store(
    st: StorageState,
    pubend: str,
    seq: int,
    attributes: PMap[str, Any],
    brokers: tuple[str, ...],
    policy: GESPolicy,
) -> tuple[StorageState, StoredEvent | None]:
    """Store publisher ``pubend``'s ``seq``-th event if it is the next one expected (else
    the same state and None: a duplicate or one that overtook its predecessor)."""
    if seq != st.next_seq.get(pubend, 0):
        return st, None
    epoch = st.epoch + 1
    dests = policy.destinations(st.graph, attributes, brokers)
    dest_set = set(dests)
    targets: dict[str, int] = {}
    clients, waiting = st.clients, st.waiting
    for name, rec in sorted(st.clients.items()):
        if rec.broker in dest_set and _matches(rec.profile, attributes):
            targets[name] = rec.last
            clients = clients.set(name, attrs.evolve(rec, last=epoch))
            waiting = _wait(waiting, name, epoch, True)
    units = pset(st.fine_of[d] for d in dests if d in st.fine_of) if targets else pset()
    ev = StoredEvent(
        epoch=epoch,
        pubend=pubend,
        seq=seq,
        attributes=attributes,
        targets=pmap(targets),
        dests=dests,
        pending=pset(targets),
        remaining=len(targets) + policy.unit_count(len(units)),
        units=units,
        units_pending=units,
    )
    events = st.events.set(epoch, ev) if targets else st.events
    new = attrs.evolve(
        st,
        epoch=epoch,
        next_seq=st.next_seq.set(pubend, seq + 1),
        events=events,
        clients=clients,
        waiting=waiting,
    )
    return new, ev


def confirm(
    st: StorageState, epoch: int, client: str, policy: GESPolicy
) -> tuple[StorageState, StoredEvent | None]:
    """``client`` confirmed receipt of ``epoch``: the new state and, when the event's
    predicate count reached zero, the released event (it leaves the storage)."""
    ev = st.events.get(epoch)
    if ev is None or client not in ev.pending:
        return st, None
    ev = attrs.evolve(
        ev, pending=ev.pending.remove(client), remaining=policy.decrement(ev.remaining)
    )
    return _settle(st, ev, _wait(st.waiting, client, epoch, False))


def confirm_unit(
    st: StorageState, epoch: int, unit: str, policy: GESPolicy
) -> tuple[StorageState, StoredEvent | None]:
    """Cluster storage ``unit`` confirmed receipt of ``epoch`` [GES "Stable storages": the
    predicate count "decremented for the sub-unit that this storage is servicing"]: as
    :func:`confirm`, once per unit (a repeated confirmation changes nothing)."""
    ev = st.events.get(epoch)
    if ev is None or unit not in ev.units_pending:
        return st, None
    counted = policy.unit_count(1) > 0  # a unit the count never held takes nothing from it
    remaining = policy.decrement(ev.remaining) if counted else ev.remaining
    ev = attrs.evolve(ev, units_pending=ev.units_pending.remove(unit), remaining=remaining)
    return _settle(st, ev, st.waiting)


def confirm_peer(
    st: StorageState, epoch: int, peer: str, policy: GESPolicy
) -> tuple[StorageState, StoredEvent | None]:
    """System storage ``peer`` acknowledged ``epoch`` (it holds it durably): as
    :func:`confirm_unit`, once per peer."""
    ev = st.events.get(epoch)
    if ev is None or peer not in ev.peers_pending:
        return st, None
    counted = policy.peer_count(1) > 0
    remaining = policy.decrement(ev.remaining) if counted else ev.remaining
    ev = attrs.evolve(ev, peers_pending=ev.peers_pending.remove(peer), remaining=remaining)
    return _settle(st, ev, st.waiting)


def _settle(
    st: StorageState, ev: StoredEvent, waiting: PMap[str, PSet[int]]
) -> tuple[StorageState, StoredEvent | None]:
    """Keep ``ev`` with its new count, or release it when the count reached zero."""
    epoch = ev.epoch
    if ev.remaining <= 0:
        for other in ev.pending:  # released early only by a planted bug
            waiting = _wait(waiting, other, epoch, False)
        return attrs.evolve(st, events=st.events.remove(epoch), waiting=waiting), ev
    return attrs.evolve(st, events=st.events.set(epoch, ev), waiting=waiting), None


def recovery_queue(st: StorageState, client: str, after: int, upto: int) -> tuple[Queued, ...]:
    """The stored events after epoch ``after`` up to ``upto`` destined to ``client`` and not
    confirmed by it (read from its ``waiting`` index: the cost grows with what it missed)."""
    out = []
    for e in sorted(st.waiting.get(client, pset())):
        if after < e <= upto:
            ev = st.events[e]
            q = Queued(epoch=e, prev=ev.targets[client], pubend=ev.pubend, attributes=ev.attributes)
            out.append(q)
    return tuple(out)


def handoff(
    st: StorageState,
    client: str,
    connection: int,
    broker: str,
    presented: int | None,
    profile: str,
    policy: GESPolicy,
    change: int = 0,
) -> tuple[StorageState, ClientRecord | None, tuple[StoredEvent, ...]]:
    """Client ``client`` attached to ``broker`` with ``connection`` (and its ``change``-th
    profile change within it), presenting ``presented`` (see module doc). Returns the new
    state, the client's new record (None: a stale or repeated handoff, state unchanged) and
    the events the handoff released."""
    old = st.clients.get(client)
    if old is not None and (connection, change) <= (old.connection, old.change):
        return st, None, ()
    cut = st.epoch
    if old is None:
        rec = ClientRecord(
            broker=broker,
            connection=connection,
            profile=profile,
            start=cut,
            last=cut,
            confirmed=cut,
            cut=cut,
            change=change,
        )
        graph = st.graph.add(profile, broker)
        return attrs.evolve(st, clients=st.clients.set(client, rec), graph=graph), rec, ()
    effective = policy.effective_epoch(presented, old.start, cut)
    released: list[StoredEvent] = []
    for e in sorted(st.waiting.get(client, pset())):
        if e > effective and policy.keeps(profile, st.events[e].attributes):
            continue  # still owed: it goes in the recovery queue (or later, live)
        st, gone = confirm(st, e, client, policy)
        if gone is not None:
            released.append(gone)
    graph = policy.unregister(st.graph, old.profile, old.broker).add(profile, broker)
    rec = attrs.evolve(
        old,
        broker=broker,
        connection=connection,
        change=change,
        profile=profile,
        confirmed=effective,
        cut=cut,
    )
    return attrs.evolve(st, clients=st.clients.set(client, rec), graph=graph), rec, tuple(released)


def edge_counts(st: StorageState, profile: str, dest: str) -> tuple[tuple[int, int], ...]:
    """``(edge depth, count)`` of ``dest`` along the edges of ``profile``: what a
    registration record reports for the reference-count invariant."""
    return tuple((len(k), st.graph.count(k, dest)) for k in path_of(profile))


def recover(
    name: str,
    logs: Mapping[int, StoredEvent],
    released: set[int],
    records: Mapping[str, ClientRecord],
    fine_of: PMap[str, str] | None = None,
) -> StorageState:
    """The storage rebuilt from its completed durable writes: every logged event (its
    epoch and the next sequence number of its publisher), the events not released with
    their targets pending again, except those a handoff confirmed, and every cluster storage
    it was destined to pending again (unit confirmations are not written: they are asked
    again); the client records and the profile graph they make."""
    epoch = max(logs, default=0)
    for rec in records.values():
        epoch = max(epoch, rec.start)
    next_seq: dict[str, int] = {}
    last: dict[str, int] = {c: r.start for c, r in records.items()}
    events: dict[int, StoredEvent] = {}
    for e, ev in sorted(logs.items()):
        next_seq[ev.pubend] = max(next_seq.get(ev.pubend, 0), ev.seq + 1)
        for c in ev.targets:
            last[c] = max(last.get(c, 0), e)
        if e in released or not ev.targets:
            continue
        pending = pset(c for c in ev.targets if records.get(c) is None or records[c].confirmed < e)
        if pending or ev.units or ev.peers:
            count = len(pending) + len(ev.units) + len(ev.peers)
            events[e] = attrs.evolve(
                ev,
                pending=pending,
                remaining=count,
                units_pending=ev.units,
                peers_pending=pset(ev.peers),
            )
    waiting: dict[str, set[int]] = {}
    for e, ev in events.items():
        for c in ev.pending:
            waiting.setdefault(c, set()).add(e)
    graph = ProfileGraph()
    clients: dict[str, ClientRecord] = {}
    for c, r in sorted(records.items()):
        graph = graph.add(r.profile, r.broker)
        clients[c] = attrs.evolve(r, last=max(r.last, last.get(c, r.start)))
    return StorageState(
        name=name,
        epoch=epoch,
        next_seq=pmap(next_seq),
        events=pmap(events),
        clients=pmap(clients),
        graph=graph,
        waiting=pmap({c: pset(es) for c, es in waiting.items()}),
        fine_of=fine_of if fine_of is not None else pmap(),
    )
