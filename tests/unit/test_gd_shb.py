"""The subscriber hosting broker, driven alone with hand-built inputs [GD §2.3, §3.2, §4.1]."""

from __future__ import annotations

from typing import Any

import pytest
from pyrsistent import pmap

from gapless.impl.effects import Deliver, DeliverCohort, Rejected, Send, SetTimer, deliveries
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd import (
    Ack,
    AckExpected,
    Data,
    GDConfig,
    GDTopology,
    Knowledge,
    Nack,
    NodeState,
    SubscriberSpec,
    crash,
    handle,
    initial_states,
    two_broker,
)
from gapless.impl.inputs import Connect, Disconnect, Receive, Restart, TimerFired

CFG = GDConfig(ack_delay_us=0)


def boot(config: GDConfig = CFG, subs: dict[str, str] | None = None) -> NodeState:
    subs = subs or {"a": "x == 1", "b": "*"}
    st, _ = handle(initial_states(two_broker(subs), config)["shb"], Restart(), 0)
    for name, f in sorted(subs.items()):
        st, _ = handle(st, Connect(subscriber=name, filter=f, connection=7), 0)
    return st


def data(tick: int, pubend: str = "P0", **attrs: Any) -> Data:
    return Data(pubend=pubend, tick=tick, attributes=pmap(attrs))


def rx(st: NodeState, msg: Any, now: int, sender: str = "phb") -> tuple[NodeState, tuple[Any, ...]]:
    return handle(st, Receive(sender=sender, msg=msg), now)


def each_delivery(eff: tuple[Any, ...]) -> list[Deliver]:
    """Every delivery, cohorts expanded (a ``DeliverCohort`` means its ``Deliver`` effects)."""
    return [d for e in eff if isinstance(e, (Deliver, DeliverCohort)) for d in deliveries(e)]


def delivered(eff: tuple[Any, ...]) -> list[tuple[str, int]]:
    return [(e.subscriber, e.tick) for e in each_delivery(eff)]


def sent(eff: tuple[Any, ...], kind: type) -> list[Any]:
    return [e.msg for e in eff if isinstance(e, Send) and isinstance(e.msg, kind)]


def timers(eff: tuple[Any, ...], kind: str) -> list[SetTimer]:
    return [e for e in eff if isinstance(e, SetTimer) and e.key[2] == kind]


def test_delivers_in_order_per_filter_and_acks_the_delivered_prefix() -> None:
    st = boot()
    # tick 200 arrives before tick 100: it waits below the doubt horizon [GD §2.3]
    st, eff = rx(st, Knowledge(pubend="P0", silence=((101, 199),), data=data(200, x=1)), 10)
    assert delivered(eff) == []
    assert sent(eff, Ack) == []
    st, eff = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100, x=2)), 20)
    assert delivered(eff) == [("b", 100), ("a", 200), ("b", 200)]
    assert {e.connection for e in each_delivery(eff)} == {7}
    assert [a.upto for a in sent(eff, Ack)] == [200]
    # a duplicate changes nothing
    st2, eff2 = rx(st, Knowledge(pubend="P0", data=data(200, x=1)), 30)
    assert st2 is st
    assert eff2 == ()


def test_gap_is_nacked_after_gct_then_repeated_with_backoff() -> None:
    st = boot()
    st, eff = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    st, eff = rx(st, Knowledge(pubend="P0", silence=((301, 399),), data=data(400)), 20)
    assert sent(eff, Nack) == []  # not yet: GCT has not passed
    (gct,) = timers(eff, "gct")
    assert gct.at == 20 + CFG.gct_us
    st, eff = handle(st, TimerFired(key=gct.key), gct.at)
    assert [(n.start, n.end, n.retransmission) for n in sent(eff, Nack)] == [(101, 300, False)]
    (nrt,) = timers(eff, "nrt")
    assert nrt.at - gct.at == CFG.nrt_us  # the first repetition after NRT [GD §3.2]
    st, eff = handle(st, TimerFired(key=nrt.key), nrt.at)
    assert [(n.start, n.end, n.retransmission) for n in sent(eff, Nack)] == [(101, 300, True)]
    (nrt2,) = timers(eff, "nrt")
    assert nrt2.at - nrt.at == 2 * CFG.nrt_us  # exponential backoff
    st, eff = handle(st, TimerFired(key=nrt2.key), nrt2.at)
    (nrt3,) = timers(eff, "nrt")
    assert nrt3.at - nrt2.at == min(4 * CFG.nrt_us, CFG.backoff_cap_us)
    # the answer fills the gap: delivery resumes, repetition stops
    st, eff = rx(
        st,
        Knowledge(pubend="P0", silence=((101, 299),), data=data(300), retransmission=True),
        nrt3.at - 5,
    )
    assert delivered(eff) == [("b", 300), ("b", 400)]
    st, eff = handle(st, TimerFired(key=nrt3.key), nrt3.at)
    assert sent(eff, Nack) == []
    assert timers(eff, "nrt") == []


def test_rto_follows_measured_round_trips() -> None:
    st = boot()
    st, _ = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    st, eff = rx(st, Knowledge(pubend="P0", silence=((201, 299),), data=data(300)), 20)
    (gct,) = timers(eff, "gct")
    st, eff = handle(st, TimerFired(key=gct.key), gct.at)
    st, _ = rx(
        st, Knowledge(pubend="P0", silence=((101, 200),), retransmission=True), gct.at + 10_000
    )
    s = st.stream("P0")
    assert s.srtt == 10_000
    assert s.rto_est == CFG.min_repetition_us  # a fast round trip: the floor
    assert s.rto_cur == s.rto_est


def test_large_gaps_are_nacked_in_chunks() -> None:
    st = boot()
    st, _ = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    far = 100 + 3 * CFG.nack_chunk_us
    st, eff = rx(st, Knowledge(pubend="P0", data=data(far + 1)), 20)
    (gct,) = timers(eff, "gct")
    st, eff = handle(st, TimerFired(key=gct.key), gct.at)
    nacks = sent(eff, Nack)
    assert len(nacks) == 3
    assert all(n.end - n.start + 1 <= CFG.nack_chunk_us for n in nacks)
    assert (nacks[0].start, nacks[-1].end) == (101, far)


def test_ack_expected_triggers_immediate_nacks() -> None:
    st = boot()
    st, _ = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    st, eff = rx(st, AckExpected(pubend="P0", upto=5_000), 20)
    assert [(n.start, n.end) for n in sent(eff, Nack)] == [(101, 5_000)]
    assert [a.upto for a in sent(eff, Ack)] == [100]


def test_dct_nacks_a_horizon_that_lags_real_time() -> None:
    cfg = GDConfig(dct_us=1_000_000, ack_delay_us=0)
    st = boot(cfg)
    st, _ = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    st, eff = handle(st, TimerFired(key=("gd", st.epoch, "status")), 1_500_000)
    nacks = sent(eff, Nack)
    assert (nacks[0].start, nacks[-1].end) == (101, 500_000)
    assert sum(n.end - n.start + 1 for n in nacks) == 500_000 - 100
    st0 = boot()  # DCT = infinity (the paper's setting): no such nack
    st0, _ = rx(st0, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    _, eff = handle(st0, TimerFired(key=("gd", st0.epoch, "status")), 1_500_000)
    assert sent(eff, Nack) == []


def test_connect_starts_a_new_connection_and_crash_ends_them() -> None:
    st = boot(subs={"a": "*"})
    st, eff = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    assert delivered(eff) == [("a", 100)]
    st, _ = handle(st, Disconnect(subscriber="a"), 20)
    st, eff = rx(st, Knowledge(pubend="P0", silence=((101, 199),), data=data(200)), 30)
    assert delivered(eff) == []
    st, _ = handle(st, Connect(subscriber="a", filter="*", connection=8), 40)
    st, eff = rx(st, Knowledge(pubend="P0", silence=((201, 299),), data=data(300)), 50)
    assert [(e.tick, e.connection) for e in each_delivery(eff)] == [(300, 8)]
    down = crash(st)
    up, _ = handle(down, Restart(), 1_000_000)
    assert up.connections == pmap()
    _, eff = rx(
        up,
        Knowledge(pubend="P0", silence=((1_000_000, 1_000_099),), data=data(1_000_100)),
        1_000_200,
    )
    assert delivered(eff) == []  # nobody connected after the restart yet


def test_a_restarted_shb_starts_at_its_restart_time() -> None:
    st = boot(subs={"a": "*"})
    up, _ = handle(crash(st), Restart(), 5_000)
    up, _ = handle(up, Connect(subscriber="a", filter="*", connection=2), 5_000)
    # a tick from before the restart belongs to no connection of this incarnation
    _, eff = rx(up, Knowledge(pubend="P0", data=data(4_000)), 6_000)
    assert delivered(eff) == []
    up, eff = rx(up, Knowledge(pubend="P0", silence=((4_999, 5_099),), data=data(5_100)), 6_000)
    assert delivered(eff) == [("a", 5_100)]


def test_bad_filter_is_rejected_and_connect_elsewhere_is_misuse() -> None:
    st = boot()
    st2, eff = handle(st, Connect(subscriber="z", filter="x ==", connection=1), 5)
    assert st2 is st
    assert isinstance(eff[0], Rejected)
    phb, _ = handle(initial_states(two_broker({"a": "*"}), CFG)["phb"], Restart(), 0)
    with pytest.raises(ProtocolMisuse, match="subscribers connect to an SHB"):
        handle(phb, Connect(subscriber="a", filter="*"), 5)
    assert handle(st, Disconnect(subscriber="nobody"), 5) == (st, ())


def total_order() -> GDTopology:
    return GDTopology(
        brokers={"phb": ("PHB", "phb"), "shb": ("SHB", "shb")},
        links=[("phb", "shb")],
        pubends={"P0": "phb", "P1": "phb"},
        cell_edges=[("phb", "shb")],
        subscribers={
            "t": SubscriberSpec(shb="shb", filter="*", group="topic2"),
            "p": SubscriberSpec(shb="shb", filter="*"),
        },
        groups={"topic2": ["P0", "P1"]},
    )


def test_total_order_merges_by_tick_below_the_least_horizon() -> None:
    st, _ = handle(initial_states(total_order(), CFG)["shb"], Restart(), 0)
    st, _ = handle(st, Connect(subscriber="t", filter="*", connection=1), 0)
    st, _ = handle(st, Connect(subscriber="p", filter="*", connection=1), 0)
    st, eff = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    # publisher order delivers at once; the merged stream waits for P1 [GD §2.4]
    assert delivered(eff) == [("p", 100)]
    assert sent(eff, Ack) == []  # not delivered to the total-order subscriber yet
    st, eff = rx(st, Knowledge(pubend="P1", silence=((0, 149),), data=data(150, "P1")), 20)
    assert delivered(eff) == [("p", 150), ("t", 100)]
    st, eff = rx(st, Knowledge(pubend="P0", silence=((101, 199),), data=data(200)), 30)
    assert delivered(eff) == [("p", 200), ("t", 150)]
    # a quiet P1 stalls the merge; its Q ticks below P0's horizon are nacked after GCT
    gct = timers(eff, "gct")
    st, eff = handle(st, TimerFired(key=("gd", st.epoch, "gct", "P1")), 30 + CFG.gct_us)
    nacks = sent(eff, Nack)
    assert [(n.pubend, n.start, n.end) for n in nacks] == [("P1", 151, 200)]
    assert gct
    st, eff = rx(
        st, Knowledge(pubend="P1", silence=((151, 400),), retransmission=True), 40 + CFG.gct_us
    )
    assert delivered(eff) == [("t", 200)]


def test_best_effort_shb_delivers_on_arrival() -> None:
    st = boot(GDConfig(best_effort=True))
    st, eff = rx(st, Knowledge(pubend="P0", data=data(500, x=1)), 10)
    assert delivered(eff) == [("a", 500), ("b", 500)]
    assert [e for e in eff if isinstance(e, Send)] == []


def test_acks_follow_the_broker_that_sent_ack_expected() -> None:
    """Swarm seeds 3/15/21: after faults an SHB whose last sender is the other broker of the
    upstream cell must ack the broker whose AckExpected reached it."""
    from gapless.impl.gd import figure3

    st, _ = handle(initial_states(figure3(pubends=1), CFG)["s1"], Restart(), 0)
    st, eff = rx(st, Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10, sender="b1")
    assert [e.to for e in eff if isinstance(e, Send)] == ["b1"]
    st, eff = rx(st, AckExpected(pubend="P0", upto=100), 20, sender="b2")
    assert [(e.to, type(e.msg).__name__) for e in eff if isinstance(e, Send)] == [("b2", "Ack")]
