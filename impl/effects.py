"""Effects: the commands a pure role returns instead of doing I/O (STYLE.md, "State machines").

Every handler of every role has the shape ``on_<input>(state, input, now) -> (state, effects)``
where ``effects`` is a tuple of the frozen values below. The world (``gapless.models``) carries
them out: it sends messages over simulated links, arms timers, hands deliveries to
subscribers and writes stable storage. An ignored input returns the *same* state object and
``()``.

Effects are plain data so that a trace can record them, the invariants can judge them
(they never read a role's internal state), and a run can be replayed from its seed.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Final, final

import attrs

from gapless.impl.errors import ProtocolMisuse

__all__ = [
    "DELIVER_KINDS",
    "CancelTimer",
    "Deliver",
    "DeliverCohort",
    "Effect",
    "Persist",
    "Rejected",
    "Send",
    "SetTimer",
    "deliveries",
]


@final
@attrs.frozen(kw_only=True)
class Send:
    """Send ``msg`` to the neighbouring node ``to`` over the link between them."""

    to: str
    msg: Any


@final
@attrs.frozen(kw_only=True)
class SetTimer:
    """Arm (or re-arm) the timer ``key`` of this node to fire at virtual time ``at`` (µs).
    Re-arming a key replaces the earlier deadline."""

    key: Hashable
    at: int


@final
@attrs.frozen(kw_only=True)
class CancelTimer:
    """Disarm the timer ``key`` of this node (no effect if it is not armed)."""

    key: Hashable


DELIVER_KINDS: Final = ("event", "silence", "gap")
"""What a delivery hands a subscriber: an ``event`` (a published message), a ``silence`` (no
matching event in the range up to ``tick``) or a ``gap`` (the range up to ``tick`` is lost
to this subscriber) — durable subscriptions' three message kinds [DUR §2]. Guaranteed
delivery only delivers events."""


def _deliver_kind(_inst: Any, _attr: Any, value: str) -> None:
    if value not in DELIVER_KINDS:
        raise ProtocolMisuse(
            f"Deliver: kind {value!r} is unknown; allowed: {', '.join(DELIVER_KINDS)}"
        )


@final
@attrs.frozen(kw_only=True)
class Deliver:
    """Hand a message to a subscriber [GD §2.3]: ``subscriber`` receives, on connection
    ``connection``, the message published by ``pubend`` at ``tick`` with ``payload``
    (``kind="event"``), or a silence or gap message covering the ticks up to ``tick``
    (``kind`` ``"silence"`` / ``"gap"``, see :data:`DELIVER_KINDS` [DUR §2])."""

    subscriber: str
    pubend: str
    tick: int
    payload: Any
    connection: int = 0
    kind: str = attrs.field(default="event", validator=_deliver_kind)


@final
@attrs.frozen(kw_only=True)
class DeliverCohort:
    """Hand one data message to a cohort of subscribers at once [GD §2.3, §4.1]: each
    ``(subscriber, connection)`` of ``to`` (two or more, in the order the SHB matched them)
    receives the message published by ``pubend`` at ``tick`` with ``payload``. It means
    exactly the ``Deliver`` effects of :meth:`deliveries`; an SHB emits it so the cost of
    handing a message to many subscribers is one effect, not one per subscriber."""

    pubend: str
    tick: int
    payload: Any
    to: tuple[tuple[str, int], ...]

    def deliveries(self) -> tuple[Deliver, ...]:
        """The cohort as one ``Deliver`` per subscriber, in order."""
        return tuple(
            Deliver(
                subscriber=sub,
                pubend=self.pubend,
                tick=self.tick,
                payload=self.payload,
                connection=conn,
            )
            for sub, conn in self.to
        )


@final
@attrs.frozen(kw_only=True)
class Persist:
    """Write ``value`` under ``key`` to this node's stable storage; it survives a crash.
    The write completes ``delay`` µs later (the modelled logging delay [GD §4.1]); the world
    then feeds the node a completion input."""

    key: Hashable
    value: Any
    delay: int = 0


@final
@attrs.frozen(kw_only=True)
class Rejected:
    """A malformed or unexpected *network* input, recorded instead of raised (STYLE.md)."""

    reason: str
    input: Any = None


def deliveries(effect: Deliver | DeliverCohort) -> tuple[Deliver, ...]:
    """A ``Deliver`` as itself, a ``DeliverCohort`` as its ``Deliver`` effects (for readers of
    ``deliver`` trace records)."""
    if isinstance(effect, DeliverCohort):
        return effect.deliveries()
    return (effect,)


Effect = Send | SetTimer | CancelTimer | Deliver | DeliverCohort | Persist | Rejected
