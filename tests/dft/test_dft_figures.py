"""The §IX evaluation [DFT §IX]: the connectivity counts of Figure 9, cross-checked against the
real roles on the 1000-broker network; Figures 11 and 12 against the roles' own helpers."""

from __future__ import annotations

import random

import pytest
from _dft_net import Net

from gapless.impl.dft.config import DFTConfig
from gapless.impl.dft.routing import active_sessions
from gapless.impl.dft.tree import complete_tree
from gapless.models import dft_figures as F


def test_chain_and_legitimate_counts_differ_where_the_paper_and_the_protocol_do() -> None:
    # δ = 1, path a x F y F b: no chain of two failures (the paper: connected), but the window
    # F y F bypasses two of three brokers (the protocol: not legitimate)
    flags = [False, False, True, False, True, False]
    assert F.chain_connected(flags, 1)
    assert not F.legitimately_connected(flags, 1)
    assert F.legitimately_connected(flags, 2)
    assert not F.chain_connected([False, True, True, False], 1)
    assert F.chain_connected([False, True, True, False], 2)
    assert F.legitimately_connected([False, False, False], 0)
    assert not F.legitimately_connected([False, True, False], 0)


def test_tree_path_matches_the_primary_tree() -> None:
    t, tree = F.int_tree(200, 3), complete_tree(200, 3)
    rng = random.Random(1)
    for _ in range(200):
        a, b = rng.sample(range(200), 2)
        assert [f"B{x}" for x in F.tree_path(t, a, b)] == list(tree.path(f"B{a}", f"B{b}"))


def test_fig9_shape_and_order() -> None:
    r = F.fig9(n=300, runs=4, pairs=300, ks=(10, 60))
    assert r["runs"] == 4
    assert len(r["points"]) == 2 * 4 * 2
    for f in (3, 7):
        for k in (10, 60):
            pcts = [r["points"][f"f{f}_d{d}_k{k}"] for d in range(4)]
            for p in pcts:
                assert p["disconnected_pct_legitimate"] >= p["disconnected_pct"]
            # a larger δ never disconnects more pairs of the same failure sets (chain count)
            chain = [p["disconnected_pct"] for p in pcts]
            assert chain == sorted(chain, reverse=True)
        assert r["points"][f"f{f}_d0_k60"]["disconnected_pct"] > 0


def test_neighbourhoods_and_active_sessions_match_the_roles_helpers() -> None:
    t, tree = F.int_tree(120, 3), complete_tree(120, 3)
    for d in range(4):
        want = [len(tree.neighbourhood(f"B{b}", d + 1)) for b in range(120)]
        assert F.neighbourhood_sizes(t, d + 1) == want
    failed = frozenset(random.Random(2).sample(range(120), 25))
    got = F.active_session_counts(t, failed, 4)
    want = []
    for b in range(120):
        if b in failed:
            continue
        est = {x for x in tree.neighbourhood(f"B{b}", 4) if int(x[1:]) not in failed}
        want.append(len(active_sessions(tree, f"B{b}", est)))
    assert got == want
    assert F.percentiles([1, 2, 3, 4], (50, 100)) == {"p50": 2, "p100": 4}
    assert F.cdf([1, 1, 3]) == ([1, 3], [2 / 3, 1.0])


def _cross_check(
    fanout: int, delta: int, failed: list[int], pubs: list[int], subs: list[int]
) -> None:
    """Subscribe at ``subs``, crash ``failed``, publish once at each of ``pubs`` on the real
    roles (1000 brokers): a pair is served exactly when the legitimate count says connected."""
    n = 1000
    t, tree = F.int_tree(n, fanout), complete_tree(n, fanout)
    net = Net(tree, DFTConfig(delta=delta))
    for s in subs:
        net.subscribe(f"B{s}", f"S{s}", "true")
    net.drain(limit=5_000_000)
    for b in failed:
        net.crash(f"B{b}")
    net.drain(limit=5_000_000)
    for p in pubs:
        net.publish(f"B{p}", x=p)
    net.drain(limit=5_000_000)
    down = set(failed)
    agree = {True: 0, False: 0}
    for s in subs:
        got = {src for src, _ in net.delivered(f"S{s}")}
        for p in pubs:
            flags = [x in down for x in F.tree_path(t, p, s)]
            want = F.legitimately_connected(flags, delta)
            assert (f"B{p}" in got) == want, (p, s, flags)
            agree[want] += 1
    assert agree[True]
    assert agree[False]


def test_legitimate_count_matches_the_roles_on_1000_brokers() -> None:
    # a constructed failure set: with fanout 3, P(B40, B0) = B40 B13 B4 B1 B0; fail B13 and
    # B1: no chain of two, but the
    # window B13 B4 B1 bypasses two (δ = 1): the paper counts B40-B0 connected, the roles not
    t = F.int_tree(1000, 3)
    assert F.tree_path(t, 40, 0) == [40, 13, 4, 1, 0]
    flags = [x in (13, 1) for x in F.tree_path(t, 40, 0)]
    assert F.chain_connected(flags, 1)
    assert not F.legitimately_connected(flags, 1)
    rng = random.Random(7)
    failed = sorted({13, 1, *rng.sample(range(2, 1000), 60)} - {40, 0})
    live = [b for b in range(1000) if b not in failed]
    subs = [0, *rng.sample(live, 3)]
    pubs = [40, *rng.sample(live, 3)]
    _cross_check(3, 1, failed, pubs, subs)


@pytest.mark.parametrize("delta", [0, 2])
def test_legitimate_count_matches_the_roles_for_other_deltas(delta: int) -> None:
    # P(B121, B0) = B121 B40 B13 B4 B1 B0: a chain of δ + 1 failures on it cuts the pair
    chain = [40, 13, 4][: delta + 1]
    rng = random.Random(delta)
    failed = sorted({*chain, *rng.sample(range(2, 1000), 80)} - {121, 0, 364})
    live = [b for b in range(1000) if b not in failed]
    subs = [0, 364, *rng.sample(live, 2)]  # B364 is B121's child: always served
    _cross_check(3, delta, failed, [121, *rng.sample(live, 2)], subs)
