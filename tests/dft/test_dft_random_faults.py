"""Hypothesis: random interleavings of subscriptions, publications, crashes, link failures and
heals — within δ and beyond it. Safety invariants hold in every run; the bounded guarantee is
judged only while the failures stay within δ (the out-of-budget verdict) [DFT §II, §VIII]."""

from __future__ import annotations

from _dft_net import Net
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.dft.config import DFTConfig
from gapless.impl.dft.tree import PrimaryTree
from gapless.invariants.dft import DFT_SAFETY, DFTContext, check_dft_trace
from gapless.spec.filters import reference_matcher

FILTERS = ("true", "x == 1", "x < 2")


@st.composite
def runs(draw: st.DrawFn) -> tuple[PrimaryTree, int, list[tuple[str, ...]]]:
    n = draw(st.integers(3, 9))
    joins = [("B0", None)] + [(f"B{i}", f"B{draw(st.integers(0, i - 1))}") for i in range(1, n)]
    tree = PrimaryTree.build(joins)
    brokers = st.sampled_from(list(tree.order))
    links = st.sampled_from([(b, p) for b, p in joins[1:] if p is not None])
    action = st.one_of(
        st.tuples(st.just("sub"), brokers, st.sampled_from(FILTERS)),
        st.tuples(st.just("pub"), brokers, st.sampled_from(("0", "1", "2"))),
        st.tuples(st.just("crash"), brokers),
        st.tuples(st.just("fail"), links.map("|".join)),
        st.tuples(st.just("heal"), links.map("|".join)),
    )
    return tree, draw(st.integers(0, 2)), draw(st.lists(action, max_size=14))


def _play(net: Net, actions: list[tuple[str, ...]]) -> None:
    for i, a in enumerate(actions):
        if a[0] == "sub" and a[1] in net.alive:
            net.subscribe(a[1], f"S{i}", a[2])
        elif a[0] == "pub" and a[1] in net.alive:
            net.publish(a[1], x=int(a[2]))
        elif a[0] == "crash" and a[1] in net.alive:
            net.crash(a[1])
        elif a[0] == "fail":
            net.fail_link(*a[1].split("|"))
        elif a[0] == "heal" and frozenset(a[1].split("|")) in net.failed:
            net.heal_link(*a[1].split("|"))
        net.drain()


@given(runs())
def test_safety_always_bounded_delivery_within_budget(
    run: tuple[PrimaryTree, int, list[tuple[str, ...]]],
) -> None:
    tree, delta, actions = run
    net = Net(tree, config=DFTConfig(delta=delta))
    _play(net, actions)
    ctx = DFTContext(tree=tree, delta=delta, matches=reference_matcher())
    v, _ = check_dft_trace(net.records, ctx)
    assert v is None, v.explain() if v else ""


@given(runs())
def test_safety_invariants_hold_beyond_budget_with_delta_zero(
    run: tuple[PrimaryTree, int, list[tuple[str, ...]]],
) -> None:
    tree, _, actions = run
    net = Net(tree, config=DFTConfig(delta=0))
    _play(net, actions)
    ctx = DFTContext(tree=tree, delta=0, matches=reference_matcher())
    v, _ = check_dft_trace(net.records, ctx, DFT_SAFETY)
    assert v is None, v.explain() if v else ""
