"""What goes in and out of the durable SHB (:mod:`gapless.impl.durable.shb`) [DUR §2-4]:
its inputs from subscribers, from upstream and from its timer, and :class:`Emit`, the effect
carrying a ``dur_*`` trace record. Plain frozen values; the role's rules live in ``shb``."""

from __future__ import annotations

from typing import Any, final

import attrs

from gapless.impl.durable.ct import CheckpointToken

__all__ = [
    "Ack",
    "CheckpointAnswer",
    "CheckpointQuery",
    "Emit",
    "Lost",
    "MoveIn",
    "Subscribe",
    "Tick",
    "Unregister",
    "Unregistered",
    "Unsubscribe",
]


@final
@attrs.frozen(kw_only=True)
class Subscribe:
    """A new durable subscriber ``subscriber`` with content filter ``filter`` connects; it
    starts at ``latestDelivered(p)`` for every pubend [DUR §2, §4.1]."""

    subscriber: str
    filter: str
    connection: int = 0


@final
@attrs.frozen(kw_only=True)
class Unsubscribe:
    """Durable subscriber ``subscriber`` ends its subscription: it leaves the release
    computation [DUR §3], the PFS stops naming it, its CT is no longer accepted."""

    subscriber: str


@final
@attrs.frozen(kw_only=True)
class MoveIn:
    """Reconnect-anywhere [DUR §1 item 5]: durable subscriber ``subscriber`` (filter
    ``filter``), registered at SHB ``previous``, connects here presenting ``ct``
    (``spec/durable.md``, "Reconnect-anywhere"). In ack mode ``SHB`` it presents none
    (``ct`` None): its CT is in ``previous``'s database [DUR §5.2], and this SHB asks for it
    (:class:`CheckpointQuery`)."""

    subscriber: str
    filter: str
    previous: str
    ct: CheckpointToken | None
    connection: int = 0
    #: how many times this subscriber has moved, this move included: the subscriber counts
    #: its own moves, so that a late :class:`Unregister` from an earlier move is told apart
    generation: int = 1


@final
@attrs.frozen(kw_only=True)
class Unregister:
    """From SHB ``by``, where ``subscriber`` moved (its move number ``generation``): its record
    there is active, so this SHB drops its own, if older (step 4 of reconnect-anywhere)."""

    subscriber: str
    by: str
    generation: int = 1


@final
@attrs.frozen(kw_only=True)
class CheckpointQuery:
    """From SHB ``by``, where ``subscriber`` moved (its move number ``generation``) in ack
    mode ``SHB``: which CT does this SHB keep of it? [DUR §5.2] (``spec/durable.md``,
    "Moves in the second acknowledgement mode")."""

    subscriber: str
    by: str
    generation: int = 1


@final
@attrs.frozen(kw_only=True)
class CheckpointAnswer:
    """The answer to :class:`CheckpointQuery` for move ``generation``: ``ct``, the CT SHB
    ``shb`` keeps of ``subscriber`` (committed: its ``released(s, p)`` for every pubend)."""

    subscriber: str
    shb: str
    ct: CheckpointToken
    generation: int = 1


@final
@attrs.frozen(kw_only=True)
class Unregistered:
    """The answer to :class:`Unregister`: ``subscriber``'s record is gone from ``shb``."""

    subscriber: str
    shb: str


@final
@attrs.frozen(kw_only=True)
class Ack:
    """``subscriber`` acknowledges ``ct``: it consumed every message it covers [DUR §2]."""

    subscriber: str
    ct: CheckpointToken


@final
@attrs.frozen(kw_only=True)
class Lost:
    """From upstream: ticks ``[start, end]`` of ``pubend`` are L (released) [DUR §3]."""

    pubend: str
    start: int
    end: int


@final
@attrs.frozen(kw_only=True)
class Tick:
    """The SHB's periodic timer: report release pairs, retry nacks."""


@final
@attrs.frozen(kw_only=True)
class Emit:
    """An observable fact: the ``dur_*`` record ``kind`` with ``detail`` (a value class of
    :mod:`gapless.impl.durable.records`). A ``dur_message`` is the delivery itself."""

    kind: str
    detail: Any
