"""down_link_routing [GD §3.1]: no knowledge or nack on a link known down while the bundle
offers an up path.

Short runs show that the planted bug ``route-into-down-link`` is caught by it (and by nothing
else), that the correct protocol never trips it under link failures, crashes and partitions,
and that a trace file carries the links, so the rule is judged offline as online."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from gapless.impl.trace import Fault, Sent, TraceRecord, Wire
from gapless.invariants import INVARIANTS
from gapless.invariants.checker import check_trace
from gapless.invariants.tracefile import check_trace_file, write_trace
from gapless.models.faults import FaultEvent, FaultProfile, FaultSchedule
from gapless.models.run import reference_matcher, run_context
from gapless.models.runner import RunSpec, generate_schedule, run
from gapless.models.workload import WorkloadSpec

_OTHERS = tuple(n for n in INVARIANTS if n != "down_link_routing")


def _spec(variant: str, invariants: tuple[str, ...] = (), **kw: Any) -> RunSpec:
    return RunSpec(
        variant=variant,
        workload=WorkloadSpec(rate_per_pubend=10.0, filters="mixed"),
        invariants=invariants,
        **{"duration_us": 2_000_000, "drain_us": 11_000_000, **kw},
    )


#: p1-b1, one member of the bundle from p1 to cell IB1 (Figure 3), fails for a second
_P1_B1 = FaultSchedule(
    seed=1,
    events=(
        FaultEvent(
            kind="link_fail", at_us=500_000, duration_us=1_000_000, target="b1|p1", stream=1
        ),
    ),
)


def test_route_into_down_link_is_caught_by_down_link_routing() -> None:
    out = run(_spec("route-into-down-link"), _P1_B1, 1)
    assert (out.verdict, out.invariant) == ("violation", "down_link_routing")
    assert "p1 sent a" in out.explanation
    assert "the up link p1-b2" in out.explanation


def test_route_into_down_link_escapes_every_other_invariant() -> None:
    """Honest about the zoo: the lost messages are repaired by nacks after the heal, so only
    down_link_routing sees the bug."""
    out = run(_spec("route-into-down-link", _OTHERS), _P1_B1, 1)
    assert out.verdict == "pass", out.explanation


_FAULTS = FaultProfile(
    rates=(("crash", 1.0), ("link_fail", 1.0), ("partition", 0.3), ("stall_link", 0.5))
)


@pytest.mark.parametrize(("topology", "seed"), [("fig3", 1), ("fig3", 2), ("total-order", 3)])
def test_the_correct_protocol_routes_around_down_links(topology: str, seed: int) -> None:
    spec = _spec("none", topology=topology, faults=_FAULTS, duration_us=3_000_000)
    schedule = generate_schedule(spec, seed)
    assert "link_fail" in schedule.kinds
    out = run(spec, schedule, seed)
    assert out.verdict == "pass", out.explanation


def test_a_trace_file_carries_the_links(tmp_path: Path) -> None:
    spec = _spec("none")
    ctx = run_context(spec, 1)
    assert ("b1", "p1") in ctx.links
    recs = [
        TraceRecord(
            seq=0, time=100, node="b1", kind="fault", detail=Fault(kind="link_fail", target="b1|p1")
        ),
        TraceRecord(
            seq=1,
            time=200,
            node="p1",
            kind="send",
            detail=Sent(
                to="b1", msg=None, wire=Wire(kind="silence", pubend="P1", final_ranges=((0, 9),))
            ),
        ),
    ]
    assert check_trace(ctx, recs, ("down_link_routing",), live_end=False) is not None
    path = tmp_path / "t.jsonl"
    write_trace(path, ctx, recs, live_end=False)
    tf, v = check_trace_file(path, ("down_link_routing",), matches=reference_matcher())
    assert tf.context.links == ctx.links
    assert v is not None
    assert v.invariant == "down_link_routing"
    # a file without links (written before they were recorded) leaves the rule unjudged
    old = tmp_path / "old.jsonl"
    write_trace(old, attrs.evolve(ctx, links=()), recs, live_end=False)
    assert check_trace_file(old, ("down_link_routing",), matches=reference_matcher())[1] is None


def _sent_on_down_link(w: Wire, src: str = "p1", to: str = "b1") -> list[TraceRecord]:
    fault = Fault(kind="link_fail", target=f"{to}|{src}")
    return [
        TraceRecord(seq=0, time=100, node=to, kind="fault", detail=fault),
        TraceRecord(seq=1, time=200, node=src, kind="send", detail=Sent(to=to, msg=None, wire=w)),
    ]


def test_repeated_nacks_and_retransmitted_knowledge_are_judged() -> None:
    """Repeated nacks and retransmitted knowledge are routed like first ones and judged (the
    roles once answered a curious broker over a link that failed after it nacked)."""
    ctx = run_context(_spec("none"), 1)
    nack = Wire(kind="nack", pubend="P1", nack_ranges=((0, 9),), retransmission=True)
    v = check_trace(
        ctx, _sent_on_down_link(nack, "b1", "p1"), ("down_link_routing",), live_end=False
    )
    assert v is not None
    assert "repeated nack" in v.explain()
    data = Wire(kind="data", pubend="P1", data_ticks=(5,), retransmission=True)
    v = check_trace(ctx, _sent_on_down_link(data), ("down_link_routing",), live_end=False)
    assert v is not None
    assert "repeated data knowledge" in v.explain()
    first = attrs.evolve(data, retransmission=False)
    assert check_trace(ctx, _sent_on_down_link(first), ("down_link_routing",), live_end=False)


def test_demo_seeds_that_caught_a_reply_over_a_down_link_now_pass() -> None:
    """Regression: on demo seeds 195 and 233 the roles once answered a curious broker over a
    link that had failed after it nacked (``forwarding._serve_curious``); the broker is now
    skipped and asks again over an up link, and ``down_link_routing`` judges retransmissions."""
    from pathlib import Path

    from gapless.spark_fuzz.config import canonical_json, load_config
    from gapless.spark_fuzz.execute import run_seed

    demo = Path(__file__).resolve().parents[2] / "campaigns" / "demo.toml"
    config = load_config(demo, {"shrink": False}, check_backend=False)
    cj = canonical_json(config.to_data())
    for seed in (195, 233):
        row = run_seed(cj, seed).row
        assert row["verdict"] == "pass", (seed, row["invariant"], row.get("explanation"))


def test_a_healed_link_is_up_again_and_a_second_failure_is_judged() -> None:
    """The plug-in forgets a link once every failure of it has ended (issue 17: while every
    link and broker is up it judges a send by one test), and judges the link again when it
    fails anew: fail, heal, send (passes); fail again, send (caught)."""
    ctx = run_context(_spec("none"), 1)
    w = Wire(kind="silence", pubend="P1", final_ranges=((0, 9),))

    def rec(seq: int, node: str, kind: str, detail: Any) -> TraceRecord:
        return TraceRecord(seq=seq, time=100 * (seq + 1), node=node, kind=kind, detail=detail)

    fail = Fault(kind="link_fail", target="b1|p1")
    heal = Fault(kind="link_fail", target="b1|p1", phase="end")
    send = Sent(to="b1", msg=None, wire=w)
    healed = [rec(0, "b1", "fault", fail), rec(1, "b1", "fault", heal), rec(2, "p1", "send", send)]
    assert check_trace(ctx, healed, ("down_link_routing",), live_end=False) is None
    again = [*healed, rec(3, "b1", "fault", fail), rec(4, "p1", "send", send)]
    v = check_trace(ctx, again, ("down_link_routing",), live_end=False)
    assert v is not None
    assert v.invariant == "down_link_routing"
    assert v.events[-1].seq == 4
