"""The one merge of GES's connection news: keep, per key, the newest entry [GES "The
connectivity graph": connection losses and additions are disseminated, and every node keeps
what is newest].

Theory of operation
-------------------
Per-link news (:mod:`gapless.impl.ges.linkstate`: a link, its version ``(now, reports,
node)``, whether it is up) and the gatekeepers' aggregated entries
(:mod:`gapless.impl.ges.aggregate`: a unit pair, its weight, its live link count) are both a
table from a key to ``(order, value)`` that a node merges news into the same way: an entry
replaces what the table holds for its key only when its order is greater, and the entries
that did are what the node passes on (so a flood ends: news heard again, or older news, is
not new). The merge is a join of a lattice per key (the larger order wins; equal orders
agree on their value, as both kinds of news guarantee), so it is idempotent, commutative and
associative over the entries it is given.

>>> from pyrsistent import pmap
>>> t, new = keep_newest(pmap(), (("l", 2, True), ("l", 1, False)))
>>> dict(t), new
({'l': (2, True)}, (('l', 2, True),))
>>> keep_newest(t, (("l", 2, True),))[1]
()
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from pyrsistent import PMap

__all__ = ["keep_newest"]


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K")
Ord = TypeVar("Ord", bound=_Ordered)
V = TypeVar("V")


def keep_newest(
    table: PMap[K, tuple[Ord, V]], entries: Iterable[tuple[K, Ord, V]]
) -> tuple[PMap[K, tuple[Ord, V]], tuple[tuple[K, Ord, V], ...]]:
    """``table`` with every entry newer (a greater order) than what it holds for its key;
    the entries that were new, in the order given. Nothing new: the same table object."""
    changed: list[tuple[K, Ord, V]] = []
    for key, order, value in entries:
        old = table.get(key)
        if old is None or old[0] < order:
            table = table.set(key, (order, value))
            changed.append((key, order, value))
    return table, tuple(changed)
