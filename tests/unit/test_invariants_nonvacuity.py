"""NON-VACUITY: for every invariant, a hand-built trace that violates it is caught, and a
close variant that does not violate it passes (issue 3 §3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gapless.impl.effects import Deliver, DeliverCohort, Persist, Rejected
from gapless.impl.inputs import Connect, Disconnect, Persisted, Receive, TimerFired
from gapless.impl.trace import Fault, Malformed, Published, Sent, TraceRecord, Wire
from gapless.invariants import INVARIANTS
from gapless.invariants.checker import CheckContext, Checker, SubscriptionInfo, check_trace
from gapless.models.topology import fig3, total_order


def _matches(flt: str, a: Mapping[str, Any]) -> bool:
    if flt == "true":
        return True
    if flt == 'loc == "NY"':
        return a.get("loc") == "NY"
    raise AssertionError(flt)


def _ctx(graph_fn: Any = fig3, subs: tuple[SubscriptionInfo, ...] | None = None) -> CheckContext:
    g = graph_fn()
    if subs is None:
        subs = (
            SubscriptionInfo(name="u1", shb="s1", filter="true"),
            SubscriptionInfo(name="u2", shb="s2", filter='loc == "NY"'),
        )
    return CheckContext(
        subscriptions=subs,
        cell_of={n: d["cell"] for n, d in g.nodes(data=True)},
        cell_tree=g.graph["cell_tree"],
        pubend_host=dict(g.graph["pubends"]),
        merged=g.graph["merged"],
        roles={n: d["role"] for n, d in g.nodes(data=True)},
        min_repetition_us=300_000,
        matches=_matches,
        logged=lambda p: p.value,
        payload_attributes=lambda payload: payload,
        aet_us=AET,
        ack_expected_period_us=AE_PERIOD,
        ack_delay_us=ACK_DELAY,
        links=tuple(sorted((min(a, b), max(a, b)) for a, b in g.edges)),
    )


#: the pubend's liveness parameters in these hand-built traces (µs)
AET = 10_000
AE_PERIOD = 1_000
#: how long an SHB may wait to ack what it delivered in these traces (µs)
ACK_DELAY = 500


class T:
    """A hand-built trace."""

    def __init__(self) -> None:
        self.records: list[TraceRecord] = []

    def _add(self, time: int, node: str, kind: str, detail: Any) -> T:
        self.records.append(
            TraceRecord(seq=len(self.records), time=time, node=node, kind=kind, detail=detail)
        )
        return self

    def connect(self, t: int, shb: str, sub: str, flt: str = "true", conn: int = 0) -> T:
        return self._add(t, shb, "connect", Connect(subscriber=sub, filter=flt, connection=conn))

    def disconnect(self, t: int, shb: str, sub: str) -> T:
        return self._add(t, shb, "disconnect", Disconnect(subscriber=sub))

    def publish(
        self, t: int, pubend: str, n: int, loc: str = "NY", *, host: str = "p1", logged: bool = True
    ) -> T:
        a = {"n": n, "loc": loc}
        tick = t * 64 + int(pubend[-1])
        self._add(t, host, "publish", Published(pubend=pubend, index=n, attributes=a))
        self._add(t, host, "persist", Persist(key=(pubend, tick), value=(pubend, tick, a)))
        if logged:
            self._add(t + 100, host, "persisted", Persisted(key=(pubend, tick)))
        return self

    def deliver(
        self,
        t: int,
        shb: str,
        sub: str,
        pubend: str,
        at: int,
        n: int,
        loc: str = "NY",
        conn: int = 0,
    ) -> T:
        tick = at * 64 + int(pubend[-1])
        payload = {"n": n, "loc": loc}
        return self._add(
            t,
            shb,
            "deliver",
            Deliver(subscriber=sub, pubend=pubend, tick=tick, payload=payload, connection=conn),
        )

    def send(self, t: int, src: str, to: str, w: Wire) -> T:
        return self._add(t, src, "send", Sent(to=to, msg=None, wire=w))

    def fault(self, t: int, kind: str, target: str, phase: str = "start") -> T:
        return self._add(t, target, "fault", Fault(kind=kind, target=target, phase=phase))


def tick(at: int, pubend: str = "P1") -> int:
    return at * 64 + int(pubend[-1])


def _check(
    trace: T, *, names: tuple[str, ...] = (), ctx: CheckContext | None = None, live: bool = False
):
    return check_trace(ctx or _ctx(), trace.records, names, live_end=live)


def _base() -> T:
    """Two messages of P1, both delivered in order to u1 (matches all)."""
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "P1", 0)
        .publish(20, "P1", 1, loc="LN")
        .deliver(300, "s1", "u1", "P1", 10, 0)
        .deliver(310, "s1", "u1", "P1", 20, 1, loc="LN")
    )


def test_every_invariant_has_a_nonvacuity_case() -> None:
    covered = {name for name, _bad, _good in CASES}
    assert covered == set(INVARIANTS)


def _safety_bad() -> T:
    return (
        T()
        .connect(0, "s2", "u2", 'loc == "NY"')
        .publish(10, "P1", 0, loc="LN")
        .deliver(300, "s2", "u2", "P1", 10, 0, loc="LN")
    )


def _safety_good() -> T:
    return (
        T()
        .connect(0, "s2", "u2", 'loc == "NY"')
        .publish(10, "P1", 0)
        .deliver(300, "s2", "u2", "P1", 10, 0)
    )


def _safety_dead_conn() -> T:
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "P1", 0)
        .disconnect(200, "s1", "u1")
        .deliver(300, "s1", "u1", "P1", 10, 0)
    )


def _order_bad() -> T:
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "P1", 0)
        .publish(20, "P1", 1)
        .deliver(300, "s1", "u1", "P1", 20, 1)
        .deliver(310, "s1", "u1", "P1", 10, 0)
    )


def _order_bad_gapfree() -> T:
    # the earlier tick was published before the connection began: not a gap, still an order bug
    return (
        T()
        .publish(10, "P1", 0)
        .connect(15, "s1", "u1")
        .publish(20, "P1", 1)
        .deliver(300, "s1", "u1", "P1", 20, 1)
        .deliver(310, "s1", "u1", "P1", 10, 0)
    )


def _logged_bad() -> T:
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "P1", 0, logged=False)
        .deliver(300, "s1", "u1", "P1", 10, 0)
    )


def _gapless_bad() -> T:
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "P1", 0)
        .publish(20, "P1", 1)
        .publish(30, "P1", 2)
        .deliver(300, "s1", "u1", "P1", 10, 0)
        .deliver(310, "s1", "u1", "P1", 30, 2)
    )


def _gapless_good_filtered() -> T:
    # the skipped message does not match u2's filter: no gap
    return (
        T()
        .connect(0, "s2", "u2", 'loc == "NY"')
        .publish(10, "P1", 0)
        .publish(20, "P1", 1, loc="LN")
        .publish(30, "P1", 2)
        .deliver(300, "s2", "u2", "P1", 10, 0)
        .deliver(310, "s2", "u2", "P1", 30, 2)
    )


def _once_bad() -> T:
    return _base().deliver(320, "s1", "u1", "P1", 20, 1, loc="LN")


def _once_good_new_connection() -> T:
    # after a reconnect the same tick may be delivered on the new connection
    return (
        _base()
        .disconnect(400, "s1", "u1")
        .connect(500, "s1", "u1", conn=1)
        .deliver(600, "s1", "u1", "P1", 20, 1, loc="LN", conn=1)
    )


def _total_ctx() -> CheckContext:
    return _ctx(total_order, (SubscriptionInfo(name="u1", shb="s1", filter="true", order="total"),))


def _total_bad() -> T:
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "T1", 0)
        .publish(11, "T2", 0, host="p2")
        .deliver(300, "s1", "u1", "T2", 11, 0)
        .deliver(310, "s1", "u1", "T1", 10, 0)
    )


def _total_good() -> T:
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "T1", 0)
        .publish(11, "T2", 0, host="p2")
        .deliver(300, "s1", "u1", "T1", 10, 0)
        .deliver(310, "s1", "u1", "T2", 11, 0)
    )


def _no_e_payload() -> T:
    return (
        T()
        .connect(0, "s1", "u1")
        .publish(10, "P1", 0)
        .deliver(300, "s1", "u1", "P1", 10, 0, loc="TK")
    )


def _no_e_wire() -> T:
    return (
        T()
        .publish(10, "P1", 0)
        .send(200, "p1", "b1", Wire(kind="data", pubend="P1", data_ticks=(tick(11),)))
    )


def _no_e_wire_good() -> T:
    return (
        T()
        .publish(10, "P1", 0)
        .send(200, "p1", "b1", Wire(kind="data", pubend="P1", data_ticks=(tick(10),)))
    )


def _acks(t: T, upto: int) -> T:
    # the acknowledged prefix reaches the pubend
    return t.send(900, "b1", "p1", Wire(kind="ack", pubend="P1", upto=upto))


def _liveness_bad() -> T:
    return _acks(
        T()
        .connect(0, "s1", "u1")
        .publish(10, "P1", 0)
        .publish(20, "P1", 1)
        .deliver(300, "s1", "u1", "P1", 10, 0),
        tick(20),
    )


def _liveness_good() -> T:
    return _acks(_base(), tick(20))


def _liveness_no_ack() -> T:
    return _acks(_base(), tick(10))


def _ny_only_ctx() -> CheckContext:
    return _ctx(subs=(SubscriptionInfo(name="u2", shb="s2", filter='loc == "NY"'),))


def _unneeded_tail(acked_at: int) -> T:
    """u2 (NY only) gets P1@10 and P1@30; the last message, P1@40 (LN), matches no one, so
    the PHB's edge filter finalises it and no ack for it crosses the wire."""
    t = (
        T()
        .connect(0, "s2", "u2", 'loc == "NY"')
        .publish(10, "P1", 0)
        .publish(20, "P1", 1, loc="LN")
        .publish(30, "P1", 2)
        .publish(40, "P1", 3, loc="LN")
        .deliver(300, "s2", "u2", "P1", 10, 0)
        .deliver(310, "s2", "u2", "P1", 30, 2)
    )
    return _acks(t, tick(acked_at))


def test_liveness_demands_acks_up_to_the_last_needed_tick_only() -> None:
    ctx = _ny_only_ctx()
    # acked through the last tick a subscription needed: the unmatched tail is not demanded
    assert _check(_unneeded_tail(30), names=("liveness",), ctx=ctx, live=True) is None
    # the needed tick P1@30 not acked: still a violation, naming that tick
    v = _check(_unneeded_tail(20), names=("liveness",), ctx=ctx, live=True)
    assert v is not None
    assert (v.invariant, v.pubend, v.tick) == ("liveness", "P1", tick(30))
    assert "needed" in v.explain()


def _nack(t: T, at: int, src: str, to: str, lo: int, hi: int, pubend: str = "P1") -> T:
    return t.send(at, src, to, Wire(kind="nack", pubend=pubend, nack_ranges=((lo, hi),)))


def _nack_bad() -> T:
    t = _nack(T(), 1000, "b1", "p1", 100, 200)
    return _nack(t, 1000 + 100_000, "b1", "p1", 150, 250)


def _nack_good() -> T:
    # same instant to two upstream brokers counts as one; later repetition after the interval
    t = _nack(T(), 1000, "b1", "p1", 100, 200)
    t = _nack(t, 1000 + 300_000, "b1", "p1", 150, 250)
    return _nack(t, 1000 + 400_000, "b1", "p1", 300, 400)


def _nack_good_after_crash() -> T:
    t = (
        _nack(T(), 1000, "b1", "p1", 100, 200)
        .fault(2000, "crash", "b1")
        .fault(3000, "crash", "b1", "end")
    )
    return _nack(t, 4000, "b1", "p1", 100, 200)


def _ack_ib_bad() -> T:
    # s1 (cell S1, below IB1) needs P1@10; b1 acks it upstream although S1 never acked
    t = T().connect(0, "s1", "u1").publish(10, "P1", 0)
    t.send(500, "s2", "b1", Wire(kind="ack", pubend="P1", upto=tick(10)))
    return t.send(600, "b1", "p1", Wire(kind="ack", pubend="P1", upto=tick(10)))


def _ack_ib_good() -> T:
    t = T().connect(0, "s1", "u1").publish(10, "P1", 0).deliver(300, "s1", "u1", "P1", 10, 0)
    t.send(500, "s1", "b2", Wire(kind="ack", pubend="P1", upto=tick(10)))  # to the cell
    return t.send(600, "b1", "p1", Wire(kind="ack", pubend="P1", upto=tick(10)))


def _ack_shb_bad() -> T:
    t = T().connect(0, "s1", "u1").publish(10, "P1", 0)
    return t.send(600, "s1", "b1", Wire(kind="ack", pubend="P1", upto=tick(10)))


def _ack_shb_good() -> T:
    t = T().connect(0, "s1", "u1").publish(10, "P1", 0).deliver(300, "s1", "u1", "P1", 10, 0)
    return t.send(600, "s1", "b1", Wire(kind="ack", pubend="P1", upto=tick(10)))


def _retrans(kind: str, retrans: bool, nacker: str | None) -> T:
    t = T().publish(10, "P1", 0)
    if nacker is not None:
        _nack(t, 400, nacker, "b1", tick(5), tick(12))
    w = Wire(
        kind=kind,
        pubend="P1",
        data_ticks=(tick(10),) if kind == "data" else (),
        final_ranges=((tick(0), tick(9)),),
        retransmission=retrans,
    )
    return t.send(500, "b1", "s1", w)


def _traffic(loc: str, to: str, *, retrans: bool = False) -> T:
    # P1@10 goes p1 -> b1 (IB1: u1 matches everything), then b1 -> ``to``; s2's only
    # subscriber, u2, reads NY messages only
    t = T().publish(10, "P1", 0, loc=loc)
    t.send(200, "p1", "b1", Wire(kind="data", pubend="P1", data_ticks=(tick(10),)))
    w = Wire(kind="data", pubend="P1", data_ticks=(tick(10),), retransmission=retrans)
    return t.send(300, "b1", to, w)


CASES: list[tuple[str, Any, Any]] = [
    ("safety", _safety_bad, _safety_good),
    ("safety", _safety_dead_conn, _base),
    ("order", _order_bad_gapfree, _base),
    ("logged_first", _logged_bad, _base),
    ("gapless", _gapless_bad, _gapless_good_filtered),
    ("exactly_once", _once_bad, _once_good_new_connection),
    ("total_order", _total_bad, _total_good),
    ("no_e", _no_e_payload, _base),
    ("no_e", _no_e_wire, _no_e_wire_good),
    ("liveness", _liveness_bad, _liveness_good),
    ("liveness", _liveness_no_ack, _liveness_good),
    ("nack_consolidation", _nack_bad, _nack_good),
    ("nack_consolidation", _nack_bad, _nack_good_after_crash),
    ("ack_consolidation", _ack_ib_bad, _ack_ib_good),
    ("ack_consolidation", _ack_shb_bad, _ack_shb_good),
    (
        "retransmission_targets",
        lambda: _retrans("data", True, "s2"),
        lambda: _retrans("data", True, "s1"),
    ),
    (
        "silence_targets",
        lambda: _retrans("silence", False, None),
        lambda: _retrans("silence", False, "s1"),
    ),
    ("minimal_traffic", lambda: _traffic("LN", "s2"), lambda: _traffic("NY", "s2")),
    (
        "minimal_traffic",
        lambda: _traffic("LN", "s2", retrans=True),
        lambda: _traffic("LN", "s1", retrans=True),
    ),
]


def _ack_expected(upto: int, at: int = 20_000) -> T:
    """p1 sends AckExpected(upto) at ``at`` (AET = 10,000 µs)."""
    return T().send(at, "p1", "b1", Wire(kind="ack_expected", pubend="P1", upto=upto))


def _aet_late(*, expect_at: int | None = None, acked: bool = False) -> T:
    """u1 at s1 (below IB1) reads everything; P1's tick at 10 is logged and, unless
    ``acked``, IB1 never acks it; the trace runs past t + AET + period."""
    t = T().connect(0, "s1", "u1").publish(10, "P1", 0)
    if acked:
        t.send(500, "b1", "p1", Wire(kind="ack", pubend="P1", upto=tick(10)))
    if expect_at is not None:
        t.send(expect_at, "p1", "b1", Wire(kind="ack_expected", pubend="P1", upto=tick(10)))
    # nobody reads P1 below IB2: its filter makes the tick F there, A at once (no obligation)
    return t.send(13_000, "s1", "b1", Wire(kind="ack", pubend="P1", upto=0))


CASES += [
    ("ack_expected_timing", lambda: _ack_expected(15_000), lambda: _ack_expected(9_000)),
    ("ack_expected_timing", lambda: _aet_late(), lambda: _aet_late(expect_at=10_700)),
    ("ack_expected_timing", lambda: _aet_late(), lambda: _aet_late(acked=True)),
]


def _down_link(
    kind: str, src: str, to: str, *, fault: tuple[str, str] = ("link_fail", "p1|b1")
) -> T:
    """``fault`` starts at 100 µs; at 200 µs ``src`` sends a ``kind`` message of P1 to ``to``
    (Figure 3: p1 reaches cell IB1 through p1-b1 and p1-b2; b1 and b2 are cell neighbours)."""
    w = Wire(kind=kind, pubend="P1", data_ticks=(tick(10),) if kind == "data" else ())
    if kind == "nack":
        w = Wire(kind="nack", pubend="P1", nack_ranges=((0, tick(10)),))
    return T().fault(100, *fault).send(200, src, to, w)


def _down_link_healed() -> T:
    t = T().fault(100, "link_fail", "p1|b1").fault(150, "link_fail", "p1|b1", phase="end")
    return t.send(200, "p1", "b1", Wire(kind="silence", pubend="P1", final_ranges=((0, 5),)))


CASES += [
    (
        "down_link_routing",
        lambda: _down_link("data", "p1", "b1"),
        lambda: _down_link("data", "p1", "b2"),
    ),
    ("down_link_routing", lambda: _down_link("silence", "p1", "b1"), _down_link_healed),
    (
        "down_link_routing",
        lambda: _down_link("nack", "b1", "p1"),
        lambda: _down_link("nack", "b2", "p1"),
    ),
    (
        "down_link_routing",
        lambda: _down_link("data", "b1", "s1", fault=("link_fail", "b1|s1")),
        # the whole bundle p1 -> IB1 down: no up path to route around to (not judged)
        lambda: _down_link("data", "p1", "b1", fault=("partition", "b1,b2,s1,s2")),
    ),
]


def _rejected(inp: Any) -> T:
    """``s1`` rejects ``inp``: its own GCT timer (own_timers) or a network input
    (refused_input)."""
    return _base()._add(400, "s1", "rejected", Rejected(reason="refused", input=inp))


CASES += [
    (
        "own_timers",
        lambda: _rejected(TimerFired(key=("timer", 0, "gct", "P1", "extra"))),
        lambda: _rejected(Receive(sender="b9", msg=Wire(kind="ack", pubend="P1"))),
    ),
    (
        "refused_input",  # a message from a neighbour refused; a refused timer is own_timers's
        lambda: _rejected(Receive(sender="b9", msg=Wire(kind="knowledge", pubend="P1"))),
        lambda: _rejected(TimerFired(key=("timer", 0, "gct", "P1", "extra"))),
    ),
    (
        "quiet_delivery",  # published with nothing failed, matching u1, never delivered
        lambda: T().connect(0, "s1", "u1").publish(10, "P1", 0).publish(20, "P1", 1),
        _base,
    ),
]


def _sideways(back: bool) -> T:
    """p1 sends a tick of P1 to b4, whose link to s3 is down: b4 sends it sideways to b3;
    ``back``: b3 (no link to s3 either) sends it sideways again, back to b4 [GD §3.1]."""
    w = Wire(kind="data", pubend="P1", data_ticks=(tick(10),))
    t = T().publish(10, "P1", 0).send(200, "p1", "b4", w).send(300, "b4", "b3", w)
    return t.send(400, "b3", "b4", w) if back else t.send(400, "b3", "s3", w)


CASES += [("sideways_one_hop", lambda: _sideways(True), lambda: _sideways(False))]


def _silence(
    loc: str, src: str = "b1", to: str = "s2", *, acked: bool = False, retrans: bool = False
) -> T:
    """P1@10 (``loc``) is logged; at 300 µs ``src`` tells ``to`` that ticks 0..tick(12) of P1
    are silent (a nack's answer when ``retrans``). u1 at s1 reads everything, u2 at s2 NY
    only; with ``acked``, s2 acked tick(10) to b1 first."""
    t = T().publish(10, "P1", 0, loc=loc)
    if acked:
        t.send(250, "s2", "b1", Wire(kind="ack", pubend="P1", upto=tick(10)))
    w = Wire(kind="silence", pubend="P1", final_ranges=((0, tick(12)),), retransmission=retrans)
    return t.send(300, src, to, w)


CASES += [
    # s2's u2 reads NY: F over a logged NY message into s2 is false; over an LN one, true
    ("silence_hides_nothing", lambda: _silence("NY"), lambda: _silence("LN")),
    # a nack's answer: F is true once the cell acked the tick (it is final there)
    (
        "silence_hides_nothing",
        lambda: _silence("NY", retrans=True),
        lambda: _silence("NY", acked=True, retrans=True),
    ),
    # sideways in IB1 (towards s1 and s2): true only if some downstream cell rejects it
    (
        "silence_hides_nothing",
        lambda: _silence("NY", src="b2", to="b1"),
        lambda: _silence("LN", src="b2", to="b1"),
    ),
]


def _acked(upto_at: int | None) -> T:
    """s1 delivers P1@10 at 300 µs and P1@20 at 310 µs; with ``upto_at``, it acks both
    upstream at that time; a status message at 5,000 µs carries the trace past every
    deadline (300 + ACK_DELAY)."""
    t = _base()
    if upto_at is not None:
        t.send(upto_at, "s1", "b1", Wire(kind="ack", pubend="P1", upto=tick(20)))
    return t.send(5_000, "b1", "b2", Wire(kind="status"))


def _detour(forwarded: bool) -> T:
    """b4 lost s3 (its link failed): it sends P1@10 sideways to b3 [GD §3.1]; with
    ``forwarded``, b3 sends it on into s3."""
    w = Wire(kind="data", pubend="P1", data_ticks=(tick(10),))
    t = T().publish(10, "P1", 0).fault(150, "link_fail", "b4|s3")
    t.send(200, "p1", "b4", w).send(300, "b4", "b3", w)
    if forwarded:
        t.send(1_301, "b3", "s3", w)
    return t.fault(2_000, "link_fail", "b4|s3", phase="end")


CASES += [
    # an ack at 800 µs covers both deliveries in time; one at 900 µs is late for the first
    ("shb_ack_timing", lambda: _acked(900), lambda: _acked(800)),
    ("shb_ack_timing", lambda: _acked(None), lambda: _acked(800)),
    ("sideways_forwarded", lambda: _detour(False), lambda: _detour(True)),
]


def _malformed(bad: bool) -> T:
    """The base run; with ``bad`` the world found s1's stream out of form after a step."""
    t = _base()
    if bad:
        text = "stream of pubend 'P1': nacked: ((9, 9), (3, 4)) is not a canonical tick set"
        t._add(305, "s1", "malformed", Malformed(text=text))
    return t


CASES += [("canonical_state", lambda: _malformed(True), lambda: _malformed(False))]


@pytest.mark.parametrize(
    ("name", "bad", "good"), CASES, ids=[f"{c[0]}-{c[1].__name__}" for c in CASES]
)
def test_violating_trace_is_caught_and_the_fixed_one_passes(name: str, bad: Any, good: Any) -> None:
    ctx = _total_ctx() if name == "total_order" else _ctx()
    live = name in ("liveness", "quiet_delivery", "sideways_forwarded")
    v = _check(bad(), names=(name,), ctx=ctx, live=live)
    assert v is not None, f"{name}: the violating trace passed"
    assert v.invariant == name
    assert v.events, "a violation carries the events that explain it"
    assert name in v.explain()
    assert _check(good(), names=(name,), ctx=ctx, live=live) is None


def test_ack_expected_is_not_owed_while_a_fault_could_stop_it() -> None:
    """A failed link between the pubend's host and IB1 until 12,500 µs moves the deadline to
    one period after the heal: the same silence is then judged only when the trace runs on."""
    t = T().connect(0, "s1", "u1").publish(10, "P1", 0)
    t.fault(5_000, "link_fail", "p1|b1").fault(12_500, "link_fail", "p1|b1", phase="end")
    t.fault(12_500, "link_fail", "p1|b2").fault(12_600, "link_fail", "p1|b2", phase="end")
    t.send(13_000, "s1", "b1", Wire(kind="ack", pubend="P1", upto=0))
    assert _check(t, names=("ack_expected_timing",)) is None
    t.send(13_700, "s1", "b1", Wire(kind="ack", pubend="P1", upto=0))
    v = _check(t, names=("ack_expected_timing",))
    assert v is not None
    assert "between 12600µs" in v.explain()


def test_order_is_caught_even_when_gapless_is_off() -> None:
    v = _check(_order_bad(), names=("order",))
    assert v is not None
    assert v.invariant == "order"
    assert v.tick == tick(10)


def test_gapless_names_the_skipped_tick_and_explains() -> None:
    v = _check(_gapless_bad())
    assert v is not None
    assert (v.invariant, v.subject, v.pubend, v.tick) == ("gapless", "u1", "P1", tick(20))
    kinds = [e.kind for e in v.events]
    assert "deliver" in kinds
    assert "persisted" in kinds


def test_switched_off_invariant_does_not_fire() -> None:
    assert _check(_gapless_bad(), names=("safety", "order")) is None


def test_online_checker_stops_at_the_first_violation() -> None:
    c = Checker(_ctx())
    results = [c.observe(r) for r in _once_bad().records]
    assert results[-1] is True
    assert results[:-1] == [False] * (len(results) - 1)
    assert c.violation is not None
    assert c.violation.invariant == "exactly_once"


def _cohort(t: T, at: int, shb: str, subs: tuple[str, ...], pubend: str, when: int, n: int) -> T:
    payload = {"n": n, "loc": "NY"}
    return t._add(
        at,
        shb,
        "deliver",
        DeliverCohort(
            pubend=pubend, tick=tick(when, pubend), payload=payload, to=tuple((s, 0) for s in subs)
        ),
    )


def test_a_cohort_delivery_is_judged_for_each_member() -> None:
    ctx = _ctx(
        subs=(
            SubscriptionInfo(name="u1", shb="s1", filter="true"),
            SubscriptionInfo(name="u3", shb="s1", filter="true"),
        )
    )
    base = T().connect(0, "s1", "u1").connect(0, "s1", "u3").publish(10, "P1", 0)
    assert _check(_cohort(base, 300, "s1", ("u1", "u3"), "P1", 10, 0), ctx=ctx) is None
    # u3 already had tick 10: the cohort delivers it twice to u3 only
    dup = T().connect(0, "s1", "u1").connect(0, "s1", "u3").publish(10, "P1", 0)
    dup.deliver(200, "s1", "u3", "P1", 10, 0)
    v = _check(_cohort(dup, 300, "s1", ("u1", "u3"), "P1", 10, 0), ctx=ctx)
    assert v is not None
    assert (v.invariant, v.subject) == ("exactly_once", "u3")
    # a member that is not connected is caught too
    gone = T().connect(0, "s1", "u1").publish(10, "P1", 0)
    v = _check(_cohort(gone, 300, "s1", ("u1", "u3"), "P1", 10, 0), ctx=ctx)
    assert v is not None
    assert (v.invariant, v.subject) == ("safety", "u3")


def _shared(t: T, at: int, to: tuple[tuple[str, int], ...], when: int, n: int) -> T:
    """A cohort record that reuses the ``to`` tuple itself, as the SHB does while its
    members and their connections stay the same (what the checker's shared verdicts key on)."""
    payload = {"n": n, "loc": "NY"}
    return t._add(
        at, "s1", "deliver", DeliverCohort(pubend="P1", tick=tick(when), payload=payload, to=to)
    )


def _pair(f3: str = "true") -> tuple[CheckContext, T, tuple[tuple[str, int], ...]]:
    ctx = _ctx(
        subs=(
            SubscriptionInfo(name="u1", shb="s1", filter="true"),
            SubscriptionInfo(name="u3", shb="s1", filter=f3),
        )
    )
    t = T().connect(0, "s1", "u1").connect(0, "s1", "u3", flt=f3)
    return ctx, t, (("u1", 0), ("u3", 0))


def test_a_shared_cohort_verdict_is_taken_and_judges_every_member(monkeypatch: Any) -> None:
    from gapless.invariants.gd.delivery import GDDelivery

    calls: list[int] = []
    per_member = GDDelivery._deliver_members

    def counted(self: GDDelivery, *args: Any) -> bool:
        calls.append(1)
        return per_member(self, *args)

    monkeypatch.setattr(GDDelivery, "_deliver_members", counted)
    ctx, t, to = _pair()
    t.publish(10, "P1", 0).publish(20, "P1", 1)
    _shared(_shared(t, 300, to, 10, 0), 400, to, 20, 1)
    c = Checker(ctx)
    assert not any(c.observe(r) for r in t.records)
    assert calls == [], "an unchanged cohort is judged once, not per member"
    for sub in ("u1", "u3"):  # yet each member's deliveries are in the ledger
        conn = c.ledger.conns[sub]
        assert conn.seen["P1"] == {tick(10), tick(20)}
        assert conn.last["P1"] == tick(20)
        assert conn.records["P1"] is t.records[-1]


def test_a_member_that_diverged_leaves_the_shared_verdict() -> None:
    ctx, t, to = _pair()
    t.publish(10, "P1", 0)
    v = _check(_shared(_shared(t, 300, to, 10, 0), 400, to, 10, 0), ctx=ctx)
    assert v is not None  # the whole cohort again: every member agrees, and all are wrong
    assert (v.invariant, v.subject) == ("exactly_once", "u1")
    ctx, t, to = _pair()
    t.publish(10, "P1", 0).publish(20, "P1", 1)
    _shared(t, 300, to, 10, 0).deliver(350, "s1", "u3", "P1", 20, 1)
    v = _check(_shared(t, 400, to, 20, 1), ctx=ctx)
    assert v is not None
    assert (v.invariant, v.subject) == ("exactly_once", "u3")


def test_a_disconnect_separates_a_cohort() -> None:
    ctx, t, to = _pair()
    t.publish(10, "P1", 0).publish(20, "P1", 1)
    _shared(t, 300, to, 10, 0).disconnect(350, "s1", "u3")
    v = _check(_shared(t, 400, to, 20, 1), ctx=ctx)
    assert v is not None
    assert (v.invariant, v.subject) == ("safety", "u3")
    # a reconnect (a new connection number) does not rejoin the old cohort either
    ctx, t, to = _pair()
    t.publish(10, "P1", 0).publish(20, "P1", 1)
    _shared(t, 300, to, 10, 0).disconnect(350, "s1", "u3").connect(360, "s1", "u3", conn=1)
    v = _check(_shared(t, 400, to, 20, 1), ctx=ctx)
    assert v is not None
    assert (v.invariant, v.subject) == ("safety", "u3")


def test_a_shared_cohort_still_catches_a_skip_and_a_mismatch() -> None:
    ctx, t, to = _pair()
    t.publish(10, "P1", 0).publish(20, "P1", 1).publish(30, "P1", 2)
    v = _check(_shared(_shared(t, 300, to, 10, 0), 400, to, 30, 2), ctx=ctx)
    assert v is not None
    assert (v.invariant, v.subject, v.tick) == ("gapless", "u1", tick(20))
    ctx, t, to = _pair(f3='loc == "NY"')
    t.publish(10, "P1", 0).publish(20, "P1", 1, loc="LN")
    _shared(t, 300, to, 10, 0)
    t._add(
        400,
        "s1",
        "deliver",
        DeliverCohort(pubend="P1", tick=tick(20), payload={"n": 1, "loc": "LN"}, to=to),
    )
    v = _check(t, ctx=ctx)
    assert v is not None
    assert (v.invariant, v.subject) == ("safety", "u3")


def test_ack_expected_timing_skip_finds_what_a_full_scan_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ack_expected_timing`` scans its queues only once the soonest queued tick could be
    late (issue 17). A tick queued after every queue emptied is still judged, at the same
    record as a scan on every record would judge it: the first tick is acked and leaves; the
    second, published at 14,000 µs, is never acked."""
    from gapless.invariants.gd.timing import GDAckExpectedTiming

    t = T().connect(0, "s1", "u1").publish(10, "P1", 0)
    t.send(500, "b1", "p1", Wire(kind="ack", pubend="P1", upto=tick(10)))
    t.send(13_000, "s1", "b1", Wire(kind="ack", pubend="P1", upto=0))  # tick 10 judged
    t.publish(14_000, "P1", 1)
    due = tick(14_000) + AET + AE_PERIOD  # the second tick's deadline
    for at in (due - 5_000, due - 1, due + 1, due + 1_000):
        t.send(at, "s1", "b1", Wire(kind="ack", pubend="P1", upto=0))
    skipping = _check(t, names=("ack_expected_timing",))
    original = GDAckExpectedTiming._judge_due

    def every_record(self: GDAckExpectedTiming, now: int, r: TraceRecord) -> bool:
        if any(self.due.values()):
            self.soonest = -(10**18)  # always scan
        return original(self, now, r)

    monkeypatch.setattr(GDAckExpectedTiming, "_judge_due", every_record)
    scanning = _check(t, names=("ack_expected_timing",))
    assert skipping is not None
    assert scanning is not None
    assert skipping.tick == scanning.tick == tick(14_000)
    assert [e.seq for e in skipping.events] == [e.seq for e in scanning.events]
    assert skipping.events[0].time == due + 1
