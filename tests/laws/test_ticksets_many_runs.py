"""Differential tests of ``gapless.impl.ticksets`` on tick sets of many runs, with windows on
the runs' edges, against the ``set[int]`` reference of ``gapless.spec.ticksets``.

``test_ticksets.py`` draws tick sets as random ``set[int]``: Hypothesis keeps those small, so
a set rarely has two runs inside a window whose last run crosses the window's end — the case
where ``clip`` trims the last run of several (a mutation run found it unjudged). Here a set
is drawn as alternating gaps and run lengths, so it has many runs, and each window ends on a
run's first or last tick or one tick beside it. ``is_canonical`` is also judged against its
definition (the module doc: ascending, disjoint, non-adjacent int pairs ``0 <= lo <= hi``) on
values that are almost canonical: a float, a bool, a negative tick, a list.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gapless.impl import ticksets as ts
from gapless.spec import ticksets as ref


@st.composite
def many_runs(draw: st.DrawFn) -> ts.TickSet:
    """A canonical tick set of up to 8 runs: gaps of >= 1 missing tick between runs."""
    shape = draw(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4)), max_size=8))
    out: list[tuple[int, int]] = []
    t = draw(st.integers(0, 2))
    for gap, length in shape:
        out.append((t, t + length - 1))
        t += length + gap
    return tuple(out)


@st.composite
def set_and_edge_window(draw: st.DrawFn) -> tuple[ts.TickSet, int, int]:
    """A tick set and a window whose ends sit on or beside the set's run edges."""
    s = draw(many_runs())
    edges = sorted({e + d for run in s for e in run for d in (-1, 0, 1)} | {0})
    lo = draw(st.sampled_from(edges))
    hi = draw(st.sampled_from([e for e in edges if e >= lo] or [lo]))
    return s, lo, hi


@given(set_and_edge_window())
def test_clip_on_run_edges(case: tuple[ts.TickSet, int, int]) -> None:
    s, lo, hi = case
    plain = ref.to_set(s)
    got = ts.clip(s, lo, hi)
    assert ts.is_canonical(got)
    assert ref.to_set(got) == ref.clip(plain, lo, hi)
    assert ts.overlaps(s, lo, hi) == bool(ref.clip(plain, lo, hi))
    if lo >= 0:
        assert ts.contains_range(s, lo, hi) == (set(range(lo, hi + 1)) <= plain)


@given(many_runs(), many_runs())
def test_set_algebra_on_many_runs(a: ts.TickSet, b: ts.TickSet) -> None:
    sa, sb = ref.to_set(a), ref.to_set(b)
    for got, want in (
        (ts.union(a, b), sa | sb),
        (ts.intersect(a, b), sa & sb),
        (ts.subtract(a, b), sa - sb),
    ):
        assert ts.is_canonical(got)
        assert ref.to_set(got) == want
    for lo, hi in b:
        got = ts.add(a, lo, hi)
        assert ref.to_set(got) == sa | set(range(lo, hi + 1))
        assert ts.is_canonical(got)


def _canonical_by_definition(s: Any) -> bool:
    """The module doc's definition, checked with the reference: a tuple of int pairs
    ``0 <= lo <= hi`` that is the reference's run form of the ticks it holds."""
    if type(s) is not tuple:
        return False
    for run in s:
        if type(run) is not tuple or len(run) != 2:
            return False
        if type(run[0]) is not int or type(run[1]) is not int or not 0 <= run[0] <= run[1]:
            return False
    return ref.runs(ref.to_set(s)) == s


def _spoil(draw: st.DrawFn, s: ts.TickSet) -> Any:
    """``s`` with at most one tick or run replaced by a near miss."""
    if not s:
        return draw(st.sampled_from([(), [], ((0, 0),), (((0, 0)),)]))
    i = draw(st.integers(0, len(s) - 1))
    lo, hi = s[i]
    bad = draw(
        st.sampled_from(
            [
                (lo, float(hi)),
                (float(lo), hi),
                (lo, True),
                (-1 - lo, hi),
                (lo - 1, lo - 1),
                (hi + 1, hi + 1),
                (lo, hi, hi),
                [lo, hi],
                (hi, lo),
                (lo, hi),
            ]
        )
    )
    spoiled = (*s[:i], bad, *s[i + 1 :])
    return draw(st.sampled_from([spoiled, list(spoiled)]))


@given(st.data())
def test_is_canonical_is_its_definition(data: st.DataObject) -> None:
    s = data.draw(many_runs())
    assert ts.is_canonical(s)
    value = _spoil(data.draw, s)
    assert ts.is_canonical(value) == _canonical_by_definition(value)
