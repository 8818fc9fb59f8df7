"""Duplicate detection with sequence vectors over DSEQ = 2δ + 1 brokers [DFT §VII].

Theory of operation
-------------------
The paper states the scheme's idea and defers its details to an extended version we do not
have; this is our design (argued in ``spec/dft.md``, "Duplicate detection").

* Every broker B stamps each publication it *first* processes with the next value of its own
  counter (``stamp``). Re-sends of the same queue entry (after a session change) reuse the
  stamp: a stamp names one queue entry of one broker. A stamp's *epoch* is the broker's
  incarnation (``stamp >> 32``: a restarted broker stamps from ``incarnation << 32``).
* A publication carries ``seqvec``: ``(Y, stamp_Y, low_Y)`` for the brokers Y that forwarded
  it and lie within DSEQ primary links of the receiver — the forwarders among the last DSEQ
  brokers of its primary path [DFT §V: "SeqVec is a vector of length DSEQ"]. ``low_Y`` is Y's
  *low-water mark* when it sent that copy: the lowest stamp of the same epoch still in Y's
  queue (:func:`low_water`). Every stamp of that epoch below it names an entry Y has finished
  (confirmed by all its hops) and will never send again. :func:`extend` adds the sender's
  own entry and drops entries farther than DSEQ from the next hop.
* A receiver keeps, per forwarder and epoch within DSEQ, a :class:`Seen`: a low mark (every
  stamp at or below it counts as seen) and the exact set of stamps seen above it
  (:func:`observe`). A publication is a duplicate iff some entry's stamp is at or below the
  low mark or in the set (:func:`is_duplicate`).

Why it works: two copies of one publication that both propagated legitimately bypass at most
δ brokers in the window of 2δ + 1 brokers before the receiver, so some broker of that window
forwarded both, with the same stamp [DFT §VII]; the receiver saw that stamp with the first
copy. A first copy is never mistaken for a duplicate: its stamps are not in the sets (each
stamp is one entry, one publication), and the low marks only cover stamps the receiver saw
or entries their forwarder had finished. (An earlier design kept one number per forwarder,
the highest stamp seen; it dropped a publication that had *waited* at a forwarder while a
newer entry of that forwarder went ahead — ``tests/dft/test_dft3_dupdetect.py``.)

>>> extend((("A", 3, 1),), "B", 7, 5, lambda y: {"A": 3, "B": 1}[y], 2)
(('B', 7, 5),)
>>> from pyrsistent import pmap
>>> seen = observe(pmap(), (("B", 7, 5),))
>>> [is_duplicate(seen, ((("B", n, 1)),)) for n in (3, 4, 5, 7, 8)]
[True, True, False, True, False]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import final

import attrs
from pyrsistent import PMap

__all__ = [
    "EPOCH_BITS",
    "Seen",
    "SeqVec",
    "epoch",
    "extend",
    "is_duplicate",
    "low_water",
    "observe",
]

SeqVec = tuple[tuple[str, int, int], ...]
EPOCH_BITS = 32


def epoch(stamp: int) -> int:
    """The incarnation a stamp was drawn in."""
    return stamp >> EPOCH_BITS


@final
@attrs.frozen(kw_only=True)
class Seen:
    """A receiver's memory of one forwarder's stamps of one epoch: every stamp ``<= low``
    counts as seen; ``above`` holds the stamps seen above it."""

    low: int = 0
    above: frozenset[int] = frozenset()


_NONE = Seen()


def low_water(stamp: int, queued: Iterable[int], current: int) -> int:
    """The low-water mark a broker whose counter is at ``current`` sends with a copy of its
    entry ``stamp``: the lowest of ``stamp`` and the ``queued`` stamps (its queue) of the
    same epoch. A stamp of an earlier life (an own publication re-sent after a restart)
    claims nothing: copies of that life's other entries may still be under way. A tuple of
    stamps all of one epoch is answered by C-level ``min`` (a long queue's case)."""
    e = epoch(stamp)
    if e != epoch(current):
        return e << EPOCH_BITS
    if isinstance(queued, tuple) and queued:
        lo: int = min(queued)
        hi: int = max(queued)  # epochs grow with stamps: one epoch when both ends share it
        if epoch(lo) == e == epoch(hi):
            return min(stamp, lo)
    return min(stamp, min((n for n in queued if epoch(n) == e), default=stamp))


def extend(
    vec: SeqVec,
    me: str,
    stamp: int,
    low: int,
    distance_to_next: Callable[[str], int],
    dseq: int,
) -> SeqVec:
    """The vector a publication carries from ``me`` (stamp ``stamp``, low-water mark ``low``)
    to the next hop: ``vec`` plus ``me``'s entry, keeping brokers within ``dseq`` of it."""
    out = tuple(e for e in vec if distance_to_next(e[0]) <= dseq)
    if distance_to_next(me) <= dseq:
        out = (*out, (me, stamp, low))
    return out


def is_duplicate(seen: PMap[tuple[str, int], Seen], vec: SeqVec) -> bool:
    """Has a copy with one of ``vec``'s stamps been seen (or finished by its forwarder)?"""
    for y, n, _ in vec:
        s = seen.get((y, epoch(n)), _NONE)
        if n <= s.low or n in s.above:
            return True
    return False


def observe(seen: PMap[tuple[str, int], Seen], vec: SeqVec) -> PMap[tuple[str, int], Seen]:
    """``seen`` after a first copy carrying ``vec``: each stamp is recorded, each low-water
    mark raises the low mark, and stamps contiguous with it fold into it."""
    for y, n, low in vec:
        key = (y, epoch(n))
        s = seen.get(key, _NONE)
        mark = max(s.low, min(low, n) - 1)
        if n == mark + 1 and not s.above:  # the common case, in order: it folds at once
            seen = seen.set(key, Seen(low=n))
            continue
        if mark == s.low and n != mark + 1 and (not s.above or min(s.above) > mark):
            # the low mark stays, nothing is dropped and nothing folds (``mark + 1`` is
            # never left in ``above``): ``above`` only gains ``n``. C-level ``min`` and
            # union, not a Python walk of a set that grows while a forwarder's low-water
            # mark is held by a publication waiting at a barrier (dft10).
            seen = seen.set(key, Seen(low=mark, above=s.above | {n}))
            continue
        above = {m for m in s.above if m > mark}
        above.add(n)
        while mark + 1 in above:
            mark += 1
            above.discard(mark)
        seen = seen.set(key, Seen(low=mark, above=frozenset(above)))
    return seen
