"""The GD protocol's wire messages [GD §3.1, §3.2] and their protocol-neutral summaries.

Theory of operation
-------------------
Knowledge flows downstream in :class:`Knowledge` messages. One message has the form
``F*Q*F*DF*Q*`` (a data message) or ``F*Q*F*Q*`` (a silence message) [GD §3.1]: a final
``prefix`` (ticks ``0..prefix`` are F: acknowledged, no longer needed), then ``silence``
(inclusive F ranges, the silence since the previous D and — for total order — the F
pre-assigned after the D [GD §2.2]) and at most one ``data`` tick with its payload. A message is
*first-time* or *retransmitted* (``retransmission``): the two kinds are forwarded by different
rules [GD §3.1]. ``for_cell`` marks a message routed *sideways* through a cell neighbour: the
neighbour forwards it only towards that downstream cell [GD §3.1, link bundles].

Curiosity and acknowledgement flow upstream: :class:`Ack` (``ack(T)``: ticks ``0..T`` are A),
:class:`Nack` (a contiguous range of C ticks; ``repeat`` when a subend repeats it after NRT),
and the pubend's :class:`AckExpected` (``T``: every tick up to T should have been acked
[GD §3.2]) flows down. :class:`LinkStatus` is the periodic link-status message of [GD §3.1].

:func:`wire` summarises any GD message as a :class:`gapless.impl.trace.Wire`, the shape the
world records and the invariants judge. Every message names its pubend (``LinkStatus``
excepted) and whether it is first-time or retransmitted.

>>> from pyrsistent import pmap
>>> m = Knowledge(pubend="P0", prefix=-1, silence=((0, 9),),
...               data=Data(pubend="P0", tick=10, attributes=pmap({"x": 1})))
>>> w = wire(m)
>>> w.kind, w.data_ticks, w.final_ranges, w.retransmission
('data', (10,), ((0, 9),), False)
>>> wire(Nack(pubend="P0", start=3, end=7)).nack_ranges
((3, 7),)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.trace import Wire

__all__ = [
    "Ack",
    "AckExpected",
    "Data",
    "GDMessage",
    "Knowledge",
    "LinkStatus",
    "Nack",
    "wire",
]


def _attrs(value: Mapping[str, Any]) -> PMap[str, Any]:
    return value if isinstance(value, PMap) else pmap(value)


def _ranges(value: Any) -> tuple[tuple[int, int], ...]:
    if type(value) is tuple and all(type(r) is tuple for r in value):
        return value
    return tuple((int(lo), int(hi)) for lo, hi in value)


@final
@attrs.frozen(kw_only=True, unsafe_hash=False)
class Data:
    """The payload of a D tick [GD §2.1]: the message ``pubend`` published at ``tick`` with
    ``attributes`` (what content filters judge) and ``size`` bytes; ``published_at`` is the
    virtual time (µs) the pubend received it. This is also the ``payload`` of a ``Deliver``."""

    pubend: str
    tick: int
    attributes: PMap[str, Any] = attrs.field(factory=pmap, converter=_attrs)
    size: int = 100
    published_at: int = 0

    def __hash__(self) -> int:
        # A message is identified by its pubend and tick (no two messages share one
        # [GD §2.2]); equal values have equal hashes, and hashing skips the attributes. The
        # knowledge value D(a) hashes its payload once per message at every broker.
        return hash((self.pubend, self.tick))


@final
@attrs.frozen(kw_only=True)
class Knowledge:
    """A knowledge message [GD §3.1]: ticks ``0..prefix`` are F (``-1``: none), each
    inclusive range of ``silence`` is F, ``data`` (if any) is the one D tick. Every other
    tick is Q (says nothing)."""

    pubend: str
    prefix: int = -1
    silence: tuple[tuple[int, int], ...] = attrs.field(default=(), converter=_ranges)
    data: Data | None = None
    retransmission: bool = False
    for_cell: str | None = None


@final
@attrs.frozen(kw_only=True)
class Ack:
    """``ack(T)`` [GD §3.1]: ticks ``0..upto`` of ``pubend`` are A at the sender."""

    pubend: str
    upto: int
    retransmission: bool = False


@final
@attrs.frozen(kw_only=True)
class Nack:
    """A nack [GD §3.1]: ticks ``start..end`` (inclusive) of ``pubend`` are C at the sender.
    ``retransmission`` is True for a repetition after NRT [GD §3.2]."""

    pubend: str
    start: int
    end: int
    retransmission: bool = False


@final
@attrs.frozen(kw_only=True)
class AckExpected:
    """``AckExpected(T)`` [GD §3.2]: the pubend expects ticks ``0..upto`` to be acked."""

    pubend: str
    upto: int
    retransmission: bool = False


@final
@attrs.frozen(kw_only=True)
class LinkStatus:
    """Periodic link status [GD §3.1]: the sender has an up link to a broker of each cell in
    ``reach`` (sorted). It lets an upstream broker leave a path that needs sideways routing."""

    reach: tuple[str, ...] = ()
    pubend: None = None
    retransmission: bool = False


GDMessage = Knowledge | Ack | Nack | AckExpected | LinkStatus


def wire(msg: Any) -> Wire:
    """The protocol-neutral summary of a GD message (``Wire(kind="other")`` for anything
    else). ``final_ranges`` holds the ``silence`` ranges only, not the final prefix."""
    if isinstance(msg, Knowledge):
        return Wire(
            kind="data" if msg.data is not None else "silence",
            pubend=msg.pubend,
            data_ticks=(msg.data.tick,) if msg.data is not None else (),
            final_ranges=msg.silence,
            retransmission=msg.retransmission,
        )
    if isinstance(msg, Nack):
        return Wire(
            kind="nack",
            pubend=msg.pubend,
            nack_ranges=((msg.start, msg.end),),
            retransmission=msg.retransmission,
        )
    if isinstance(msg, Ack):
        return Wire(kind="ack", pubend=msg.pubend, upto=msg.upto)
    if isinstance(msg, AckExpected):
        return Wire(kind="ack_expected", pubend=msg.pubend, upto=msg.upto)
    if isinstance(msg, LinkStatus):
        return Wire(kind="status")
    return Wire(kind="other")
