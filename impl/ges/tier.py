"""The finer tier of stable storages: one storage per cluster under each system storage
[GES "Stable storages", "Epochs"].

Theory of operation
-------------------
The *replication granularity* (``Network.fine_of``) says which storages hold an event besides
the system storage of the top-level unit it was published in. At ``super-cluster`` granularity
there are none (one storage per super-cluster); at ``cluster`` granularity every cluster has
one, at a node inside it. The system storage ``S`` stays the one place that gives an event its
epoch; for every event it stores it also computes the *units* it is destined to — the cluster
storages of its destination nodes — and adds one per unit to the event's predicate count
(``GESPolicy.unit_count``). Once the event's ``log`` write completed, ``S`` hands each unit a
:class:`~gapless.impl.ges.messages.Replicate` with the event's epoch and retransmits it every
``retry_us`` until the unit answers ``Replicated``; the unit answers only once its own
``replica`` write of that event completed (so "confirmed" means "held durably"), and answers
again for a replica it already holds. ``S`` decrements the count once per unit
(:func:`gapless.impl.ges.storage.confirm_unit`) and, as for clients, releases the event only at
zero: after every client it was destined to and every unit it was destined to confirmed.

*Storage addition* [GES "Stable storages": a storage added later retrieves "events from a
coarser-grained storage"]: a cluster storage that boots, recovers or is added sends every
system storage a :class:`~gapless.impl.ges.messages.Retrieve`. ``S`` records it as its
cluster's storage (:func:`add_unit`: a durable ``unit`` record, so a crash of ``S`` does not
forget it), adds it to the units of every event it still stores that is destined into that
cluster, and hands it every event it has not confirmed (:func:`owed`), each with the epoch
``S`` gave it: the replica's key is ``(S, epoch)``, never a number of the cluster storage's
own, so epochs are kept across tiers [GES "Epochs"].
"""

from __future__ import annotations

import attrs
from pyrsistent import pmap

from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.policy import GESPolicy
from gapless.impl.ges.storage import StorageState, StoredEvent

__all__ = ["add_unit", "owed"]


def add_unit(st: StorageState, h: Hierarchy, unit: str, policy: GESPolicy) -> StorageState:
    """System storage ``st`` learns that ``unit`` is the storage of its cluster (see module
    doc): the same state when it knew already."""
    members = h.members(h.unit(unit, 1))
    if all(st.fine_of.get(m) == unit for m in members):
        return st
    fine_of = st.fine_of.update(pmap(dict.fromkeys(members, unit)))
    events = st.events
    for epoch, ev in sorted(st.events.items()):
        if unit in ev.units or not set(ev.dests) & set(members):
            continue
        events = events.set(
            epoch,
            attrs.evolve(
                ev,
                units=ev.units.add(unit),
                units_pending=ev.units_pending.add(unit),
                remaining=ev.remaining + policy.unit_count(1),
            ),
        )
    return attrs.evolve(st, fine_of=fine_of, events=events)


def owed(st: StorageState, unit: str) -> tuple[StoredEvent, ...]:
    """The events ``st`` stores that ``unit`` has not confirmed, in epoch order."""
    return tuple(ev for _e, ev in sorted(st.events.items()) if unit in ev.units_pending)
