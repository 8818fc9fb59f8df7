"""The durable records a GES storage writes about its clients and its events, as the
invariants read them [GES "Stable storages", "Epochs"].

Theory of operation
-------------------
A ``registration`` write (:class:`Registration`) holds a client's new record at a storage
after a handoff, with the profile graph's reference counts along its profile's edges; a
``release`` write (:class:`Release`) says an event left its storage, with its predicate count
then and everyone it was destined to. The node role (:mod:`gapless.impl.ges.node`) writes
them; the trace-only invariants (``gapless.invariants.ges``) judge them.
"""

from __future__ import annotations

from typing import final

import attrs

from gapless.impl.ges.storage import ClientRecord, StoredEvent

__all__ = ["Registration", "Release", "release_of"]


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
