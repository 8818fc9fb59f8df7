"""A persistent multiset of ticks that knows its minimum: how the SHB keeps ``released(p)``
without scanning its subscribers [DUR §4.1].

Theory of operation
-------------------
``released(p) = min(latestDelivered(p), min_s released(s, p))`` over the active records of an
SHB [DUR §4.1]. With 10,000 hosted subscribers a scan per acknowledgement costs what they
number; the acknowledgement of one of the 25 subscribers an event matched should cost what 25
do. :class:`MinBag` holds the values ``released(s, p)`` as a multiset:

* ``counts`` maps each value present to how many records hold it (a pyrsistent map);
* ``heap`` is a persistent *pairing heap* of values: a node is ``(value, children)`` and
  ``children`` a linked list ``(node, rest)`` or ``None``. Adding a value that was absent melds
  a one-node heap on top (O(1)); a value whose count drops to zero is *not* searched for in the
  heap (lazy deletion): it stays there, dead, until it reaches the root, where the bag pops it
  (two-pass pairing, amortised O(log n)). The root is therefore always a live value, and
  :meth:`MinBag.min` is O(1).

Every operation returns a new bag and leaves the old one intact (the roles are values: an old
state is never changed by a later step). Two bags holding the same multiset may have heaps of
different shapes; equality compares the multiset alone (``counts``).

>>> b = MinBag.of([5, 3, 9, 3])
>>> b.min(), b.remove(3).min(), b.remove(3).remove(3).min()
(3, 3, 5)
>>> MinBag.of([]).min() is None
True
>>> b.replace(3, 7).replace(3, 8).min(), b.min()  # the old bag is unchanged
(5, 3)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.errors import ProtocolMisuse

__all__ = ["MinBag"]

# A heap is None (empty) or (value, children); children is None or (heap, children).
Heap = Any


def _meld(a: Heap, b: Heap) -> Heap:
    if a is None:
        return b
    if b is None:
        return a
    if a[0] <= b[0]:
        return (a[0], (b, a[1]))
    return (b[0], (a, b[1]))


def _pop(heap: Heap) -> Heap:
    """The heap without its root: children melded in pairs left to right, then the pairs
    right to left (the two-pass pairing rule); iterative, so no recursion depth limit."""
    pairs: list[Heap] = []
    kids = heap[1]
    while kids is not None:
        first, kids = kids
        if kids is None:
            pairs.append(first)
            break
        second, kids = kids
        pairs.append(_meld(first, second))
    out: Heap = None
    for h in reversed(pairs):
        out = _meld(h, out)
    return out


@final
@attrs.frozen(kw_only=True)
class MinBag:
    """A multiset of ints with an O(1) minimum (module doc)."""

    counts: PMap[int, int] = attrs.field(factory=pmap)
    heap: Heap = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def of(cls, values: Iterable[int]) -> MinBag:
        """The bag holding ``values`` (with repetitions)."""
        counts: dict[int, int] = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        heap: Heap = None
        for v in sorted(counts, reverse=True):  # ascending roots: a heap that is a list
            heap = (v, None if heap is None else (heap, None))
        return cls(counts=pmap(counts), heap=heap)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def min(self) -> int | None:
        """The smallest value held; None when the bag is empty."""
        return None if self.heap is None else int(self.heap[0])

    def add(self, value: int) -> MinBag:
        """The bag with one more ``value``."""
        n = self.counts.get(value, 0)
        heap = self.heap if n else _meld(self.heap, (value, None))
        return MinBag(counts=self.counts.set(value, n + 1), heap=heap)

    def remove(self, value: int) -> MinBag:
        """The bag with one ``value`` fewer; :class:`ProtocolMisuse` if it holds none."""
        n = self.counts.get(value, 0)
        if n == 0:
            raise ProtocolMisuse(
                f"MinBag.remove({value}): not in the bag; allowed: one of {sorted(self.counts)}"
            )
        if n > 1:
            return MinBag(counts=self.counts.set(value, n - 1), heap=self.heap)
        counts = self.counts.remove(value)
        heap = self.heap
        while heap is not None and heap[0] not in counts:  # drop dead roots
            heap = _pop(heap)
        return MinBag(counts=counts, heap=heap)

    def replace(self, old: int, new: int) -> MinBag:
        """One ``old`` becomes ``new`` (an acknowledgement raising ``released(s, p)``)."""
        if old == new:
            return self
        return self.add(new).remove(old)
