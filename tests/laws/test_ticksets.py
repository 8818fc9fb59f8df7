"""Differential tests: ``gapless.impl.ticksets`` against the ``set[int]`` reference of
``gapless.spec.ticksets`` (STYLE.md, "Oracles").

Every operation runs on both, on random tick sets; the result must hold the same ticks, be
canonical, and a no-op must return the very same object. Huge ranges: each reference tick
``c`` stands for a block of real ticks ``[B[c], B[c+1])`` whose size is drawn from
{1, 2, 10^9}; set operations on whole blocks commute with the blow-up, so one check covers
single ticks and 10^9-tick runs in one value.
"""

from __future__ import annotations

from itertools import accumulate as running_sum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl import ticksets as ts
from gapless.impl.errors import InvalidRange, InvalidTick
from gapless.spec import ticksets as ref

SMALL = 40
HUGE = 10**9

ticks = st.sets(st.integers(min_value=0, max_value=SMALL))
sets = ticks.map(ref.runs)
window = st.tuples(st.integers(-2, SMALL + 2), st.integers(-2, SMALL + 2))


@given(sets)
def test_canonical_form_round_trips(s: ts.TickSet) -> None:
    assert ts.is_canonical(s)
    assert ts.of(s) == s
    assert ref.runs(ref.to_set(s)) == s
    assert ts.size(s) == len(ref.to_set(s))


@given(st.lists(st.tuples(st.integers(0, SMALL), st.integers(0, SMALL))))
def test_of_and_normalize_hold_exactly_the_ticks_of_the_pairs(
    pairs: list[tuple[int, int]],
) -> None:
    good = [(min(a, b), max(a, b)) for a, b in pairs]
    got = ts.of(good)
    assert ts.is_canonical(got)
    assert ref.to_set(got) == ref.to_set(tuple(good))
    assert ts.normalize(pairs) == ref.runs({t for a, b in pairs for t in range(a, b + 1)})


@given(sets, sets)
def test_union_intersect_subtract(a: ts.TickSet, b: ts.TickSet) -> None:
    sa, sb = ref.to_set(a), ref.to_set(b)
    for got, want in (
        (ts.union(a, b), sa | sb),
        (ts.intersect(a, b), sa & sb),
        (ts.subtract(a, b), sa - sb),
    ):
        assert ts.is_canonical(got)
        assert ref.to_set(got) == want
    # a no-op returns the very same object
    if sb <= sa:
        assert ts.union(a, b) is a
    if not (sa & sb):
        assert ts.subtract(a, b) is a


@given(sets, st.integers(0, SMALL), st.integers(0, SMALL))
def test_add(s: ts.TickSet, lo: int, hi: int) -> None:
    got = ts.add(s, lo, hi)
    assert ts.is_canonical(got)
    assert ref.to_set(got) == ref.to_set(s) | set(range(lo, hi + 1))
    if set(range(lo, hi + 1)) <= ref.to_set(s):
        assert got is s


@given(sets, window)
def test_clip_and_membership(s: ts.TickSet, w: tuple[int, int]) -> None:
    lo, hi = w
    plain = ref.to_set(s)
    got = ts.clip(s, lo, hi)
    assert ts.is_canonical(got)
    assert ref.to_set(got) == ref.clip(plain, lo, hi)
    if plain and min(plain) >= lo and max(plain) <= hi:
        assert got is s
    assert ts.overlaps(s, lo, hi) == bool(ref.clip(plain, lo, hi))
    if lo <= hi and lo >= 0:
        assert ts.contains_range(s, lo, hi) == (set(range(lo, hi + 1)) <= plain)
    for t in range(SMALL + 2):
        assert ts.contains(s, t) == (t in plain)
        assert ts.run_end(s, t) == ref.run_end(plain, t)


@given(sets, st.integers(1, 7))
def test_chunks(s: ts.TickSet, width: int) -> None:
    got = ts.chunks(s, width)
    assert got == ref.chunks(ref.to_set(s), width)
    assert all(hi - lo + 1 <= width for lo, hi in got)


@st.composite
def blocks(draw: st.DrawFn) -> list[int]:
    sizes = draw(st.lists(st.sampled_from([1, 2, HUGE]), min_size=SMALL + 2, max_size=SMALL + 2))
    return [0, *running_sum(sizes)]


def _blow_up(s: ts.TickSet, b: list[int]) -> ts.TickSet:
    """Reference tick c becomes the real ticks [b[c], b[c+1] - 1]."""
    return tuple((b[lo], b[hi + 1] - 1) for lo, hi in s)


@given(sets, sets, blocks())
def test_huge_runs_cost_what_small_ones_do(a: ts.TickSet, b: ts.TickSet, bl: list[int]) -> None:
    big_a, big_b = _blow_up(a, bl), _blow_up(b, bl)
    assert ts.union(big_a, big_b) == _blow_up(ts.union(a, b), bl)
    assert ts.intersect(big_a, big_b) == _blow_up(ts.intersect(a, b), bl)
    assert ts.subtract(big_a, big_b) == _blow_up(ts.subtract(a, b), bl)
    assert ts.size(big_a) == sum(bl[hi + 1] - bl[lo] for lo, hi in a)
    for lo, hi in b:
        assert ts.clip(big_a, bl[lo], bl[hi + 1] - 1) == _blow_up(ts.clip(a, lo, hi), bl)


def test_bad_input_is_refused_with_a_typed_error() -> None:
    with pytest.raises(InvalidRange, match=r"\(5, 3\) is empty or inverted"):
        ts.of([(5, 3)])
    with pytest.raises(InvalidTick, match="must be >= 0"):
        ts.of([(-1, 3)])
    with pytest.raises(InvalidRange, match="ticks must be ints"):
        ts.of([(1.5, 3)])  # type: ignore[list-item]
    with pytest.raises(InvalidRange, match="not a \\(lo, hi\\) pair"):
        ts.of([(1, 2, 3)])  # type: ignore[list-item]
    with pytest.raises(InvalidRange, match="width 0 must be >= 1"):
        ts.chunks(((0, 4),), 0)
    assert not ts.is_canonical(((3, 4), (1, 2)))
    assert not ts.is_canonical(((1, 2), (3, 4)))
    assert not ts.is_canonical(((-1, 2),))
    assert not ts.is_canonical([(1, 2)])


def test_the_reference_catches_a_wrong_operation() -> None:
    """Non-vacuity: an off-by-one subtract (the kind of bug the differential test is for)
    disagrees with the reference on a small case."""

    def subtract_off_by_one(a: ts.TickSet, b: ts.TickSet) -> ts.TickSet:
        return ts.normalize(
            [(lo, hi) for lo, hi in ts.subtract(a, b)] + [(b_hi, b_hi) for _b_lo, b_hi in b]
        )

    a, b = ((0, 9),), ((3, 4),)
    assert ref.to_set(ts.subtract(a, b)) == ref.to_set(a) - ref.to_set(b)
    assert ref.to_set(subtract_off_by_one(a, b)) != ref.to_set(a) - ref.to_set(b)
