"""Unit tests of the DFT roles on small hand-built networks [DFT §I-VII]."""

from __future__ import annotations

import attrs
from _dft_net import Net, figure1

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig


def test_no_failures_delivers_every_match_once_in_order() -> None:
    net = Net(figure1())
    net.subscribe("B3", "S1", "loc == 'USA'")
    net.subscribe("B4", "S2", "type == 'video' or type == 'html'")
    net.drain()
    net.publish("B1", loc="USA", type="video")
    net.publish("B1", loc="UK", type="html")
    net.publish("B1", loc="USA", type="html")
    net.drain()
    assert net.delivered("S1") == [("B1", 1), ("B1", 3)]
    assert net.delivered("S2") == [("B1", 1), ("B1", 2), ("B1", 3)]
    assert all(not net.broker(b).queue for b in net.tree.order)


def _gap_scenario(net: Net) -> None:
    """The §I sequence on Figure 1: s1 propagates; link B1-B2 fails; s2 is issued; P
    publishes p1, p2, p3 (all match s2, only p1 and p3 match s1); the link heals."""
    net.subscribe("B3", "S1", "loc == 'USA'")
    net.drain()
    net.fail_link("B1", "B2")
    net.drain()
    net.subscribe("B4", "S2", "provider == 'BBC'")
    net.drain()
    net.publish("B1", provider="BBC", loc="USA")
    net.publish("B1", provider="BBC", loc="UK")
    net.publish("B1", provider="BBC", loc="USA")
    net.drain()
    net.heal_link("B1", "B2")
    net.drain()


def test_gap_scenario_naive_baseline_delivers_a_gapped_flow() -> None:
    net = Net(figure1(), policy=attrs.evolve(PAPER_POLICY, forwarding="naive"))
    _gap_scenario(net)
    assert net.delivered("S2") == [("B1", 1), ("B1", 3)]  # p2 is missing: the §I gap
    assert net.delivered("S1") == [("B1", 1), ("B1", 3)]


def test_gap_scenario_dft_never_delivers_a_gapped_flow() -> None:
    for delta in (0, 1, 2):
        net = Net(figure1(), config=DFTConfig(delta=delta))
        _gap_scenario(net)
        s2 = net.delivered("S2")
        assert s2 == [], (delta, s2)  # p1..p3 are excluded as a whole, never with a hole
        assert net.delivered("S1") == [("B1", 1), ("B1", 3)], delta


def test_gap_scenario_dft_bypasses_the_failed_link_while_it_persists() -> None:
    net = Net(figure1(), config=DFTConfig(delta=1))
    net.subscribe("B3", "S1", "loc == 'USA'")
    net.drain()
    net.fail_link("B1", "B2")
    net.publish("B1", provider="BBC", loc="USA")
    net.drain()
    assert net.delivered("S1") == [("B1", 1)]  # via the bypass session S(B1, B3)
    assert net.broker("B1").active == {"B3", "B4"}


def test_gap_scenario_store_and_forward_waits_for_the_heal_with_delta_zero() -> None:
    net = Net(figure1(), config=DFTConfig(delta=0))
    net.subscribe("B3", "S1", "loc == 'USA'")
    net.drain()
    net.fail_link("B1", "B2")
    net.publish("B1", provider="BBC", loc="USA")
    net.drain()
    assert net.delivered("S1") == []
    assert len(net.broker("B1").queue) == 1  # waiting on B2 (Figure 8 lines 46-48)
    net.heal_link("B1", "B2")
    net.drain()
    assert net.delivered("S1") == [("B1", 1)]
