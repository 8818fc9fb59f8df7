"""Trace records of durable subscriptions [DUR §2-4]: what a run shows of the protocol.

Theory of operation
-------------------
The durable invariants (``gapless.invariants.durable``) judge a run from these records alone,
never from a role's state (DESIGN.md). The simulator binding emits each as a
:class:`~gapless.impl.trace.TraceRecord` whose ``kind`` is the key of :data:`DURABLE_RECORDS`
and whose ``detail`` is the value class below; ``node`` is where it happened (the SHB, the
node that sent a report, the pubend's host).

* ``dur_event`` -- pubend ``p`` assigned tick ``t`` to an event with ``attributes`` (logged
  once, at the PHB [DUR §1 item 1]);
* ``dur_join`` / ``dur_leave`` -- a durable subscription is created with filter ``filter`` and
  starting CT [DUR §2, §4.1] / removed for good;
* ``dur_connect`` / ``dur_disconnect`` -- a subscriber (re)connects presenting a CT, in catchup
  for the pubends ``catchup`` [DUR §3-4.1] / disconnects; ``dur_switchover`` -- its catchup
  stream for a pubend reached latestDelivered and was removed [DUR §4.1];
* ``dur_message`` -- an event, silence or gap message delivered to a subscriber [DUR §2];
* ``dur_ack`` -- an SHB received a subscriber's CT as an acknowledgement [DUR §2];
* ``dur_report`` -- a node sent ``(released, delivered)`` upstream [DUR §3]
  (:class:`~gapless.impl.durable.release.ReleaseReport`);
* ``dur_release`` -- the pubend's L step: ticks ``[0, through]`` are L, with the ``Tr``, ``Td``,
  ``T`` and ``maxRetain`` it decided by [DUR §3];
* ``dur_crash`` -- an SHB crashed; its subscribers are disconnected [DUR §4.1, §5.3].
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.messages import SubscriberMessage
from gapless.impl.durable.release import ReleaseReport
from gapless.impl.trace import as_pmap

__all__ = [
    "DURABLE_RECORDS",
    "DurAck",
    "DurConnect",
    "DurCrash",
    "DurDisconnect",
    "DurEvent",
    "DurJoin",
    "DurLeave",
    "DurMessage",
    "DurRelease",
    "DurSwitchover",
]


@final
@attrs.frozen(kw_only=True)
class DurEvent:
    """Pubend ``pubend`` assigned ``tick`` to an event with ``attributes``."""

    pubend: str
    tick: int
    attributes: PMap[str, Any] = attrs.field(factory=pmap, converter=as_pmap)


@final
@attrs.frozen(kw_only=True)
class DurJoin:
    """A new durable subscription at ``shb`` with ``filter``, starting at ``ct``."""

    subscriber: str
    shb: str
    filter: str
    ct: CheckpointToken


@final
@attrs.frozen(kw_only=True)
class DurLeave:
    """The durable subscription ``subscriber`` is removed for good."""

    subscriber: str


@final
@attrs.frozen(kw_only=True)
class DurConnect:
    """``subscriber`` reconnected at ``shb`` presenting ``ct``; in catchup for ``catchup``."""

    subscriber: str
    shb: str
    ct: CheckpointToken
    catchup: frozenset[str] = frozenset()


@final
@attrs.frozen(kw_only=True)
class DurDisconnect:
    """``subscriber`` disconnected from ``shb``."""

    subscriber: str
    shb: str


@final
@attrs.frozen(kw_only=True)
class DurSwitchover:
    """``subscriber``'s catchup stream for ``pubend`` ended; the constream serves it now."""

    subscriber: str
    pubend: str


@final
@attrs.frozen(kw_only=True)
class DurMessage:
    """``message`` was delivered to ``subscriber`` by ``shb``."""

    subscriber: str
    shb: str
    message: SubscriberMessage


@final
@attrs.frozen(kw_only=True)
class DurAck:
    """``shb`` received ``subscriber``'s CT ``ct`` as an acknowledgement."""

    subscriber: str
    shb: str
    ct: CheckpointToken


@final
@attrs.frozen(kw_only=True)
class DurRelease:
    """Pubend ``pubend`` made ``[0, through]`` L, by ``tr``, ``td``, ``clock`` (T(p)) and
    ``max_retain`` (None: infinite)."""

    pubend: str
    through: int
    tr: int
    td: int
    clock: int
    max_retain: int | None = None


@final
@attrs.frozen(kw_only=True)
class DurCrash:
    """SHB ``shb`` crashed."""

    shb: str


DURABLE_RECORDS: Final[dict[str, type]] = {
    "dur_event": DurEvent,
    "dur_join": DurJoin,
    "dur_leave": DurLeave,
    "dur_connect": DurConnect,
    "dur_disconnect": DurDisconnect,
    "dur_switchover": DurSwitchover,
    "dur_message": DurMessage,
    "dur_ack": DurAck,
    "dur_report": ReleaseReport,
    "dur_release": DurRelease,
    "dur_crash": DurCrash,
}
"""Record kind -> detail class."""
