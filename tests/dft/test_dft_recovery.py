"""Recovery [DFT §VIII]: partial recovery at every session activation (sync-point steps
i-iv) and full recovery of a restarted broker, on the tiny network loop; the two recovery
bugs (``forget-stamps``, ``no-sync``) are caught by the invariants."""

from __future__ import annotations

import attrs
import pytest
from _dft_net import Net, figure1

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.messages import PubMsg, SyncStart, SyncSummary, SyncTransfer
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.dft.variants import VARIANTS
from gapless.invariants.dft import DFTContext, check_dft_trace
from gapless.spec.filters import reference_matcher

CHAIN = PrimaryTree.build([(f"C{i}", f"C{i - 1}" if i else None) for i in range(6)])


def _check(net: Net, delta: int = 1) -> object:
    ctx = DFTContext(tree=net.tree, delta=delta, matches=reference_matcher())
    v, _ = check_dft_trace(net.records, ctx)
    return v


def _restart_run(policy: DFTPolicy) -> Net:
    """δ = 1, chain C0..C5, S at C5: two publications, C2 crashes (bypassed), one more,
    C2 restarts and is recovered, two more."""
    net = Net(CHAIN, config=DFTConfig(delta=1), policy=policy)
    net.subscribe("C5", "S", "true")
    net.drain()
    for x in (1, 2):
        net.publish("C0", x=x)
        net.drain()
    net.crash("C2")
    net.publish("C0", x=3)
    net.drain()
    net.restart("C2")
    net.drain()
    for x in (4, 5):
        net.publish("C0", x=x)
        net.drain()
    return net


def test_a_restarted_broker_rebuilds_its_srt_and_forwards_again() -> None:
    net = _restart_run(PAPER_POLICY)
    c2 = net.broker("C2")
    assert set(c2.srt) == {"S/0"}  # rebuilt from its neighbours [DFT §VIII-B]
    assert c2.restored
    assert not c2.held
    assert c2.incarnation == 1
    assert net.delivered("S") == [("C0", i) for i in range(1, 6)]
    # the last publications travelled through the restarted broker again
    trails = [
        r.detail.msg.trail
        for r in net.records
        if r.kind == "receive" and r.node == "C5" and isinstance(r.detail.msg, PubMsg)
    ]
    assert any("C2" in t for t in trails[-2:])
    assert _check(net) is None


def test_the_recovery_steps_run_in_order_and_publications_wait_for_them() -> None:
    net = Net(CHAIN, config=DFTConfig(delta=1))
    net.subscribe("C5", "S", "true")
    net.drain()
    net.crash("C2")
    net.drain()
    net.restart("C2")
    c1 = net.broker("C1")
    assert "C2" in c1.syncing  # step (i)
    assert "C2" in c1.active
    assert "C2" not in c1.fwd
    assert "C3" in c1.fwd  # publications keep bypassing C2 meanwhile
    assert not net.broker("C2").restored
    net.drain()
    kinds = [
        type(r.detail.msg).__name__
        for r in net.records
        if r.kind == "send" and isinstance(r.detail.msg, SyncStart | SyncSummary | SyncTransfer)
    ]
    assert kinds.index("SyncStart") < kinds.index("SyncSummary") < kinds.index("SyncTransfer")
    c1 = net.broker("C1")
    assert not c1.syncing
    assert "C2" in c1.fwd
    assert "C3" not in c1.fwd
    assert net.broker("C2").restored


def test_partial_recovery_brings_a_subscription_accepted_during_a_partition() -> None:
    net = Net(figure1(), config=DFTConfig(delta=0))
    net.fail_link("B1", "B2")
    net.drain()
    net.subscribe("B4", "S2", "true")
    net.drain()
    assert "S2/0" not in net.broker("B1").srt
    net.heal_link("B1", "B2")  # B2 activates its session to B1: B2 is the sync-point
    net.drain()
    assert "S2/0" in net.broker("B1").srt
    assert not net.broker("B2").syncing


def test_a_publication_arriving_before_the_full_recovery_is_held_then_processed() -> None:
    net = Net(CHAIN, config=DFTConfig(delta=1))
    net.subscribe("C5", "S", "true")
    net.drain()
    net.crash("C2")
    net.drain()
    net.restart("C2")
    net.publish("C2", x=1)  # a local publication before C2 is restored
    assert len(net.broker("C2").held) == 1
    net.drain()
    assert net.broker("C2").restored
    assert not net.broker("C2").held
    assert net.delivered("S") == [("C2", 1)]
    assert _check(net) is None


@pytest.mark.parametrize(
    ("variant", "invariants"),
    [("forget-stamps", {"bounded_delivery", "gapless"}), ("no-sync", {"bounded_delivery"})],
)
def test_a_recovery_bug_loses_publications_and_is_caught(
    variant: str, invariants: set[str]
) -> None:
    bad = _restart_run(VARIANTS[variant].policy)
    assert len(bad.delivered("S")) < 5
    v = _check(bad)
    assert v is not None
    assert v.invariant in invariants  # type: ignore[attr-defined]
    assert set(VARIANTS[variant].caught_by) == invariants


def test_crash_keeps_stable_storage_only() -> None:
    net = _restart_run(PAPER_POLICY)
    c2 = net.broker("C2")
    assert c2.stamp > 1 << 32  # stamps above the first incarnation's
    forgetful = attrs.evolve(PAPER_POLICY, durable_stamps=False)
    assert _restart_run(forgetful).broker("C2").stamp < 1 << 32


def test_a_source_broker_resends_its_unconfirmed_publications_after_a_restart() -> None:
    def run(policy: DFTPolicy) -> Net:
        net = Net(CHAIN, config=DFTConfig(delta=1), policy=policy)
        net.subscribe("C5", "S", "true")
        net.drain()
        net.publish("C0", x=1)
        net.drain()
        net.publish("C0", x=2)  # still in flight when its source broker crashes
        net.crash("C0")
        net.restart("C0")
        net.drain()
        net.publish("C0", x=3)
        net.drain()
        return net

    good = run(PAPER_POLICY)
    assert good.delivered("S") == [("C0", 1), ("C0", 2), ("C0", 3)]
    assert _check(good) is None
    # without recovery nothing is kept, and the hole shows
    bad = run(VARIANTS["no-sync"].policy)
    assert ("C0", 2) not in bad.delivered("S")
    v = _check(bad)
    assert v is not None
