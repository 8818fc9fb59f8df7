"""A client's session at the node it is attached to: recovery, then live delivery, exactly
once and in order per storage [GES "Epochs", "Recovering clients"; ``spec/ges.md``].

Theory of operation
-------------------
A session starts when a client connects; it presents, per storage, the epoch of the last
event it received from that storage (``presented``; absent for none). Until a storage has
answered the session's handoff, the session is not *ready* for it and buffers whatever that
storage's live events bring. The answer sets ``last`` — the epoch the recovery starts after —
and brings the recovery queue; from then on an event is delivered only when the policy's
``in_sequence(prev, last)`` holds (the paper's design: its predecessor for this client is the
last one delivered), so the session hands the client every event destined to it, in epoch
order, each once. An event at or below ``last`` is a duplicate: it is confirmed again (the
storage may not have heard the first confirmation) but not delivered.

:func:`offer` is pure and returns the decisions as ``(what, epoch, pubend, attributes)``
tuples, ``what`` being ``"deliver"`` (deliver and confirm) or ``"confirm"`` (confirm only);
the node role turns them into effects.
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.ges.policy import GESPolicy

__all__ = [
    "CHANGE_LIMIT",
    "Decision",
    "Session",
    "change_profile",
    "notified",
    "offer",
    "start_session",
]

CHANGE_LIMIT: Final = 1 << 16
"""Profile changes within one connection are numbered below this: a registration's unique
number, as the profile propagation orders them, is ``connection * CHANGE_LIMIT + change``."""

Decision = tuple[str, int, str, Any]
Buffered = tuple[int, str, PMap[str, Any]]


@final
@attrs.frozen(kw_only=True)
class Session:
    """A connected client (see module doc). ``buffer``: per storage, epoch -> (prev,
    pubend, attributes) of events that could not be delivered yet."""

    client: str
    profile: str
    connection: int
    presented: PMap[str, int]
    last: PMap[str, int] = attrs.field(factory=pmap)
    buffer: PMap[str, PMap[int, Buffered]] = attrs.field(factory=pmap)
    change: int = 0
    """How many times the client changed its profile within this connection."""
    answered: frozenset[str] = frozenset()
    """The storages that answered the handoff of the latest profile change within the
    connection (for the connection's own handoff, ``last`` says it: see :meth:`answered_by`)."""

    def answered_by(self, storage: str) -> bool:
        """Whether ``storage`` answered the current registration's handoff (the connection's,
        or its latest profile change's): the epoch notification from ``storage``."""
        return storage in (self.answered if self.change else self.last)

    @property
    def number(self) -> int:
        """The current registration's unique number (see :data:`CHANGE_LIMIT`)."""
        return self.connection * CHANGE_LIMIT + self.change


def start_session(client: str, profile: str, connection: int, resume: Any) -> Session:
    """A session for a client that presents ``resume``: a tuple of ``(storage, epoch)``
    pairs (anything else presents nothing)."""
    presented: dict[str, int] = {}
    if isinstance(resume, tuple):
        for item in resume:
            if (
                isinstance(item, tuple)
                and len(item) == 2
                and isinstance(item[0], str)
                and isinstance(item[1], int)
            ):
                presented[item[0]] = item[1]
    return Session(client=client, profile=profile, connection=connection, presented=pmap(presented))


def change_profile(sess: Session, profile: str) -> Session:
    """The client changes its profile to ``profile`` within its connection: a new
    registration (``change`` + 1), presented to every storage anew with, per storage, the
    last epoch delivered (or what the connection presented, where no storage answered yet);
    no storage has answered it, so the client waits again for its notification. Delivery
    goes on meanwhile: ``last`` and the buffers are kept (``spec/ges.md``, "Profile changes
    within a connection")."""
    if profile == sess.profile or sess.change + 1 >= CHANGE_LIMIT:
        return sess
    return attrs.evolve(
        sess,
        profile=profile,
        change=sess.change + 1,
        presented=sess.presented.update(sess.last),
        answered=frozenset(),
    )


def notified(sess: Session, storages: tuple[str, ...]) -> bool:
    """Whether every storage in ``storages`` has answered the session's current handoff
    (its connection's, or its latest profile change's): the client's epoch notification,
    which says at which epoch its profile (changed or not) took effect there [GES "Epochs"].
    A client that changed its profile waits for it before it may disconnect (``spec/ges.md``,
    "Profile changes")."""
    return all(sess.answered_by(s) for s in storages)


def _drain(sess: Session, storage: str, policy: GESPolicy, out: list[Decision]) -> Session:
    """Deliver buffered events of ``storage`` while the next one is in sequence."""
    buf = sess.buffer.get(storage, pmap())
    last = sess.last[storage]
    while buf:
        epoch = min(buf)
        prev, pubend, attributes = buf[epoch]
        if epoch <= last:
            out.append(("confirm", epoch, pubend, attributes))
        elif policy.in_sequence(prev, last):
            out.append(("deliver", epoch, pubend, attributes))
            last = epoch
        else:
            break
        buf = buf.remove(epoch)
    return attrs.evolve(
        sess, last=sess.last.set(storage, last), buffer=sess.buffer.set(storage, buf)
    )


def offer(
    sess: Session,
    storage: str,
    epoch: int | None,
    prev: int | None,
    pubend: str,
    attributes: PMap[str, Any],
    policy: GESPolicy,
) -> tuple[Session, tuple[Decision, ...]]:
    """Offer event ``epoch`` of ``storage`` (predecessor ``prev``) to the session, or
    (``epoch`` None) only drain its buffer; returns the session and the decisions."""
    out: list[Decision] = []
    if epoch is not None and prev is not None:
        last = sess.last.get(storage)
        if last is not None and epoch <= last:
            return sess, (("confirm", epoch, pubend, attributes),)
        buf = sess.buffer.get(storage, pmap())
        if epoch in buf:
            return sess, ()
        sess = attrs.evolve(
            sess, buffer=sess.buffer.set(storage, buf.set(epoch, (prev, pubend, attributes)))
        )
    if storage not in sess.last:
        return sess, ()
    sess = _drain(sess, storage, policy, out)
    return sess, tuple(out)
