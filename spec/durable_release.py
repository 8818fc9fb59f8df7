"""A slow, obviously-correct reference of the release protocol [DUR §3, §4.1].

The verified core (``gapless.impl.durable.release``) keeps one number per fact and merges by
maximum; this reference keeps *histories* instead and recomputes every answer from them, tick
by tick, the way the paper states it:

* ``released(s, p)`` is the largest CT the subscriber ever acknowledged at that SHB (or the
  CT it started from); ``latestDelivered(p)`` the largest tick the constream ever delivered;
* ``released(p)`` is ``min`` of the list ``[latestDelivered(p)] + [released(s, p) for every
  active subscriber]`` [DUR §4.1];
* a node's pair is, per child, the largest pair that child ever reported, then the minimum over
  the children [DUR §3];
* the set of L ticks at the pubend is the union, over every L step, of the ticks
  ``t in [0, T(p)]`` that satisfied ``t <= Tr(p) or (t <= Td(p) and T(p) - t > maxRetain(p))``
  at that step, each tested one by one [DUR §3].

Reconnect-anywhere follows ``spec/durable.md``: a moved subscriber's record at the new SHB is
pending until its released(s, p) is at least every released(p) that SHB reported; a crash keeps
histories and replaces the reported history by the recovered ``released(p)``.

It imports nothing of ours: the differential tests drive it and the core with the same steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RefNode", "RefPubend", "RefShb", "RefWorld"]

NONE = -1


@dataclass
class RefShb:
    """An SHB's histories for one pubend."""

    delivered: list[int] = field(default_factory=list)
    acks: dict[str, list[int]] = field(default_factory=dict)
    active: dict[str, bool] = field(default_factory=dict)
    reported: list[tuple[int, int]] = field(default_factory=list)

    def latest_delivered(self) -> int:
        return max([NONE, *self.delivered])

    def released_of(self, sub: str) -> int:
        return max(self.acks[sub])

    def released(self) -> int:
        vals = [self.latest_delivered()]
        vals += [self.released_of(s) for s in self.acks if self.active[s]]
        return min(vals)

    def reported_released(self) -> int:
        return max([NONE, *(r for r, _d in self.reported)])


@dataclass
class RefNode:
    """A node's report histories, per child."""

    history: dict[str, list[tuple[int, int]]]

    def pair(self) -> tuple[int, int]:
        rs = [max([NONE, *(r for r, _d in h)]) for h in self.history.values()]
        ds = [max([NONE, *(d for _r, d in h)]) for h in self.history.values()]
        return min(rs), min(ds)


@dataclass
class RefPubend:
    """The pubend: report history, clock history, L set as explicit ticks."""

    max_retain: int | None
    reports: list[tuple[int, int]] = field(default_factory=list)
    clocks: list[int] = field(default_factory=list)
    lost: set[int] = field(default_factory=set)

    def tr(self) -> int:
        return max([NONE, *(r for r, _d in self.reports)])

    def td(self) -> int:
        return max([NONE, *(d for _r, d in self.reports)])

    def clock(self) -> int:
        return max([NONE, *self.clocks])

    def allowed(self, t: int) -> bool:
        """The L rule for one tick [DUR §3]."""
        if t <= self.tr():
            return True
        if self.max_retain is None:
            return False
        return t <= self.td() and self.clock() - t > self.max_retain

    def release_step(self) -> None:
        for t in range(self.clock() + 1):
            if self.allowed(t):
                self.lost.add(t)


@dataclass
class RefWorld:
    """Some SHBs under one node under one pubend."""

    shbs: dict[str, RefShb]
    node: RefNode
    pubend: RefPubend

    @classmethod
    def make(cls, shbs: list[str], max_retain: int | None) -> RefWorld:
        return cls(
            shbs={b: RefShb() for b in shbs},
            node=RefNode(history={b: [] for b in shbs}),
            pubend=RefPubend(max_retain=max_retain),
        )

    def join(self, shb: str, sub: str) -> int:
        b = self.shbs[shb]
        b.acks[sub] = [b.latest_delivered()]
        b.active[sub] = True
        return b.latest_delivered()

    def register_moved(self, shb: str, sub: str, ct: int) -> None:
        b = self.shbs[shb]
        b.acks[sub] = [ct]
        b.active[sub] = False

    def activate(self, shb: str) -> None:
        b = self.shbs[shb]
        for s in b.acks:
            if not b.active[s] and b.released_of(s) >= b.reported_released():
                b.active[s] = True

    def leave(self, shb: str, sub: str) -> None:
        b = self.shbs[shb]
        del b.acks[sub]
        del b.active[sub]

    def ack(self, shb: str, sub: str, ct: int) -> None:
        self.shbs[shb].acks[sub].append(ct)

    def delivered(self, shb: str, tick: int) -> None:
        self.shbs[shb].delivered.append(tick)

    def report(self, shb: str) -> tuple[int, int]:
        self.activate(shb)
        b = self.shbs[shb]
        pair = (b.released(), b.latest_delivered())
        b.reported.append(pair)
        self.node.history[shb].append(pair)
        return pair

    def crash(self, shb: str) -> None:
        b = self.shbs[shb]
        b.reported = [(b.released(), b.latest_delivered())]

    def propagate(self) -> None:
        self.pubend.reports.append(self.node.pair())

    def clock(self, tick: int) -> None:
        self.pubend.clocks.append(tick)

    def release_step(self) -> None:
        self.pubend.release_step()
