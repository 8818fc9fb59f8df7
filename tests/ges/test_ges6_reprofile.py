"""Profile changes within a connection [GES "Epochs": "an epoch associated with every profile
change"]: a ``reprofile`` fault makes a connected client present another profile to the node
it is attached to (a ``Connect`` for the connection it holds); the node hands the change to
every storage as a new registration (``change`` + 1) presenting the epochs delivered so far;
each storage applies it at its cut and answers (the change's epoch notification), and the
client waits for every answer before it may leave. The invariants judge each event by the
profile in force at its epoch, read from the storages' completed registrations."""

from __future__ import annotations

from functools import cache

import attrs
from _runs import fault, run, spec

from gapless.impl.effects import Persist
from gapless.impl.ges import PAPER_POLICY, GESConfig, handle, initial_state
from gapless.impl.ges.messages import Handoff, HandoffAck, ProfileNews, Routed
from gapless.impl.ges.session import CHANGE_LIMIT
from gapless.impl.inputs import Connect, Persisted, Receive
from gapless.impl.trace import TraceRecord
from gapless.invariants.ges import GESChecker
from gapless.models.ges_binding import make_binding, network
from gapless.models.ges_topology import GES_TOPOLOGIES, ges_small
from gapless.models.run import run_context
from gapless.models.runspec import RunOutcome
from gapless.models.workload import generate_workload

NET = network(ges_small())
A, B = 'loc == "NY"', "p > 3"


def _handoffs(effects: tuple[object, ...]) -> dict[str, Handoff]:
    out: dict[str, Handoff] = {}
    for e in effects:
        msg = getattr(e, "msg", None)
        if type(msg) is Routed and type(msg.body) is Handoff:
            out[msg.body.storage] = msg.body
    return out


def _ack(storage: str, change: int, effective: int) -> Receive:
    ack = HandoffAck(
        storage=storage,
        client="c",
        connection=0,
        change=change,
        effective=effective,
        cut=effective,
        fresh=change == 0,
        queue=(),
    )
    return Receive(sender="x", msg=Routed(dest="n3", visited=frozenset(), body=ack))


def test_a_connect_for_the_held_connection_is_a_change_with_its_own_handoffs() -> None:
    s = initial_state("n3", NET, GESConfig(), PAPER_POLICY)
    s, effects = handle(s, Connect(subscriber="c", filter=A, connection=0), 0)
    assert {h.change for h in _handoffs(effects).values()} == {0}
    for storage in NET.storages:
        s, _ = handle(s, _ack(storage, 0, 4), 10)
    sess = s.sessions["c"]
    s = attrs.evolve(
        s, sessions=s.sessions.set("c", attrs.evolve(sess, last=sess.last.set("n2", 9)))
    )
    assert handle(s, Connect(subscriber="c", filter=A, connection=0), 20) == (s, ())
    s, effects = handle(s, Connect(subscriber="c", filter=B, connection=0), 20)
    sent = _handoffs(effects)
    assert sorted(sent) == list(NET.storages)
    assert {(h.change, h.profile) for h in sent.values()} == {(1, B)}
    assert sent["n2"].presented == 9  # the epochs delivered so far, not the connection's
    assert sent["n7"].presented == 4
    news = [e.msg for e in effects if type(getattr(e, "msg", None)) is ProfileNews]
    assert news[0].entries == (("c", 1, "n3", B),)  # a newer unique id than connection 0's
    sess = s.sessions["c"]
    assert (sess.change, sess.number, sess.answered) == (1, 1, frozenset())
    assert handle(s, _ack("n2", 0, 4), 30)[0] is s  # the answer to the old registration
    s, _ = handle(s, _ack("n2", 1, 5), 30)
    assert s.sessions["c"].last["n2"] == 9  # never moved back
    assert s.sessions["c"].answered == frozenset({"n2"})
    assert sess.number == 0 * CHANGE_LIMIT + 1  # connection 0, change 1


@cache
def _run(wait: bool = True, leave_after_us: int | None = None) -> RunOutcome:
    events = [fault("reprofile", 0.4 + 0.15 * i, 0.0, c, 10 + i) for i, c in enumerate(CLIENTS)]
    if leave_after_us is not None:
        events.append(fault("disconnect", (CHANGE_AT + leave_after_us) / 1e6, 0.3, "n5.u0", 3))
    events.append(fault("link_fail", 1.0, 0.5, "n3|n5", 4))
    config = (("notification_wait", wait),)
    out = run("none", tuple(events), record=True, config=config)
    assert out.trace is not None
    return out


CLIENTS = ("n3.u0", "n5.u0", "n8.u1", "n3.u0", "n1.u0", "n5.u0", "n3.u0")
CHANGE_AT = 550_000
"""n5.u0's first change within connection 0."""


def _changes(out: RunOutcome) -> list[tuple[str, str, int, int, str]]:
    """(client, storage, change, cut, profile) of every registration write of a change."""
    got = []
    for r in out.trace or ():
        if r.kind == "persist" and type(r.detail.key) is tuple and r.detail.key[0] == "client":
            rec = r.detail.value.record
            if rec.change:
                got.append((r.detail.value.client, r.node, rec.change, rec.cut, rec.profile))
    return got


def test_changes_within_connections_stay_exactly_once_with_their_epochs() -> None:
    out = _run()
    assert out.verdict == "pass", out.explanation
    changes = _changes(out)
    assert {(c, ch) for c, _s, ch, _k, _p in changes} >= {("n3.u0", 3), ("n5.u0", 2)}
    connects = [r.detail for r in out.trace or () if r.kind == "connect"]
    assert all(d.connection == 0 for d in connects)  # nobody reconnected: changes within


def _checker_over(trace: tuple[TraceRecord, ...]) -> GESChecker:
    checker = GESChecker(run_context(spec(), 1))
    for r in trace:
        if checker.observe(r):
            break
    return checker


def test_the_invariants_judge_by_the_profile_in_force_at_each_change() -> None:
    """Non-vacuity: the same trace without the completed registration writes of a client's
    last change (so the profile before it stays in force for the checker) is caught: an event
    after the change's cut matches only the new profile."""
    out = _run()
    trace = out.trace or ()
    assert _checker_over(trace).violation is None
    last: dict[str, int] = {}
    for client, _s, change, _cut, _profile in _changes(out):
        last[client] = max(last.get(client, 0), change)
    caught = 0
    for client, change in sorted(last.items()):
        forged = tuple(r for r in trace if not _completes(r, client, change, trace))
        v = _checker_over(forged).violation
        if v is not None:
            assert v.invariant in ("roam_exactly_once", "roam_complete", "selective_routing")
            caught += 1
    assert caught >= 1


def _completes(r: TraceRecord, client: str, change: int, trace: tuple[TraceRecord, ...]) -> bool:
    """Whether ``r`` completes a registration write of ``client``'s ``change``."""
    if r.kind != "persisted" or type(r.detail.key) is not tuple or r.detail.key[0] != "client":
        return False
    if r.detail.key[2] != client:
        return False
    asked = [
        p.detail.value
        for p in trace
        if p.kind == "persist"
        and p.detail.key == r.detail.key
        and p.node == r.node
        and p.seq < r.seq
    ]
    return bool(asked) and asked[-1].record.change == change


def _judge_waiting(out: RunOutcome) -> str | None:
    ctx = attrs.evolve(run_context(spec(), 1), waits=True)
    checker = GESChecker(ctx, ("notified_before_leaving",))
    for r in out.trace or ():
        if checker.observe(r):
            break
    return None if checker.violation is None else checker.violation.explain()


def test_a_client_waits_for_the_notification_of_a_change_within_its_connection() -> None:
    out = _run(True, 100)
    assert out.verdict == "pass", out.explanation
    leaves = [r.time for r in out.trace or () if r.kind == "disconnect"]
    assert leaves
    assert leaves[0] > CHANGE_AT + 100  # held past the fault's start
    assert _judge_waiting(out) is None


def test_a_client_that_leaves_before_the_notification_of_its_change_is_caught() -> None:
    out = _run(False, 100)
    assert out.verdict == "pass", out.explanation  # it promised no wait
    assert next(r.time for r in out.trace or () if r.kind == "disconnect") == CHANGE_AT + 100
    got = _judge_waiting(out)
    assert got is not None
    assert "change 1 within connection 0" in got


def test_the_binding_picks_another_profile_and_none_when_changes_are_off() -> None:
    s = spec()
    graph = GES_TOPOLOGIES["ges-small"]()
    wl = generate_workload(s.workload, graph, duration_us=1, seed=0)
    b = make_binding(s, graph, wl)
    state = b.initial_states()["n3"]
    assert b.reprofile("n3.u0", state) is None  # not connected there
    state, _ = handle(state, Connect(subscriber="n3.u0", filter=A, connection=0), 0)
    got = b.reprofile("n3.u0", state)
    assert got is not None
    assert got != A
    assert got in b.menu
    off = make_binding(spec(config=(("profile_changes", False),)), graph, wl)
    assert off.reprofile("n3.u0", state) is None


def _handoff_at_storage(change: int, client: str, profile: str) -> Receive:
    h = Handoff(
        storage="n2",
        client=client,
        connection=0,
        broker="n1",
        presented=None,
        profile=profile,
        change=change,
    )
    return Receive(sender="x", msg=Routed(dest="n2", visited=frozenset(), body=h))


def test_a_change_that_arrives_while_the_registration_is_written_is_written_after_it() -> None:
    """Found by the stateful machine (a reprofile at boot): the change's registration was
    written under the same key as the pending one, so it became durable when the first write
    completed — before another client's registration asked for in between, which its counts
    already included (``reference_counts``). Now it is asked for once the first completed,
    with the counts of that moment, and only it is answered."""
    s = initial_state("n2", NET, GESConfig(), PAPER_POLICY)
    s, (first,) = handle(s, _handoff_at_storage(0, "c", "true"), 10)
    s, (other,) = handle(s, _handoff_at_storage(0, "d", A), 11)
    s, effects = handle(s, _handoff_at_storage(1, "c", A), 12)
    assert effects == ()  # waits for the write of change 0
    s, effects = handle(s, Persisted(key=first.key), 2_010)
    (second,) = [e for e in effects if type(e) is Persist]
    assert second.key == first.key
    assert second.value.record.change == 1
    assert not [e for e in effects if type(getattr(e, "msg", None)) is Routed]  # no answer yet
    s, _ = handle(s, Persisted(key=other.key), 2_011)
    s, effects = handle(s, Persisted(key=second.key), 4_010)
    acks = [e.msg.body for e in effects if type(getattr(e, "msg", None)) is Routed]
    assert [(a.client, a.change) for a in acks if type(a) is HandoffAck] == [("c", 1)]
    assert s.disk[first.key].record.change == 1
    # the counts were taken when the write was asked for: d's profile at n1 is counted
    assert dict(second.value.counts)[1] == 2
