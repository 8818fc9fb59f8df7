"""Inputs: what the world feeds a role (the other half of the sans-IO contract).

A role exposes ``on_<input>(state, input, now) -> (state, effects)`` handlers and a
dispatcher ``handle(state, input, now)`` that picks the handler by the input's type. The
world (``gapless.models``) only ever calls ``handle`` and ``crash``. Times are virtual
microseconds (the tick unit, see ``spec/lattices.md``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, final

import attrs
from pyrsistent import PMap, pmap

__all__ = [
    "Connect",
    "Disconnect",
    "Input",
    "LinkChanged",
    "Persisted",
    "Publish",
    "Receive",
    "Restart",
    "TimerFired",
]


@final
@attrs.frozen(kw_only=True)
class Receive:
    """A message ``msg`` arrived from neighbour ``sender``."""

    sender: str
    msg: Any


@final
@attrs.frozen(kw_only=True)
class TimerFired:
    """The timer ``key`` this node armed with ``SetTimer`` has fired."""

    key: Hashable


@final
@attrs.frozen(kw_only=True)
class Persisted:
    """The stable-storage write ``key`` this node asked for with ``Persist`` completed."""

    key: Hashable


@final
@attrs.frozen(kw_only=True)
class LinkChanged:
    """The link to ``neighbour`` went up (``up=True``) or down; also periodic link status."""

    neighbour: str
    up: bool


def as_pmap(value: Any) -> PMap[str, Any]:
    """``value`` as a ``PMap``: itself when it already is one (``pmap`` would copy it, and the
    copy would be a second object to encode in every trace record that shows the message)."""
    return value if isinstance(value, PMap) else pmap(value)


@final
@attrs.frozen(kw_only=True)
class Publish:
    """A publishing client hands ``pubend`` a message with ``attributes`` and ``size`` bytes."""

    pubend: str
    attributes: PMap[str, Any] = attrs.field(factory=pmap, converter=as_pmap)
    size: int = 100


@final
@attrs.frozen(kw_only=True)
class Connect:
    """Subscriber ``subscriber`` connects with the filter expression ``filter`` (connection
    number ``connection``; a reconnect is a new connection [GD §2.3]). ``resume`` is the
    token a reconnecting subscriber presents to resume where it left off — durable
    subscriptions' checkpoint token CT(s) [DUR §2]; ``None`` for a new subscriber or a
    protocol without resumption (guaranteed delivery ignores it)."""

    subscriber: str
    filter: str
    connection: int = 0
    resume: Any = None


@final
@attrs.frozen(kw_only=True)
class Disconnect:
    """Subscriber ``subscriber`` disconnects."""

    subscriber: str


@final
@attrs.frozen(kw_only=True)
class Restart:
    """The node restarts after a crash: soft state was lost, stable storage kept."""


Input = Receive | TimerFired | Persisted | LinkChanged | Publish | Connect | Disconnect | Restart
