"""Partition tables [DFT §IV, §VIII "Determining DPT"]: who holds a pid, what DPT = 2δ
buys over DPT = δ (the ``dpt-delta`` bug, ``DFTPolicy.dpt_factor=1``), and the relearning
of tables at every sync (our addition, ``spec/dft.md`` "Partition tables").

The run (chain C0..C5, δ = 1, S at C5): link C1-C2 fails, so C2 detects
p = (C2, 1, <C1>); S subscribes and is accepted with p in its confirmation tags (C1 and
beyond did not confirm it); C0 publishes (excluded: tagged with p on the way); brokers
restart; C0 publishes again. The second publication must be excluded too: delivering it
opens S's flow from C0 with (C0, 1) missing — ``gapless`` reports the hole.
"""

from __future__ import annotations

import pytest
from _dft_net import Net

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.messages import Pid
from gapless.impl.dft.tree import PrimaryTree
from gapless.invariants.dft import DFT_INVARIANTS, DFTContext, check_dft_trace
from gapless.invariants.dft_tables import TABLES
from gapless.spec.filters import reference_matcher

CHAIN = PrimaryTree.build([(f"C{i}", f"C{i - 1}" if i else None) for i in range(6)])
P = Pid(detector="C2", counter=1, pnodes=("C1",))
DPT_DELTA = DFTPolicy(dpt_factor=1)
NO_RELEARN = DFTPolicy(relearn_partitions=False)
NO_RELEARN_DPT_DELTA = DFTPolicy(relearn_partitions=False, dpt_factor=1)


def partition_then_restarts(policy: DFTPolicy, restarts: tuple[str, ...]) -> Net:
    net = Net(CHAIN, config=DFTConfig(delta=1), policy=policy)
    net.fail_link("C1", "C2")
    net.drain()
    net.subscribe("C5", "S", "true")
    net.drain()
    net.publish("C0", x=1)
    net.drain()
    for b in restarts:
        net.crash(b)
        net.drain()
        net.restart(b)
        net.drain()
    net.publish("C0", x=1)
    net.drain()
    return net


#: The invariants that judge deliveries; ``partition_tables`` judges the tables themselves
#: (``test_dft8_tables.py``), and catches dpt-delta and a table-forgetting policy first.
DELIVERY = tuple(n for n in DFT_INVARIANTS if n != TABLES)


def _verdict(net: Net, names: tuple[str, ...] = DELIVERY) -> str | None:
    ctx = DFTContext(tree=CHAIN, delta=1, matches=reference_matcher())
    v, _ = check_dft_trace(net.records, ctx, names)
    return None if v is None else v.invariant


def _tables(net: Net) -> str | None:
    return _verdict(net, (TABLES,))


def holders(net: Net, pid: Pid) -> set[str]:
    return {b for b in CHAIN.order if pid in net.broker(b).pt}


def test_the_subscription_excludes_the_partition() -> None:
    net = partition_then_restarts(PAPER_POLICY, ())
    assert net.broker("C5").srt["S/0"].conf_tags == {P}
    assert net.delivered("S") == []
    assert _verdict(net) is None


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # the paper's DPT = 2δ: every broker within 2 of C2 that could be told holds p
        (PAPER_POLICY, {"C0", "C1", "C2", "C3", "C4"}),
        # dpt-delta: only the brokers within δ = 1 of C2
        (DPT_DELTA, {"C1", "C2", "C3"}),
    ],
)
def test_tables_hold_exactly_the_pids_whose_detector_is_within_dpt(
    policy: DFTPolicy, expected: set[str]
) -> None:
    """The table invariant "every reachable broker within DPT of a detector holds its pid,
    no broker farther does" [DFT §IV] tells the two policies apart on a run where the
    deliveries do not (both are clean): DPT = 2δ is the larger set."""
    net = partition_then_restarts(policy, ())
    within = {b for b in CHAIN.order if CHAIN.distance(b, "C2") <= policy.dpt(net.config)}
    assert holders(net, P) == expected == within
    assert _verdict(net) is None
    # the trace invariant tells them apart too: dpt-delta's tables are incomplete
    assert _tables(net) == (None if policy is PAPER_POLICY else TABLES)


def test_dpt_two_delta_survives_the_loss_of_delta_tables() -> None:
    """What 2δ adds [DFT §VIII "Determining DPT"]: a legitimate publication passes at least
    δ + 1 of the 2δ + 1 brokers C2..C4 side (and at least one of any δ + 1 in a row), so
    with tables within 2δ it meets a holder even when δ of them lost p. Without
    relearning (a restart's table is soft state), two restarts (C3, then C1) leave no
    holder within δ on the publication's path C0, C1, C3, C4, C5: ``dpt-delta`` delivers
    (C0, 2) with (C0, 1) excluded — a hole; DPT = 2δ still has C0 and C4."""
    bad = partition_then_restarts(NO_RELEARN_DPT_DELTA, ("C3", "C1"))
    assert bad.delivered("S") == [("C0", 2)]
    assert _verdict(bad) == "gapless"
    good = partition_then_restarts(NO_RELEARN, ("C3", "C1"))
    assert good.delivered("S") == []
    assert _verdict(good) is None
    assert _tables(bad) == _tables(good) == TABLES  # neither relearns its tables


def test_without_relearning_even_two_delta_loses_its_tables() -> None:
    """The non-vacuity of the relearning: restart all four holders on the path and the
    paper's DPT leaks too (this was a hole in the correct protocol before dft4)."""
    restarts = ("C3", "C1", "C4", "C0")
    bad = partition_then_restarts(NO_RELEARN, restarts)
    assert bad.delivered("S") == [("C0", 2)]
    assert _verdict(bad) == "gapless"
    good = partition_then_restarts(PAPER_POLICY, restarts)
    assert good.delivered("S") == []
    assert _verdict(good) is None
    assert _tables(bad) == TABLES
    assert _tables(good) is None
    assert holders(good, P) == {"C0", "C1", "C2", "C3", "C4"}


@pytest.mark.parametrize("policy", [PAPER_POLICY, DPT_DELTA])
def test_restarted_brokers_relearn_their_tables(policy: DFTPolicy) -> None:
    """With relearning, a restarted broker gets p back from its sync-points, and dpt-delta
    passes the run that caught it without: its tables within δ are complete again."""
    net = partition_then_restarts(policy, ("C3", "C1"))
    assert net.delivered("S") == []
    assert _verdict(net) is None
    assert {"C1", "C2", "C3"} <= holders(net, P)
    assert _tables(net) == (None if policy is PAPER_POLICY else TABLES)


@pytest.mark.parametrize("policy", [PAPER_POLICY, DPT_DELTA, NO_RELEARN_DPT_DELTA])
def test_a_broker_cut_off_from_the_detector_tags_with_its_own_pid(policy: DFTPolicy) -> None:
    """Case (c) of the DPT argument (``spec/dft.md``): C3 is down while C2 detects
    p = (C2, 2, <C1>) and S's subscription bypasses it; link C2-C3 fails too. At its restart
    C3 never hears of p under ``dpt-delta`` (no holder within δ can reach it: the table
    within δ is incomplete even with relearning), and the publications of
    C0 pass C1, then C3, bypassing C2 — but C3 detects q = (C3, 1, <C2>), which covers C2
    and beyond; its confirmation in C4's partial recovery puts q in S's tags in place of
    C4's recovered pid (the notifier), and C3 tags the publications with q: excluded. S's
    earlier subscriber A, accepted untagged, gets every one of them (bounded delivery)."""
    net = Net(CHAIN, config=DFTConfig(delta=1), policy=policy)
    net.subscribe("C5", "A", "true")
    net.drain()
    net.crash("C3")
    net.drain()
    net.fail_link("C1", "C2")
    net.drain()
    net.fail_link("C2", "C3")
    net.drain()
    net.subscribe("C5", "S", "true")
    net.drain()
    p = Pid(detector="C2", counter=2, pnodes=("C1",))
    r = Pid(detector="C4", counter=1, pnodes=("C3",))
    assert net.broker("C5").srt["S/0"].conf_tags == {p, r}
    net.publish("C0", x=1)
    net.drain()
    net.restart("C3")
    net.drain()
    q = Pid(detector="C3", counter=1, pnodes=("C2",))
    assert net.broker("C5").srt["S/0"].conf_tags == {p, q}
    # within δ of C2, C3 never hears of p unless a broker within 2δ tells it (C4, paper)
    assert (p in net.broker("C3").pt) == (policy is PAPER_POLICY)
    for _ in range(2):
        net.publish("C0", x=1)
        net.drain()
    assert net.delivered("S") == []
    assert net.delivered("A") == [("C0", 1), ("C0", 2), ("C0", 3)]
    assert _verdict(net) is None
    assert _tables(net) == (None if policy is PAPER_POLICY else TABLES)
