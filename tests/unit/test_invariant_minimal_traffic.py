"""minimal_traffic [GD §2.4, §3.1]: no data tick crosses an edge whose filter rejects it.

Hand-made traces show what it catches and what it lets through; short runs show that the
planted bug ``filter-passes-d`` is caught by it (and by nothing else), and that the correct
protocol never trips it under faults with selective subscriptions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gapless.impl.effects import Persist
from gapless.impl.inputs import Persisted
from gapless.impl.trace import Published, Sent, TraceRecord, Wire
from gapless.invariants import INVARIANTS
from gapless.invariants.checker import CheckContext, SubscriptionInfo, check_trace
from gapless.models.faults import FaultProfile
from gapless.models.runner import RunSpec, generate_schedule, run
from gapless.models.topology import fig3
from gapless.models.workload import WorkloadSpec

NY = 'loc == "NY"'


def _matches(flt: str, a: Mapping[str, Any]) -> bool:
    if flt == "true":
        return True
    if flt == NY:
        return a.get("loc") == "NY"
    raise AssertionError(flt)


def _ctx(subs: tuple[SubscriptionInfo, ...]) -> CheckContext:
    g = fig3()
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
    )


# u1 at s1 reads everything, u2 at s2 only NY; nobody below IB2 (s3-s5)
CTX = _ctx(
    (
        SubscriptionInfo(name="u1", shb="s1", filter="true"),
        SubscriptionInfo(name="u2", shb="s2", filter=NY),
    )
)
# both subscribers of IB1 read NY only
NY_CTX = _ctx(
    (
        SubscriptionInfo(name="u1", shb="s1", filter=NY),
        SubscriptionInfo(name="u2", shb="s2", filter=NY),
    )
)
TICK = 10 * 64 + 1


def _trace(loc: str, *sends: tuple[str, str, bool], logged: bool = True) -> list[TraceRecord]:
    """P1's message at TICK (``loc``) logged at p1, then each send ``(src, to, retransmission)``
    of its data tick."""
    a = {"n": 0, "loc": loc}
    rs: list[tuple[int, str, str, Any]] = [
        (10, "p1", "publish", Published(pubend="P1", index=0, attributes=a)),
        (10, "p1", "persist", Persist(key=("P1", TICK), value=("P1", TICK, a))),
    ]
    if logged:
        rs.append((110, "p1", "persisted", Persisted(key=("P1", TICK))))
    for i, (src, to, retrans) in enumerate(sends):
        w = Wire(kind="data", pubend="P1", data_ticks=(TICK,), retransmission=retrans)
        rs.append((200 + i, src, "send", Sent(to=to, msg=None, wire=w)))
    return [
        TraceRecord(seq=i, time=t, node=n, kind=k, detail=d) for i, (t, n, k, d) in enumerate(rs)
    ]


def _check(records: list[TraceRecord], ctx: CheckContext = CTX) -> Any:
    return check_trace(ctx, records, ("minimal_traffic",), live_end=False)


def test_a_rejected_tick_names_the_edge_the_tick_and_the_filter() -> None:
    v = _check(_trace("LN", ("p1", "b1", False), ("b1", "s2", False)))
    assert v is not None
    assert (v.invariant, v.subject, v.pubend, v.tick) == ("minimal_traffic", "b1", "P1", TICK)
    text = v.explain()
    assert "the edge b1 -> s2 into cell s2" in text
    assert f"tick {TICK} of P1" in text
    assert f"filter ({NY})" in text
    assert "'loc': 'LN'" in text
    # the logged message and the offending send explain it
    assert [e.kind for e in v.events] == ["persisted", "send"]


def test_matching_ticks_pass_on_every_edge_of_their_path() -> None:
    assert (
        _check(_trace("NY", ("p1", "b1", False), ("b1", "s2", False), ("b2", "s1", True))) is None
    )
    # u1 reads everything: a LN message may go to s1, not to s2
    assert _check(_trace("LN", ("p1", "b1", False), ("b2", "s1", False))) is None


def test_retransmissions_and_nack_answers_are_judged_too() -> None:
    v = _check(_trace("LN", ("b2", "s2", True)))
    assert v is not None
    assert "retransmitted data tick" in v.explain()


def test_an_edge_with_no_subscription_below_passes_nothing() -> None:
    v = _check(_trace("NY", ("p1", "b3", False)))
    assert v is not None
    assert "into cell IB2" in v.explain()
    assert "false (no subscription reads P1 below it)" in v.explain()


def test_sideways_routing_is_judged_against_the_cells_downstream_edges() -> None:
    # b1 -> b2 (cell neighbours, a route around a failed link): legitimate only for what some
    # edge out of IB1 passes
    assert _check(_trace("NY", ("b1", "b2", False)), NY_CTX) is None
    v = _check(_trace("LN", ("b1", "b2", False)), NY_CTX)
    assert v is not None
    assert "sideways in cell IB1, towards s1, s2" in v.explain()


def test_data_never_flows_upstream() -> None:
    v = _check(_trace("NY", ("s1", "b1", False)))
    assert v is not None
    assert "not a downstream edge of P1" in v.explain()


def test_a_tick_not_yet_logged_is_judged_by_the_message_asked_to_be_logged() -> None:
    assert _check(_trace("NY", ("b1", "s2", False), logged=False)) is None
    assert _check(_trace("LN", ("b1", "s2", False), logged=False)) is not None


def test_a_tick_never_asked_to_be_logged_is_left_to_no_e() -> None:
    records = _trace("LN")
    w = Wire(kind="data", pubend="P1", data_ticks=(TICK + 64,))
    records.append(
        TraceRecord(seq=9, time=300, node="b1", kind="send", detail=Sent(to="s2", msg=None, wire=w))
    )
    assert _check(records) is None
    v = check_trace(CTX, records, ("no_e", "minimal_traffic"), live_end=False)
    assert v is not None
    assert v.invariant == "no_e"


# -- runs -----------------------------------------------------------------------------------

_MIXED = WorkloadSpec(rate_per_pubend=10.0, filters="mixed", subscribers_per_shb=2)
_OTHERS = tuple(n for n in INVARIANTS if n != "minimal_traffic")


def _spec(variant: str, invariants: tuple[str, ...] = (), **kw: Any) -> RunSpec:
    return RunSpec(
        variant=variant,
        workload=_MIXED,
        invariants=invariants,
        **{"duration_us": 2_000_000, "drain_us": 3_000_000, **kw},
    )


def test_filter_passes_d_is_caught_by_minimal_traffic() -> None:
    spec = _spec("filter-passes-d")
    out = run(spec, generate_schedule(spec, 1), 1)
    assert (out.verdict, out.invariant) == ("violation", "minimal_traffic")
    assert "D through a rejecting filter must become F" in out.explanation


def test_filter_passes_d_escapes_every_other_invariant() -> None:
    """Honest about the zoo: only minimal_traffic sees the flood (subscribers see nothing)."""
    spec = _spec("filter-passes-d", _OTHERS)
    out = run(spec, generate_schedule(spec, 1), 1)
    assert out.verdict == "pass", out.explanation


_FAULTS = FaultProfile(rates=(("crash", 0.5), ("drop", 1.0), ("link_fail", 0.5), ("reorder", 0.8)))


@pytest.mark.parametrize(
    ("topology", "seed"), [("fig3", 1), ("fig3", 2), ("fig3", 4), ("total-order", 2)]
)
def test_the_correct_protocol_never_sends_what_a_filter_rejects(topology: str, seed: int) -> None:
    """Selective subscriptions under crashes, loss, link failures and reordering: nothing an
    edge filter rejects crosses it, nack answers and retransmissions included."""
    spec = _spec(
        "none", topology=topology, faults=_FAULTS, drain_us=11_000_000, duration_us=3_000_000
    )
    out = run(spec, generate_schedule(spec, seed), seed)
    assert out.verdict == "pass", out.explanation
    # the filters rejected data (D became F), and brokers answered nacks with retransmissions
    assert dict(out.coverage).get("K:D->F(filter)", 0) > 0
    assert out.counters.retransmissions > 0
