"""What the durable invariants remember of a trace [DUR §2-4] (facts only, no judgement).

* per pubend (:class:`PubendFacts`): the events and their ticks (sorted, for range queries),
  the L prefix, the ranges that were released *early* (above Tr at their L step), T(p) as far
  as the trace shows it, and maxRetain;
* per subscriber (:class:`SubFacts`): its filter, whether it is subscribed and connected (and
  where), the pubends it is in catchup for, the highest CT it acknowledged per pubend, and per
  pubend the position of its current session's chain of messages (``t0`` of the next one);
* per node, the highest ``(released, delivered)`` pair it reported (:class:`DurableFacts`).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any, final

from gapless.impl.durable.ct import UNSEEN, CheckpointToken

__all__ = ["DurableFacts", "PubendFacts", "SubFacts", "uncovered"]


def uncovered(lo: int, hi: int, ranges: list[tuple[int, int]]) -> int | None:
    """The first tick of ``[lo, hi]`` not inside any of the sorted, disjoint inclusive
    ``ranges``; None when they cover it all (an empty ``[lo, hi]`` is covered)."""
    t = lo
    i = bisect.bisect_right(ranges, (t, 1 << 62)) - 1
    i = max(i, 0)
    while t <= hi:
        while i < len(ranges) and ranges[i][1] < t:
            i += 1
        if i == len(ranges) or ranges[i][0] > t:
            return t
        t = ranges[i][1] + 1
    return None


@final
class PubendFacts:
    """One pubend's facts (see the module doc)."""

    __slots__ = ("clock", "early", "events", "max_retain", "policy_known", "through", "ticks")

    def __init__(self) -> None:
        self.events: dict[int, Mapping[str, Any]] = {}
        self.ticks: list[int] = []
        self.through = UNSEEN
        self.early: list[tuple[int, int]] = []
        self.clock = UNSEEN
        self.max_retain: int | None = None  # the policy, fixed by the first L step
        self.policy_known = False

    def add_event(self, tick: int, attributes: Mapping[str, Any]) -> None:
        if tick not in self.events:
            bisect.insort(self.ticks, tick)
        self.events[tick] = attributes
        self.clock = max(self.clock, tick)

    def events_in(self, lo: int, hi: int) -> list[int]:
        """The event ticks in ``[lo, hi]``."""
        return self.ticks[bisect.bisect_left(self.ticks, lo) : bisect.bisect_right(self.ticks, hi)]

    def add_release(self, through: int, normal_to: int) -> None:
        """``[0, through]`` is now L; ticks above ``normal_to`` among the new ones were
        released early."""
        lo = max(self.through, normal_to) + 1
        if through >= lo:
            if self.early and self.early[-1][1] + 1 == lo:
                self.early[-1] = (self.early[-1][0], through)
            else:
                self.early.append((lo, through))
        self.through = max(self.through, through)


@final
class SubFacts:
    """One durable subscriber's facts (see the module doc)."""

    __slots__ = (
        "acked",
        "catchup",
        "connected",
        "filter",
        "lag_ok",
        "latest_at_connect",
        "lost_at_connect",
        "position",
        "shb",
        "subscribed",
    )

    def __init__(self, flt: str, shb: str, ct: CheckpointToken) -> None:
        self.filter = flt
        self.shb = shb
        self.subscribed = True
        self.connected = True
        self.catchup: set[str] = set()
        self.acked: dict[str, int] = dict(ct.entries)
        self.position: dict[str, int] = dict(ct.entries)
        #: per pubend: the connection presented the latest acknowledged CT, lagging T(p) by
        #: less than maxRetain(p), and which ticks were already L then
        self.latest_at_connect: dict[str, bool] = {}
        self.lag_ok: dict[str, bool] = {}
        self.lost_at_connect: dict[str, int] = {}

    def acked_at(self, pubend: str) -> int:
        return self.acked.get(pubend, UNSEEN)

    def position_at(self, pubend: str) -> int:
        return self.position.get(pubend, UNSEEN)


@final
class DurableFacts:
    """The facts of a durable trace (see the module doc)."""

    def __init__(self) -> None:
        self.pubends: dict[str, PubendFacts] = {}
        self.subs: dict[str, SubFacts] = {}
        self.reported: dict[tuple[str, str], tuple[int, int]] = {}

    def pubend(self, p: str) -> PubendFacts:
        got = self.pubends.get(p)
        if got is None:
            got = self.pubends[p] = PubendFacts()
        return got

    def report(self, node: str, pubend: str, released: int, delivered: int) -> None:
        r0, d0 = self.reported.get((node, pubend), (UNSEEN, UNSEEN))
        self.reported[(node, pubend)] = (max(r0, released), max(d0, delivered))

    def minima(self, pubend: str, shbs: tuple[str, ...]) -> tuple[int, int]:
        """``(Tr, Td)`` as the trace shows them: per SHB the highest pair it reported (none:
        ``-1``), the minimum over ``shbs`` [DUR §3]."""
        if not shbs:
            return UNSEEN, UNSEEN
        pairs = [self.reported.get((b, pubend), (UNSEEN, UNSEEN)) for b in shbs]
        return min(r for r, _d in pairs), min(d for _r, d in pairs)
