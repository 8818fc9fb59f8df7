"""The ZeroMQ roles on the simulated network, judged by the trace-only invariants; each
invariant's non-vacuity: the planted bug it is for is caught."""

from __future__ import annotations

import attrs
import pytest
from _zmq_scenarios import BASIC, TREE

from gapless.impl.variants import Variant
from gapless.impl.zmq.policy import XpubOptions
from gapless.impl.zmq.variants import VARIANTS, policy_named
from gapless.invariants.zmq import INVARIANTS, MinimalTraffic, check
from gapless.models.zmq_net import run_script


def test_correct_protocol_passes_every_invariant() -> None:
    net = run_script(TREE, BASIC)
    assert check(TREE, net.records) == []
    delivered = sorted((r.node, r.detail.payload) for r in net.records if r.kind == "deliver")
    assert delivered == [("S2", b"A1"), ("S2", b"AB2"), ("S2", b"B3"), ("S3", b"AB2")]


@pytest.mark.parametrize(
    "options",
    [
        XpubOptions(verbose=True),
        XpubOptions(verboser=True),
        XpubOptions(manual=True),
        XpubOptions(welcome=b"Cwelcome"),
    ],
    ids=["verbose", "verboser", "manual", "welcome"],
)
def test_every_option_keeps_the_invariants(options: XpubOptions) -> None:
    net = run_script(TREE, BASIC, options={"D": options, "P": options})
    assert check(TREE, net.records) == []


def test_same_script_same_trace() -> None:
    assert run_script(TREE, BASIC).records == run_script(TREE, BASIC).records


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_planted_bug_is_caught_by_what_it_declares(name: str) -> None:
    variant: Variant = VARIANTS[name]
    net = run_script(TREE, BASIC, policy=policy_named(name))
    caught = {v.invariant for v in check(TREE, net.records)}
    assert caught & set(variant.caught_by), (name, caught)


def test_each_invariant_catches_some_planted_bug() -> None:
    catches: set[str] = set()
    for name in VARIANTS:
        net = run_script(TREE, BASIC, policy=policy_named(name))
        catches |= {v.invariant for v in check(TREE, net.records)}
    assert catches == {p.names[0] for p in INVARIANTS}


def test_minimal_traffic_flags_a_stale_route_and_counts_it_under_the_fallback() -> None:
    policy = policy_named("no-unsubscribe-on-disconnect")
    net = run_script(TREE, BASIC, policy=policy)
    bad = check(TREE, net.records, ["minimal_traffic"])
    assert [v.message for v in bad] == ["P#5 b'C4' sent P->D unwanted"]
    fallback = MinimalTraffic(attrs.evolve(TREE, fallback_limit=32))
    for r in net.records:
        fallback.observe(r)
    assert not fallback.finish()
    assert fallback.excess == 1
