"""Reference semantics of the persistent filtering subsystem [DUR §4.2]: slow and obvious.

Per subscriber, a plain list of the timestamps that matched it; ``written`` — the highest
timestamp the constream has handed over; ``chopped`` — the released prefix whose ticks are L.
No records, no indices, no back-pointers: what a subscriber's Q/S/L ticks *are*, against
which :mod:`gapless.impl.durable.pfs` (one log stream with back-pointer records) is
differentially tested. A crash keeps the state as of the last :meth:`RefPfs.sync`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

__all__ = ["RefPfs"]


class RefPfs:
    """The PFS of one pubend as per-subscriber lists of matching timestamps (mutable)."""

    def __init__(self) -> None:
        self.matches: dict[int, list[int]] = {}
        self.written = -1
        self.chopped = -1
        self._synced: RefPfs | None = None

    def write(self, timestamp: int, subscribers: Iterable[int]) -> None:
        """Timestamp ``timestamp`` matched ``subscribers``; ignored at or below ``written``."""
        if timestamp <= self.written:
            return
        for s in set(subscribers):
            self.matches.setdefault(s, []).append(timestamp)
        self.written = timestamp

    def sync(self) -> None:
        """What a crash keeps from now on (chopping never goes past what was synced)."""
        self._synced = None
        self._synced = copy.deepcopy(self)

    def chop(self, released: int) -> None:
        """Ticks at or below ``released`` become L for every subscriber."""
        self.chopped = max(self.chopped, released)

    def crash(self, *, latest_delivered: int, released: int) -> RefPfs:
        """The PFS after a crash and recovery: the last synced state, cut back to the durable
        ``latest_delivered`` (the constream writes the rest again [DUR §4.1]), with every tick
        at or below the durable release point ``released`` L."""
        base = copy.deepcopy(self._synced) if self._synced is not None else RefPfs()
        for s in base.matches:
            base.matches[s] = [t for t in base.matches[s] if t <= latest_delivered]
        base.written = min(base.written, latest_delivered)
        base.chopped = released
        base.sync()
        return base

    def read(
        self, subscriber: int, *, after: int, upto: int, limit: int | None = None
    ) -> tuple[int, tuple[int, ...], int]:
        """``(lost_upto, q, known_upto)`` for ticks ``(after, upto]``, tick by tick."""
        lost = after
        tick = after + 1
        while tick <= upto and tick <= self.chopped:
            lost = tick
            tick += 1
        matched = set(self.matches.get(subscriber, ()))
        q: list[int] = []
        known = lost
        while tick <= upto and tick <= self.written:
            if tick in matched:
                if limit is not None and len(q) == limit:
                    return lost, tuple(q), tick - 1
                q.append(tick)
            known = tick
            tick += 1
        return lost, tuple(q), known
