"""Partition recovery, steps (iv) and (v) [DFT §VIII-A]: notifiers lift a recovered pid from
confirmation tags, partition tables forget it; the ``live_after_heal`` check (with the run
that breaks it: pids kept forever) and the per-source ``gapless`` judgement."""

from __future__ import annotations

import attrs
import pytest
from _dft_net import Net, figure1
from test_dft_stateful import DFTMachine

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.messages import PartitionHealed, Pid
from gapless.impl.effects import Deliver, Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Connect
from gapless.impl.trace import Published, Sent, TraceRecord, Wire
from gapless.invariants.dft import DFTContext, check_dft_trace, live_after_heal
from gapless.spec.filters import reference_matcher

KEEP_PIDS = attrs.evolve(PAPER_POLICY, recover_partitions=False)
TREE = figure1()
PID = Pid(detector="B2", counter=1, pnodes=("B1",))


def _ctx() -> DFTContext:
    return DFTContext(tree=TREE, delta=1, matches=reference_matcher())


def gap_then_heal(policy: DFTPolicy) -> tuple[Net, int]:
    """§I on Figure 1 (δ = 1): S2 subscribes at B4 while B1-B2 is down (accepted with B2's
    barrier <B1>), B1 publishes, the link heals, the brokers settle; then B1 publishes
    twice more. Returns the net and the time every failure had healed and settled."""
    net = Net(TREE, config=DFTConfig(delta=1), policy=policy)
    net.subscribe("B3", "S1", "true")
    net.drain()
    net.fail_link("B1", "B2")
    net.drain()
    net.subscribe("B4", "S2", "true")
    net.drain()
    net.publish("B1", x=1)
    net.drain()
    net.heal_link("B1", "B2")
    net.drain()
    since = net.time
    net.publish("B1", x=2)
    net.publish("B1", x=3)
    net.drain()
    return net, since


def test_recovery_lifts_the_exclusion_and_forgets_the_pid() -> None:
    net, since = gap_then_heal(PAPER_POLICY)
    assert net.delivered("S2") == [("B1", 2), ("B1", 3)]
    assert all(not net.broker(b).pt for b in TREE.order)
    acc = [r.detail.value for r in net.records if r.kind == "persist" and r.node == "B4"]
    assert acc == [frozenset({PID}), frozenset()]  # accepted tagged, then re-accepted
    v, checker = check_dft_trace(net.records, _ctx())
    assert v is None, v.explain() if v else ""
    assert live_after_heal(checker, since) is None


def test_live_after_heal_catches_pids_kept_forever() -> None:
    net, since = gap_then_heal(KEEP_PIDS)
    assert net.delivered("S2") == []
    v, checker = check_dft_trace(net.records, _ctx())
    assert v is None  # safe: excluded, never gapped
    late = live_after_heal(checker, since)
    assert late is not None
    assert late.invariant == "live_after_heal"
    assert late.subject == "S2/0"
    assert (late.pubend, late.tick) == ("B1", 2)


def test_live_after_heal_refuses_a_standing_failure() -> None:
    net, since = gap_then_heal(PAPER_POLICY)
    net.fail_link("B2", "B3")
    _, checker = check_dft_trace(net.records, _ctx())
    with pytest.raises(ProtocolMisuse, match="B2"):
        live_after_heal(checker, since)


def _records(*items: tuple[str, str, object]) -> list[TraceRecord]:
    return [
        TraceRecord(seq=i, time=10 * i, node=node, kind=kind, detail=d)
        for i, (node, kind, d) in enumerate(items)
    ]


def _pub(n: int) -> tuple[str, str, object]:
    return ("B1", "publish", Published(pubend="B1", index=n, attributes={"x": n}))


def _deliver(n: int) -> tuple[str, str, object]:
    return ("B4", "deliver", Deliver(subscriber="S", pubend="B1", tick=n, payload=None))


def _accepted(tags: frozenset[Pid]) -> tuple[str, str, object]:
    return ("B4", "persist", Persist(key=("accepted", "S/0"), value=tags))


_CONNECT = ("B4", "connect", Connect(subscriber="S", filter="true"))
_HEALED = ("B2", "send", Sent(to="B4", msg=PartitionHealed(pid=PID), wire=Wire(kind="other")))


def _gapless(*items: tuple[str, str, object]) -> str | None:
    v, _ = check_dft_trace(_records(*items), _ctx(), ("gapless",))
    return None if v is None else v.message


def test_gapless_per_source_an_excluded_flow_resumes_only_after_a_recovery() -> None:
    tagged = (_CONNECT, _accepted(frozenset({PID})), _pub(1), _pub(2))
    # no recovery announced: B1's flow is owed from the acceptance, as ever
    assert _gapless(*tagged, _deliver(2)) is not None
    # the pid announced recovered: the flow may resume at its first delivery...
    assert _gapless(*tagged, _HEALED, _deliver(2)) is None
    # ...and is judged from there
    assert _gapless(*tagged, _HEALED, _deliver(1), _pub(3), _pub(4), _deliver(4)) is not None
    # re-accepted untagged: every publication from then on is owed
    msg = _gapless(*tagged, _HEALED, _accepted(frozenset()), _pub(3), _pub(4), _deliver(4))
    assert msg is not None
    assert "(B1, 3)" in msg
    assert _gapless(*tagged, _HEALED, _accepted(frozenset()), _pub(3), _deliver(3)) is None


# Runs of the stateful machine (tests/dft/test_dft_stateful.py) that failed while partition
# recovery was built, kept as replays: an island copy counted as known to the sync-point, an
# upstream copy counted as known, an old publication resuming a flow behind an excluded newer
# one, a recovered pid whose replacement was guessed, a restarted detector that forgot its
# pids ("Recovery" in spec/dft.md).
REPLAYS = {
    "island-copy": "crash B0; fail_link B9 B2; subscribe B9 true",
    "upstream-copy": "publish B0 0; crash B2; subscribe B0 true; crash B0; fail_link B1 B0; "
    "crash B12; publish B1 0; publish B3 0; subscribe B5 true; restart B0; restart B9",
    "old-publication-resumes": "publish B0 0; crash B2; subscribe B0 true; crash B0; "
    "crash B12; fail_link B1 B0; publish B1 0; publish B3 0; subscribe B5 true; restart B9",
    "guessed-replacement": "crash B1; subscribe B0 true; crash B0; subscribe B10 true",
    "restarted-detector": "crash B10; subscribe B0 true; crash B3",
}


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_stateful_machine_replays(name: str) -> None:
    machine = DFTMachine()
    for step in REPLAYS[name].split("; "):
        op, *args = step.split()
        if op == "subscribe":
            machine.subscribe(broker=args[0], flt=args[1])
        elif op == "publish":
            machine.publish(broker=args[0], x=int(args[1]))
        elif op in ("fail_link", "heal_link"):
            getattr(machine, op)(link=(args[0], args[1]))
        else:
            getattr(machine, op)(broker=args[0])
        machine.safety_holds()
    machine.teardown()  # every invariant, then live_after_heal once every failure healed
