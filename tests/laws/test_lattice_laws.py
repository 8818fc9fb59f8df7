"""The shipped law checkers, run over impl's lattices and transfer functions."""

from __future__ import annotations

import doctest
import itertools
from collections.abc import Callable

from _lattice_values import CURIOSITIES, SAMPLES_3, curiosity, knowledge
from hypothesis import given

import gapless.invariants.laws as laws_module
from gapless.impl import curiosity as ic
from gapless.impl import knowledge as ik
from gapless.impl import transfer as it
from gapless.invariants.laws import (
    check_closure,
    check_lattice,
    check_lowers,
    check_monotone,
    product_leq,
)
from gapless.spec import lattices as sp

k_leq = ik.KNOWLEDGE.leq


def test_law_checker_doctests() -> None:
    result = doctest.testmod(laws_module)
    assert result.attempted >= 5
    assert result.failed == 0


def test_spec_doctests() -> None:
    result = doctest.testmod(sp)
    assert result.attempted >= 3
    assert result.failed == 0


def test_knowledge_is_a_lattice() -> None:
    assert check_lattice(ik.KNOWLEDGE, SAMPLES_3) == []


def test_curiosity_is_a_lattice() -> None:
    assert check_lattice(ic.CURIOSITY, CURIOSITIES) == []


def test_filter_is_monotone_for_every_predicate() -> None:
    for holds in (set(), {"a"}, {"b", "c"}, {"a", "b", "c"}):
        found = check_monotone(_filter_by(holds), SAMPLES_3, k_leq, name="filter")
        assert found == [], holds


def _filter_by(holds: set[str]) -> Callable[[ik.Knowledge], ik.Knowledge]:
    return lambda v: it.filter_value(v, lambda p: p in holds)


def test_merge_is_monotone_in_both_inputs() -> None:
    pairs = list(itertools.product(SAMPLES_3, repeat=2))
    found = check_monotone(
        lambda p: it.merge_values(p),
        pairs,
        product_leq(k_leq, k_leq),
        out_leq=k_leq,
        name="merge",
    )
    assert found == []


def test_forgetting_only_lowers() -> None:
    for fn in (ik.forget, ik.finalize, ik.release):
        assert check_lowers(fn, SAMPLES_3, k_leq, name=fn.__name__) == []
    assert check_lowers(ic.forget_curiosity, CURIOSITIES, ic.CURIOSITY.leq) == []


def test_finalize_is_not_monotone() -> None:
    # A fact gapless prove records: D(a) <= D*(a) but finalize gives D(a) vs F.
    found = check_monotone(ik.finalize, SAMPLES_3, k_leq, name="finalize")
    assert found
    assert "finalize_monotone" in str(found[0])


def test_link_is_a_closure_operator() -> None:
    pairs = list(itertools.product(SAMPLES_3, CURIOSITIES))
    found = check_closure(
        lambda p: ic.link(*p), pairs, product_leq(k_leq, ic.CURIOSITY.leq), name="link"
    )
    assert found == []


def test_naive_rule_is_not_monotone_but_combine_is() -> None:
    pairs = list(itertools.product(CURIOSITIES, repeat=2))
    chain2 = product_leq(ic.CURIOSITY.leq, ic.CURIOSITY.leq)
    naive = check_monotone(lambda p: ic.upstream(p), pairs, chain2, out_leq=ic.CURIOSITY.leq)
    assert naive, "GD's rule is expected to be non-monotone in N < C < A"
    demands = [ic.Demand(acked=a, curious=c) for a, c in sp.DEMANDS]

    def d_leq(x: ic.Demand, y: ic.Demand) -> bool:
        return sp.demand_leq((x.acked, x.curious), (y.acked, y.curious))

    found = check_monotone(
        lambda p: p[0].combine(p[1]),
        list(itertools.product(demands, repeat=2)),
        product_leq(d_leq, d_leq),
        out_leq=d_leq,
        name="combine",
    )
    assert found == []


@given(knowledge, knowledge, knowledge)
def test_join_meet_laws_hypothesis(x: ik.Knowledge, y: ik.Knowledge, z: ik.Knowledge) -> None:
    assert x.join(y) == y.join(x)
    assert x.join(y).join(z) == x.join(y.join(z))
    assert x.meet(y).meet(z) == x.meet(y.meet(z))
    assert x.join(x.meet(y)) == x
    assert x.meet(x.join(y)) == x
    assert x.leq(y) == (x.join(y) == y) == (x.meet(y) == x)
    if x.leq(z) and y.leq(z):
        assert x.join(y).leq(z)


@given(knowledge, knowledge, knowledge, knowledge)
def test_merge_monotone_hypothesis(
    x: ik.Knowledge, y: ik.Knowledge, x2: ik.Knowledge, y2: ik.Knowledge
) -> None:
    if x.leq(x2) and y.leq(y2):
        assert it.merge_values([x, y]).leq(it.merge_values([x2, y2]))


@given(knowledge, curiosity, knowledge, curiosity)
def test_link_monotone_hypothesis(
    k: ik.Knowledge, c: ic.Curiosity, k2: ik.Knowledge, c2: ic.Curiosity
) -> None:
    if k.leq(k2) and c.leq(c2):
        a, b = ic.link(k, c), ic.link(k2, c2)
        assert a[0].leq(b[0])
        assert a[1].leq(b[1])
