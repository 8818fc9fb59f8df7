"""What a ZeroMQ forwarding trace records: the header and the record details.

A trace is the kit's ``TraceRecord(seq, time, node, kind, detail)`` sequence with these kinds
and details (the invariants in ``gapless.invariants.zmq`` judge nothing else):

* ``"send"`` / ``"receive"`` — :class:`WireSent` / :class:`WireReceived` with the message's
  :class:`~gapless.impl.zmq.messages.ZmqWire` summary;
* ``"subscribe"`` — :class:`AppChange`: a SUB's or XSUB's application (un)subscribed;
* ``"publish"`` — :class:`Posted`: a publisher's application published its ``seq``-th message;
* ``"deliver"`` — ``gapless.impl.effects.Deliver`` at a SUB or XSUB;
* ``"notify"`` — ``Notify`` at an XPUB endpoint;
* ``"link"`` — :class:`LinkEvent`: an edge came up or went down (a new connection lifetime
  starts at each up);
* ``"fault"`` — ``gapless.impl.trace.Fault`` (``"restart"`` of a device).

The header (:class:`ZmqTopology`) names the edges (upstream, downstream, uni-directional or
not), which nodes are subscribers (and whether they filter), publishers and devices, and the
aggregation policy in force, since minimal traffic and consistency are judged with the
paper's stated exceptions [ZMQ "Subscription Forwarding and Uni-directional Transports",
"Issues"].
"""

from __future__ import annotations

from typing import Final, final

import attrs

from gapless.impl.zmq.messages import PREFIX, ZmqWire

__all__ = [
    "ZMQ_RECORD_KINDS",
    "AppChange",
    "Edge",
    "LinkEvent",
    "Posted",
    "WireReceived",
    "WireSent",
    "ZmqTopology",
]

ZMQ_RECORD_KINDS: Final = frozenset(
    {"send", "receive", "subscribe", "publish", "deliver", "notify", "link", "fault", "rejected"}
)


@final
@attrs.frozen(kw_only=True)
class Edge:
    """A connection from ``up`` (an XPUB side) to ``down`` (a SUB/XSUB side)."""

    up: str
    down: str
    multicast: bool = False


@final
@attrs.frozen(kw_only=True)
class ZmqTopology:
    """The trace header: ``edges``; ``subscribers`` (SUB or XSUB endpoints; the XSUBs,
    which do not filter, also in ``unfiltered``), ``publishers``, ``devices``; and the
    devices' policy: ``subsumption`` and ``fallback_limit``. ``observed`` names the nodes
    whose arriving subscription messages the trace records (None: every node; a trace of
    real libzmq sees only its publisher's); ``hosted`` says subscribers live inside the
    device they connect to, so what they send it is on no wire and is not judged."""

    edges: tuple[Edge, ...]
    subscribers: tuple[str, ...]
    publishers: tuple[str, ...]
    devices: tuple[str, ...] = ()
    unfiltered: tuple[str, ...] = ()
    observed: tuple[str, ...] | None = None
    hosted: bool = False
    subsumption: bool = False
    fallback_limit: int | None = None

    def children(self, node: str) -> tuple[Edge, ...]:
        """The edges below ``node``."""
        return tuple(e for e in self.edges if e.up == node)

    def edge(self, up: str, down: str) -> Edge | None:
        """The edge ``up -> down``, if there is one."""
        for e in self.edges:
            if e.up == up and e.down == down:
                return e
        return None


@final
@attrs.frozen(kw_only=True)
class WireSent:
    """The record's node sent a message to ``to``."""

    to: str
    wire: ZmqWire


@final
@attrs.frozen(kw_only=True)
class WireReceived:
    """A message from ``sender`` reached the record's node."""

    sender: str
    wire: ZmqWire


@final
@attrs.frozen(kw_only=True)
class AppChange:
    """The record node's application subscribed (``subscribe``) or unsubscribed."""

    subscribe: bool
    topic: bytes
    kind: str = PREFIX


@final
@attrs.frozen(kw_only=True)
class Posted:
    """The record node's application published its ``seq``-th message, ``payload``."""

    seq: int
    payload: bytes


@final
@attrs.frozen(kw_only=True)
class LinkEvent:
    """The edge ``up -> down`` came up or went down."""

    up_node: str
    down_node: str
    up: bool
