"""impl's tables equal spec's, exhaustively over every value of the two-payload universe."""

from __future__ import annotations

import itertools

import pytest
from _lattice_values import cur, to_impl, to_spec

from gapless.impl import curiosity as ic
from gapless.impl import knowledge as ik
from gapless.impl import transfer as it
from gapless.impl.errors import LatticeMismatch
from gapless.spec import lattices as sp

PAIRS = list(itertools.product(sp.KNOWLEDGE, repeat=2))
PREDICATES = {
    "none": frozenset(),
    "a": frozenset({"a"}),
    "b": frozenset({"b"}),
    "both": frozenset({"a", "b"}),
}


def test_universe_round_trips() -> None:
    assert [to_spec(to_impl(x)) for x in sp.KNOWLEDGE] == list(sp.KNOWLEDGE)
    assert len(set(map(to_impl, sp.KNOWLEDGE))) == 9


@pytest.mark.parametrize("op", ["leq", "join", "meet"])
def test_knowledge_order_join_meet(op: str) -> None:
    spec_op = getattr(sp, op)
    mismatches = []
    for x, y in PAIRS:
        got = getattr(to_impl(x), op)(to_impl(y))
        want = spec_op(x, y)
        got_s = got if isinstance(got, bool) else to_spec(got)
        if got_s != want:
            mismatches.append(f"{op}({x}, {y}): impl {got_s}, spec {want}")
    assert mismatches == []


def test_lattice_ops_object_agrees() -> None:
    assert ik.KNOWLEDGE.bottom == to_impl("Q")
    assert ik.KNOWLEDGE.top == to_impl("E")
    for x, y in PAIRS:
        assert to_spec(ik.KNOWLEDGE.join(to_impl(x), to_impl(y))) == sp.join(x, y)
        assert to_spec(ik.KNOWLEDGE.meet(to_impl(x), to_impl(y))) == sp.meet(x, y)
        assert ik.KNOWLEDGE.leq(to_impl(x), to_impl(y)) == sp.leq(x, y)


@pytest.mark.parametrize("pred", sorted(PREDICATES))
def test_filter_value(pred: str) -> None:
    holds = PREDICATES[pred]
    for x in sp.KNOWLEDGE:
        got = to_spec(it.filter_value(to_impl(x), lambda p: p in holds))
        assert got == sp.filter_value(x, lambda p: p in holds), (x, pred)


@pytest.mark.parametrize("arity", [1, 2, 3])
def test_merge_values(arity: int) -> None:
    mismatches = []
    for xs in itertools.product(sp.KNOWLEDGE, repeat=arity):
        got = to_spec(it.merge_values([to_impl(x) for x in xs]))
        want = sp.merge_values(xs)
        if got != want:
            mismatches.append(f"merge{xs}: impl {got}, spec {want}")
    assert mismatches == []


@pytest.mark.parametrize("op", ["forget", "finalize", "release"])
def test_forgetting(op: str) -> None:
    for x in sp.KNOWLEDGE:
        assert to_spec(getattr(ik, op)(to_impl(x))) == getattr(sp, op)(x), (op, x)


def test_curiosity_chain() -> None:
    assert ic.CURIOSITY.bottom is ic.N
    assert ic.CURIOSITY.top is ic.A
    for x, y in itertools.product(sp.CURIOSITY, repeat=2):
        assert cur(x).leq(cur(y)) == sp.c_leq(x, y)
        assert cur(x).join(cur(y)) == cur(sp.c_join(x, y))
        assert cur(x).meet(cur(y)) == cur(sp.c_meet(x, y))
    for x in sp.CURIOSITY:
        assert ic.forget_curiosity(cur(x)) == cur(sp.forget_curiosity(x))


def test_demand_decomposition() -> None:
    for x in sp.CURIOSITY:
        d = ic.decompose(cur(x))
        assert (d.acked, d.curious) == sp.decompose(x)
    for acked, curious in sp.DEMANDS:
        assert ic.recompose(ic.Demand(acked=acked, curious=curious)) == cur(
            sp.recompose((acked, curious))
        )
    for d1, d2 in itertools.product(sp.DEMANDS, repeat=2):
        got = ic.Demand(acked=d1[0], curious=d1[1]).combine(ic.Demand(acked=d2[0], curious=d2[1]))
        assert (got.acked, got.curious) == sp.combine([d1, d2])


@pytest.mark.parametrize("arity", [0, 1, 2, 3])
def test_upstream_equals_naive_rule_and_decomposition(arity: int) -> None:
    for cs in itertools.product(sp.CURIOSITY, repeat=arity):
        d = ic.combine([cur(c) for c in cs])
        assert (d.acked, d.curious) == sp.combine(sp.decompose(c) for c in cs)
        if arity == 0:  # no downstream stream: impl refuses a vacuous ack (see upstream)
            with pytest.raises(LatticeMismatch, match="at least one"):
                ic.upstream([])
            continue
        got = ic.upstream([cur(c) for c in cs])
        assert got == cur(sp.naive_upstream(cs)), cs
        assert got == cur(sp.upstream(cs)), cs


def test_link() -> None:
    for k, c in itertools.product(sp.KNOWLEDGE, sp.CURIOSITY):
        k2, c2 = ic.link(to_impl(k), cur(c))
        want_k, want_c = sp.link(k, c)
        assert (to_spec(k2), c2) == (want_k, cur(want_c)), (k, c)


def test_spec_link_fixed_points_are_the_linked_pairs() -> None:
    for k, c in itertools.product(sp.KNOWLEDGE, sp.CURIOSITY):
        assert (sp.link(k, c) == (k, c)) == sp.linked(k, c)
