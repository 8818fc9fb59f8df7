"""Duplicate detection beyond δ [DFT §VII]: a publication that waited at a forwarder (an
illegitimate hop) while a newer publication of another source went ahead to the same
receiver is not mistaken for a duplicate once it is sent (``spec/dft.md``, "Duplicate
detection"). Found by the stateful machine at 300 examples; kept as a deterministic
regression."""

from __future__ import annotations

from _dft_net import Net

from gapless.impl.dft.config import DFTConfig
from gapless.impl.dft.tree import complete_tree
from gapless.invariants.dft import DFTContext, check_dft_trace
from gapless.spec.filters import reference_matcher

TREE = complete_tree(13, 3)


def waiting_entry_overtaken() -> Net:
    """Complete tree of 13, δ = 1: S0 at B5; B6, B8, B1 crash; links B6-B1, B8-B2, B1-B0,
    B11-B3 fail. B11 publishes: (B11, 1) bypasses B3 to B0, whose hop to B5 (bypassing B1
    too) is illegitimate, so it waits at B0. B0 publishes: (B0, 1) reaches B5 first, with a
    higher stamp of B0. Every link heals; B11 publishes again."""
    net = Net(TREE, config=DFTConfig(delta=1))
    net.subscribe("B5", "S0", "true")
    net.drain()
    for b in ("B6", "B8", "B1"):
        net.crash(b)
        net.drain()
    for a, b in (("B6", "B1"), ("B8", "B2"), ("B1", "B0"), ("B11", "B3")):
        net.fail_link(a, b)
        net.drain()
    net.publish("B11", x=1)
    net.drain()
    net.publish("B0", x=1)
    net.drain()
    for a, b in sorted(net.failed, key=sorted):
        net.heal_link(a, b)
        net.drain()
    net.publish("B11", x=1)
    net.drain()
    return net


def test_a_waiting_publication_overtaken_by_a_newer_stamp_is_still_delivered() -> None:
    net = waiting_entry_overtaken()
    got = net.delivered("S0")
    assert ("B0", 1) in got
    assert [t for p, t in got if p == "B11"] == [1, 2], got
    ctx = DFTContext(tree=TREE, delta=1, matches=reference_matcher())
    v, _ = check_dft_trace(net.records, ctx)
    assert v is None, v.explain() if v else ""
