"""Non-vacuity: broken variants are caught by the law checkers and by Hypothesis.

(a) one join table entry changed (F ⊔ S gives E); (b) a filter that passes D(a) when the
predicate fails; (c) a merge that passes F while an input is Q. The same three variants are
refuted by Z3 in ``tests/proofs/test_nonvacuity_z3.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import pytest
from _lattice_values import SAMPLES_3
from hypothesis import given, settings
from hypothesis import strategies as st

from gapless.impl import knowledge as ik
from gapless.impl import transfer as it
from gapless.invariants.laws import LawError, assert_lattice, check_monotone, product_leq

k_leq = ik.KNOWLEDGE.leq
values = st.sampled_from(SAMPLES_3)
# Small finite domains: enough examples that Hypothesis covers every pair.
EXHAUSTIVE = settings(max_examples=600)


# -- the broken variants -------------------------------------------------------------


def broken_join(a: ik.Knowledge, b: ik.Knowledge) -> ik.Knowledge:
    if a == ik.F and b == ik.S:
        return ik.E  # was S
    return a.join(b)


class BrokenJoinOps:
    bottom = ik.Q
    top = ik.E
    join = staticmethod(broken_join)
    meet = staticmethod(ik.KNOWLEDGE.meet)
    leq = staticmethod(ik.KNOWLEDGE.leq)


def broken_filter(v: ik.Knowledge, matches: Callable[[object], bool]) -> ik.Knowledge:
    if v.kind is ik.Kind.D and not matches(v.payload):
        return v  # should be F
    return it.filter_value(v, matches)


def broken_merge(vs: Sequence[ik.Knowledge]) -> ik.Knowledge:
    quiet = not any(v.is_data or v == ik.E for v in vs)
    if quiet and ik.F in vs and ik.Q in vs:
        return ik.F  # should be Q
    return it.merge_values(vs)


def matches_nothing(payload: object) -> bool:
    return False


# -- law checkers ----------------------------------------------------------------------


def test_checker_catches_broken_join() -> None:
    with pytest.raises(LawError) as info:
        assert_lattice(BrokenJoinOps(), SAMPLES_3)
    laws = {v.law for v in info.value.violations}
    assert {"join_least", "join_commutative"} <= laws
    assert "F" in str(info.value)
    assert "S" in str(info.value)


def test_checker_passes_the_real_join() -> None:
    assert_lattice(ik.KNOWLEDGE, SAMPLES_3)


def test_checker_catches_broken_filter() -> None:
    found = check_monotone(
        lambda v: broken_filter(v, matches_nothing), SAMPLES_3, k_leq, name="filter"
    )
    assert found
    assert found[0].law == "filter_monotone"


def test_checker_catches_broken_merge() -> None:
    pairs = list(itertools.product(SAMPLES_3, repeat=2))
    found = check_monotone(
        broken_merge, pairs, product_leq(k_leq, k_leq), out_leq=k_leq, name="merge"
    )
    assert found
    assert found[0].law == "merge_monotone"


# -- Hypothesis: the same properties, written as tests, fail on the variants ---------


def join_is_least(join: Callable[[ik.Knowledge, ik.Knowledge], ik.Knowledge]) -> Callable[[], None]:
    @EXHAUSTIVE
    @given(values, values)
    def prop(x: ik.Knowledge, y: ik.Knowledge) -> None:
        j = join(x, y)
        assert k_leq(x, j)
        assert k_leq(y, j)
        assert j == join(y, x)
        for z in SAMPLES_3:  # every upper bound, not just a sampled one
            if k_leq(x, z) and k_leq(y, z):
                assert k_leq(j, z)

    return prop


def filter_follows_gd(
    filt: Callable[[ik.Knowledge, Callable[[object], bool]], ik.Knowledge],
) -> Callable[[], None]:
    @EXHAUSTIVE
    @given(values, st.frozensets(st.sampled_from(["a", "b", "c"])))
    def prop(x: ik.Knowledge, holds: frozenset[str]) -> None:
        out = filt(x, lambda p: p in holds)
        if x.is_data:
            assert out == (x if x.payload in holds else ik.F)
        else:
            assert out == x

    return prop


def merge_final_only_if_all_final(
    merge: Callable[[Sequence[ik.Knowledge]], ik.Knowledge],
) -> Callable[[], None]:
    final = {ik.F, ik.S}

    @EXHAUSTIVE
    @given(st.lists(values, min_size=1, max_size=3))
    def prop(xs: list[ik.Knowledge]) -> None:
        assert (merge(xs) in final) == all(x in final for x in xs)

    return prop


def test_hypothesis_passes_the_real_operations() -> None:
    join_is_least(ik.KNOWLEDGE.join)()
    filter_follows_gd(it.filter_value)()
    merge_final_only_if_all_final(it.merge_values)()


def test_hypothesis_catches_broken_join() -> None:
    with pytest.raises(AssertionError):
        join_is_least(broken_join)()


def test_hypothesis_catches_broken_filter() -> None:
    with pytest.raises(AssertionError):
        filter_follows_gd(broken_filter)()


def test_hypothesis_catches_broken_merge() -> None:
    with pytest.raises(AssertionError):
        merge_final_only_if_all_final(broken_merge)()
