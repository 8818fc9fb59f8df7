"""``shb_ack_timing`` and ``sideways_forwarded`` (issue 18): their excuses on hand-built traces,
and each catching its zoo variant in a real run — online and from a trace file, offline — while
the correct protocol passes the same run. The hand-built violating traces are in
``test_invariants_nonvacuity.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from _variant_runs import run_and_write
from test_invariants_nonvacuity import T, _acked, _check, _ctx, tick

from gapless.impl.gd.variants import VARIANTS
from gapless.impl.trace import Dropped, Wire
from gapless.invariants import INVARIANTS
from gapless.invariants.tracefile import check_trace_file, read_trace, write_trace
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.spec.filters import reference_matcher

NAMES = ("shb_ack_timing", "sideways_forwarded")

#: b2 loses s1 for 0.4 s while every pubend publishes: b2's share towards s1 detours via b1
LINK = FaultSchedule(
    seed=7,
    events=(
        FaultEvent(kind="link_fail", at_us=200_000, duration_us=400_000, target="b2|s1", stream=1),
    ),
)


def test_both_are_registered_and_their_variants_name_them() -> None:
    assert set(NAMES) <= set(INVARIANTS)
    assert VARIANTS["ack-waits-for-ack-expected"].caught_by == ("shb_ack_timing",)
    assert VARIANTS["drop-detours"].caught_by == ("sideways_forwarded",)


def _ack_trace(*faults: tuple[int, str, str, str]) -> T:
    """s1 delivers P1@10 at 300 µs and P1@20 at 310 µs and never acks (ACK_DELAY 500 µs);
    ``faults`` (time, kind, target, phase) fall before the status message at 5,000 µs that
    carries the trace past every deadline."""
    base = _acked(None)
    t = T()
    t.records.extend(base.records[:-1])
    for at, kind, target, phase in faults:
        t.fault(at, kind, target, phase=phase)
    return t.send(5_000, "b1", "b2", Wire(kind="status"))


def _ack_verdict(t: T) -> Any:
    return _check(t, names=("shb_ack_timing",))


def test_a_fault_that_can_stop_the_ack_excuses_it() -> None:
    assert _ack_verdict(_ack_trace()) is not None
    # s1 crashes in the window: its ack timer is lost with it
    assert (
        _ack_verdict(_ack_trace((600, "crash", "s1", "start"), (700, "crash", "s1", "end"))) is None
    )
    # a link of s1 to its upstream cell fails in the window: excused; a link elsewhere is not
    for target, excused in (("b1|s1", True), ("b3|s3", False)):
        t = _ack_trace((400, "link_fail", target, "start"), (450, "link_fail", target, "end"))
        assert (_ack_verdict(t) is None) is excused, target
    # a fault of s1's that ended before the delivery excuses nothing
    t = _ack_trace()
    early = T().fault(100, "crash", "s1").fault(200, "crash", "s1", phase="end")
    t.records[:0] = early.records
    assert _ack_verdict(t) is not None


def test_without_an_ack_delay_the_rule_is_not_judged() -> None:
    ctx = attrs.evolve(_ctx(), ack_delay_us=None)
    assert _check(_acked(None), names=("shb_ack_timing",), ctx=ctx) is None


def _detour_trace(extra: Any) -> T:
    w = Wire(kind="data", pubend="P1", data_ticks=(tick(10),))
    t = T().publish(10, "P1", 0).fault(150, "link_fail", "b4|s3")
    t.send(200, "p1", "b4", w).send(300, "b4", "b3", w)
    extra(t, w)
    return t.fault(2_000, "link_fail", "b4|s3", phase="end")


def _live(t: T) -> Any:
    return _check(t, names=("sideways_forwarded",), live=True)


W10 = Wire(kind="data", pubend="P1", data_ticks=(tick(10),))


def test_what_excuses_a_detour_that_went_nowhere() -> None:
    assert _live(_detour_trace(lambda t, w: None)) is not None
    # the network lost the detour
    lost = Dropped(sender="b4", to="b3", msg=None, wire=W10, reason="loss")
    assert _live(_detour_trace(lambda t, w: t._add(900, "b4", "drop", lost))) is None
    # b3 had the tick before (from upstream): an istream forwards only what is new to it
    early = T().publish(10, "P1", 0).fault(150, "link_fail", "b4|s3")
    early.send(200, "p1", "b3", W10).send(200, "p1", "b4", W10).send(300, "b4", "b3", W10)
    assert _live(early) is None
    # s3 acked the tick to the cell before the detour
    acked = T().publish(10, "P1", 0).fault(150, "link_fail", "b4|s3")
    acked.send(250, "s3", "b4", Wire(kind="ack", pubend="P1", upto=tick(10)))
    acked.send(260, "p1", "b4", W10).send(300, "b4", "b3", W10)
    assert _live(acked) is None
    # a link from b3 into a cell below failed after the detour: excused; b3's upstream
    # link, or a link of another cell, is not
    for target, excused in (("b3|s4", True), ("b3|p1", False), ("b1|s1", False)):

        def fail(t: T, w: Wire, target: str = target) -> None:
            t.fault(800, "link_fail", target).fault(900, "link_fail", target, phase="end")

        assert (_live(_detour_trace(fail)) is None) is excused, target
    # a retransmitted detour is not judged
    rw = Wire(kind="data", pubend="P1", data_ticks=(tick(10),), retransmission=True)
    again = T().publish(10, "P1", 0).send(200, "p1", "b4", W10).send(300, "b4", "b3", rw)
    assert _live(again) is None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The correct protocol and both variants on the same schedule, each trace written to a
    file."""
    variants = ("none", "ack-waits-for-ack-expected", "drop-detours")
    return run_and_write(variants, LINK, 1, NAMES, tmp_path_factory.mktemp("acks"))


@pytest.mark.parametrize(
    ("variant", "name"),
    [("ack-waits-for-ack-expected", "shb_ack_timing"), ("drop-detours", "sideways_forwarded")],
)
def test_each_variant_is_caught_online_and_offline(
    runs: dict[str, Any], variant: str, name: str
) -> None:
    out, path = runs[variant]
    assert out.verdict == "violation", out.explanation
    assert out.invariant == name
    _tf, offline = check_trace_file(path, NAMES, matches=reference_matcher())
    assert offline is not None
    assert offline.invariant == name
    assert offline.message == out.violation.message


def test_the_correct_protocol_passes_the_same_run_online_and_offline(runs: dict[str, Any]) -> None:
    out, path = runs["none"]
    assert out.verdict == "pass", out.explanation
    detours = [
        r
        for r in out.trace
        if r.kind == "send"
        and r.detail.wire.kind == "data"
        and r.node in ("b1", "b2")
        and r.detail.to in ("b1", "b2")
    ]
    assert detours, "the schedule sends knowledge sideways (else sideways_forwarded is idle)"
    tf, offline = check_trace_file(path, NAMES, matches=reference_matcher())
    assert offline is None
    assert tf.context.ack_delay_us == 100_000
    header = json.loads(Path(path).read_text(encoding="utf-8").splitlines()[0])
    assert header["context"]["ack_delay_us"] == 100_000


def test_a_file_without_the_ack_delay_leaves_the_rule_unjudged(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    _out, path = runs["ack-waits-for-ack-expected"]
    tf = read_trace(path, matches=reference_matcher())
    older = tmp_path / "older.jsonl"
    write_trace(older, attrs.evolve(tf.context, ack_delay_us=None), tf.records, live_end=True)
    assert "ack_delay_us" not in json.loads(older.read_text().splitlines()[0])["context"]
    assert check_trace_file(older, ("shb_ack_timing",), matches=reference_matcher())[1] is None
