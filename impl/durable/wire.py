"""What a durable-subscription message says on the wire, for trace summaries [DUR §3-4].

>>> from gapless.impl.gd.messages import Nack
>>> wire(Nack(pubend="p0", start=3, end=9))
DurWire(kind='nack', pubend='p0', lo=3, hi=9, released=None, retransmission=False)
"""

from __future__ import annotations

from typing import Any, final

import attrs

from gapless.impl.durable.release import ReleaseReport
from gapless.impl.durable.shb_inputs import Lost
from gapless.impl.gd.messages import Knowledge, Nack

__all__ = ["DurWire", "wire"]


@final
@attrs.frozen(kw_only=True)
class DurWire:
    """``kind`` (``knowledge``, ``knowledge-data`` when it carries an event, ``lost``,
    ``nack``, ``report``, ``other``), the ``pubend`` and
    the tick range ``[lo, hi]`` it speaks about (a knowledge message: its lowest and highest
    tick; a report: ``hi`` is latestDelivered and ``released`` released(p))."""

    kind: str
    pubend: str = ""
    lo: int = -1
    hi: int = -1
    released: int | None = None
    retransmission: bool = False

    # The timeline printer of replays and reports (``gapless.spark_fuzz``) reads GD's
    # ``Wire`` fields; these give the same view of a durable message.

    @property
    def data_ticks(self) -> tuple[int, ...]:
        """The data tick of a knowledge message that carries one (its ``hi``)."""
        return (self.hi,) if self.kind == "knowledge-data" else ()

    @property
    def final_ranges(self) -> tuple[tuple[int, int], ...]:
        """The L range of a ``lost`` message."""
        return ((self.lo, self.hi),) if self.kind == "lost" else ()

    @property
    def nack_ranges(self) -> tuple[tuple[int, int], ...]:
        """The range a nack asks for."""
        return ((self.lo, self.hi),) if self.kind == "nack" else ()

    @property
    def upto(self) -> int | None:
        """A report's latestDelivered."""
        return self.hi if self.kind == "report" else None


def wire(msg: Any) -> DurWire:
    """The summary of ``msg``."""
    t = type(msg)
    if t is Knowledge:
        ticks = [t for r in msg.silence for t in r]
        if msg.data is not None:
            ticks.append(msg.data.tick)
        lo, hi = (min(ticks), max(ticks)) if ticks else (-1, -1)
        kind = "knowledge" if msg.data is None else "knowledge-data"
        return DurWire(
            kind=kind, pubend=msg.pubend, lo=lo, hi=hi, retransmission=msg.retransmission
        )
    if t is Lost:
        return DurWire(kind="lost", pubend=msg.pubend, lo=msg.start, hi=msg.end)
    if t is Nack:
        return DurWire(
            kind="nack",
            pubend=msg.pubend,
            lo=msg.start,
            hi=msg.end,
            retransmission=msg.retransmission,
        )
    if t is ReleaseReport:
        return DurWire(kind="report", pubend=msg.pubend, hi=msg.delivered, released=msg.released)
    return DurWire(kind="other")
