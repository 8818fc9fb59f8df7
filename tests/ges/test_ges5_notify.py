"""A client that changed its profile waits for its epoch notification before it may disconnect
[GES "Epochs", "Profiles and the profile graph"]: a ``disconnect`` fault of such a client is
held (the world's optional ``may_disconnect`` seam, answered by ``GESBinding``) until every
storage's ``HandoffAck`` for its connection reached its node. ``notified_before_leaving``
judges it from the trace; the planted bug is the client that does not wait (run config
``notification_wait = false``) judged as if it had to."""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import attrs
import pytest
from _runs import fault, run, spec
from pyrsistent import pmap

from gapless.impl.ges.session import start_session
from gapless.impl.trace import TraceRecord
from gapless.invariants.ges import GESChecker
from gapless.invariants.ges_tracefile import read_ges_trace, write_ges_trace
from gapless.models.ges_binding import make_binding
from gapless.models.ges_topology import GES_TOPOLOGIES
from gapless.models.run import reference_matcher, run_context
from gapless.models.runspec import RunOutcome, RunSpecError
from gapless.models.workload import generate_workload

C = "n3.u0"
"""In ``ges-small``, n3.u0 presents another profile at its connection 1 than at 0."""
BACK = 1_300_000
"""n3.u0 leaves at 1.0 s and comes back (connection 1, a profile change) at 1.3 s."""
ROAM = fault("disconnect", 1.0, 0.3, C, 1)


def _leaves_again(after_us: int, for_s: float = 0.4) -> tuple[object, ...]:
    return (ROAM, fault("disconnect", (BACK + after_us) / 1e6, for_s, C, 2))


@cache
def _run(wait: bool, after_us: int = 100, for_s: float = 0.4) -> RunOutcome:
    config = (("notification_wait", wait),)
    out = run("none", _leaves_again(after_us, for_s), record=True, config=config)  # type: ignore[arg-type]
    assert out.trace is not None
    return out


def _of(out: RunOutcome, kind: str) -> list[TraceRecord]:
    return [r for r in out.trace or () if r.kind == kind and r.detail.subscriber == C]


def _last_hop_acks(out: RunOutcome, connection: int, node: str) -> dict[str, int]:
    """Per storage, when its first ``HandoffAck`` for ``connection`` was sent into ``node``."""
    got: dict[str, int] = {}
    for r in out.trace or ():
        w = getattr(r.detail, "wire", None)
        if r.kind != "send" or w is None or getattr(w, "kind", "") != "handoff_ack":
            continue
        if w.client == C and w.connection == connection and r.detail.to == node:
            got.setdefault(w.storage, r.time)
    return got


def _judge_waiting(out: RunOutcome) -> str | None:
    ctx = attrs.evolve(run_context(spec(), 1), waits=True)
    checker = GESChecker(ctx, ("notified_before_leaving",))
    for r in out.trace or ():
        if checker.observe(r):
            break
    return None if checker.violation is None else checker.violation.explain()


def test_the_binding_asks_a_changed_profile_to_wait_for_every_storage() -> None:
    s = spec()
    graph = GES_TOPOLOGIES["ges-small"]()
    b = make_binding(s, graph, generate_workload(s.workload, graph, duration_us=1, seed=0))
    assert b.changed_profile(C, 1)
    assert not b.changed_profile(C, 0)
    state = b.initial_states()["n3"]
    assert b.may_disconnect(C, state)  # no session here
    first = start_session(C, b.profile(C, 0), 0, ())
    assert b.may_disconnect(C, attrs.evolve(state, sessions=pmap({C: first})))
    sess = start_session(C, b.profile(C, 1), 1, ())
    for answered, may in (((), False), (("n2",), False), (("n2", "n7"), True)):
        got = attrs.evolve(sess, last=pmap(dict.fromkeys(answered, 0)))
        assert b.net.storages == ("n2", "n7")
        assert b.may_disconnect(C, attrs.evolve(state, sessions=pmap({C: got}))) is may
    off = make_binding(
        spec(config=(("notification_wait", False),)),
        graph,
        generate_workload(s.workload, graph, duration_us=1, seed=0),
    )
    assert off.may_disconnect(C, attrs.evolve(state, sessions=pmap({C: sess})))


def test_a_disconnect_fault_is_held_until_the_notification_arrives() -> None:
    out = _run(True)
    assert out.verdict == "pass", out.explanation
    leaves = [r.time for r in _of(out, "disconnect")]
    assert leaves[0] == 1_000_000  # connection 0 changed nothing: it leaves at once
    acks = _last_hop_acks(out, 1, "n3")
    assert sorted(acks) == ["n2", "n7"]
    assert leaves[1] > max(acks.values()) > BACK + 100  # held past the fault's start
    assert _judge_waiting(out) is None


def test_the_client_that_does_not_wait_is_caught() -> None:
    """The planted bug: with ``notification_wait = false`` the client leaves at the fault's
    start, before either storage answered; judged as a waiting client, it is caught (and the
    run itself, which promises no wait, passes)."""
    out = _run(False)
    assert out.verdict == "pass", out.explanation
    assert [r.time for r in _of(out, "disconnect")][1] == BACK + 100
    got = _judge_waiting(out)
    assert got is not None
    assert "notified_before_leaving" in got
    assert C in got


def test_a_fault_that_ends_while_the_client_waits_leaves_it_connected() -> None:
    out = _run(True, after_us=100, for_s=0.0005)
    assert out.verdict == "pass", out.explanation
    assert [r.time for r in _of(out, "disconnect")] == [1_000_000]
    assert [r.detail.connection for r in _of(out, "connect")] == [0, 1]


def test_a_held_client_whose_node_crashes_is_disconnected_by_the_crash() -> None:
    events = (*_leaves_again(100), fault("crash", 1.3002, 0.2, "n3", 3))
    out = run("none", events, record=True)  # type: ignore[arg-type]
    assert out.verdict == "pass", out.explanation
    leaves = [r.time for r in _of(out, "disconnect")]
    assert leaves == [1_000_000, 1_300_200]  # the crash, not the (held) fault
    assert _judge_waiting(out) is None  # a crash is not the client leaving


def test_the_wait_round_trips_through_a_trace_file(tmp_path: Path) -> None:
    out = _run(False)
    ctx = attrs.evolve(run_context(spec(), 1), waits=True)
    f = tmp_path / "t.jsonl"
    write_ges_trace(f, ctx, out.trace or (), live_end=False)
    tf = read_ges_trace(f, matches=reference_matcher())
    assert tf.context.waits
    assert tf.context.storages == ("n2", "n7")
    checker = GESChecker(tf.context, ("notified_before_leaving",))
    assert any(checker.observe(r) for r in tf.records)


def test_a_bad_notification_wait_value_is_named() -> None:
    s = spec(config=(("notification_wait", "yes"),))
    graph = GES_TOPOLOGIES["ges-small"]()
    with pytest.raises(RunSpecError, match="notification_wait"):
        make_binding(s, graph, generate_workload(s.workload, graph, duration_us=1, seed=0))


def _paired_disconnects(seed: int) -> tuple[object, ...]:
    """Twenty roams, each followed within 8 ms of the client's return by another disconnect
    (often before its notification came)."""
    rng = random.Random(seed)
    subs = [f"n{i}.u{j}" for i in range(1, 9) for j in range(2)]
    events = []
    for k in range(20):
        at, dur, c = rng.uniform(0.05, 2.6), rng.choice([0.003, 0.01, 0.05, 0.2]), rng.choice(subs)
        events.append(fault("disconnect", at, dur, c, 2 * k + 1))
        again = at + dur + rng.uniform(0.0001, 0.008)
        events.append(fault("disconnect", again, rng.choice([0.001, 0.01, 0.1]), c, 2 * k + 2))
    return tuple(sorted(events, key=lambda e: e.at_us))


def test_held_disconnects_with_the_finer_tier_and_system_links_stay_correct() -> None:
    config = (("granularity", "cluster"), ("system_links", True))
    out = run("none", _paired_disconnects(107), record=True, config=config)  # type: ignore[arg-type]
    assert out.verdict == "pass", out.explanation
    started: dict[str, int] = {}
    held = 0
    for r in out.trace or ():
        if r.kind == "fault" and r.detail.kind == "disconnect" and r.detail.phase == "start":
            started[r.detail.target] = r.time
        elif r.kind == "disconnect":
            held += r.time > started.pop(r.detail.subscriber, r.time)
    assert held >= 3
