"""Reference semantics of tick sets: a plain ``set[int]``, explicit loops.

The slow, obviously-correct oracle that ``gapless.impl.ticksets`` is differentially tested
against (STYLE.md, "Oracles"). A tick set is the set of ticks it holds; every operation is
the set operation its name says, tick by tick. Costs are proportional to the ticks involved,
so tests keep ticks small.

>>> to_set(((1, 3), (7, 7)))
{1, 2, 3, 7}
>>> runs({7, 1, 2, 3})
((1, 3), (7, 7))
"""

from __future__ import annotations

__all__ = ["chunks", "clip", "run_end", "runs", "to_set"]


def to_set(pairs: tuple[tuple[int, int], ...]) -> set[int]:
    """Every tick of the inclusive ``pairs``."""
    out: set[int] = set()
    for lo, hi in pairs:
        out.update(range(lo, hi + 1))
    return out


def runs(ticks: set[int]) -> tuple[tuple[int, int], ...]:
    """The maximal runs of consecutive ticks, ascending."""
    out: list[tuple[int, int]] = []
    for t in sorted(ticks):
        if out and out[-1][1] == t - 1:
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return tuple(out)


def clip(ticks: set[int], lo: int, hi: int) -> set[int]:
    """The ticks inside ``[lo, hi]``."""
    return {t for t in ticks if lo <= t <= hi}


def run_end(ticks: set[int], t: int) -> int | None:
    """The last tick of the consecutive run holding ``t`` (None when ``t`` is absent)."""
    if t not in ticks:
        return None
    while t + 1 in ticks:
        t += 1
    return t


def chunks(ticks: set[int], width: int) -> tuple[tuple[int, int], ...]:
    """Each maximal run cut, from its first tick, into pieces of ``width`` ticks (the last
    piece of a run may be shorter)."""
    out: list[tuple[int, int]] = []
    for lo, hi in runs(ticks):
        start = lo
        piece: list[int] = []
        for t in range(lo, hi + 1):
            piece.append(t)
            if len(piece) == width:
                out.append((start, t))
                start, piece = t + 1, []
        if piece:
            out.append((start, piece[-1]))
    return tuple(out)
