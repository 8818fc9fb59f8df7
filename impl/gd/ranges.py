"""Inclusive tick-range sets: the private run representation of the GD roles.

A :data:`Ranges` value is a tuple of disjoint, non-adjacent, ascending inclusive ``(lo, hi)``
pairs. Every operation costs time in the number of ranges, never in the number of ticks a
range covers (a silence over 10^9 ticks costs what one tick costs). Values are plain tuples:
immutable, hashable, cheap to compare.

>>> r = add((), 5, 9)
>>> r = add(r, 10, 12)
>>> r
((5, 12),)
>>> subtract(r, ((7, 8),))
((5, 6), (9, 12))
>>> intersect(((0, 10),), ((5, 20), (30, 40)))
((5, 10),)
>>> run_end(((0, 4), (6, 9)), 2), run_end(((0, 4),), 5)
(4, None)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

__all__ = [
    "EMPTY",
    "Ranges",
    "add",
    "chunks",
    "clip",
    "contains",
    "contains_range",
    "intersect",
    "normalize",
    "overlaps",
    "run_end",
    "size",
    "subtract",
    "union",
]

Ranges = tuple[tuple[int, int], ...]
EMPTY: Ranges = ()


def normalize(pairs: Iterable[tuple[int, int]]) -> Ranges:
    """Sort, drop empty pairs and coalesce overlapping or adjacent ones."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(p for p in pairs if p[0] <= p[1]):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def add(rs: Ranges, lo: int, hi: int) -> Ranges:
    """``rs`` with ``[lo, hi]`` added (``rs`` itself when nothing changes)."""
    if lo > hi:
        return rs
    if not rs or lo > rs[-1][1] + 1:
        return (*rs, (lo, hi))
    if contains_range(rs, lo, hi):
        return rs
    return normalize((*rs, (lo, hi)))


def union(a: Ranges, b: Ranges) -> Ranges:
    if not b:
        return a
    if not a:
        return b
    return normalize(a + b)


def intersect(a: Ranges, b: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def subtract(a: Ranges, b: Ranges) -> Ranges:
    if not a or not b:
        return a
    out: list[tuple[int, int]] = []
    j = 0
    for lo, hi in a:
        cur = lo
        while j < len(b) and b[j][1] < cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] <= hi:
            if b[k][0] > cur:
                out.append((cur, b[k][0] - 1))
            cur = max(cur, b[k][1] + 1)
            if cur > hi:
                break
            k += 1
        if cur <= hi:
            out.append((cur, hi))
    result = tuple(out)
    return a if result == a else result


def clip(rs: Ranges, lo: int, hi: int) -> Ranges:
    """The part of ``rs`` inside ``[lo, hi]``."""
    if lo > hi or not rs:
        return ()
    if rs[0][0] >= lo and rs[-1][1] <= hi:
        return rs
    # the ranges that can overlap [lo, hi]: from the one holding lo (or the next) up to the
    # last starting at or before hi — found by bisection, not a scan
    i = max(_index(rs, lo), 0)
    j = bisect_right(rs, (hi, _TOP))
    if i >= j:
        return ()
    part = rs[i:j]
    a, b = part[0]
    if b < lo:
        part = part[1:]
        if not part:
            return ()
        a, b = part[0]
    if a < lo:
        part = ((lo, b), *part[1:])
    a, b = part[-1]
    if b > hi:
        part = (*part[:-1], (a, hi))
    return part


#: Above every tick: ``(t, _TOP)`` sorts after every range ``(lo, hi)`` with ``lo <= t``, so
#: bisecting for it compares plain tuples (no key function call per probe).
_TOP = float("inf")


def _index(rs: Ranges, t: int) -> int:
    """Index of the range that could contain ``t`` (the last with lo <= t), or -1."""
    return bisect_right(rs, (t, _TOP)) - 1


def contains(rs: Ranges, t: int) -> bool:
    i = _index(rs, t)
    return i >= 0 and rs[i][1] >= t


def contains_range(rs: Ranges, lo: int, hi: int) -> bool:
    i = _index(rs, lo)
    return i >= 0 and rs[i][1] >= hi


def overlaps(rs: Ranges, lo: int, hi: int) -> bool:
    if lo > hi or not rs:
        return False
    i = _index(rs, hi)
    return i >= 0 and rs[i][1] >= lo


def run_end(rs: Ranges, t: int) -> int | None:
    """The last tick of the range holding ``t``, or None when ``t`` is not in ``rs``."""
    i = _index(rs, t)
    if i >= 0 and rs[i][1] >= t:
        return rs[i][1]
    return None


def size(rs: Ranges) -> int:
    """Number of ticks covered."""
    return sum(hi - lo + 1 for lo, hi in rs)


def chunks(rs: Ranges, width: int) -> tuple[tuple[int, int], ...]:
    """Each range chopped into pieces of at most ``width`` ticks [GD §4.2]."""
    out: list[tuple[int, int]] = []
    for lo, hi in rs:
        cur = lo
        while cur <= hi:
            end = min(hi, cur + width - 1)
            out.append((cur, end))
            cur = end + 1
    return tuple(out)
