"""The seams the next protocols need (issue 9 §3), each exercised by the toy protocol.

* a resume token on ``Connect`` (durable subscriptions' checkpoint token);
* a kind on ``Deliver``: event, silence, gap;
* storage effects beyond "log a publication", and a crash that loses exactly what was not
  made durable;
* a fault budget: a run that leaves it is judged on safety alone, verdict ``out_of_budget``;
* a protocol-owned wire summary.
"""

from __future__ import annotations

from typing import Any

import attrs
import networkx as nx
import pytest
from _toy_binding import Data, ToyBinding, true_only

from gapless.impl.effects import Deliver, Effect, Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Connect, Input, Persisted
from gapless.impl.trace import TraceRecord, canonical
from gapless.invariants.violation import Violation
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.gd_protocol import ENTRY as GD
from gapless.models.run import simulate
from gapless.models.runspec import RunSpec
from gapless.models.topology import topology
from gapless.models.workload import WorkloadSpec

DELIVERY = ("safety", "order", "logged_first", "gapless", "exactly_once", "no_e", "liveness")


def _spec(**kw: Any) -> RunSpec:
    base: dict[str, Any] = {
        "topology": "two-broker",
        "workload": WorkloadSpec(rate_per_pubend=50.0, subscribers_per_shb=2),
        "duration_us": 2_000_000,
        "drain_us": 1_000_000,
        "invariants": DELIVERY,
    }
    base.update(kw)
    return RunSpec(**base)


def _run(binding: Any, events: tuple[FaultEvent, ...] = (), **kw: Any) -> Any:
    return simulate(
        _spec(),
        FaultSchedule(seed=1, events=events),
        1,
        binding=binding,
        matches=true_only,
        record_trace=True,
        **kw,
    )


def _reconnect(at_s: float = 0.8) -> FaultEvent:
    return FaultEvent(
        kind="disconnect", at_us=int(at_s * 1e6), duration_us=200_000, target="s1.u0", stream=1
    )


# ------------------------------------------------------------------ resume token


class ResumingToy(ToyBinding):
    """The toy whose subscribers present what they consumed when they (re)connect."""

    def resume_token(self, subscriber: str, consumed: dict[str, int]) -> Any:
        return tuple(sorted(consumed.items()))


def test_a_reconnecting_subscriber_presents_its_resume_token() -> None:
    g = topology("two-broker")
    out = _run(ResumingToy(g), (_reconnect(),))
    connects = [r.detail for r in out.trace if r.kind == "connect"]
    first = [c for c in connects if c.subscriber == "s1.u0"]
    assert [c.connection for c in first] == [0, 1]
    assert first[0].resume == ()  # a new subscriber has consumed nothing
    delivered_before = max(
        r.detail.tick
        for r in out.trace
        if r.kind == "deliver" and r.detail.subscriber == "s1.u0" and r.time < 800_000
    )
    assert first[1].resume == (("P0", delivered_before),)
    # a binding without the hook leaves it None, as before
    plain = _run(ToyBinding(g), (_reconnect(),))
    assert {r.detail.resume for r in plain.trace if r.kind == "connect"} == {None}


# ------------------------------------------------------------------ deliver kinds


def test_deliver_kinds_are_validated_recorded_and_digested() -> None:
    d = Deliver(subscriber="s", pubend="P0", tick=5, payload=None, kind="gap")
    assert d.kind == "gap"
    with pytest.raises(ProtocolMisuse, match="kind 'hole' is unknown; allowed: event, silence"):
        Deliver(subscriber="s", pubend="P0", tick=5, payload=None, kind="hole")
    assert canonical(d) != canonical(attrs.evolve(d, kind="event"))
    assert canonical(attrs.evolve(d, kind="event")) == canonical(
        Deliver(subscriber="s", pubend="P0", tick=5, payload=None)
    )


class GapToy(ResumingToy):
    """On reconnect, the SHB first tells the subscriber which ticks it will never get
    (a gap up to the highest tick it has seen), then resumes with events."""

    def handle(self, s: Any, inp: Input, now: int) -> tuple[Any, tuple[Effect, ...]]:
        s2, effs = super().handle(s, inp, now)
        if isinstance(inp, Connect) and inp.resume:
            top = s.seen.get("P0", -1)
            if top >= 0:
                gap = Deliver(
                    subscriber=inp.subscriber,
                    pubend="P0",
                    tick=top,
                    payload=None,
                    connection=inp.connection,
                    kind="gap",
                )
                effs = (gap, *effs)
        return s2, effs


def test_gap_deliveries_reach_the_trace_and_are_not_counted_as_events() -> None:
    g = topology("two-broker")
    plain = _run(ResumingToy(g), (_reconnect(),))
    gapped = _run(GapToy(g), (_reconnect(),))
    gaps = [r for r in gapped.trace if r.kind == "deliver" and r.detail.kind == "gap"]
    assert len(gaps) == 1
    assert gaps[0].detail.subscriber == "s1.u0"
    assert gapped.counters.delivered == plain.counters.delivered
    assert gapped.trace_digest != plain.trace_digest


# ------------------------------------------------------------------ storage


class CheckpointToy(ToyBinding):
    """The toy SHB also persists a checkpoint per delivery: a storage effect that is not a
    publication; ``durable`` tells the two apart."""

    def handle(self, s: Any, inp: Input, now: int) -> tuple[Any, tuple[Effect, ...]]:
        if isinstance(inp, Persisted) and inp.key[0] == "ckpt":
            return s, ()  # the checkpoint is durable; nothing else to do
        s2, effs = super().handle(s, inp, now)
        if s.role == "shb" and any(type(e) is Deliver for e in effs):
            tick = next(e.tick for e in effs if type(e) is Deliver)
            effs = (*effs, Persist(key=("ckpt", tick), value=("ckpt", tick), delay=50_000))
        return s2, effs

    def durable(self, p: Persist) -> str | None:
        return "checkpoint" if p.key[0] == "ckpt" else "log"

    def logged(self, p: Persist) -> Any:
        return None if p.key[0] == "ckpt" else super().logged(p)


def _completed(trace: tuple[TraceRecord, ...], binding: Any) -> dict[str, list[Any]]:
    asked = {
        (r.node, r.detail.key): binding.durable(r.detail) for r in trace if r.kind == "persist"
    }
    done: dict[str, list[Any]] = {}
    for r in trace:
        if r.kind == "persisted":
            done.setdefault(asked[(r.node, r.detail.key)], []).append(r.detail.key)
    return done


def test_a_crash_loses_exactly_the_writes_that_had_not_completed() -> None:
    g = topology("two-broker")
    b = CheckpointToy(g)
    crash = FaultEvent(kind="crash", at_us=1_000_000, duration_us=300_000, target="s1", stream=1)
    out = _run(b, (crash,))
    trace = out.trace
    done = _completed(trace, b)
    assert done["checkpoint"], "checkpoints complete when nothing crashes them"
    crashed_at = next(r.time for r in trace if r.kind == "fault" and r.detail.phase == "start")
    pending_at_crash = [
        r.detail.key
        for r in trace
        if r.kind == "persist" and r.node == "s1" and r.time < crashed_at < r.time + r.detail.delay
    ]
    assert pending_at_crash, "the schedule must catch a checkpoint write in flight"
    for key in pending_at_crash:
        assert key not in done["checkpoint"]
    # every write that was not in flight at the crash completed
    asked = [r.detail.key for r in trace if r.kind == "persist" and r.node == "s1"]
    ends = {r.detail.key for r in trace if r.kind == "persisted" and r.node == "s1"}
    assert set(asked) - ends == set(pending_at_crash) | {
        r.detail.key
        for r in trace
        if r.kind == "persist" and r.node == "s1" and r.time + r.detail.delay > out.end_time_us
    }
    assert all(type(r.detail) is Persisted for r in trace if r.kind == "persisted")


# ------------------------------------------------------------------ fault budget


def _no_crash(graph: nx.Graph, active: tuple[FaultEvent, ...]) -> bool:
    """A budget of zero failed brokers or links."""
    return not any(e.kind in ("crash", "link_fail") for e in active)


def test_a_run_that_leaves_the_budget_is_judged_on_safety_alone() -> None:
    g = topology("two-broker")
    crash = FaultEvent(
        kind="link_fail", at_us=900_000, duration_us=400_000, target="p1|s1", stream=1
    )
    unbudgeted = _run(ToyBinding(g), (crash,))
    assert unbudgeted.verdict == "violation"  # the toy never repairs what the link lost
    assert unbudgeted.invariant not in GD.safety_invariants
    budgeted = attrs.evolve(GD, within_budget=_no_crash)
    out = _run(ToyBinding(g), (crash,), entry=budgeted)
    assert out.verdict == "out_of_budget", out.explanation
    assert "safety" in out.explanation
    # within the budget, the same entry judges everything
    calm = _run(ToyBinding(g), (), entry=budgeted)
    assert calm.verdict == "pass"


class UnsafeToy(ToyBinding):
    """Delivers a message twice: a safety (exactly-once) violation."""

    def handle(self, s: Any, inp: Input, now: int) -> tuple[Any, tuple[Effect, ...]]:
        s2, effs = super().handle(s, inp, now)
        return s2, tuple(
            e for eff in effs for e in ((eff, eff) if type(eff) is Deliver else (eff,))
        )


def test_a_safety_violation_stands_out_of_budget() -> None:
    g = topology("two-broker")
    crash = FaultEvent(kind="crash", at_us=300_000, duration_us=400_000, target="p1", stream=1)
    budgeted = attrs.evolve(GD, within_budget=_no_crash)
    out = _run(UnsafeToy(g), (crash,), entry=budgeted)
    assert out.verdict == "violation"
    assert out.invariant == "exactly_once"


# ------------------------------------------------------------------ wire summary


@attrs.frozen(kw_only=True)
class ToyWire:
    """The toy's own summary of a message: which tick it carries."""

    what: str
    tick: int | None = None


class DeliveriesOnly:
    """A protocol's own checker: it reads only deliveries (its wire summary is its own), and
    flags a tick delivered twice to one subscriber."""

    def __init__(self, ctx: Any, names: tuple[str, ...]) -> None:
        self.violation: Violation | None = None
        self.seen: set[tuple[str, str, int]] = set()

    def observe(self, r: TraceRecord) -> bool:
        if r.kind == "deliver":
            key = (r.detail.subscriber, r.detail.pubend, r.detail.tick)
            if key in self.seen and self.violation is None:
                self.violation = Violation(
                    invariant="exactly_once", subject=key[0], message="twice", time=r.time
                )
            self.seen.add(key)
        return self.violation is not None

    def finish(self, end: TraceRecord) -> Violation | None:
        return self.violation

    def publish_time(self, pubend: str, tick: int) -> int | None:
        return None

    def restrict(self, names: tuple[str, ...]) -> None:
        pass


class OwnWireToy(ToyBinding):
    def wire(self, msg: Any) -> Any:
        return ToyWire(what="data", tick=msg.tick) if isinstance(msg, Data) else ToyWire(what="ack")


def test_a_protocol_owns_its_wire_summary() -> None:
    g = topology("two-broker")
    own = attrs.evolve(GD, checker=DeliveriesOnly, wire_schema=ToyWire)
    out = _run(OwnWireToy(g), entry=own)
    wires = [r.detail.wire for r in out.trace if r.kind == "send"]
    assert wires
    assert all(type(w) is ToyWire for w in wires)
    assert out.verdict == "pass"
    assert out.counters.nacks == 0
    assert out.trace_digest == _run(OwnWireToy(g), entry=own).trace_digest
    assert own.describe()["wire_schema"] == {"name": "ToyWire", "fields": ["what", "tick"]}
    assert GD.describe()["wire_schema"]["fields"][0] == "kind"
