"""What ZeroMQ PUB/SUB nodes say to each other and to their applications.

Wire messages [ZMQ "Subscription Forwarding"]: a subscription message is one byte, 1 to
subscribe and 0 to unsubscribe, followed by the prefix (:class:`Subscription`, with
:meth:`Subscription.encode` / :func:`decode` for the real bytes); data flows the other way
(:class:`Data`). A subscription of another matching kind than ``"prefix"`` (a suffix, a
regular expression... [ZMQ "Different Matching Algorithms"]) has no libzmq encoding; it travels
as a value with its ``kind``, and a node that does not know the kind treats it as "send me
everything".

Application inputs (the other half of a socket's API): :class:`Subscribe` /
:class:`Unsubscribe` (a SUB's ``setsockopt``, an XSUB's sent subscription message),
:class:`Post` (a PUB's ``send``), :class:`Install` (a manual-mode XPUB's application installing a
subscription for the peer it came from). The world tells a node a peer connected or went away
with ``gapless.impl.inputs.LinkChanged`` and hands it messages with ``Receive``.

Application outputs: ``gapless.impl.effects.Deliver`` (a SUB or XSUB hands its application a
data message: ``pubend`` = origin, ``tick`` = the origin's sequence number, ``payload`` = the
bytes, ``connection`` = the lifetime of the link it came over) and :class:`Notify` (an XPUB
hands its application a subscription message).

:class:`ZmqWire` is the protocol's wire summary, what a trace records of a message on the wire.

>>> Subscription(subscribe=True, topic=b"AB").encode()
b'\\x01AB'
>>> decode(b"\\x00AB")
Subscription(subscribe=False, topic=b'AB', kind='prefix')
>>> decode(b"\\x07x") is None
True
"""

from __future__ import annotations

from typing import Final, final

import attrs

from gapless.impl.effects import Effect

__all__ = [
    "PREFIX",
    "Data",
    "Install",
    "Notify",
    "Post",
    "Subscribe",
    "Subscription",
    "Unsubscribe",
    "ZmqEffect",
    "ZmqMessage",
    "ZmqWire",
    "decode",
    "wire",
]

PREFIX: Final = "prefix"
"""The matching kind every ZeroMQ node knows."""


@final
@attrs.frozen(kw_only=True)
class Subscription:
    """A (un)subscription travelling upstream [ZMQ "Subscription Forwarding"]."""

    subscribe: bool
    topic: bytes
    kind: str = PREFIX

    def encode(self) -> bytes:
        """libzmq's bytes: ``\\x01`` or ``\\x00`` then the prefix (prefix kind only)."""
        return bytes((1 if self.subscribe else 0,)) + self.topic

    @property
    def key(self) -> tuple[str, bytes]:
        """What the subscription is about, whichever its direction: ``(kind, topic)``."""
        return (self.kind, self.topic)


def decode(raw: bytes) -> Subscription | None:
    """The subscription message ``raw`` is, or None when it is not one (libzmq's test)."""
    if raw and raw[0] in (0, 1):
        return Subscription(subscribe=raw[0] == 1, topic=raw[1:])
    return None


@final
@attrs.frozen(kw_only=True)
class Data:
    """A published message travelling downstream: the ``seq``-th of publisher ``origin``;
    ``welcome`` marks an XPUB's welcome message to one new peer."""

    origin: str
    seq: int
    payload: bytes
    welcome: bool = False


ZmqMessage = Subscription | Data


@final
@attrs.frozen(kw_only=True)
class Subscribe:
    """The application subscribes to ``topic`` (of matching ``kind``)."""

    topic: bytes
    kind: str = PREFIX


@final
@attrs.frozen(kw_only=True)
class Unsubscribe:
    """The application unsubscribes from ``topic`` (of matching ``kind``)."""

    topic: bytes
    kind: str = PREFIX


@final
@attrs.frozen(kw_only=True)
class Post:
    """The application of a PUB or XPUB publishes ``payload`` (as its ``seq``-th message
    when given, e.g. by a workload that numbers messages across restarts; else the next)."""

    payload: bytes
    seq: int | None = None


@final
@attrs.frozen(kw_only=True)
class Install:
    """A manual-mode XPUB's application installs (or removes) ``topic`` for ``peer``."""

    peer: str
    topic: bytes
    subscribe: bool = True


@final
@attrs.frozen(kw_only=True)
class Notify:
    """An XPUB hands its application the subscription message ``message`` (from ``peer``)."""

    peer: str
    message: Subscription


ZmqEffect = Effect | Notify
"""What a ZeroMQ role returns: the kit's effects and :class:`Notify`."""


@final
@attrs.frozen(kw_only=True)
class ZmqWire:
    """A message on the wire as a trace records it: ``kind`` is ``"subscribe"``,
    ``"unsubscribe"`` or ``"data"``; ``topic``/``match`` for a subscription; ``origin``,
    ``seq``, ``payload`` and ``welcome`` for data."""

    kind: str
    topic: bytes = b""
    match: str = PREFIX
    origin: str = ""
    seq: int = -1
    payload: bytes = b""
    welcome: bool = False


def wire(msg: ZmqMessage) -> ZmqWire:
    """The wire summary of ``msg``."""
    if isinstance(msg, Subscription):
        kind = "subscribe" if msg.subscribe else "unsubscribe"
        return ZmqWire(kind=kind, topic=msg.topic, match=msg.kind)
    return ZmqWire(
        kind="data", origin=msg.origin, seq=msg.seq, payload=msg.payload, welcome=msg.welcome
    )
