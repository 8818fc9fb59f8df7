"""Profile changes with epochs [GES "Epochs"]: a client that reconnects may present another
profile; it takes effect at each storage at the cut of the handoff that brings it (the
answer is the client's epoch notification), and every event keeps the targets of the
profile in force when it was published — so a recovery queue holds the missed events that
matched the old profile, and the events after the cut are those matching the new one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from _runs import MIXED, run, spec
from pyrsistent import pmap

from gapless.impl.ges.policy import PAPER_POLICY
from gapless.impl.ges.storage import StorageState, handoff, recovery_queue, store
from gapless.impl.ges.variants import VARIANTS
from gapless.impl.trace import TraceRecord
from gapless.invariants.ges import GESChecker
from gapless.models.ges_binding import make_binding
from gapless.models.ges_topology import GES_TOPOLOGIES
from gapless.models.run import run_context
from gapless.models.runspec import RunSpecError
from gapless.models.workload import generate_workload

NY = 'loc == "NY"'
TK = 'loc == "TK"'


def _store(st: StorageState, seq: int, attributes: Mapping[str, Any]) -> StorageState:
    st, ev = store(st, "P", seq, pmap(attributes), ("b1", "b2"), PAPER_POLICY)
    assert ev is not None
    return st


def _changed(policy: Any = PAPER_POLICY) -> tuple[StorageState, Any]:
    """Client c registers at b1 with NY; two NY events and one TK event are stored; c comes
    back at b2 with TK having received nothing: a profile change at the handoff's cut."""
    st, rec, _ = handoff(StorageState(name="S"), "c", 0, "b1", None, NY, policy)
    assert rec is not None
    for seq, loc in enumerate(("NY", "TK", "NY")):
        st = _store(st, seq, {"loc": loc})
    st, rec, _ = handoff(st, "c", 1, "b2", None, TK, policy)
    assert rec is not None
    return st, rec


def test_the_recovery_queue_keeps_the_profile_in_force_when_each_event_was_published() -> None:
    st, rec = _changed()
    assert rec.profile == TK
    assert rec.cut == 3
    queue = recovery_queue(st, "c", rec.confirmed, rec.cut)
    assert [q.epoch for q in queue] == [1, 3]  # the NY events: matched the old profile
    st = _store(st, 3, {"loc": "NY"})
    st = _store(st, 4, {"loc": "TK"})
    assert sorted(st.waiting["c"]) == [1, 3, 5]  # after the cut: the new profile only
    assert st.events[5].targets["c"] == 3  # the chain goes on from the queue's last event


def test_the_planted_bug_builds_the_queue_from_the_new_profile() -> None:
    bad = VARIANTS["recovery-from-new-profile"].policy
    st, rec = _changed(bad)
    assert recovery_queue(st, "c", rec.confirmed, rec.cut) == ()
    assert not st.events  # both NY events released as if c had them


def test_reconnections_present_other_profiles_and_the_correct_protocol_passes() -> None:
    out = run("none", MIXED, record=True)
    assert out.verdict == "pass", out.explanation
    graph = GES_TOPOLOGIES["ges-small"]()
    wl = generate_workload(spec().workload, graph, duration_us=1, seed=0)
    own = {s.name: s.filter for s in wl.subscriptions}
    connects = [r.detail for r in out.trace or () if r.kind == "connect"]
    changed = [c for c in connects if c.filter != own[c.subscriber]]
    assert changed
    assert all(c.connection > 0 for c in changed)


def test_profile_changes_can_be_turned_off() -> None:
    s = spec(config=(("profile_changes", False),))
    graph = GES_TOPOLOGIES["ges-small"]()
    wl = generate_workload(s.workload, graph, duration_us=1, seed=0)
    b = make_binding(s, graph, wl)
    assert all(b.profile(x.name, n) == x.filter for x in wl.subscriptions for n in range(6))
    on = make_binding(spec(), graph, wl)
    assert any(on.profile(x.name, n) != x.filter for x in wl.subscriptions for n in range(6))


def test_roam_complete_alone_catches_the_queue_built_from_the_new_profile() -> None:
    out = run("recovery-from-new-profile", MIXED, invariants=("roam_complete",))
    assert out.verdict == "violation", out.explanation
    assert out.invariant == "roam_complete", out.explanation


def _judge(trace: tuple[TraceRecord, ...], name: str) -> str | None:
    checker = GESChecker(run_context(spec(), 1), (name,))
    for r in trace:
        if checker.observe(r):
            break
    end = TraceRecord(seq=len(trace), time=trace[-1].time, node="-", kind="fault", detail="end")
    v = checker.finish(end)
    return None if v is None else v.invariant


def test_an_event_judged_by_the_profile_in_force_at_its_epoch_not_the_latest() -> None:
    """Non-vacuity of the per-epoch profile: the same trace judged as if each client had kept
    the last profile it presented fails; as recorded (registrations with cuts) it passes."""
    out = run("none", MIXED, record=True)
    trace = out.trace or ()
    assert _judge(trace, "roam_exactly_once") is None
    assert _judge(trace, "roam_complete") is None
    rewritten = []
    last: dict[str, str] = {}
    for r in trace:
        if r.kind == "connect":
            last[r.detail.subscriber] = r.detail.filter
    for r in trace:
        if r.kind == "persist" and type(r.detail.key) is tuple and r.detail.key[0] == "client":
            reg = r.detail.value
            rec = attrs.evolve(reg.record, profile=last[reg.client])
            r = attrs.evolve(r, detail=attrs.evolve(r.detail, value=attrs.evolve(reg, record=rec)))
        rewritten.append(r)
    verdicts = {_judge(tuple(rewritten), n) for n in ("roam_exactly_once", "roam_complete")}
    assert verdicts - {None}


def test_a_bad_profile_changes_value_is_refused_naming_the_key() -> None:
    s = spec(config=(("profile_changes", "yes"),))
    graph = GES_TOPOLOGIES["ges-small"]()
    wl = generate_workload(s.workload, graph, duration_us=1, seed=0)
    with pytest.raises(RunSpecError, match="profile_changes"):
        make_binding(s, graph, wl)
