"""The pubend hosting broker, driven alone with hand-built inputs [GD §2.2, §3.2]."""

from __future__ import annotations

from typing import Any

import pytest

from gapless.impl.effects import Persist, Send, SetTimer
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd import (
    Ack,
    AckExpected,
    GDConfig,
    Knowledge,
    LogRecord,
    Nack,
    NodeState,
    crash,
    figure3,
    handle,
    initial_states,
    logged,
    two_broker,
    wire,
)
from gapless.impl.inputs import Persisted, Publish, Receive, Restart, TimerFired

CFG = GDConfig()


def boot(name: str = "phb", topology: Any = None, config: GDConfig = CFG) -> NodeState:
    states = initial_states(topology or two_broker({"a": "*"}), config)
    st, eff = handle(states[name], Restart(), 0)
    assert any(isinstance(e, SetTimer) for e in eff) != config.best_effort
    return st


def sends(eff: tuple[Any, ...]) -> list[Send]:
    return [e for e in eff if isinstance(e, Send)]


def publish(st: NodeState, now: int, pubend: str = "P0", **attrs: Any) -> tuple[NodeState, Persist]:
    st, eff = handle(st, Publish(pubend=pubend, attributes=attrs), now)
    (p,) = eff
    assert isinstance(p, Persist)
    return st, p


def test_a_message_is_published_only_once_logged() -> None:
    st = boot()
    st, persist = publish(st, 5_000, x=1)
    assert persist.delay == CFG.logging_delay_us
    rec = persist.value
    assert isinstance(rec, LogRecord)
    assert logged(persist) == ("P0", rec.data.tick, rec.data.attributes)
    assert rec.data.tick >= 5_000
    assert rec.data.tick % CFG.tick_modulus == 0  # pubend number 0's residue [GD §2.2]
    st2, eff = handle(st, Persisted(key=persist.key), 105_000)
    (send,) = sends(eff)
    msg = send.msg
    assert send.to == "shb"
    assert isinstance(msg, Knowledge)
    assert msg.data == rec.data
    assert not msg.retransmission
    # the message says every tick before it is F (its final prefix, here) [GD §3.1]
    assert msg.prefix == rec.data.tick - 1
    assert st2.log["P0"].entries == ((rec.data.tick, rec.data),)
    # a second completion of the same write changes nothing: same object, no effects
    st3, eff3 = handle(st2, Persisted(key=persist.key), 106_000)
    assert st3 is st2
    assert eff3 == ()


def test_ticks_increase_and_pubends_never_share_a_residue() -> None:
    topo = two_broker({"a": "*"}, pubends=3)
    st = boot(topology=topo)
    ticks: dict[str, list[int]] = {"P0": [], "P1": [], "P2": []}
    for i in range(20):
        for p in sorted(ticks):
            st, persist = publish(st, 1_000 + i * 7, pubend=p)
            ticks[p].append(persist.value.data.tick)
    for number, p in enumerate(sorted(ticks)):
        assert ticks[p] == sorted(set(ticks[p]))
        assert {t % CFG.tick_modulus for t in ticks[p]} == {number}


def test_preassigned_future_ticks_are_final_and_never_reused() -> None:
    cfg = GDConfig(preassign_us=50_000)
    st = boot(config=cfg)
    st, p1 = publish(st, 1_000)
    t1 = p1.value.data.tick
    st, eff = handle(st, Persisted(key=p1.key), 101_000)
    (send,) = sends(eff)
    assert (t1 + 1, t1 + 50_000) in send.msg.silence  # "D F*" [GD §2.2]
    st, p2 = publish(st, 2_000)
    assert p2.value.data.tick > t1 + 50_000
    # a restart never reuses a reserved tick either
    st = crash(st)
    st, _ = handle(st, Restart(), 3_000)
    st, p3 = publish(st, 3_000)
    assert p3.value.data.tick > t1 + 50_000


def test_unlogged_messages_are_lost_by_a_crash_and_the_log_is_kept() -> None:
    st = boot()
    st, pa = publish(st, 1_000)
    st, _ = handle(st, Persisted(key=pa.key), 101_000)
    st, pb = publish(st, 150_000)  # still being logged when the broker crashes
    down = crash(st)
    assert not down.up
    assert down.log == st.log
    # a crashed node ignores everything but Restart
    assert handle(down, Persisted(key=pb.key), 250_000) == (down, ())
    up, eff = handle(down, Restart(), 20_000_000)
    ta = pa.value.data.tick
    # after a restart: AckExpected(last logged tick) down every path [GD §4.2]
    (ae,) = sends(eff)
    assert ae.msg == AckExpected(pubend="P0", upto=ta)
    # the unlogged tick is silence now: a nack for it is answered F, the logged one D
    tb = pb.value.data.tick
    up, eff = handle(up, Receive(sender="shb", msg=Nack(pubend="P0", start=ta, end=tb)), 20_000_001)
    out = sends(eff)
    assert [s.to for s in out] == ["shb"]
    assert all(s.msg.retransmission for s in out)
    assert out[0].msg.data.tick == ta
    finals = [r for s in out for r in s.msg.silence]
    assert any(lo <= tb <= hi for lo, hi in finals)


def test_nacks_are_answered_from_the_log_only_to_the_nacker() -> None:
    topo = figure3(pubends=1)
    st = boot("p1", topo)
    st, persist = publish(st, 1_000)
    st, eff = handle(st, Persisted(key=persist.key), 101_000)
    first = sends(eff)
    assert sorted(s.to for s in first) == ["b1", "b3"]  # P0 -> position 0 of each cell
    t = persist.value.data.tick
    st, eff = handle(st, Receive(sender="b2", msg=Nack(pubend="P0", start=t - 10, end=t)), 200_000)
    out = sends(eff)
    assert {s.to for s in out} == {"b2"}
    assert [s.msg.data.tick for s in out if s.msg.data] == [t]
    assert wire(out[0].msg).retransmission


def test_idle_silence_and_ack_expected() -> None:
    st = boot()
    st, persist = publish(st, 1_000)
    st, _ = handle(st, Persisted(key=persist.key), 101_000)
    # not acked after AET: AckExpected(now - AET) towards the unacked path [GD §3.2]
    key = ("gd", st.epoch, "aet")
    st, eff = handle(st, TimerFired(key=key), 11_000_000)
    ae = [s for s in sends(eff) if isinstance(s.msg, AckExpected)]
    assert ae[0].msg.upto == 11_000_000 - CFG.aet_us
    # once acked, no more AckExpected and the log is released below the ack
    t = persist.value.data.tick
    st, _ = handle(st, Receive(sender="shb", msg=Ack(pubend="P0", upto=t)), 11_000_100)
    assert t not in dict(st.log["P0"].entries)
    assert st.log["P0"].floor >= t
    st, eff = handle(st, TimerFired(key=key), 12_000_000)
    assert not [s for s in sends(eff) if isinstance(s.msg, AckExpected)]


def test_stale_timers_after_a_crash_are_ignored() -> None:
    st = boot()
    old_key = ("gd", st.epoch, "aet")
    st = crash(st)
    st, _ = handle(st, Restart(), 1_000)
    assert handle(st, TimerFired(key=old_key), 2_000) == (st, ())


def test_publish_at_a_broker_that_does_not_host_the_pubend_is_misuse() -> None:
    st = boot()
    with pytest.raises(ProtocolMisuse, match="does not host pubend 'P9'"):
        handle(st, Publish(pubend="P9"), 10)
    shb = boot("shb")
    with pytest.raises(ProtocolMisuse, match="does not host"):
        handle(shb, Publish(pubend="P0"), 10)


def test_best_effort_pubend_sends_at_once_and_logs_nothing() -> None:
    st = boot(config=GDConfig(best_effort=True))
    st, eff = handle(st, Publish(pubend="P0", attributes={"x": 1}), 10)
    (send,) = eff
    assert isinstance(send, Send)
    assert send.msg.data is not None
    assert send.msg.silence == ()


def test_another_pubends_phb_is_never_downstream() -> None:
    from gapless.impl.gd import GDTopology, SubscriberSpec

    topo = GDTopology(
        brokers={"p1": ("PHB", "p1"), "p2": ("PHB", "p2"), "b": ("IB", "B"), "s": ("SHB", "s")},
        links=[("p1", "b"), ("p2", "b"), ("b", "s")],
        pubends={"T1": "p1", "T2": "p2"},
        cell_edges=[("p1", "B"), ("p2", "B"), ("B", "s")],
        subscribers={"u": SubscriberSpec(shb="s", filter="*", group="g")},
        groups={"g": ["T1", "T2"]},
    )
    assert topo.child_cells("T1", "B") == ("s",)
    assert topo.child_cells("T2", "B") == ("s",)
    assert not topo.in_tree("T1", "p2")
