"""The intermediate broker, driven alone with hand-built inputs [GD §3.1]."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as hst
from pyrsistent import pmap

from gapless.impl.effects import Rejected, Send, SetTimer
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
    handle,
    initial_states,
)
from gapless.impl.inputs import LinkChanged, Receive, Restart, TimerFired

CFG = GDConfig(ack_delay_us=0)


def line(filters: dict[str, str] | None = None) -> GDTopology:
    """phb -> ib -> {s1, s2}; subscribers s1-a at s1 and s2-a at s2."""
    filters = filters or {"s1": "true", "s2": "true"}
    return GDTopology(
        brokers={
            "phb": ("PHB", "phb"),
            "ib": ("IB", "ib"),
            "s1": ("SHB", "s1"),
            "s2": ("SHB", "s2"),
        },
        links=[("phb", "ib"), ("ib", "s1"), ("ib", "s2")],
        pubends={"P0": "phb"},
        cell_edges=[("phb", "ib"), ("ib", "s1"), ("ib", "s2")],
        subscribers={
            "s1-a": SubscriberSpec(shb="s1", filter=filters["s1"]),
            "s2-a": SubscriberSpec(shb="s2", filter=filters["s2"]),
        },
    )


def boot(topo: GDTopology | None = None, config: GDConfig = CFG, name: str = "ib") -> NodeState:
    st, _ = handle(initial_states(topo or line(), config)[name], Restart(), 0)
    return st


def rx(st: NodeState, sender: str, msg: Any, now: int) -> tuple[NodeState, list[Send]]:
    st, eff = handle(st, Receive(sender=sender, msg=msg), now)
    return st, [e for e in eff if isinstance(e, Send)]


def data(tick: int, **attrs: Any) -> Data:
    return Data(pubend="P0", tick=tick, attributes=pmap(attrs))


def test_first_time_data_goes_down_every_matching_path() -> None:
    st = boot()
    st, out = rx(st, "phb", Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    assert sorted(s.to for s in out) == ["s1", "s2"]
    assert all(s.msg.data.tick == 100 and not s.msg.retransmission for s in out)


def test_two_nacks_are_consolidated_into_one_upstream() -> None:
    st = boot()
    st, out1 = rx(st, "s1", Nack(pubend="P0", start=10, end=20), 1_000)
    st, out2 = rx(st, "s2", Nack(pubend="P0", start=10, end=20), 1_100)
    up1 = [s for s in out1 if isinstance(s.msg, Nack)]
    assert [(s.to, s.msg.start, s.msg.end) for s in up1] == [("phb", 10, 20)]
    assert [s for s in out2 if isinstance(s.msg, Nack)] == []  # already C: consolidated
    # an overlapping nack forwards only the ticks newly C
    st, out3 = rx(st, "s2", Nack(pubend="P0", start=15, end=30), 1_200)
    assert [(s.msg.start, s.msg.end) for s in out3] == [(21, 30)]
    # the answer goes back only to the brokers that nacked each tick
    st, out4 = rx(
        st,
        "phb",
        Knowledge(pubend="P0", silence=((10, 24),), data=data(25), retransmission=True),
        2_000,
    )
    by_dest = {s.to: s.msg for s in out4}
    assert set(by_dest) == {"s1", "s2"}
    assert by_dest["s1"].silence == ((10, 20),)
    assert by_dest["s1"].data is None  # s1 was not curious for tick 25: D removed (-> Q)
    assert by_dest["s2"].data.tick == 25
    assert all(m.retransmission for m in by_dest.values())


def test_istream_curiosity_is_forgotten_after_the_minimum_repetition_interval() -> None:
    st = boot()
    st, eff = handle(st, Receive(sender="s1", msg=Nack(pubend="P0", start=5, end=9)), 1_000)
    (timer,) = [e for e in eff if isinstance(e, SetTimer)]
    assert timer.at == 1_000 + CFG.min_repetition_us
    # before it fires, a repeated nack is consolidated away
    st, out = rx(st, "s1", Nack(pubend="P0", start=5, end=9, retransmission=True), 200_000)
    assert out == []
    st, _ = handle(st, TimerFired(key=timer.key), timer.at)
    st, out = rx(st, "s1", Nack(pubend="P0", start=5, end=9, retransmission=True), timer.at + 1)
    assert [(s.to, s.msg.start, s.msg.end) for s in out] == [("phb", 5, 9)]


def test_a_nack_is_satisfied_from_the_istream() -> None:
    st = boot()
    st, _ = rx(st, "phb", Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    st, out = rx(st, "s1", Nack(pubend="P0", start=50, end=120), 500)
    # D and F known here go straight back to s1; only the Q part (101..120) goes upstream
    back = [s for s in out if s.to == "s1"]
    up = [s for s in out if s.to == "phb"]
    assert back[0].msg.retransmission
    assert back[0].msg.data.tick == 100
    assert (50, 99) in back[0].msg.silence
    assert [(s.msg.start, s.msg.end) for s in up] == [(101, 120)]


def test_a_filtered_d_becomes_f_and_is_acked_at_once() -> None:
    topo = line({"s1": "x == 1", "s2": "x == 1"})
    st = boot(topo)
    st, out = rx(st, "phb", Knowledge(pubend="P0", silence=((0, 99),), data=data(100, x=2)), 10)
    # nobody downstream matches: no data goes down, the tick is F, the prefix is acked up
    assert [s for s in out if s.msg.__class__ is Knowledge] == []
    acks = [s for s in out if isinstance(s.msg, Ack)]
    assert [(s.to, s.msg.upto) for s in acks] == [("phb", 100)]
    # a later nack for the tick is answered with F, not D [GD §2.4]
    st, out = rx(st, "s1", Nack(pubend="P0", start=100, end=100), 20)
    assert [(s.to, s.msg.data, s.msg.silence) for s in out] == [("s1", None, ((100, 100),))]
    st2 = boot(topo)
    st2, _ = rx(st2, "phb", Knowledge(pubend="P0", silence=((0, 98),), data=data(100, x=2)), 10)
    st2, out = rx(st2, "s1", Nack(pubend="P0", start=99, end=100), 20)
    back = [s for s in out if s.to == "s1"]
    assert back[0].msg.data is None
    assert back[0].msg.silence == ((100, 100),)


def test_first_time_silence_only_towards_curious_brokers() -> None:
    st = boot()
    st, out = rx(st, "phb", Knowledge(pubend="P0", silence=((0, 50),)), 10)
    assert [s for s in out if isinstance(s.msg, Knowledge)] == []
    st, _ = rx(st, "s2", Nack(pubend="P0", start=60, end=70), 20)
    st, out = rx(st, "phb", Knowledge(pubend="P0", silence=((51, 80),)), 30)
    ks = [s for s in out if isinstance(s.msg, Knowledge)]
    assert [(s.to, s.msg.silence, s.msg.retransmission) for s in ks] == [("s2", ((60, 70),), False)]


def test_acks_are_consolidated() -> None:
    st = boot()
    st, _ = rx(st, "phb", Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    st, out = rx(st, "s1", Ack(pubend="P0", upto=100), 20)
    # s2 has not acked tick 100 yet: at most the silence below it is acked
    assert all(s.msg.upto < 100 for s in out if isinstance(s.msg, Ack))
    st, out = rx(st, "s2", Ack(pubend="P0", upto=150), 30)
    assert [(s.to, s.msg.upto) for s in out if isinstance(s.msg, Ack)] == [("phb", 100)]
    st, out = rx(st, "s1", Ack(pubend="P0", upto=150), 40)
    assert [(s.to, s.msg.upto) for s in out if isinstance(s.msg, Ack)] == [("phb", 150)]


def test_ack_expected_is_answered_or_passed_down() -> None:
    st = boot()
    st, _ = rx(st, "s1", Ack(pubend="P0", upto=500), 10)
    st, out = rx(st, "phb", AckExpected(pubend="P0", upto=400), 20)
    assert [(s.to, type(s.msg).__name__) for s in out] == [("s2", "AckExpected")]
    st, _ = rx(st, "s2", Ack(pubend="P0", upto=500), 30)
    st, out = rx(st, "phb", AckExpected(pubend="P0", upto=400), 40)
    assert [(s.to, type(s.msg).__name__, s.msg.upto) for s in out] == [("phb", "Ack", 500)]


def test_bad_network_input_is_rejected_not_raised() -> None:
    st = boot()
    for sender, msg in [
        ("s1", Knowledge(pubend="P0", data=data(5))),  # knowledge from downstream
        ("phb", Nack(pubend="P0", start=1, end=2)),  # nack from upstream
        ("s1", Nack(pubend="P0", start=9, end=2)),  # empty range
        ("s1", "garbage"),
        ("s1", Ack(pubend="P9", upto=3)),  # unknown pubend
        ("nobody", Ack(pubend="P0", upto=3)),  # not a neighbour
    ]:
        st2, eff = handle(st, Receive(sender=sender, msg=msg), 5)
        assert st2 is st
        assert len(eff) == 1
        assert isinstance(eff[0], Rejected)


def test_ignored_inputs_return_the_same_object() -> None:
    st = boot()
    assert handle(st, LinkChanged(neighbour="s1", up=True), 5) == (st, ())
    assert handle(st, LinkChanged(neighbour="zz", up=False), 5) == (st, ())
    assert handle(st, TimerFired(key=("other", 1)), 5) == (st, ())
    st2, _ = rx(st, "phb", Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    st3, eff = handle(st2, Receive(sender="phb", msg=Knowledge(pubend="P0", data=data(100))), 11)
    assert st3 is st2
    assert eff == ()


def test_coverage_labels_are_observed_when_asked() -> None:
    from gapless.impl.gd import Observe

    st = boot(config=GDConfig(coverage=True))
    _, eff = handle(st, Receive(sender="s1", msg=Nack(pubend="P0", start=5, end=9)), 1)
    obs = [e for e in eff if isinstance(e, Observe)]
    assert obs
    assert "C:N->C" in obs[0].labels
    _, eff = handle(
        st, Receive(sender="phb", msg=Knowledge(pubend="P0", silence=((0, 9),), data=data(10))), 1
    )
    (ob,) = [e for e in eff if isinstance(e, Observe)]
    assert {"K:Q->D", "K:Q->F"} <= set(ob.labels)
    plain = boot()
    _, eff = handle(plain, Receive(sender="s1", msg=Nack(pubend="P0", start=5, end=9)), 1)
    assert not [e for e in eff if isinstance(e, Observe)]


def test_acks_go_up_at_most_once_per_ack_delay() -> None:
    st = boot(config=GDConfig(ack_delay_us=50_000))
    st, _ = rx(st, "phb", Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    timers: list[SetTimer] = []
    for now, sender, upto in [(15, "s2", 300), (20, "s1", 200), (30, "s1", 300)]:
        st, eff = handle(st, Receive(sender=sender, msg=Ack(pubend="P0", upto=upto)), now)
        assert [e for e in eff if isinstance(e, Send)] == []
        timers += [e for e in eff if isinstance(e, SetTimer)]
    (timer,) = timers
    assert timer.at == 15 + 50_000
    st, eff = handle(st, TimerFired(key=timer.key), timer.at)
    assert [(e.to, e.msg.upto) for e in eff if isinstance(e, Send)] == [("phb", 300)]


def test_sideways_routing_through_a_cell_neighbour() -> None:
    from gapless.impl.gd import LinkStatus, figure3

    states = initial_states(figure3(pubends=1), CFG)
    b1, _ = handle(states["b1"], Restart(), 0)
    b2, _ = handle(states["b2"], Restart(), 0)
    b1, _ = handle(b1, LinkChanged(neighbour="s1", up=False), 5)
    b1, out = rx(b1, "p1", Knowledge(pubend="P0", silence=((0, 99),), data=data(100)), 10)
    routes = sorted((s.to, s.msg.for_cell) for s in out if isinstance(s.msg, Knowledge))
    assert routes == [("b2", "s1"), ("s2", None)]
    relayed = next(s.msg for s in out if s.to == "b2")
    b2, out = rx(b2, "b1", relayed, 11)
    assert [(s.to, s.msg.data.tick) for s in out if isinstance(s.msg, Knowledge)] == [("s1", 100)]
    # link status: b1 tells p1 it cannot reach s1, so p1 prefers b2 for every pubend [GD §3.1]
    p1, _ = handle(states["p1"], Restart(), 0)
    b1, eff = handle(b1, TimerFired(key=("gd", b1.epoch, "status")), 500_000)
    status = next(e.msg for e in eff if isinstance(e, Send) and e.to == "p1")
    assert isinstance(status, LinkStatus)
    assert "s1" not in status.reach
    p1, _ = handle(p1, Receive(sender="b1", msg=status), 500_001)
    assert p1.status["b1"] == status.reach
    from gapless.impl.effects import Persist
    from gapless.impl.inputs import Persisted, Publish

    p1, eff = handle(p1, Publish(pubend="P0"), 600_000)
    (persist,) = [e for e in eff if isinstance(e, Persist)]
    p1, eff = handle(p1, Persisted(key=persist.key), 700_000)
    assert sorted(e.to for e in eff if isinstance(e, Send)) == ["b2", "b3"]


def test_sideways_silence_is_final_for_its_cell_only() -> None:
    """Swarm seed 26: silence relayed for one cell (its filter removed a D) must not become
    istream F, or the other cells' nacks for that D are answered F."""
    from gapless.impl.gd import figure3

    states = initial_states(figure3(pubends=1), CFG)
    b2, _ = handle(states["b2"], Restart(), 0)
    relayed = Knowledge(pubend="P0", prefix=-1, silence=((0, 199),), data=data(200), for_cell="s1")
    b2, out = rx(b2, "b1", relayed, 10)
    assert [(s.to, s.msg.data.tick) for s in out if isinstance(s.msg, Knowledge)] == [("s1", 200)]
    # s2 nacks 100..150: b2 does not know them (only s1's view had them F) -> asks upstream
    b2, out = rx(b2, "s2", Nack(pubend="P0", start=100, end=150), 20)
    assert [(s.to, type(s.msg).__name__) for s in out] == [("p1", "Nack")]
    # s1 nacks the same ticks: they are F for s1, answered at once
    b2, out = rx(b2, "s1", Nack(pubend="P0", start=100, end=150), 30)
    assert [(s.to, s.msg.silence) for s in out] == [("s1", ((100, 150),))]


@given(
    hst.lists(hst.integers(0, 60), max_size=12, unique=True),
    hst.integers(-3, 63),
    hst.integers(-3, 63),
)
def test_ranges_clip_is_intersection_with_one_range(points: list[int], lo: int, hi: int) -> None:
    """``clip`` (bisection) agrees with the scanning ``intersect`` on every input."""
    from gapless.impl import ticksets as R

    pts = sorted(points)
    rs = R.normalize([(pts[i], pts[i + 1]) for i in range(0, len(pts) - 1, 2)])
    expected = () if lo > hi else R.intersect(rs, ((lo, hi),))
    assert R.clip(rs, lo, hi) == expected
