"""System-level sequence numbers and acknowledgements between the system storages of
different top-level units [GES "Stable storages"].

Theory of operation
-------------------
The paper: a system storage keeps "the list of all known u^N destinations", and every event
it sends across the top-level gateways carries, besides its epoch, "a sequence number, which
is different from the epoch number", and "the unit u_i^N in which this event was issued", so
that the system storages of the other units "can know which unit to send the
acknowledgements (either positive or negative) to"; the sequence numbers are "used only by
the system storages to conjecture the events that they should have received from any other
system storage", never by clients or brokers. Our design of that exchange (run config
``system_links = true``; ``spec/ges.md``, "System-level sequence numbers"):

* **Numbering** (:func:`number`). When system storage ``S`` stores an event destined into
  other top-level units, it gives it, for each of their system storages ``R`` (its
  *peers*), the next sequence number of the pair ``S -> R`` (from 1, ``peer_next``): a
  number per pair, so ``R`` can tell a gap from an event that was never meant for it. The
  numbers are in the event's ``log`` record, so a crash of ``S`` rebuilds them
  (:func:`rebuild`): a number whose write did not complete was never sent (nothing about an
  event leaves ``S`` before its ``log`` write completed), and is given again.
* **Forwarding** (:func:`forwards`). Once the event is logged, ``S`` sends each peer that
  has not acknowledged it a :class:`~gapless.impl.ges.messages.SysForward` with the pair's
  number and the event's epoch, and resends it every ``retry_us`` with the event.
* **Receiving** (:func:`receive`, :func:`held`). ``R`` writes the events of a link strictly
  in sequence (a ``sysin`` record keyed by ``(S, seq)``: the copy of the event its unit
  holds); an older number (held, or being written) is answered with a cumulative positive
  acknowledgement :class:`~gapless.impl.ges.messages.SysAck` ``(upto)`` once held; a newer
  one is a gap: ``R`` drops it and answers a negative acknowledgement
  :class:`~gapless.impl.ges.messages.SysNack` ``(want)``, once per gap (the retransmission
  timer covers a lost one).
* **Counting** (:func:`acked`). Each peer adds one to the event's predicate count
  (``GESPolicy.peer_count``), decremented once when the peer's acknowledgement covers the
  event's number: ``S`` releases an event only after every client, every cluster storage and
  every peer it was destined to confirmed it. On a negative acknowledgement ``S`` resends at
  once every event the peer lacks from the wanted number on (:func:`resend`).

Epochs, ``prev`` chains and the delivery to clients stay the origin's (the events are still
routed to their destination nodes from ``S``), so the exactly-once argument of ``spec/ges.md``
is untouched; what the links add is that every peer holds, durably, exactly the sequence
``1, 2, 3, ...`` of events ``S`` destined into its unit — no gap, no duplicate — before ``S``
forgets any of them. The invariant ``system_sequence`` judges it from the ``sysin`` writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs
from pyrsistent import pmap, pset

from gapless.impl.ges.messages import SysAck, SysForward, SysNack
from gapless.impl.ges.policy import GESPolicy
from gapless.impl.ges.storage import StorageState, StoredEvent, confirm_peer

__all__ = ["acked", "forwards", "held", "number", "rebuild", "receive", "resend"]


def number(
    st: StorageState, ev: StoredEvent, storage_of: Mapping[str, str], policy: GESPolicy
) -> tuple[StorageState, StoredEvent]:
    """Give stored event ``ev`` its sequence number for every peer it is destined into (see
    module doc); the same state and event when it has none (or was not stored)."""
    if not ev.targets or ev.epoch not in st.events:
        return st, ev
    peers = sorted({storage_of[d] for d in ev.dests if d in storage_of} - {st.name})
    if not peers:
        return st, ev
    numbers = {p: st.peer_next.get(p, 1) for p in peers}
    ev = attrs.evolve(
        ev,
        peers=pmap(numbers),
        peers_pending=pset(peers),
        remaining=ev.remaining + policy.peer_count(len(peers)),
    )
    peer_next = st.peer_next.update(pmap({p: n + 1 for p, n in numbers.items()}))
    return attrs.evolve(st, events=st.events.set(ev.epoch, ev), peer_next=peer_next), ev


def forwards(origin: str, ev: StoredEvent, only: str = "") -> tuple[SysForward, ...]:
    """The ``SysForward`` of ``ev`` to every peer that has not acknowledged it (``only``:
    to that one alone)."""
    return tuple(
        SysForward(
            storage=p,
            origin=origin,
            seq=ev.peers[p],
            epoch=ev.epoch,
            pubend=ev.pubend,
            attributes=ev.attributes,
        )
        for p in sorted(ev.peers_pending)
        if not only or p == only
    )


def receive(
    st: StorageState, f: SysForward, policy: GESPolicy
) -> tuple[StorageState, SysAck | SysNack | None, bool]:
    """Peer storage ``st`` gets ``f``: its new state, the answer to send now (if any) and
    whether to write ``f`` (its acknowledgement then waits for the write, :func:`held`)."""
    expect = st.sys_expect.get(f.origin, 1)
    verdict = policy.sys_verdict(f.seq, expect)
    if verdict == "write":
        expect = max(expect, f.seq + 1)
        return attrs.evolve(st, sys_expect=st.sys_expect.set(f.origin, expect)), None, True
    if verdict == "old":
        upto = st.sys_held.get(f.origin, 0)
        if f.seq > upto:
            return st, None, False  # being written: acknowledged once it is durable
        return st, SysAck(storage=f.origin, unit=st.name, upto=upto), False
    if st.sys_nacked.get(f.origin) == expect:
        return st, None, False
    nack = SysNack(storage=f.origin, unit=st.name, want=expect)
    return attrs.evolve(st, sys_nacked=st.sys_nacked.set(f.origin, expect)), nack, False


def held(st: StorageState, f: SysForward) -> tuple[StorageState, SysAck]:
    """``f``'s ``sysin`` write completed: acknowledge everything held from its origin."""
    upto = max(st.sys_held.get(f.origin, 0), f.seq)
    st = attrs.evolve(st, sys_held=st.sys_held.set(f.origin, upto))
    return st, SysAck(storage=f.origin, unit=st.name, upto=upto)


def acked(
    st: StorageState, ack: SysAck, policy: GESPolicy
) -> tuple[StorageState, tuple[StoredEvent, ...]]:
    """Peer ``ack.unit`` holds every number up to ``ack.upto``: one decrement per event it
    covers that the peer had not acknowledged; the events released."""
    gone: list[StoredEvent] = []
    for epoch, ev in sorted(st.events.items()):
        if ack.unit in ev.peers_pending and ev.peers[ack.unit] <= ack.upto:
            st, out = confirm_peer(st, epoch, ack.unit, policy)
            if out is not None:
                gone.append(out)
    return st, tuple(gone)


def resend(st: StorageState, nack: SysNack) -> tuple[StoredEvent, ...]:
    """The events peer ``nack.unit`` lacks from number ``nack.want`` on, in sequence."""
    return tuple(
        ev
        for _e, ev in sorted(st.events.items())
        if nack.unit in ev.peers_pending and ev.peers[nack.unit] >= nack.want
    )


def rebuild(
    st: StorageState, logs: Iterable[StoredEvent], sysin: Iterable[tuple[str, int]]
) -> StorageState:
    """After a crash: the next number per peer from the completed ``log`` writes, and per
    origin what is held from the completed ``sysin`` writes ``(origin, seq)``."""
    peer_next: dict[str, int] = {}
    for ev in logs:
        for p, n in ev.peers.items():
            peer_next[p] = max(peer_next.get(p, 1), n + 1)
    got: dict[str, int] = {}
    for origin, seq in sysin:
        got[origin] = max(got.get(origin, 0), seq)
    expect = {o: n + 1 for o, n in got.items()}
    return attrs.evolve(
        st,
        peer_next=pmap(peer_next),
        sys_held=pmap(got),
        sys_expect=pmap(expect),
        sys_nacked=pmap(),
    )
