"""Tick sets: set algebra on ticks for nacks and their answers [GD §3.1, §4.2].

Theory of operation
-------------------
A :data:`TickSet` is the canonical run form of a set of ticks: a tuple of disjoint,
non-adjacent, ascending inclusive ``(lo, hi)`` pairs with ``0 <= lo <= hi``. The canonical
form is unique, so two tick sets are equal exactly when they hold the same ticks, and a value
is a plain tuple: immutable, hashable and cheap to compare. Every operation costs time in
the number of runs it touches, never in the number of ticks a run covers (a silence over
10^9 ticks costs what one tick costs) [DESIGN.md "Lattices and streams"].

The operations are what a role does with the ticks it nacks, the ticks a nack asks for and
the ticks it answers: :func:`add` a range, :func:`union`, :func:`subtract`,
:func:`intersect`, :func:`clip` to a window, :func:`chunks` (a large nack chopped into
pieces [GD §4.2]), membership (:func:`contains`, :func:`contains_range`, :func:`overlaps`,
:func:`run_end`) and :func:`size`. An operation that changes nothing returns its argument
itself (``add(s, lo, hi) is s`` when ``s`` already holds the range), so a caller can tell a
no-op by identity.

The reference semantics is ``gapless.spec.ticksets`` (a plain ``set[int]``); the laws and
differential tests in ``tests/laws/test_ticksets.py`` run every operation on both. A value
built from untrusted input goes through :func:`of`, which raises
:class:`~gapless.impl.errors.InvalidRange` naming the offending pair; the operations
themselves assume canonical arguments (checked by :func:`is_canonical`).

>>> s = add((), 5, 9)
>>> s = add(s, 10, 12)
>>> s
((5, 12),)
>>> subtract(s, ((7, 8),))
((5, 6), (9, 12))
>>> intersect(((0, 10),), ((5, 20), (30, 40)))
((5, 10),)
>>> run_end(((0, 4), (6, 9)), 2), run_end(((0, 4),), 5)
(4, None)
>>> chunks(((0, 9),), 4)
((0, 3), (4, 7), (8, 9))
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Final

from gapless.impl.errors import InvalidRange, InvalidTick

__all__ = [
    "EMPTY",
    "TickSet",
    "add",
    "chunks",
    "clip",
    "contains",
    "contains_range",
    "intersect",
    "is_canonical",
    "normalize",
    "of",
    "overlaps",
    "run_end",
    "size",
    "subtract",
    "union",
]

TickSet = tuple[tuple[int, int], ...]
"""A set of ticks in canonical run form (see module doc)."""

EMPTY: Final[TickSet] = ()
"""The empty tick set."""

#: Above every tick: ``(t, _TOP)`` sorts after every run ``(lo, hi)`` with ``lo <= t``, so
#: bisecting for it compares plain tuples (no key function per probe).
_TOP: Final = float("inf")


def is_canonical(s: object) -> bool:
    """Whether ``s`` is a tick set in canonical form (ascending, disjoint, non-adjacent
    inclusive int pairs with ``0 <= lo <= hi``).

    >>> is_canonical(((1, 2), (4, 4))), is_canonical(((1, 2), (3, 4)))
    (True, False)
    """
    if type(s) is not tuple:
        return False
    prev = -2
    for run in s:
        if type(run) is not tuple or len(run) != 2:
            return False
        lo, hi = run
        if type(lo) is not int or type(hi) is not int or lo > hi or lo <= prev + 1:
            return False
        prev = hi
    return prev == -2 or s[0][0] >= 0


def of(pairs: Iterable[tuple[int, int]]) -> TickSet:
    """The tick set holding every tick of the inclusive ``pairs`` (any order, overlapping
    or adjacent pairs allowed). A pair that is not two ints ``0 <= lo <= hi`` raises
    :class:`~gapless.impl.errors.InvalidRange` (or ``InvalidTick`` for a negative tick).

    >>> of([(7, 9), (1, 3), (4, 5)])
    ((1, 5), (7, 9))
    """
    checked = []
    for pair in pairs:
        if type(pair) is not tuple or len(pair) != 2:
            raise InvalidRange(f"ticksets.of: {pair!r} is not a (lo, hi) pair of ticks")
        lo, hi = pair
        if type(lo) is not int or type(hi) is not int:
            raise InvalidRange(f"ticksets.of: {pair!r}: ticks must be ints")
        if lo < 0:
            raise InvalidTick(f"ticksets.of: {pair!r}: ticks must be >= 0")
        if lo > hi:
            raise InvalidRange(f"ticksets.of: {pair!r} is empty or inverted; need lo <= hi")
        checked.append((lo, hi))
    return normalize(checked)


def normalize(pairs: Iterable[tuple[int, int]]) -> TickSet:
    """Sort, drop empty pairs and coalesce overlapping or adjacent ones."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(p for p in pairs if p[0] <= p[1]):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def add(s: TickSet, lo: int, hi: int) -> TickSet:
    """``s`` with ``[lo, hi]`` added (``s`` itself when nothing changes). Appending past the
    last run is the in-order fast path: no sort, no scan."""
    if lo > hi:
        return s
    if not s or lo > s[-1][1] + 1:
        return s + ((lo, hi),)  # noqa: RUF005 (one copy; the unpacking copies twice)
    if contains_range(s, lo, hi):
        return s
    return normalize((*s, (lo, hi)))


def union(a: TickSet, b: TickSet) -> TickSet:
    """Every tick of ``a`` or ``b`` (``a`` itself when ``b`` adds nothing)."""
    if not b:
        return a
    if not a:
        return b
    got = normalize(a + b)
    return a if got == a else got


def intersect(a: TickSet, b: TickSet) -> TickSet:
    """Every tick of both ``a`` and ``b``."""
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


def subtract(a: TickSet, b: TickSet) -> TickSet:
    """Every tick of ``a`` not in ``b`` (``a`` itself when ``b`` removes nothing)."""
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


def clip(s: TickSet, lo: int, hi: int) -> TickSet:
    """The ticks of ``s`` inside ``[lo, hi]`` (``s`` itself when all of it is inside);
    the runs that can overlap the window are found by bisection, not a scan."""
    if lo > hi or not s:
        return ()
    if s[0][0] >= lo and s[-1][1] <= hi:
        return s
    i = max(_index(s, lo), 0)
    j = bisect_right(s, (hi, _TOP))
    if i >= j:
        return ()
    part = s[i:j]
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


def _index(s: TickSet, t: int) -> int:
    """Index of the run that could contain ``t`` (the last with lo <= t), or -1."""
    return bisect_right(s, (t, _TOP)) - 1


def contains(s: TickSet, t: int) -> bool:
    """Whether tick ``t`` is in ``s``."""
    i = _index(s, t)
    return i >= 0 and s[i][1] >= t


def contains_range(s: TickSet, lo: int, hi: int) -> bool:
    """Whether every tick of ``[lo, hi]`` (``lo <= hi``) is in ``s``."""
    i = _index(s, lo)
    return i >= 0 and s[i][1] >= hi


def overlaps(s: TickSet, lo: int, hi: int) -> bool:
    """Whether some tick of ``[lo, hi]`` is in ``s``."""
    if lo > hi or not s:
        return False
    i = _index(s, hi)
    return i >= 0 and s[i][1] >= lo


def run_end(s: TickSet, t: int) -> int | None:
    """The last tick of the run holding ``t``, or None when ``t`` is not in ``s``."""
    i = _index(s, t)
    if i >= 0 and s[i][1] >= t:
        return s[i][1]
    return None


def size(s: TickSet) -> int:
    """The number of ticks in ``s``."""
    return sum(hi - lo + 1 for lo, hi in s)


def chunks(s: TickSet, width: int) -> tuple[tuple[int, int], ...]:
    """Each run of ``s`` chopped into consecutive pieces of at most ``width`` ticks
    [GD §4.2] (a piece never spans two runs). ``width`` must be >= 1."""
    if width < 1:
        raise InvalidRange(f"ticksets.chunks: width {width!r} must be >= 1")
    out: list[tuple[int, int]] = []
    for lo, hi in s:
        cur = lo
        while cur <= hi:
            end = min(hi, cur + width - 1)
            out.append((cur, end))
            cur = end + 1
    return tuple(out)
