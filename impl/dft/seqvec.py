"""Duplicate detection with sequence vectors over DSEQ = 2δ + 1 brokers [DFT §VII].

Theory of operation
-------------------
The paper states the scheme's idea and defers its details to an extended version we do not
have; this is our design (argued in ``spec/dft.md``, "Duplicate detection").

* Every broker B stamps each publication it *first* processes with the next value of its own
  counter (``stamp``). Re-sends of the same queue entry (after a session change) reuse the
  stamp: a stamp names one queue entry of one broker.
* A publication carries ``seqvec``: ``(Y, stamp_Y)`` for the brokers Y that forwarded it and
  lie within DSEQ primary links of the receiver — the forwarders among the last DSEQ brokers
  of its primary path [DFT §V: "SeqVec is a vector of length DSEQ"]. :func:`extend` adds the
  sender's own entry and drops entries farther than DSEQ from the next hop.
* A receiver keeps ``high[Y]``, the highest stamp of Y it has seen, only for brokers within
  DSEQ (:func:`observe`). A publication is a duplicate iff some entry ``(Y, n)`` has
  ``n <= high[Y]`` (:func:`is_duplicate`).

Why it works: two copies of one publication that both propagated legitimately bypass at most
δ brokers in the window of 2δ + 1 brokers before the receiver, so some broker of that window
forwarded both, with the same stamp [DFT §VII]; the receiver saw that stamp with the first
copy. A first copy is never mistaken for a duplicate because a broker's stamps reach a given
receiver in increasing order: stamps follow a broker's FIFO queue, sessions are FIFO
[DFT §II], and after a session change a broker re-sends every unconfirmed entry in queue
order before anything newer.

>>> extend((("A", 3),), "B", 7, lambda y: {"A": 3, "B": 1}[y], 2)
(('B', 7),)
>>> is_duplicate({"B": 7}, (("B", 7),))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyrsistent import PMap

__all__ = ["extend", "is_duplicate", "observe"]

SeqVec = tuple[tuple[str, int], ...]


def extend(
    vec: SeqVec, me: str, stamp: int, distance_to_next: Callable[[str], int], dseq: int
) -> SeqVec:
    """The vector a publication carries from ``me`` (stamp ``stamp``) to the next hop:
    ``vec`` plus ``me``'s entry, keeping brokers within ``dseq`` of the next hop."""
    out = tuple((y, n) for (y, n) in vec if distance_to_next(y) <= dseq)
    if distance_to_next(me) <= dseq:
        out = (*out, (me, stamp))
    return out


def is_duplicate(high: Mapping[str, int], vec: SeqVec) -> bool:
    """Has a copy with one of ``vec``'s stamps been seen already?"""
    return any(n <= high.get(y, 0) for (y, n) in vec)


def observe(high: PMap[str, int], vec: SeqVec) -> PMap[str, int]:
    """``high`` after seeing ``vec`` (the same object when nothing grows)."""
    for y, n in vec:
        if n > high.get(y, 0):
            high = high.set(y, n)
    return high
