"""Arrival notifications: the message a joining broker sends its Δ-neighbourhood, and what
a broker that knows of joins tells a broker it activates a session to [DFT §I, §II].

Theory of operation
-------------------
"As part of the join operation, a newcoming broker obtains knowledge of its neighbors within
distance Δ = δ + 1 in the primary tree and notifies them of its arrival" [DFT §I]. Our roles
read primary paths from the tree every broker holds (``spec/dft.md``, "Modelling
decisions"), so a join during a run must reach the tree of every broker that may route a
message concerning the newcomer. :class:`Arrival` carries the joins a broker knows of that
happened during the run (``BrokerState.arrivals``: ``(broker, attach_to)`` in join order),
each naming a primary link to a broker already in the tree. It travels:

* from the newcomer to every broker of its Δ-neighbourhood, at its start (:func:`announce`);
* from a broker that learned of new joins to its established sessions
  (:mod:`gapless.impl.dft.joins`), like partition information [DFT §IV];
* on every newly established session, and ahead of every partial recovery's ``SyncStart``
  (:func:`tell`), so a broker that was unreachable when the news passed (crashed, or behind
  a failed link) learns it before any message that names the newcomer can reach it over
  that session (FIFO sessions [DFT §II]).

This module holds only the message and the senders: it is imported by
:mod:`gapless.impl.dft.recovery`, below the handler.
"""

from __future__ import annotations

from typing import final

import attrs

from gapless.impl.dft.state import BrokerState
from gapless.impl.effects import Effect, Send

__all__ = ["Arrival", "announce", "tell"]


@final
@attrs.frozen(kw_only=True)
class Arrival:
    """Joins during the run, ``(broker, attach_to)`` in join order [DFT §I]: each attaches
    to a broker of the tree as extended by the joins before it."""

    joins: tuple[tuple[str, str], ...]


def tell(state: BrokerState, x: str) -> tuple[Effect, ...]:
    """The joins this broker knows of, for ``x`` (nothing when there were none)."""
    if not state.arrivals:
        return ()
    return (Send(to=x, msg=Arrival(joins=tuple(state.arrivals))),)


def announce(state: BrokerState) -> tuple[Effect, ...]:
    """A broker that joined during the run notifies its Δ-neighbourhood of its arrival
    [DFT §I] (at every start: the notification is idempotent)."""
    if not any(b == state.me for b, _ in state.arrivals):
        return ()
    msg = Arrival(joins=tuple(state.arrivals))
    return tuple(Send(to=x, msg=msg) for x in sorted(state.hood))
