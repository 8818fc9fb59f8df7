"""Checkpoint tokens: a durable subscriber's vector clock of (pubend, timestamp) [DUR §2].

Theory of operation
-------------------
When a durable subscriber ``s`` first connects it is given one starting timestamp per pubend,
``latestDelivered(p)`` at its SHB [DUR §2, §4.1]; the set of pairs is its *checkpoint token*
``CT(s)``, a vector clock. ``CT(s, p)`` advances to ``m.t`` once ``s`` has consumed message ``m``
and every earlier message of pubend ``p`` [DUR §2]; the subscriber acknowledges by sending its
CT, and presents it again when it reconnects, as the point from which delivery resumes.

A token is a lattice under the pointwise order: ``join`` is the pointwise maximum (a pubend
missing from a token stands for "nothing consumed yet", :data:`UNSEEN`), ``meet`` the pointwise
minimum over the pubends both name. ``CT_a.leq(CT_b)`` means ``b`` acknowledges at least what
``a`` does on every pubend; an *older* CT (one a subscriber may present after losing its latest,
[DUR §2]) is one below the latest in this order.

>>> a = CheckpointToken.of({"p1": 10, "p2": 4})
>>> b = CheckpointToken.of({"p1": 7, "p3": 2})
>>> a.join(b).as_dict()
{'p1': 10, 'p2': 4, 'p3': 2}
>>> b.leq(a), b.leq(a.join(b)), a.at("p9")
(False, True, -1)
>>> a.advance("p1", 12).at("p1"), a.advance("p1", 3) is a
(12, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.errors import InvalidTick

__all__ = ["UNSEEN", "CheckpointToken"]

UNSEEN: Final = -1
"""``CT(s, p)`` of a pubend the token does not name: no tick of ``p`` consumed yet."""


def _check(op: str, pubend: object, tick: object) -> None:
    if not isinstance(pubend, str) or not pubend:
        raise InvalidTick(f"{op}: pubend {pubend!r} is not a non-empty str; allowed: a pubend name")
    if type(tick) is not int or tick < UNSEEN:
        raise InvalidTick(
            f"{op}: timestamp {tick!r} for pubend {pubend!r}; allowed: an int >= {UNSEEN}"
        )


def _entries(value: object) -> PMap[str, int]:
    if not isinstance(value, Mapping):
        raise InvalidTick(f"CheckpointToken: {value!r} is not a mapping of pubend -> timestamp")
    for p, t in value.items():
        _check("CheckpointToken", p, t)
    # UNSEEN entries are dropped: the form is canonical, so == compares tokens
    return pmap({p: t for p, t in value.items() if t != UNSEEN})


@final
@attrs.frozen(kw_only=True)
class CheckpointToken:
    """``CT(s)``: per pubend the latest timestamp subscriber ``s`` consumed [DUR §2]."""

    entries: PMap[str, int] = attrs.field(factory=pmap, converter=_entries)

    @classmethod
    def of(cls, entries: Mapping[str, int]) -> CheckpointToken:
        """A token from a plain mapping (pubend -> timestamp)."""
        return cls(entries=pmap(entries))

    def at(self, pubend: str) -> int:
        """``CT(s, p)``; :data:`UNSEEN` when the token does not name ``p``."""
        return self.entries.get(pubend, UNSEEN)

    def advance(self, pubend: str, tick: int) -> CheckpointToken:
        """``CT(s, p) = max(CT(s, p), tick)``: the subscriber consumed through ``tick``
        [DUR §2]. A timestamp at or below the current one returns this very token."""
        _check("CheckpointToken.advance", pubend, tick)
        if tick <= self.at(pubend):
            return self
        return CheckpointToken(entries=self.entries.set(pubend, tick))

    def join(self, other: CheckpointToken) -> CheckpointToken:
        """Pointwise maximum (the least token acknowledging both)."""
        out = self.entries
        for p, t in other.entries.items():
            if t > out.get(p, UNSEEN):
                out = out.set(p, t)
        return self if out is self.entries else CheckpointToken(entries=out)

    def meet(self, other: CheckpointToken) -> CheckpointToken:
        """Pointwise minimum (a pubend named by one token only is UNSEEN in the other)."""
        out = {p: min(t, other.at(p)) for p, t in self.entries.items()}
        return CheckpointToken.of(out)

    def leq(self, other: CheckpointToken) -> bool:
        """Every pubend's timestamp here is at or below ``other``'s."""
        return all(t <= other.at(p) for p, t in self.entries.items())

    def pubends(self) -> frozenset[str]:
        """The pubends this token names (those with a timestamp above UNSEEN)."""
        return frozenset(self.entries)

    def as_dict(self) -> dict[str, int]:
        """A plain, sorted dict (for JSON and doctests)."""
        return dict(sorted(self.entries.items()))
