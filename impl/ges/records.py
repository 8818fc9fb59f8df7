"""The durable records a GES storage writes about its clients and its events, as the
invariants read them [GES "Stable storages", "Epochs"].

Theory of operation
-------------------
A ``registration`` write (:class:`Registration`) holds a client's new record at a storage
after a handoff, with the profile graph's reference counts along its profile's edges; a
``release`` write (:class:`Release`) says an event left its storage, with its predicate count
then and everyone it was destined to. The node role (:mod:`gapless.impl.ges.node`) writes
them; the trace-only invariants (``gapless.invariants.ges``) judge them.

Besides the writes, a node records the messages it *drops for want of a route*
(:class:`Unrouted`) [GES "Routing events": "Nodes and links that have not been failure
suspected are the only entities that can be part of the shortest path"]: the world records a
role's refusals of what it cannot carry out as ``rejected`` records, so the node emits
``Rejected(reason=..., input=Unrouted(...))`` (:func:`unrouted`), and the invariant
``route_while_path`` judges, against the live graph the trace shows, whether a path existed.
"""

from __future__ import annotations

from typing import final

import attrs

from gapless.impl.effects import Rejected
from gapless.impl.ges.storage import ClientRecord, StorageState, StoredEvent, edge_counts

__all__ = ["Registration", "Release", "Unrouted", "release_of", "unrouted"]


@final
@attrs.frozen(kw_only=True)
class Unrouted:
    """A node dropped (or, as the message's origin, held back until its next retransmission)
    a message for want of a route: no next hop toward ``dests`` in its connectivity graph
    that avoids the links it suspects and the nodes in ``visited`` (those the message went
    through before this node; empty at its origin). ``kind`` is the message's
    :class:`~gapless.impl.ges.messages.GesWire` kind; an event's ``storage`` and ``epoch``
    name it (``""`` and -1 for other messages)."""

    dests: tuple[str, ...]
    visited: frozenset[str]
    kind: str
    storage: str = ""
    epoch: int = -1


def unrouted(
    node: str,
    dests: tuple[str, ...],
    visited: frozenset[str],
    kind: str,
    storage: str = "",
    epoch: int = -1,
) -> Rejected:
    """The effect that records an :class:`Unrouted` drop at ``node``."""
    detail = Unrouted(dests=dests, visited=visited, kind=kind, storage=storage, epoch=epoch)
    return Rejected(reason=f"GES node {node}: no route to {', '.join(dests)}", input=detail)


@final
@attrs.frozen(kw_only=True)
class Release:
    """A ``release`` record: ``epoch`` left storage ``storage`` with predicate count
    ``remaining``; ``targets`` are the clients it was destined to, ``units`` the cluster
    storages (the finer tier), ``peers`` the system storages of the other top-level units
    (the system-level links)."""

    storage: str
    epoch: int
    remaining: int
    targets: tuple[str, ...]
    units: tuple[str, ...] = ()
    peers: tuple[str, ...] = ()


@final
@attrs.frozen(kw_only=True)
class Registration:
    """A ``registration`` record: the client's new record at ``storage``; ``counts`` the
    profile graph's reference counts along its profile's edges at its new node and
    ``old_counts`` at the node it left (``(depth, count)`` pairs)."""

    storage: str
    client: str
    record: ClientRecord
    counts: tuple[tuple[int, int], ...]
    old_broker: str
    old_counts: tuple[tuple[int, int], ...]


def release_of(storage: str, ev: StoredEvent) -> Release:
    """The ``release`` record of stored event ``ev`` at ``storage``."""
    return Release(
        storage=storage,
        epoch=ev.epoch,
        remaining=ev.remaining,
        targets=tuple(sorted(ev.targets)),
        units=tuple(sorted(ev.units)),
        peers=tuple(sorted(ev.peers)),
    )


def registration_of(st: StorageState, client: str, before: Registration | None) -> Registration:
    """The ``registration`` record of ``client``'s record in ``st`` now, after ``before`` (the
    last one written, or None): the counts are those of ``st``'s graph when the write is
    asked for, so they agree with the registrations durable when it completes (a storage's
    writes complete in the order they were asked for)."""
    rec = st.clients[client]
    old = before.record if before is not None else None
    return Registration(
        storage=st.name,
        client=client,
        record=rec,
        counts=edge_counts(st, rec.profile, rec.broker),
        old_broker=old.broker if old is not None else "",
        old_counts=edge_counts(st, old.profile, old.broker) if old is not None else (),
    )
