"""The DFT zoo: each planted bug, on a network where it shows, is caught by an invariant it
declares; the paper's policy passes the same run [DFT §I, §V-VIII]."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest
from _dft_net import Net, figure1

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.dft.variants import VARIANTS
from gapless.invariants.dft import DFTContext, check_dft_trace
from gapless.spec.filters import reference_matcher


def _chain(*names: str) -> PrimaryTree:
    return PrimaryTree.build([(n, names[i - 1] if i else None) for i, n in enumerate(names)])


def gap_section_i(policy: DFTPolicy) -> Net:
    """§I: s2 issued while B1-B2 is down; p1..p3 published; the link heals."""
    net = Net(figure1(), DFTConfig(delta=1), policy)
    net.subscribe("B3", "S1", "loc == 'USA'")
    net.drain()
    net.fail_link("B1", "B2")
    net.drain()
    net.subscribe("B4", "S2", "true")
    net.drain()
    for loc in ("USA", "UK", "USA"):
        net.publish("B1", loc=loc)
    net.drain()
    net.heal_link("B1", "B2")
    net.drain()
    return net


def barrier_then_heal(policy: DFTPolicy) -> Net:
    """S2 subscribes behind B2's barrier <B1> (δ=0); B1, which has not accepted S2's
    subscription, publishes; the link heals (partial recovery brings B1 the subscription);
    B1 publishes again."""
    net = Net(figure1(), DFTConfig(delta=0), policy)
    net.subscribe("B3", "S1", "true")
    net.drain()
    net.fail_link("B1", "B2")
    net.drain()
    net.subscribe("B4", "S2", "true")
    net.drain()
    net.publish("B1", x=0)
    net.drain()
    net.heal_link("B1", "B2")
    net.drain()
    net.publish("B1", x=1)
    net.drain()
    return net


def slow_branch(policy: DFTPolicy) -> Net:
    """S subscribes at B3; the publisher B6 is four hops away on one branch, B4 one hop on
    the other. p1 is published once S's subscription is accepted, p2 after everything."""
    joins: list[tuple[str, str | None]] = [("B2", None), ("B3", "B2"), ("B4", "B2")]
    joins += [("B1", "B2"), ("B0", "B1"), ("B5", "B0"), ("B6", "B5")]
    tree = PrimaryTree.build(joins)
    net = Net(tree, DFTConfig(delta=1), policy)
    net.subscribe("B3", "S", "true")
    for _ in range(20):
        if any(r.kind == "persist" for r in net.records):
            break
        net.drain(rounds=1)
    net.publish("B6", x=1)
    net.drain()
    net.publish("B6", x=2)
    net.drain()
    return net


def local_target_waits(policy: DFTPolicy) -> Net:
    """S at B2; link B1-B2 fails; B1 publishes p1 (it must wait for B2); heal; p2."""
    net = Net(_chain("B1", "B2", "B3"), DFTConfig(delta=1), policy)
    net.subscribe("B2", "S", "true")
    net.drain()
    net.fail_link("B1", "B2")
    net.publish("B1", x=1)
    net.drain()
    net.heal_link("B1", "B2")
    net.drain()
    net.publish("B1", x=2)
    net.drain()
    return net


def resend_after_link_failure(policy: DFTPolicy) -> Net:
    """C0 -> C1 -> C2 (S at C2): C2 has p but C1's confirmation has not reached C0 when the
    link C0-C1 fails; C0 re-sends p straight to C2 [DFT §VII's example]."""
    net = Net(_chain("C0", "C1", "C2"), DFTConfig(delta=1), policy)
    net.subscribe("C2", "S", "true")
    net.drain()
    net.publish("C0", x=1)
    net.drain(rounds=2)
    net.fail_link("C0", "C1")
    net.drain()
    return net


def restart_in_the_middle(policy: DFTPolicy) -> Net:
    """δ = 1, chain C0..C5, S at C5: C2 crashes and restarts between publications; the
    publications after its recovery travel through it again [DFT §VIII-B]."""
    net = Net(_chain(*(f"C{i}" for i in range(6))), config=DFTConfig(delta=1), policy=policy)
    net.subscribe("C5", "S", "true")
    net.drain()
    for x in (1, 2, 3):
        if x == 2:
            net.crash("C2")
        net.publish("C0", x=x)
        net.drain()
    net.restart("C2")
    net.drain()
    for x in (4, 5):
        net.publish("C0", x=x)
        net.drain()
    return net


def partition_on_a_chain(policy: DFTPolicy) -> Net:
    """Chain C0..C5, δ = 1: S at C5; link C1-C2 fails (C2 detects (C2, 1, <C1>)); C0
    publishes. With DPT = δ, C0 and C4 (2 links from C2) never learn the pid."""
    net = Net(_chain(*(f"C{i}" for i in range(6))), DFTConfig(delta=1), policy)
    net.subscribe("C5", "S", "true")
    net.drain()
    net.fail_link("C1", "C2")
    net.drain()
    net.publish("C0", x=1)
    net.drain()
    return net


SCENARIOS: dict[str, Callable[[DFTPolicy], Net]] = {
    "dpt-delta": partition_on_a_chain,
    "forget-stamps": restart_in_the_middle,
    "no-sync": restart_in_the_middle,
    "naive": gap_section_i,
    "untagged-confirmations": barrier_then_heal,
    "deliver-tagged": barrier_then_heal,
    "early-accept": slow_branch,
    "drop-local-target": local_target_waits,
    "short-seqvec": resend_after_link_failure,
}


def _verdict(net: Net, naive: bool) -> str | None:
    ctx = DFTContext(
        tree=net.tree,
        delta=net.config.delta,
        matches=reference_matcher(),
        reports_acceptance=not naive,
    )
    v, _ = check_dft_trace(net.records, ctx)
    return None if v is None else v.invariant


def test_every_declared_variant_has_a_scenario() -> None:
    assert set(SCENARIOS) == set(VARIANTS)
    assert len(VARIANTS) >= 6


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_variant_is_caught_and_the_paper_policy_is_not(name: str) -> None:
    variant = VARIANTS[name]
    bad = SCENARIOS[name](variant.policy)
    caught = _verdict(bad, naive=variant.policy.forwarding == "naive")
    assert caught in variant.caught_by, (name, caught)
    good = SCENARIOS[name](PAPER_POLICY)
    assert _verdict(good, naive=False) is None, name


def test_short_seqvec_delivers_the_resent_copy_twice() -> None:
    bad = resend_after_link_failure(VARIANTS["short-seqvec"].policy)
    good = resend_after_link_failure(PAPER_POLICY)
    assert bad.delivered("S") == [("C0", 1), ("C0", 1)]
    assert good.delivered("S") == [("C0", 1)]
    # the paper's policy saw the duplicate and confirmed it to C0 straight away (line 6)
    assert not good.broker("C0").queue


def test_policy_field_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="forwarding='x'"):
        attrs.evolve(PAPER_POLICY, forwarding="x")
