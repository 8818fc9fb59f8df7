"""One ack timer per GD node (issue 17): the streams of an SHB that want to ack wait for one
timer, armed by the first of them; when it fires every waiting pubend acks its delivered
prefix, and each pubend's timed acks stay at least ``ack_delay_us`` apart [GD §2.1.1, §3.1]."""

from __future__ import annotations

from typing import Any

from pyrsistent import pmap

from gapless.impl.effects import Send, SetTimer
from gapless.impl.gd import (
    Ack,
    Data,
    GDConfig,
    Knowledge,
    NodeState,
    handle,
    initial_states,
    two_broker,
)
from gapless.impl.inputs import Connect, Receive, Restart, TimerFired

DELAY = 100_000
CFG = GDConfig(ack_delay_us=DELAY)


def boot() -> NodeState:
    states = initial_states(two_broker({"a": "*"}, pubends=2), CFG)
    st, _ = handle(states["shb"], Restart(), 0)
    st, _ = handle(st, Connect(subscriber="a", filter="*", connection=1), 0)
    return st


def first(pubend: str, tick: int) -> Knowledge:
    """The first message of ``pubend``: everything before ``tick`` is silence."""
    d = Data(pubend=pubend, tick=tick, attributes=pmap({"x": 1}))
    return Knowledge(pubend=pubend, silence=((0, tick - 1),), data=d)


def rx(st: NodeState, msg: Any, now: int) -> tuple[NodeState, tuple[Any, ...]]:
    return handle(st, Receive(sender="phb", msg=msg), now)


def ack_timers(eff: tuple[Any, ...]) -> list[SetTimer]:
    return [e for e in eff if isinstance(e, SetTimer) and e.key[2] == "ack"]


def acks(eff: tuple[Any, ...]) -> list[tuple[str, int]]:
    return [(e.msg.pubend, e.msg.upto) for e in eff if isinstance(e, Send) and type(e.msg) is Ack]


def test_two_pubends_share_the_nodes_one_ack_timer() -> None:
    st = boot()
    st, eff = rx(st, first("P0", 1_024), 10_000)
    (timer,) = ack_timers(eff)
    assert timer.key == ("gd", st.epoch, "ack")  # no pubend in the key: the node's timer
    assert timer.at == 10_000 + DELAY
    assert acks(eff) == []
    # P1 wants to ack too: it waits for the timer already armed, arming none of its own
    st, eff = rx(st, first("P1", 2_049), 50_000)
    assert ack_timers(eff) == []
    assert acks(eff) == []
    # the timer fires: both pubends ack their delivered prefixes, in pubend order
    st, eff = handle(st, TimerFired(key=timer.key), timer.at)
    assert acks(eff) == [("P0", 1_024), ("P1", 2_049)]
    assert ack_timers(eff) == []
    # firing again with nothing waiting changes nothing
    st2, eff2 = handle(st, TimerFired(key=timer.key), timer.at + 1)
    assert st2 is st
    assert eff2 == ()


def test_a_pubends_timed_acks_stay_ack_delay_apart() -> None:
    st = boot()
    st, eff = rx(st, first("P0", 1_024), 10_000)
    (timer,) = ack_timers(eff)
    st, eff = handle(st, TimerFired(key=timer.key), timer.at)
    assert acks(eff) == [("P0", 1_024)]
    # the next D of P0 arms the timer again, from now: its ack is DELAY after this message
    t = 110_080  # P0's residue (tick % 64 == 0), after the timer fired at 110,000
    d = Data(pubend="P0", tick=t, attributes=pmap({"x": 1}))
    msg = Knowledge(pubend="P0", prefix=1_024, silence=((1_025, t - 1),), data=d)
    st, eff = rx(st, msg, t + 20)
    (again,) = ack_timers(eff)
    assert again.at == t + 20 + DELAY
    assert again.at - timer.at >= DELAY
    st, eff = handle(st, TimerFired(key=again.key), again.at)
    assert acks(eff) == [("P0", t)]
