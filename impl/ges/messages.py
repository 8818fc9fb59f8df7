"""GES messages on the wire and their summary [GES "Routing events", "Recovering clients"].

Theory of operation
-------------------
Every message but :class:`EventMsg` travels to one node (``dest``) hop by hop inside a
:class:`Routed` envelope that records the nodes it has visited (so a route never loops);
:class:`EventMsg` carries its own destination list and is split at each hop by next hop, so
one copy crosses each link toward the destinations behind it [GES "Routing events"].

* :class:`Store` — a publisher's node hands its storage the ``seq``-th event of a pubend;
  :class:`Stored` — the storage logged it (the node stops retransmitting).
* :class:`EventMsg` — a stored event on its way to the destination nodes, with, per target
  client at those nodes, the epoch of the previous event destined to it.
* :class:`Confirm` — a node delivered ``epoch`` to ``client`` (predicate count decrement).
* :class:`LinkNews` — links that went down or up, flooded to every node.
* :class:`ProfileNews` — clients' registrations at one node, sent to the gatekeepers of each
  level that gate events into the units holding it (split at each hop by next hop, like an
  event); :class:`ProfileAck` — a gatekeeper holds them (the node stops resending);
  :class:`ProfileAsk` — a restarted gatekeeper asks a node for its current registrations
  (:mod:`gapless.impl.ges.propagation`).
* :class:`Handoff` — a client (re)connected at ``broker`` presenting ``presented`` for this
  storage, with its profile; :class:`HandoffAck` — the storage's cut and recovery queue.
* The finer tier (``spec/ges.md``, "Finer-grained storages"): :class:`Replicate` — a system
  storage hands a cluster's storage one stored event with its epoch; :class:`Replicated` — the
  cluster's storage has it durably (the system storage's predicate count for that unit is
  decremented); :class:`Retrieve` — a cluster's storage (added, booted or recovered) asks a
  system storage for the events destined to its cluster that it lacks (resent every tick
  until answered), :class:`Retrieved` — the system storage's answer once it recorded the
  cluster storage durably; :class:`Unreplicate` — every client an event was destined to has
  confirmed it: the cluster storage releases its replica; :class:`Held` — the replicas a
  cluster storage still holds, every tick (a lost ``Unreplicate`` is sent again);
  :class:`Recover` — a
  system storage asks the cluster storage a reconnecting client left to send it the events of
  its recovery queue that cluster storage holds; :class:`Recovered` — those events, to the
  client's node (like a ``HandoffAck``'s queue, and for the same reason not an ``EventMsg``:
  gatekeepers judge live events by the client's profile now, a recovery queue holds what its
  profile in force when each was published wanted).
* The system-level links (``spec/ges.md``, "System-level sequence numbers"):
  :class:`SysForward` — a system storage hands the system storage of another top-level unit
  an event destined into it, with the sequence number of that pair; :class:`SysAck` — the
  receiver holds every one up to a number durably; :class:`SysNack` — it found a gap.

:class:`GesWire` is the protocol's own summary of a message (the registry entry's
``wire_schema``): the invariants read sends only through it.
"""

from __future__ import annotations

from typing import Any, final

import attrs
from pyrsistent import PMap

from gapless.impl.ges.storage import Queued, StorageState, StoredEvent

__all__ = [
    "Confirm",
    "EventMsg",
    "GesWire",
    "Handoff",
    "HandoffAck",
    "Held",
    "LinkNews",
    "ProfileAck",
    "ProfileAsk",
    "ProfileNews",
    "Recover",
    "Recovered",
    "Replicate",
    "Replicated",
    "Retrieve",
    "Retrieved",
    "Routed",
    "Store",
    "Stored",
    "SysAck",
    "SysForward",
    "SysNack",
    "Unreplicate",
    "event_message",
    "wire",
]


@final
@attrs.frozen(kw_only=True)
class Store:
    storage: str
    origin: str
    pubend: str
    seq: int
    attributes: PMap[str, Any]


@final
@attrs.frozen(kw_only=True)
class Stored:
    storage: str
    pubend: str
    seq: int


@final
@attrs.frozen(kw_only=True)
class Confirm:
    storage: str
    epoch: int
    client: str


@final
@attrs.frozen(kw_only=True)
class Handoff:
    storage: str
    client: str
    connection: int
    broker: str
    presented: int | None
    profile: str
    change: int = 0


@final
@attrs.frozen(kw_only=True)
class HandoffAck:
    storage: str
    client: str
    connection: int
    effective: int
    cut: int
    fresh: bool
    queue: tuple[Queued, ...]
    change: int = 0


@final
@attrs.frozen(kw_only=True)
class Replicate:
    """System storage ``source`` hands cluster storage ``storage`` its event ``epoch``."""

    storage: str
    source: str
    epoch: int
    pubend: str
    attributes: PMap[str, Any]


@final
@attrs.frozen(kw_only=True)
class Replicated:
    """Cluster storage ``unit`` holds event ``epoch`` of system storage ``storage`` durably."""

    storage: str
    unit: str
    epoch: int


@final
@attrs.frozen(kw_only=True)
class Retrieve:
    """Cluster storage ``unit`` asks system storage ``storage`` for the events destined to
    its cluster that it has not confirmed (storage addition and recovery)."""

    storage: str
    unit: str


@final
@attrs.frozen(kw_only=True)
class Retrieved:
    """System storage ``source`` has recorded cluster storage ``storage`` durably (its
    answer to a ``Retrieve``: the cluster storage stops resending it)."""

    storage: str
    source: str


@final
@attrs.frozen(kw_only=True)
class Unreplicate:
    """System storage ``source`` tells cluster storage ``storage`` that every client its
    event ``epoch`` was destined to (``targets``) has confirmed it: the replica may go."""

    storage: str
    source: str
    epoch: int
    targets: tuple[str, ...]


@final
@attrs.frozen(kw_only=True)
class Held:
    """Cluster storage ``unit`` tells system storage ``storage`` the epochs of the replicas
    of its events it still holds (every tick), so that an ``Unreplicate`` that was lost is
    sent again."""

    storage: str
    unit: str
    epochs: tuple[int, ...]


@final
@attrs.frozen(kw_only=True)
class Recover:
    """System storage ``source`` asks cluster storage ``storage`` to send ``client``, now at
    node ``broker``, its events ``items`` (``(epoch, prev)`` pairs: the recovery queue's
    entries that cluster storage holds)."""

    storage: str
    source: str
    client: str
    broker: str
    items: tuple[tuple[int, int], ...]


@final
@attrs.frozen(kw_only=True)
class Recovered:
    """Cluster storage ``unit`` sends ``client`` at node ``broker`` events of system storage
    ``storage``'s recovery queue (each with its epoch and ``prev``)."""

    storage: str
    unit: str
    client: str
    broker: str
    queue: tuple[Queued, ...]


@final
@attrs.frozen(kw_only=True)
class SysForward:
    """System storage ``origin`` hands system storage ``storage`` (of another top-level
    unit) its event ``epoch``, the ``seq``-th it destined into that unit (the system-level
    sequence number of :mod:`gapless.impl.ges.syslink`)."""

    storage: str
    origin: str
    seq: int
    epoch: int
    pubend: str
    attributes: PMap[str, Any]


@final
@attrs.frozen(kw_only=True)
class SysAck:
    """System storage ``unit`` holds durably every event ``storage`` sent it up to sequence
    number ``upto`` (a positive acknowledgement, cumulative)."""

    storage: str
    unit: str
    upto: int


@final
@attrs.frozen(kw_only=True)
class SysNack:
    """System storage ``unit`` found a gap: it lacks ``storage``'s sequence number ``want``
    (a negative acknowledgement: resend from there)."""

    storage: str
    unit: str
    want: int


@final
@attrs.frozen(kw_only=True)
class Routed:
    """``body`` on its way to node ``dest``; ``visited``: the nodes it has been at; ``back``:
    the trail of nodes that forwarded it, last hop last (a node that finds no way on returns
    it to the last one, :func:`gapless.impl.ges.node.route`)."""

    dest: str
    visited: frozenset[str]
    body: (
        Store
        | Stored
        | Confirm
        | Handoff
        | HandoffAck
        | Replicate
        | Replicated
        | Retrieve
        | Retrieved
        | Unreplicate
        | Held
        | Recover
        | Recovered
        | SysForward
        | SysAck
        | SysNack
        | ProfileAck
        | ProfileAsk
    )
    back: tuple[str, ...] = ()


@final
@attrs.frozen(kw_only=True)
class EventMsg:
    """Stored event ``epoch`` of ``storage`` toward ``dests``; ``targets`` are
    ``(client, node, prev)`` for the clients at those nodes; ``back``: the trail of nodes that
    forwarded it (see :class:`Routed`)."""

    storage: str
    epoch: int
    pubend: str
    attributes: PMap[str, Any]
    targets: tuple[tuple[str, str, int], ...]
    dests: tuple[str, ...]
    visited: frozenset[str]
    back: tuple[str, ...] = ()


@final
@attrs.frozen(kw_only=True)
class LinkNews:
    """Links that went down or up: ``(link, version, up)`` entries
    (:mod:`gapless.impl.ges.linkstate`), and aggregated ``(unit pair, weight, live links)``
    entries (:mod:`gapless.impl.ges.aggregate`)."""

    entries: tuple[tuple[tuple[str, str], tuple[int, int, str], bool], ...]
    pairs: tuple[tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, int], int], ...] = ()


@final
@attrs.frozen(kw_only=True)
class ProfileNews:
    """Registrations ``(client, connection, node, profile)`` of clients at node ``origin``, on
    their way to the gatekeepers ``dests``; ``visited``: the nodes it has been at; ``since``:
    the restart time of the gatekeeper whose :class:`ProfileAsk` it answers (-1: none);
    ``back``: the trail of nodes that forwarded it (see :class:`Routed`)."""

    origin: str
    entries: tuple[tuple[str, int, str, str], ...]
    dests: tuple[str, ...]
    visited: frozenset[str] = frozenset()
    since: int = -1
    back: tuple[str, ...] = ()


@final
@attrs.frozen(kw_only=True)
class ProfileAck:
    """Gatekeeper ``gatekeeper`` holds the registrations ``ids`` ``(client, number)`` that
    node ``origin`` sent it (or newer ones)."""

    origin: str
    gatekeeper: str
    ids: tuple[tuple[str, int], ...]


@final
@attrs.frozen(kw_only=True)
class ProfileAsk:
    """Gatekeeper ``gatekeeper``, restarted at ``since`` with an empty table, asks node
    ``origin`` for the registrations of the clients attached there."""

    origin: str
    gatekeeper: str
    since: int


@final
@attrs.frozen(kw_only=True)
class GesWire:
    """What a GES message says, for the invariants: ``kind`` (store, stored, event,
    confirm, handoff, handoff_ack), the ``storage`` it concerns, the ``epoch`` (event,
    confirm), ``pubend``, ``client``, ``connection``, the event's destination nodes
    (``dests``), a handoff's ``presented`` epoch, an ack's ``effective`` epoch and ``cut``,
    whether it registered a new client (``fresh``), the epochs of its recovery ``queue``, and
    the cluster storage (``unit``) of a replicate, replicated, retrieve, recover or recovered
    message
    (whose ``storage`` is the system storage; a recover's ``queue``: the epochs it asks for);
    for the system-level links, ``sys_forward`` (``storage`` the origin, ``unit`` the system
    storage it goes to, ``seq``), ``sys_ack`` (``seq``: up to) and ``sys_nack`` (``seq``:
    wanted), whose ``storage`` is the origin and ``unit`` the other system storage; a
    handoff's or ack's ``change``: the profile change within the connection it is about (0:
    the connection's own registration)."""

    kind: str
    storage: str = ""
    epoch: int | None = None
    pubend: str = ""
    client: str = ""
    connection: int | None = None
    dests: tuple[str, ...] = ()
    presented: int | None = None
    effective: int | None = None
    cut: int | None = None
    fresh: bool = False
    queue: tuple[int, ...] = ()
    unit: str = ""
    seq: int | None = None
    change: int = 0


def _body(b: Any) -> GesWire:
    t = type(b)
    if t is Store:
        return GesWire(kind="store", storage=b.storage, pubend=b.pubend, epoch=b.seq)
    if t is Stored:
        return GesWire(kind="stored", storage=b.storage, pubend=b.pubend, epoch=b.seq)
    if t is Confirm:
        return GesWire(kind="confirm", storage=b.storage, epoch=b.epoch, client=b.client)
    if t is Handoff:
        return GesWire(
            kind="handoff",
            storage=b.storage,
            client=b.client,
            connection=b.connection,
            presented=b.presented,
            change=b.change,
        )
    if t is HandoffAck:
        return GesWire(
            kind="handoff_ack",
            storage=b.storage,
            client=b.client,
            connection=b.connection,
            effective=b.effective,
            cut=b.cut,
            fresh=b.fresh,
            queue=tuple(q.epoch for q in b.queue),
            change=b.change,
        )
    if t is Replicate:
        return GesWire(kind="replicate", storage=b.source, epoch=b.epoch, unit=b.storage)
    if t is Replicated:
        return GesWire(kind="replicated", storage=b.storage, epoch=b.epoch, unit=b.unit)
    if t is Retrieve:
        return GesWire(kind="retrieve", storage=b.storage, unit=b.unit)
    if t is Retrieved:
        return GesWire(kind="retrieved", storage=b.source, unit=b.storage)
    if t is Unreplicate:
        return GesWire(kind="unreplicate", storage=b.source, unit=b.storage, epoch=b.epoch)
    if t is Held:
        return GesWire(kind="held", storage=b.storage, unit=b.unit, queue=b.epochs)
    if t is Recover:
        return GesWire(
            kind="recover",
            storage=b.source,
            unit=b.storage,
            client=b.client,
            queue=tuple(e for e, _prev in b.items),
        )
    if t is Recovered:
        return GesWire(
            kind="recovered",
            storage=b.storage,
            unit=b.unit,
            client=b.client,
            queue=tuple(q.epoch for q in b.queue),
        )
    if t is SysForward:
        return GesWire(
            kind="sys_forward", storage=b.origin, unit=b.storage, seq=b.seq, epoch=b.epoch
        )
    if t is SysAck:
        return GesWire(kind="sys_ack", storage=b.storage, unit=b.unit, seq=b.upto)
    if t is SysNack:
        return GesWire(kind="sys_nack", storage=b.storage, unit=b.unit, seq=b.want)
    if t is ProfileAck:
        return GesWire(kind="profile_ack", unit=b.gatekeeper)
    if t is ProfileAsk:
        return GesWire(kind="profile_ask", unit=b.gatekeeper)
    return GesWire(kind="other")


def wire(msg: Any) -> GesWire:
    """The summary of ``msg`` (``kind="other"`` for anything that is not GES's)."""
    if type(msg) is EventMsg:
        return GesWire(
            kind="event", storage=msg.storage, epoch=msg.epoch, pubend=msg.pubend, dests=msg.dests
        )
    if type(msg) is Routed:
        return _body(msg.body)
    if type(msg) is LinkNews:
        return GesWire(kind="link_news")
    if type(msg) is ProfileNews:
        return GesWire(kind="profile_news", dests=msg.dests)
    return GesWire(kind="other")


def event_message(st: StorageState, ev: StoredEvent) -> EventMsg:
    """The message that carries ``st``'s stored event ``ev`` toward its pending targets (at
    the nodes they are registered at now; the whole destination list while nobody has
    confirmed it)."""
    targets = tuple(
        (c, st.clients[c].broker, ev.targets[c]) for c in sorted(ev.pending) if c in st.clients
    )
    first = len(ev.pending) == len(ev.targets)
    dests = tuple(sorted({t[1] for t in targets} | (set(ev.dests) if first else set())))
    return EventMsg(
        storage=st.name,
        epoch=ev.epoch,
        pubend=ev.pubend,
        attributes=ev.attributes,
        targets=targets,
        dests=dests,
        visited=frozenset(),
    )
