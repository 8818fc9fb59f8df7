"""Joins during a run [DFT §I, §II]: a newcomer attaches to the primary tree, its
Δ-neighbourhood is told, sessions are established, the existing subscriptions reach it by
partial recovery [DFT §VIII-A], its own subscriptions and publications work; the
invariants judge the run on the grown tree (``spec/dft.md``, "Joins during a run")."""

from __future__ import annotations

import pytest
from _dft4_net import JoinNet
from pyrsistent import pvector

from gapless.impl.dft import role
from gapless.impl.dft.arrivals import Arrival
from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.messages import PubMsg, SubMsg
from gapless.impl.dft.tree import complete_tree
from gapless.impl.dft.variants import VARIANTS
from gapless.impl.effects import Rejected, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Receive, Restart
from gapless.invariants.dft import DFTContext, check_dft_trace
from gapless.spec.filters import reference_matcher

TREE = complete_tree(13, 3)


def _verdict(net: JoinNet) -> str | None:
    ctx = DFTContext(tree=net.tree, delta=net.config.delta, matches=reference_matcher())
    v, _ = check_dft_trace(net.records, ctx)
    return None if v is None else v.invariant


def _rejected(net: JoinNet) -> list[object]:
    return [r.detail for r in net.records if r.kind == "rejected"]


def join_after_traffic(policy: DFTPolicy = PAPER_POLICY) -> JoinNet:
    """S0 at B4 and S2 at B7 subscribe, B0 publishes; B13 joins under B4; S1 subscribes at
    B13; B13, B12 and B0 publish."""
    net = JoinNet(TREE, DFTConfig(delta=1), policy)
    net.subscribe("B4", "S0", "true")
    net.subscribe("B7", "S2", "x == 1")
    net.drain()
    net.publish("B0", x=1)
    net.drain()
    net.join("B13", "B4")
    net.drain()
    net.subscribe("B13", "S1", "true")
    net.drain()
    for b in ("B13", "B12", "B0"):
        net.publish(b, x=1)
    net.drain()
    return net


def test_a_newcomer_learns_the_subscriptions_and_its_flows_work() -> None:
    net = join_after_traffic()
    b13 = net.broker("B13")
    # the Δ-neighbourhood of B13 (δ = 1: Δ = 2) knows it and holds a session to it
    assert b13.hood == {"B4", "B1"}
    assert b13.active == {"B4"}
    assert b13.restored
    assert "B13" in net.broker("B4").active
    assert "B13" in net.broker("B1").established
    # every broker's routing layer grew; the subscriptions of before reached B13
    assert all("B13" in net.broker(b).tree for b in net.tree.order)
    assert {"S0/0", "S2/0"} <= set(b13.srt)
    # (per-source order is what is promised; across sources the loop's order decides)
    every = [("B0", 1), ("B0", 2), ("B12", 1), ("B13", 1)]
    assert sorted(net.delivered("S0")) == every == sorted(net.delivered("S2"))
    assert sorted(net.delivered("S1")) == every[1:]
    assert not _rejected(net)
    assert _verdict(net) is None


def test_the_invariants_judge_the_joined_broker() -> None:
    """Non-vacuity: with no partial recovery (``no-sync``) the newcomer never learns S0 and
    S2, filters out its own publications, and the invariants say so."""
    net = join_after_traffic(VARIANTS["no-sync"].policy)
    assert ("B13", 1) not in net.delivered("S0")
    assert _verdict(net) in VARIANTS["no-sync"].caught_by


def test_news_of_a_join_reaches_a_broker_that_was_down() -> None:
    """B10 is crashed while B13 joins; at its restart its sync-point B3 tells it of the
    arrival ahead of the sync [DFT §VIII-B], so B13's publications reach S at B10."""
    net = JoinNet(TREE, DFTConfig(delta=1))
    net.crash("B10")
    net.drain()
    net.join("B13", "B4")
    net.drain()
    assert "B13" not in net.broker("B10").tree
    net.restart("B10")
    net.drain()
    assert "B13" in net.broker("B10").tree
    net.subscribe("B10", "S", "true")
    net.drain()
    net.publish("B13", x=1)
    net.drain()
    assert net.delivered("S") == [("B13", 1)]
    assert not _rejected(net)
    assert _verdict(net) is None


def test_join_beside_a_failed_link_and_a_chain_of_joins() -> None:
    """Link B1-B4 is down when B13 joins under B4 and B14 under B13: B4 bypasses B1
    (Δ = 2); S7's subscription (from before) and the newcomers' publications flow; S14,
    accepted during the partition B4 detected, <B1>, excludes the sources on and beyond
    it [DFT §V-C] until the heal's partition recovery lifts the tag [DFT §VIII-A]. The
    legitimacy and the budget are judged on the grown tree."""
    net = JoinNet(TREE, DFTConfig(delta=1))
    net.subscribe("B7", "S7", "true")
    net.drain()
    net.fail_link("B1", "B4")
    net.drain()
    net.join("B13", "B4")
    net.drain()
    net.join("B14", "B13")
    net.drain()
    net.subscribe("B14", "S14", "true")
    net.drain()
    for b in ("B14", "B13", "B7", "B0"):
        net.publish(b, x=1)
    net.drain()
    assert net.broker("B14").hood == {"B13", "B4"}
    assert sorted(net.delivered("S7")) == [("B0", 1), ("B13", 1), ("B14", 1), ("B7", 1)]
    assert sorted(net.delivered("S14")) == [("B13", 1), ("B14", 1)]
    net.heal_link("B1", "B4")
    net.drain()
    net.publish("B14", x=1)
    net.publish("B0", x=1)
    net.drain()
    assert sorted(net.delivered("S7")[-2:]) == [("B0", 2), ("B14", 2)]
    assert sorted(net.delivered("S14")[-2:]) == [("B0", 2), ("B14", 2)]
    assert not _rejected(net)
    assert _verdict(net) is None


def test_a_joined_broker_crashes_and_restarts() -> None:
    net = join_after_traffic()
    net.crash("B13")
    net.drain()
    net.publish("B0", x=1)
    net.drain()
    net.restart("B13")
    net.drain()
    net.subscribe("B13", "S3", "true")
    net.drain()
    net.publish("B13", x=1)
    net.drain()
    assert net.broker("B13").restored
    assert net.delivered("S3") == [("B13", 2)]
    assert net.delivered("S0")[-1] == ("B13", 2)
    assert _verdict(net) is None


def test_joins_misuse_is_a_typed_error() -> None:
    with pytest.raises(ProtocolMisuse, match="already joined"):
        role.new_joiner("B4", "B1", TREE)
    with pytest.raises(ProtocolMisuse, match="which has not joined"):
        role.new_joiner("B13", "X", TREE)
    with pytest.raises(ProtocolMisuse, match="naive"):
        role.new_joiner("B13", "B4", TREE, policy=DFTPolicy(forwarding="naive"))


def test_a_message_naming_an_unknown_broker_is_rejected() -> None:
    b1 = role.new_role("B1", TREE, DFTConfig(delta=1))
    for msg in (
        SubMsg(sid="s/0", source="B13", filter="true"),
        PubMsg(source="B13", number=1, attributes={}),
    ):
        inp = Receive(sender="B4", msg=msg)
        after, effects = role.handle(b1, inp, 0)
        assert after is b1
        assert isinstance(effects[0], Rejected)
    after, effects = role.handle(b1, Receive(sender="B13", msg=Arrival(joins=())), 0)
    assert after is b1
    assert effects == ()
    pub = PubMsg(source="B4", number=1, attributes={})
    after, effects = role.handle(b1, Receive(sender="B13", msg=pub), 0)
    assert after is b1
    assert isinstance(effects[0], Rejected)


def test_arrival_is_idempotent_and_announced_at_every_start() -> None:
    j = role.new_joiner("B13", "B4", TREE, config=DFTConfig(delta=1))
    _, effects = role.handle(j, Restart(), 0)
    assert sorted(e.to for e in effects if isinstance(e, Send)) == ["B1", "B4"]
    b1 = role.new_role("B1", TREE, DFTConfig(delta=1))
    news = Arrival(joins=(("B13", "B4"),))
    b1, _ = role.handle(b1, Receive(sender="B4", msg=news), 0)
    assert b1.arrivals == pvector([("B13", "B4")])
    assert "B13" in b1.hood
    again, effects = role.handle(b1, Receive(sender="B5", msg=news), 0)
    assert again is b1
    assert effects == ()
