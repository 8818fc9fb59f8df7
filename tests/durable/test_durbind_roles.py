"""The durable pubend and intermediate-broker roles alone [DUR §3, §4.1]: nack answers from the
stream, the L step under the L rule and under the planted ``l_slack``, release reports merged up
the tree, ignored input returning the same state, network input rejected, misuse raising."""

from __future__ import annotations

import pytest

from gapless.impl.durable.node import DurNodeConfig, node_crash, node_on_receive, node_start
from gapless.impl.durable.pubend import (
    HEARTBEAT,
    DurPubendConfig,
    PubendPolicy,
    pubend_crash,
    pubend_heartbeat,
    pubend_on_nack,
    pubend_on_publish,
    pubend_on_release_report,
    pubend_restart,
    pubend_start,
)
from gapless.impl.durable.release import ReleaseReport
from gapless.impl.durable.shb_inputs import Emit, Lost
from gapless.impl.durable.wire import wire
from gapless.impl.effects import Rejected, Send, SetTimer
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd.messages import Knowledge, Nack
from gapless.impl.inputs import Publish


def _phb(**kw: object) -> DurPubendConfig:
    return DurPubendConfig(node="phb", pubends=("p",), children=("ib",), **kw)  # type: ignore[arg-type]


def _published(cfg: DurPubendConfig, ticks: tuple[int, ...]) -> object:
    s = pubend_start(cfg)
    for t in ticks:
        s, _fx = pubend_on_publish(s, Publish(pubend="p", attributes={"k": t}), t)
    return s


def test_publish_logs_once_and_sends_silence_then_data_downstream() -> None:
    s = pubend_start(_phb())
    s, fx = pubend_on_publish(s, Publish(pubend="p", attributes={"k": 1}), 10)
    emits = [e for e in fx if type(e) is Emit]
    sends = [e for e in fx if type(e) is Send]
    assert [e.kind for e in emits] == ["dur_event"]
    assert emits[0].detail.tick == 10
    (msg,) = [e.msg for e in sends]
    assert msg.silence == ((0, 9),)
    assert msg.data.tick == 10
    # a second event at the same µs gets the next tick
    s, fx = pubend_on_publish(s, Publish(pubend="p", attributes={"k": 2}), 10)
    assert [e.detail.tick for e in fx if type(e) is Emit] == [11]


def test_a_nack_is_answered_with_lost_data_and_silence() -> None:
    s = _published(_phb(answer_window=2), (10, 20, 30))
    s, _ = pubend_heartbeat(s, 40)
    _, fx = pubend_on_nack(s, Nack(pubend="p", start=5, end=35), "ib", 41)
    msgs = [e.msg for e in fx]
    assert all(e.to == "ib" for e in fx)
    assert [m.data.tick for m in msgs if type(m) is Knowledge and m.data] == [10, 20]
    (sil,) = [m for m in msgs if type(m) is Knowledge and m.silence]
    # the window stops the answer just before the third event: 30..35 are left for a retry
    assert sil.silence == ((5, 9), (11, 19), (21, 29))
    # release through 20, then ask again: L first
    s, _ = pubend_on_release_report(
        s, ReleaseReport(node="ib", pubend="p", released=20, delivered=40), 42
    )
    _, fx = pubend_on_nack(s, Nack(pubend="p", start=5, end=35), "ib", 43)
    msgs = [e.msg for e in fx]
    assert msgs[0] == Lost(pubend="p", start=5, end=20)
    assert [m.data.tick for m in msgs if type(m) is Knowledge and m.data] == [30]


def test_the_l_step_follows_the_rule_and_the_planted_slack_breaks_it() -> None:
    rep = ReleaseReport(node="ib", pubend="p", released=20, delivered=25)
    s = _published(_phb(), (10, 20, 30))
    s, fx = pubend_on_release_report(s, rep, 31)
    (e,) = [e for e in fx if type(e) is Emit]
    assert (e.detail.through, e.detail.tr, e.detail.td) == (20, 20, 25)
    bad = _published(_phb(policy=PubendPolicy(l_slack=8)), (10, 20, 30))
    bad, fx = pubend_on_release_report(bad, rep, 31)
    (e,) = [e for e in fx if type(e) is Emit]
    assert e.detail.through == 28 > e.detail.td


def test_early_release_needs_max_retain_and_the_clock() -> None:
    rep = ReleaseReport(node="ib", pubend="p", released=5, delivered=30)
    s = _published(_phb(max_retain=10), (10, 20, 30))
    s, fx = pubend_on_release_report(s, rep, 31)
    (e,) = [e for e in fx if type(e) is Emit]
    assert e.detail.through == 19  # T - t > 10 for t <= 19, and t <= Td
    s, fx = pubend_heartbeat(s, 100)
    (e,) = [e for e in fx if type(e) is Emit]
    assert e.detail.through == 30  # capped at Td
    assert SetTimer(key=HEARTBEAT, at=100 + s.config.heartbeat) in fx


def test_pubend_ignores_and_rejects() -> None:
    s = _published(_phb(), (10,))
    same, fx = pubend_on_release_report(
        s, ReleaseReport(node="ib", pubend="p", released=-1, delivered=-1), 11
    )
    assert same is s
    assert fx == ()
    for bad in (
        ReleaseReport(node="zz", pubend="p", released=1, delivered=2),
        ReleaseReport(node="ib", pubend="q", released=1, delivered=2),
        ReleaseReport(node="ib", pubend="p", released=3, delivered=2),
    ):
        same, fx = pubend_on_release_report(s, bad, 12)
        assert same is s
        assert [type(e) for e in fx] == [Rejected]
    same, fx = pubend_on_nack(s, Nack(pubend="p", start=9, end=3), "ib", 13)
    assert same is s
    assert [type(e) for e in fx] == [Rejected]
    _, fx = pubend_on_publish(s, Publish(pubend="nope"), 14)
    assert [type(e) for e in fx] == [Rejected]
    assert pubend_restart(s, 0)[0] is s
    assert pubend_crash(s).release == s.release


def test_pubend_misconfiguration_raises() -> None:
    with pytest.raises(ProtocolMisuse, match="children"):
        DurPubendConfig(node="phb", pubends=("p",), children=())
    with pytest.raises(ProtocolMisuse, match="max_retain"):
        _phb(max_retain=-1)


def test_a_node_relays_and_reports_the_minimum_of_its_children() -> None:
    n = node_start(DurNodeConfig(node="ib", upstream="phb", children=("b1", "b2"), pubends=("p",)))
    k = Knowledge(pubend="p", silence=((0, 5),))
    _, fx = node_on_receive(n, k, "phb", 1)
    assert fx == (Send(to="b1", msg=k), Send(to="b2", msg=k))
    _, fx = node_on_receive(n, Nack(pubend="p", start=1, end=2), "b2", 2)
    assert fx == (Send(to="phb", msg=Nack(pubend="p", start=1, end=2)),)
    n, fx = node_on_receive(
        n, ReleaseReport(node="b1", pubend="p", released=7, delivered=9), "b1", 3
    )
    assert fx == ()  # b2 has not reported: the minimum did not move
    n, fx = node_on_receive(
        n, ReleaseReport(node="b2", pubend="p", released=4, delivered=12), "b2", 4
    )
    rep = ReleaseReport(node="ib", pubend="p", released=4, delivered=9)
    assert fx == (Send(to="phb", msg=rep), Emit(kind="dur_report", detail=rep))
    same, fx = node_on_receive(
        n, ReleaseReport(node="b2", pubend="p", released=1, delivered=2), "b2", 5
    )
    assert same is n
    assert fx == ()
    same, fx = node_on_receive(n, k, "b1", 6)  # knowledge from below: not expected
    assert same is n
    assert [type(e) for e in fx] == [Rejected]
    assert node_crash(n).views["p"].released() == -1


def test_wire_summaries() -> None:
    w = wire(Knowledge(pubend="p", silence=((3, 7),)))
    assert (w.kind, w.lo, w.hi) == ("knowledge", 3, 7)
    w = wire(ReleaseReport(node="b", pubend="p", released=1, delivered=4))
    assert (w.kind, w.released, w.hi) == ("report", 1, 4)
    assert wire(object()).kind == "other"
    w = wire(Nack(pubend="p", start=2, end=5, retransmission=True))
    assert (w.nack_ranges, w.retransmission, w.data_ticks, w.upto) == (((2, 5),), True, (), None)
