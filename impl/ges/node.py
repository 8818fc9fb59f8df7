"""The GES node role: publisher side, stable storage, routing, client sessions
[GES "Routing events", "Stable storages", "Epochs", "Recovering clients"].

Theory of operation
-------------------
Every broker node runs this one role; a node that hosts a system stable storage also runs
the storage's rules (:mod:`gapless.impl.ges.storage`) on its ``store``. Handlers follow the
sans-IO contract: ``on_<input>(state, input, now) -> (state, effects)``; an ignored input
returns the same state and ``()``.

* **Publishing.** A client publishes at its node; the node writes the event to its durable
  outbox (``outbox`` record), then sends it as :class:`~gapless.impl.ges.messages.Store` to
  the storage of its unit and retransmits it every ``retry_us`` until the storage answers
  ``Stored``. Storages accept each publisher's events in sequence only, so the epochs they
  give are in publisher order.
* **Storing.** The storage gives the event its epoch and destination list, writes it (``log``
  record) and only once the write completed routes it toward the destination nodes, never
  elsewhere [GES: "events are routed only to those parts of the system where there are
  clients, which are interested in the receipt of those events"]. It retransmits every
  event still pending to the nodes its pending targets are attached to.
* **Routing.** Each hop sends one copy per next hop, chosen on the node's connectivity graph
  (:mod:`gapless.impl.ges.connectivity`), avoiding the links it suspects or hears are down
  (:mod:`gapless.impl.ges.linkstate`) and the nodes the message has visited; and, as a
  gatekeeper, only toward the units its own profile graph (built from the propagated
  registrations, :mod:`gapless.impl.ges.propagation`) says want the event.
* **Sessions.** A client (re)connecting with a resume token — per storage, the epoch of the
  last event it received — makes its node send every storage a ``Handoff``; each storage
  answers with its cut and recovery queue. Per storage, the node delivers the queue, then
  the live events, each only when its predecessor (``prev``) is the last delivered: gapless,
  in order, never twice; an event at or below the last delivered is a duplicate, confirmed
  again but not delivered. Every delivery is confirmed to its storage.
* **The finer tier** (:mod:`gapless.impl.ges.tier`, run config ``granularity = "cluster"``).
  A storage hands each cluster storage its event is destined to a ``Replicate`` once it is
  logged; the cluster storage writes a ``replica`` keyed by the storage's epoch and confirms
  (``Replicated``) once it is durable, and drops it once told every client confirmed
  (``Unreplicate``); it asks for what it lacks (``Retrieve``, until answered ``Retrieved``)
  when it boots, restarts or joins. A reconnecting client's queue entries that the storage
  of the cluster it left holds come from there (``Recover`` -> ``Recovered``), and the
  storage resends any part of a queue not confirmed every tick (:func:`resend_queues`).
* **System-level links** (:mod:`gapless.impl.ges.syslink`, ``system_links``): a storage
  numbers per peer the events it destines into other top-level units and forwards them;
  peers write them in sequence, acknowledge, and nack a gap.
* **Crash** (:mod:`gapless.impl.ges.crashes`). A node keeps exactly its completed writes
  (``disk``): the outbox, and for a storage its logs, registrations and releases, from
  which the storage is rebuilt (:func:`gapless.impl.ges.storage.recover`). Sessions,
  suspicions and in-flight writes are lost; clients reconnect and present their tokens.
"""

from __future__ import annotations

from typing import Any, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.effects import Deliver, Effect, Persist, Send
from gapless.impl.ges.config import GESConfig, Network
from gapless.impl.ges.hops import returns_to, split_by_hop
from gapless.impl.ges.linkstate import News, Pairs
from gapless.impl.ges.messages import (
    Confirm,
    EventMsg,
    Handoff,
    HandoffAck,
    Recover,
    Recovered,
    Replicate,
    Replicated,
    Retrieve,
    Retrieved,
    Routed,
    Store,
    Stored,
    SysAck,
    SysForward,
    SysNack,
    Unreplicate,
    event_message,
    wire,
)
from gapless.impl.ges.policy import GESPolicy
from gapless.impl.ges.propagation import Interest, passes
from gapless.impl.ges.records import (
    Registration,
    Release,
    registration_of,
    release_of,
    unrouted,
)
from gapless.impl.ges.session import Session, change_profile, offer, start_session
from gapless.impl.ges.storage import (
    ClientRecord,
    Queued,
    StorageState,
    StoredEvent,
    confirm,
    confirm_unit,
    handoff,
    recovery_queue,
    store,
)
from gapless.impl.ges.syslink import acked, forwards, held, number, receive, resend
from gapless.impl.ges.tier import add_unit, owed

__all__ = [
    "NodeState",
    "Registration",
    "Release",
    "connect",
    "event_msg",
    "forward_event",
    "handoffs",
    "initial_state",
    "on_body",
    "on_written",
    "replicate",
    "resend_queues",
    "route",
    "sys_forward",
    "write",
]

Effects = tuple[Effect, ...]
TICK = ("ges", "tick")


@final
@attrs.frozen(kw_only=True)
class NodeState:
    """One node (see module doc)."""

    name: str
    net: Network
    config: GESConfig
    policy: GESPolicy
    suspected: frozenset[tuple[str, str]] = frozenset()
    news: News = attrs.field(factory=pmap)
    pairs: Pairs = attrs.field(factory=pmap)  # aggregated news held, and stated (told)
    told: Pairs = attrs.field(factory=pmap)
    reports: int = 0
    avoid: frozenset[tuple[str, str]] = frozenset()
    interest: Interest = attrs.field(factory=Interest)
    sessions: PMap[str, Session] = attrs.field(factory=pmap)
    pub_next: PMap[str, int] = attrs.field(factory=pmap)
    outbox: PMap[tuple[str, int], Store] = attrs.field(factory=pmap)
    store: StorageState | None = None
    disk: PMap[Any, Any] = attrs.field(factory=pmap)
    writes: PMap[Any, Any] = attrs.field(factory=pmap)
    sent_at: PMap[int, int] = attrs.field(factory=pmap)
    retrieved: frozenset[str] = frozenset()
    """A cluster storage: the system storages that answered its ``Retrieve`` (soft state: a
    restart asks again)."""


def initial_state(name: str, net: Network, config: GESConfig, policy: GESPolicy) -> NodeState:
    """A node at boot: a storage node starts its (empty) storage."""
    st = StorageState(name=name, fine_of=net.boot_fine_of) if name in net.storages else None
    return NodeState(name=name, net=net, config=config, policy=policy, store=st)


def write(s: NodeState, key: Any, value: Any) -> tuple[NodeState, Persist]:
    """Ask for the durable write ``key`` = ``value`` (completed by ``on_written``)."""
    s = attrs.evolve(s, writes=s.writes.set(key, value))
    return s, Persist(key=key, value=value, delay=s.config.write_delay_us)


# ------------------------------------------------------------------ routing


def route(
    s: NodeState,
    dest: str,
    body: Any,
    visited: frozenset[str],
    now: int,
    back: tuple[str, ...] = (),
) -> tuple[NodeState, Effects]:
    """Send ``body`` toward node ``dest`` (handled here when ``dest`` is this node); at a
    dead end, back to the node it came from
    (:func:`~gapless.impl.ges.hops.returns_to`)."""
    if dest == s.name:
        return on_body(s, body, now)
    seen = visited | {s.name}
    hop = s.policy.route(s.net.hierarchy, s.name, dest, s.avoid, seen)
    if hop is not None:
        out = Routed(dest=dest, visited=seen, body=body, back=(*back, s.name))
        return s, (Send(to=hop, msg=out),)
    to = returns_to(s.name, s.avoid, back)
    if to is not None:
        return s, (Send(to=to, msg=Routed(dest=dest, visited=seen, body=body, back=back[:-1])),)
    # unreachable now: dropped (and recorded); the sender retransmits
    kind = wire(Routed(dest=dest, visited=seen, body=body)).kind
    return s, (unrouted(s.name, (dest,), visited - {s.name}, kind),)


def forward_event(s: NodeState, msg: EventMsg, now: int) -> tuple[NodeState, Effects]:
    """Deliver ``msg`` to this node's sessions if it is a destination, and send one copy
    per next hop toward the other destinations."""
    effects: list[Effect] = []
    if s.name in msg.dests:
        s, effs = deliver_local(s, msg, now)
        effects.extend(effs)
    seen = msg.visited | {s.name}
    dests = [d for d in msg.dests if d != s.name and _gate(s, msg, d)]
    groups, lost = split_by_hop(s.policy.route, s.net.hierarchy, s.name, s.avoid, dests, seen)
    ahead = (*msg.back, s.name)
    to = returns_to(s.name, s.avoid, msg.back) if lost else None
    if to is not None:  # a dead end toward these: back where it came from
        groups.setdefault(to, []).extend(lost)
    elif lost:  # no route toward these now: recorded; the storage retransmits
        before = msg.visited - {s.name}
        effects.append(unrouted(s.name, tuple(lost), before, "event", msg.storage, msg.epoch))
    for hop, ds in sorted(groups.items()):
        copy = attrs.evolve(
            msg,
            dests=tuple(ds),
            targets=tuple(t for t in msg.targets if t[1] in set(ds)),
            visited=seen,
            back=msg.back[:-1] if hop == to else ahead,
        )
        effects.append(Send(to=hop, msg=copy))
    return s, tuple(effects)


def _gate(s: NodeState, msg: EventMsg, dest: str) -> bool:
    """Whether this node lets ``msg`` go toward ``dest``: one of its targets there passes
    the node's gatekeeping (:func:`gapless.impl.ges.propagation.passes`)."""
    h, here = s.net.hierarchy, s.interest
    at = [c for c, node, _prev in msg.targets if node == dest]
    return not at or any(passes(here, h, s.name, c, dest, msg.attributes) for c in at)


# ------------------------------------------------------------------ sessions


def deliver_local(s: NodeState, msg: EventMsg, now: int) -> tuple[NodeState, Effects]:
    """Offer ``msg`` to each local session it targets."""
    effects: list[Effect] = []
    for client, node, prev in msg.targets:
        if node != s.name:
            continue
        s, effs = _offer(s, client, msg.storage, msg.epoch, prev, msg.pubend, msg.attributes, now)
        effects.extend(effs)
    return s, tuple(effects)


def _offer(
    s: NodeState,
    client: str,
    storage: str,
    epoch: int,
    prev: int,
    pubend: str,
    attributes: PMap[str, Any],
    now: int,
) -> tuple[NodeState, Effects]:
    sess = s.sessions.get(client)
    if sess is None:
        return s, ()  # not connected here: the storage keeps it for the client's recovery
    sess, out = offer(sess, storage, epoch, prev, pubend, attributes, s.policy)
    return _emit(attrs.evolve(s, sessions=s.sessions.set(client, sess)), sess, storage, out, now)


def _emit(
    s: NodeState, sess: Session, storage: str, out: tuple[tuple[str, int, str, Any], ...], now: int
) -> tuple[NodeState, Effects]:
    """Deliveries and confirmations of what :func:`offer` decided."""
    effects: list[Effect] = []
    for what, epoch, pubend, attributes in out:
        if what == "deliver":
            effects.append(
                Deliver(
                    subscriber=sess.client,
                    pubend=pubend,
                    tick=epoch,
                    payload=attributes,
                    connection=sess.connection,
                )
            )
        conf = Confirm(storage=storage, epoch=epoch, client=sess.client)
        s, effs = route(s, storage, conf, frozenset(), now)
        effects.extend(effs)
    return s, tuple(effects)


def on_ack(s: NodeState, ack: HandoffAck, now: int) -> tuple[NodeState, Effects]:
    """A storage's answer to this node's handoff: deliver its recovery queue, then what
    arrived live meanwhile."""
    sess = s.sessions.get(ack.client)
    if (
        sess is None
        or (sess.connection, sess.change) != (ack.connection, ack.change)
        or sess.answered_by(ack.storage)
    ):
        return s, ()
    last = max(sess.last.get(ack.storage, ack.effective), ack.effective)  # a change: kept
    sess = attrs.evolve(
        sess, last=sess.last.set(ack.storage, last), answered=sess.answered | {ack.storage}
    )
    effects: list[Effect] = []
    for q in ack.queue:
        sess, out = offer(sess, ack.storage, q.epoch, q.prev, q.pubend, q.attributes, s.policy)
        s, effs = _emit(s, sess, ack.storage, out, now)
        effects.extend(effs)
    sess, out = offer(sess, ack.storage, None, None, "", pmap(), s.policy)
    s = attrs.evolve(s, sessions=s.sessions.set(ack.client, sess))
    s, effs = _emit(s, sess, ack.storage, out, now)
    return attrs.evolve(s, sessions=s.sessions.set(ack.client, sess)), (*effects, *effs)


def handoffs(s: NodeState, sess: Session, now: int) -> tuple[NodeState, Effects]:
    """(Re)send a ``Handoff`` to every storage that has not answered ``sess``'s current
    registration (its connection, or its latest profile change)."""
    effects: list[Effect] = []
    for storage in s.net.storages:
        if sess.answered_by(storage):
            continue
        h = Handoff(
            storage=storage,
            client=sess.client,
            connection=sess.connection,
            broker=s.name,
            presented=sess.presented.get(storage),
            profile=sess.profile,
            change=sess.change,
        )
        s, effs = route(s, storage, h, frozenset(), now)
        effects.extend(effs)
    return s, tuple(effects)


def connect(
    s: NodeState, client: str, profile: str, connection: int, resume: Any, now: int
) -> tuple[NodeState, Effects]:
    """A client attaches here, presenting ``resume`` (storage -> epoch pairs, or None); for
    the connection it holds here, it changes its profile within it (:func:`change_profile`)."""
    sess = s.sessions.get(client)
    if sess is not None and sess.connection == connection:
        new = change_profile(sess, profile)
        if new is sess:
            return s, ()
        sess = new
    else:
        sess = start_session(client, profile, connection, resume)
    s = attrs.evolve(s, sessions=s.sessions.set(client, sess))
    return handoffs(s, sess, now)


# ------------------------------------------------------------------ storage side


def on_body(s: NodeState, body: Any, now: int) -> tuple[NodeState, Effects]:
    """A routed message addressed to this node."""
    t = type(body)
    if t is HandoffAck:
        return on_ack(s, body, now)
    if t is Replicate and body.storage == s.name:
        return _on_replicate(s, body, now)
    if t is Recover and body.storage == s.name:
        return _on_recover(s, body, now)
    if t is Recovered:
        return _on_recovered(s, body, now)
    if t is Unreplicate and body.storage == s.name:
        held_at = (s.name, body.source, body.epoch)
        if ("replica", *held_at) not in s.disk or ("unreplicated", *held_at) in s.writes:
            return s, ()
        s, p = write(s, ("unreplicated", *held_at), body)
        return s, (p,)
    if t is Retrieved and body.storage == s.name:
        if body.source in s.retrieved:
            return s, ()
        return attrs.evolve(s, retrieved=s.retrieved | {body.source}), ()
    if t is Stored:
        key = (body.pubend, body.seq)
        if key not in s.outbox:
            return s, ()
        return attrs.evolve(s, outbox=s.outbox.remove(key)), ()
    st = s.store
    if st is None or body.storage != s.name:
        return s, ()
    if t is Store:
        return _on_store(s, st, body, now)
    if t is Confirm:
        st2, gone = confirm(st, body.epoch, body.client, s.policy)
        s = attrs.evolve(s, store=st2)
        return _releases(s, (gone,) if gone is not None else ())
    if t is Handoff:
        return _on_handoff(s, st, body, now)
    if t is Replicated:
        st2, gone = confirm_unit(st, body.epoch, body.unit, s.policy)
        s = attrs.evolve(s, store=st2)
        ev = st2.events.get(body.epoch)
        if st2 is st or ev is None or s.policy.replica_needed(frozenset(ev.pending)):
            return _releases(s, (gone,) if gone is not None else ())
        s, effs = unreplicate(s, body.epoch, (body.unit,), tuple(sorted(ev.targets)), now)
        s, more = _releases(s, (gone,) if gone is not None else ())
        return s, (*effs, *more)
    if t is Retrieve:
        return _on_retrieve(s, st, body, now)
    if t is SysForward or t is SysAck or t is SysNack:
        return _on_sys(s, st, body, now)
    return s, ()


# ------------------------------------------------------------------ system-level links


def sys_forward(
    s: NodeState, ev: StoredEvent, now: int, only: str = ""
) -> tuple[NodeState, Effects]:
    """Hand ``ev`` (logged) to every peer system storage that has not acknowledged it
    (:mod:`gapless.impl.ges.syslink`)."""
    effects: list[Effect] = []
    for f in forwards(s.name, ev, only):
        s, effs = route(s, f.storage, f, frozenset(), now)
        effects.extend(effs)
    return s, tuple(effects)


def _on_sys(s: NodeState, st: StorageState, body: Any, now: int) -> tuple[NodeState, Effects]:
    """A system-level message for this system storage: a peer's event (written in
    sequence), its acknowledgement, or its negative acknowledgement (resend from there)."""
    if type(body) is SysAck:
        st2, gone = acked(st, body, s.policy)
        return _releases(attrs.evolve(s, store=st2), gone)
    if type(body) is SysNack:
        effects: list[Effect] = []
        for ev in resend(st, body):
            if ("log", s.name, ev.epoch) in s.disk:
                s, effs = sys_forward(s, ev, now, body.unit)
                effects.extend(effs)
        return s, tuple(effects)
    st2, answer, write_it = receive(st, body, s.policy)
    s = attrs.evolve(s, store=st2) if st2 is not st else s
    if write_it:
        s, p = write(s, ("sysin", s.name, body.origin, body.seq), body)
        return s, (p,)
    return route(s, body.origin, answer, frozenset(), now) if answer is not None else (s, ())


# ------------------------------------------------------------------ the finer tier


def replicate(s: NodeState, ev: StoredEvent, now: int) -> tuple[NodeState, Effects]:
    """Hand ``ev`` (logged) to every cluster storage that has not confirmed it
    (:mod:`gapless.impl.ges.tier`)."""
    effects: list[Effect] = []
    for unit in sorted(ev.units_pending):
        r = Replicate(
            storage=unit, source=s.name, epoch=ev.epoch, pubend=ev.pubend, attributes=ev.attributes
        )
        s, effs = route(s, unit, r, frozenset(), now)
        effects.extend(effs)
    return s, tuple(effects)


def unreplicate(
    s: NodeState, epoch: int, units: tuple[str, ...], targets: tuple[str, ...], now: int
) -> tuple[NodeState, Effects]:
    """Every client event ``epoch`` was destined to confirmed it: tell ``units`` their
    replicas may go (at the event's release, or when a unit confirms it after that)."""
    effects: list[Effect] = []
    for unit in units:
        u = Unreplicate(storage=unit, source=s.name, epoch=epoch, targets=targets)
        s, effs = route(s, unit, u, frozenset(), now)
        effects.extend(effs)
    return s, tuple(effects)


def _on_replicate(s: NodeState, r: Replicate, now: int) -> tuple[NodeState, Effects]:
    """A cluster storage: write the replica under the system storage's epoch; confirm once
    it is durable (again for one it holds)."""
    key = ("replica", s.name, r.source, r.epoch)
    if key in s.disk:
        done = Replicated(storage=r.source, unit=s.name, epoch=r.epoch)
        return route(s, r.source, done, frozenset(), now)
    if key in s.writes:
        return s, ()
    s, p = write(s, key, r)
    return s, (p,)


def _on_retrieve(
    s: NodeState, st: StorageState, r: Retrieve, now: int
) -> tuple[NodeState, Effects]:
    """A cluster storage booted, recovered or was added: record it (durably, if it is new)
    and hand it every logged event it lacks, epochs kept."""
    st2 = add_unit(st, s.net.hierarchy, r.unit, s.policy)
    effects: list[Effect] = []
    if st2 is not st:
        s = attrs.evolve(s, store=st2)
        s, p = write(s, ("unit", s.name, r.unit), r)
        effects.append(p)
    elif ("unit", s.name, r.unit) not in s.writes:  # known already: answer now
        s, effs = route(s, r.unit, Retrieved(storage=r.unit, source=s.name), frozenset(), now)
        effects.extend(effs)
    for ev in owed(st2, r.unit):
        if ("log", s.name, ev.epoch) in s.disk:
            one = attrs.evolve(ev, units_pending=ev.units_pending.intersection({r.unit}))
            s, effs = replicate(s, one, now)
            effects.extend(effs)
    return s, tuple(effects)


def _on_store(s: NodeState, st: StorageState, body: Store, now: int) -> tuple[NodeState, Effects]:
    st2, ev = store(st, body.pubend, body.seq, body.attributes, s.net.brokers, s.policy)
    if ev is not None and s.net.system_links:
        st2, ev = number(st2, ev, s.net.storage_of, s.policy)
    if ev is None:
        if body.seq < st.next_seq.get(body.pubend, 0):  # a duplicate: it is logged
            ack = Stored(storage=s.name, pubend=body.pubend, seq=body.seq)
            return route(s, body.origin, ack, frozenset(), now)
        return s, ()
    s = attrs.evolve(s, store=st2)
    s, p = write(s, ("log", s.name, ev.epoch), (ev, body.origin))
    return s, (p,)


def _releases(s: NodeState, gone: tuple[StoredEvent, ...]) -> tuple[NodeState, Effects]:
    effects: list[Effect] = []
    for ev in gone:
        s, p = write(s, ("release", s.name, ev.epoch), release_of(s.name, ev))
        effects.append(p)
    return s, tuple(effects)


def _on_handoff(s: NodeState, st: StorageState, h: Handoff, now: int) -> tuple[NodeState, Effects]:
    old = st.clients.get(h.client)
    st2, rec, gone = handoff(
        st, h.client, h.connection, h.broker, h.presented, h.profile, s.policy, h.change
    )
    if rec is None:
        done = s.disk.get(("client", s.name, h.client))
        at = (h.connection, h.change)
        if (
            old is not None
            and done is not None
            and (done.record.connection, done.record.change) == at
        ):
            return _answer(s, st, h.client, old, done.old_broker, now)
        return s, ()
    s = attrs.evolve(s, store=st2)
    s, effs = _releases(s, gone)
    key = ("client", s.name, h.client)
    if key in s.writes:  # the last registration is being written: this one is asked after it
        return attrs.evolve(s, writes=s.writes.set(("deferred", *key), True)), effs
    s, p = write(s, key, registration_of(st2, h.client, s.disk.get(key)))
    return s, (*effs, p)


def _answer(
    s: NodeState, st: StorageState, client: str, rec: ClientRecord, old_broker: str, now: int
) -> tuple[NodeState, Effects]:
    """Answer ``client``'s handoff (its record ``rec``; it left ``old_broker``): the
    ``HandoffAck`` with its cut and recovery queue. With the finer tier, the queue's events
    that the storage of the cluster it left holds durably (that unit confirmed them) come from
    that cluster storage instead (a ``Recover``) [GES "Recovering clients": a client recovers
    from its storage]; the rest, and any that goes astray, from this storage, which
    retransmits every event a client has not confirmed."""
    queue = recovery_queue(st, client, rec.confirmed, rec.cut)
    unit = st.fine_of.get(old_broker, "")
    held = tuple(
        q
        for q in queue
        if unit in st.events[q.epoch].units and unit not in st.events[q.epoch].units_pending
    )
    effects: list[Effect] = []
    if held:
        items = tuple((q.epoch, q.prev) for q in held)
        ask = Recover(storage=unit, source=st.name, client=client, broker=rec.broker, items=items)
        s, effs = route(s, unit, ask, frozenset(), now)
        effects.extend(effs)
        queue = tuple(q for q in queue if q not in held)
    ack = HandoffAck(
        storage=st.name,
        client=client,
        connection=rec.connection,
        change=rec.change,
        effective=rec.confirmed,
        cut=rec.cut,
        fresh=not old_broker,
        queue=queue,
    )
    s, effs = route(s, rec.broker, ack, frozenset(), now)
    return s, (*effects, *effs)


def _on_recover(s: NodeState, r: Recover, now: int) -> tuple[NodeState, Effects]:
    """A cluster storage sends a reconnecting client the events it holds of its queue, as
    the system storage's events (its epochs and chain)."""
    queue: list[Queued] = []
    for epoch, prev in r.items:
        rep: Replicate | None = s.disk.get(("replica", s.name, r.source, epoch))
        if rep is not None:  # always, once confirmed; else the system storage resends it
            q = Queued(epoch=epoch, prev=prev, pubend=rep.pubend, attributes=rep.attributes)
            queue.append(q)
    if not queue:
        return s, ()
    out = Recovered(
        storage=r.source, unit=s.name, client=r.client, broker=r.broker, queue=tuple(queue)
    )
    return route(s, r.broker, out, frozenset(), now)


def resend_queues(s: NodeState, now: int) -> tuple[NodeState, Effects]:
    """With the finer tier, every tick: a system storage resends each client the part of its
    recovery queue it has not confirmed yet, itself (the cluster storage asked for it may
    have failed, and a queue's events may not pass the gatekeepers as live events: they are
    judged by the client's profile now)."""
    st = s.store
    if st is None or not s.net.fine_of:
        return s, ()
    effects: list[Effect] = []
    for client in sorted(st.waiting):
        rec = st.clients[client]
        queue = recovery_queue(st, client, rec.confirmed, rec.cut)
        if queue:
            out = Recovered(
                storage=st.name, unit=st.name, client=client, broker=rec.broker, queue=queue
            )
            s, effs = route(s, rec.broker, out, frozenset(), now)
            effects.extend(effs)
    return s, tuple(effects)


def _on_recovered(s: NodeState, r: Recovered, now: int) -> tuple[NodeState, Effects]:
    """Recovered events from a cluster storage: offered to the client's session like a
    recovery queue (buffered until the system storage's answer made the session ready)."""
    effects: list[Effect] = []
    for q in r.queue:
        s, effs = _offer(s, r.client, r.storage, q.epoch, q.prev, q.pubend, q.attributes, now)
        effects.extend(effs)
    return s, tuple(effects)


def event_msg(s: NodeState, ev: StoredEvent) -> EventMsg:
    """The message that carries stored event ``ev`` toward its pending targets."""
    assert s.store is not None
    return event_message(s.store, ev)


def on_written(s: NodeState, key: Any, now: int) -> tuple[NodeState, Effects]:
    """A durable write completed: it joins ``disk``; what waited for it goes out."""
    if key not in s.writes:
        return s, ()
    value = s.writes[key]
    s = attrs.evolve(s, writes=s.writes.remove(key), disk=s.disk.set(key, value))
    kind = key[0]
    if kind == "outbox":
        return route(s, value.storage, value, frozenset(), now)
    if kind == "log":
        ev, origin = value
        s, effs = route(
            s, origin, Stored(storage=s.name, pubend=ev.pubend, seq=ev.seq), frozenset(), now
        )
        if not ev.targets:
            return s, effs
        s = attrs.evolve(s, sent_at=s.sent_at.set(ev.epoch, now))
        s, more = forward_event(s, event_msg(s, ev), now)
        s, copies = replicate(s, ev, now)
        s, across = sys_forward(s, ev, now)
        return s, (*effs, *more, *copies, *across)
    if kind == "release" and value.units:
        return unreplicate(s, value.epoch, value.units, value.targets, now)
    if kind == "unreplicated":  # the replica and this record both go
        return attrs.evolve(s, disk=s.disk.remove(key).discard(("replica", *key[1:]))), ()
    if kind == "replica":
        r: Replicate = value
        done = Replicated(storage=r.source, unit=s.name, epoch=r.epoch)
        return route(s, r.source, done, frozenset(), now)
    if kind == "unit":
        answer = Retrieved(storage=value.unit, source=s.name)
        return route(s, value.unit, answer, frozenset(), now)
    if kind == "sysin" and s.store is not None:
        st, ack = held(s.store, value)
        return route(attrs.evolve(s, store=st), ack.storage, ack, frozenset(), now)
    if kind == "client" and s.store is not None:
        reg: Registration = value
        st = s.store  # the writes below leave it unchanged
        effects: Effects = ()
        if ("deferred", *key) in s.writes:  # a newer registration waited for this write
            s = attrs.evolve(s, writes=s.writes.remove(("deferred", *key)))
            s, p = write(s, key, registration_of(st, reg.client, reg))
            effects = (p,)
        rec = st.clients.get(reg.client)
        if rec is None or (rec.connection, rec.change) != (
            reg.record.connection,
            reg.record.change,
        ):
            return s, effects
        s, effs = _answer(s, st, reg.client, rec, reg.old_broker, now)
        return s, (*effects, *effs)
    return s, ()
