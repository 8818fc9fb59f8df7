"""What an SHB delivers to a durable subscriber: event, silence and gap messages [DUR §2].

For pubend ``p`` each message ``m`` carries a timestamp ``m.t``; ``t0`` is the timestamp of the
message from ``p`` delivered just before it, or ``CT(s, p)`` for the first one after a
(re)connection. Each kind *guarantees* something about the interval ``(t0, m.t]``:

* :class:`EventMessage` -- an event at ``m.t`` matching the subscription, and no matching event
  in ``(t0, m.t)``;
* :class:`SilenceMessage` -- no matching event in ``(t0, m.t]``;
* :class:`GapMessage` -- information about ``(t0, m.t]`` was discarded by release (every tick
  of it is L at the pubend): matching events there may have been lost [DUR §2, §3].

Each message names its ``t0`` so that a trace judge can check the guarantee without replaying
the subscriber's history. After consuming ``m`` the subscriber may set ``CT(s, p) = m.t``.

>>> m = SilenceMessage(pubend="p1", t0=10, t=20)
>>> m.covers(), m.advances_to()
((11, 20), 20)
>>> GapMessage(pubend="p1", t0=3, t=3)
Traceback (most recent call last):
...
gapless.impl.errors.InvalidRange: GapMessage: t0=3 must be below t=3 ((t0, t] is empty)
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, final

import attrs

from gapless.impl.errors import InvalidRange, InvalidTick

__all__ = ["EventMessage", "GapMessage", "SilenceMessage", "SubscriberMessage"]


def _validate(cls: str, pubend: object, t0: object, t: object) -> None:
    if not isinstance(pubend, str) or not pubend:
        raise InvalidTick(f"{cls}: pubend {pubend!r}; allowed: a non-empty str")
    for name, v in (("t0", t0), ("t", t)):
        if type(v) is not int or v < -1:
            raise InvalidTick(f"{cls}: {name}={v!r}; allowed: an int >= -1")
    if t0 >= t:  # type: ignore[operator]  # both are ints: checked just above
        raise InvalidRange(f"{cls}: t0={t0} must be below t={t} ((t0, t] is empty)")


class _Interval:
    """The ``(t0, t]`` interval every subscriber message speaks about."""

    __slots__ = ()
    t0: int
    t: int

    def covers(self) -> tuple[int, int]:
        """``(t0, t]`` as the inclusive tick range ``(t0 + 1, t)``."""
        return self.t0 + 1, self.t

    def advances_to(self) -> int:
        """The ``CT(s, p)`` a subscriber may record once it consumed this message."""
        return self.t


@final
@attrs.frozen(kw_only=True)
class EventMessage(_Interval):
    """An event at ``t`` matching the subscription; nothing matching in ``(t0, t)``."""

    pubend: str
    t0: int
    t: int
    payload: Hashable
    attributes: Any = None

    def __attrs_post_init__(self) -> None:
        _validate("EventMessage", self.pubend, self.t0, self.t)


@final
@attrs.frozen(kw_only=True)
class SilenceMessage(_Interval):
    """No event matching the subscription in ``(t0, t]``."""

    pubend: str
    t0: int
    t: int

    def __attrs_post_init__(self) -> None:
        _validate("SilenceMessage", self.pubend, self.t0, self.t)


@final
@attrs.frozen(kw_only=True)
class GapMessage(_Interval):
    """``(t0, t]`` was released (L) before this subscriber received it: matching events there
    may be lost [DUR §2]. Only a subscriber in catchup ever receives one [DUR §3, §4.1]."""

    pubend: str
    t0: int
    t: int

    def __attrs_post_init__(self) -> None:
        _validate("GapMessage", self.pubend, self.t0, self.t)


SubscriberMessage = EventMessage | SilenceMessage | GapMessage
