"""Each GES invariant judges the trace alone and catches what it is for: a correct run's
recorded trace passes every one; the same trace with one record altered fails exactly the
invariant that property belongs to (non-vacuity)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import attrs
import pytest
from _runs import MIXED, run, spec
from pyrsistent import pmap

from gapless.impl.effects import Deliver, Persist
from gapless.impl.ges.messages import GesWire, SysForward
from gapless.impl.ges.records import unrouted
from gapless.impl.inputs import Disconnect, Persisted
from gapless.impl.trace import Fault, Sent, TraceRecord
from gapless.invariants.ges import INVARIANTS, GESChecker
from gapless.models.run import run_context

Trace = tuple[TraceRecord, ...]


@cache
def _trace() -> Trace:
    out = run("none", MIXED, record=True)
    assert out.verdict == "pass", out.explanation
    assert out.trace is not None
    return out.trace


def _judge(trace: Trace, name: str) -> str | None:
    checker = GESChecker(run_context(spec(), 1), (name,))
    for r in trace:
        if checker.observe(r):
            break
    end = TraceRecord(seq=len(trace), time=trace[-1].time, node="-", kind="fault", detail="end")
    v = checker.finish(end)
    return None if v is None else v.invariant


def _deliveries(trace: Trace) -> list[int]:
    return [i for i, r in enumerate(trace) if r.kind == "deliver"]


def _renumber(records: list[TraceRecord]) -> Trace:
    return tuple(attrs.evolve(r, seq=i) for i, r in enumerate(records))


def duplicate_delivery(trace: Trace) -> Trace:
    i = _deliveries(trace)[5]
    rs = list(trace)
    rs.insert(i + 1, trace[i])
    return _renumber(rs)


def swapped_deliveries(trace: Trace) -> Trace:
    ds = _deliveries(trace)
    sub = trace[ds[0]].detail.subscriber
    mine = [i for i in ds if trace[i].detail.subscriber == sub]
    pub = trace[mine[0]].detail.pubend
    mine = [i for i in mine if trace[i].detail.pubend == pub]
    a, b = mine[0], mine[1]
    rs = list(trace)
    rs[a], rs[b] = (
        attrs.evolve(trace[b], time=trace[a].time),
        attrs.evolve(trace[a], time=trace[b].time),
    )
    return _renumber(rs)


def dropped_last_delivery(trace: Trace) -> Trace:
    i = _deliveries(trace)[-1]
    return _renumber([r for j, r in enumerate(trace) if j != i])


def delivery_outside_profile(trace: Trace) -> Trace:
    rs = list(trace)
    for i in _deliveries(trace):
        d = trace[i].detail
        if d.subscriber.endswith(".u1") and d.subscriber.startswith("n2"):
            continue
        rs[i] = attrs.evolve(trace[i], detail=attrs.evolve(d, subscriber="n2.u1"))
        return _renumber(rs)
    raise AssertionError("no delivery to move")


def sent_over_failed_link(trace: Trace) -> Trace:
    start = next(
        i for i, r in enumerate(trace) if r.kind == "fault" and r.detail.kind == "link_fail"
    )
    a, b = trace[start].detail.target.split("|")
    fake = TraceRecord(
        seq=0,
        time=trace[start].time + 1,
        node=a,
        kind="send",
        detail=Sent(to=b, msg=None, wire=GesWire(kind="confirm", storage="n7", epoch=1)),
    )
    rs = list(trace)
    rs.insert(start + 1, fake)
    return _renumber(rs)


def event_toward_uninterested(trace: Trace) -> Trace:
    i = next(i for i, r in enumerate(trace) if r.kind == "send" and r.detail.wire.kind == "event")
    w = trace[i].detail.wire
    nobody = "n-nowhere"
    detail = attrs.evolve(trace[i].detail, wire=attrs.evolve(w, dests=(*w.dests, nobody)))
    rs = list(trace)
    rs[i] = attrs.evolve(trace[i], detail=detail)
    return _renumber(rs)


def release_first(trace: Trace) -> Trace:
    """Move the first release write before the deliveries it waited for."""
    i = next(
        i for i, r in enumerate(trace) if r.kind == "persisted" and r.detail.key[0] == "release"
    )
    j = next(
        k
        for k, r in enumerate(trace)
        if r.kind == "persist" and r.detail.key == trace[i].detail.key
    )
    first_delivery = _deliveries(trace)[0]
    rs = list(trace)
    moved = [rs[j], rs[i]]
    rest = [r for k, r in enumerate(rs) if k not in (i, j)]
    at = min(first_delivery, j)
    return _renumber(rest[:at] + moved + rest[at:])


def registration_miscounted(trace: Trace) -> Trace:
    i = next(
        i
        for i, r in enumerate(trace)
        if r.kind == "persist" and r.detail.key[0] == "client" and r.detail.value.counts
    )
    p = trace[i].detail
    reg = p.value
    bad = attrs.evolve(reg, counts=tuple((d, c + 1) for d, c in reg.counts))
    rs = list(trace)
    rs[i] = attrs.evolve(trace[i], detail=attrs.evolve(p, value=bad))
    return _renumber(rs)


def sysin_past_a_gap(trace: Trace) -> Trace:
    """Storage n7 completes a ``sysin`` write of number 2 from n2 (a logged event of n2's)
    that it never held number 1 of (the system-level links)."""
    i = next(
        i
        for i, r in enumerate(trace)
        if r.kind == "persisted" and r.detail.key[0] == "log" and r.node == "n2"
    )
    epoch = trace[i].detail.key[2]
    f = SysForward(storage="n7", origin="n2", seq=2, epoch=epoch, pubend="", attributes=pmap())
    key = ("sysin", "n7", "n2", 2)
    at = trace[i].time
    fake = [
        attrs.evolve(trace[i], node="n7", kind="persist", detail=Persist(key=key, value=f)),
        attrs.evolve(trace[i], node="n7", kind="persisted", detail=Persisted(key=key), time=at),
    ]
    rs = list(trace)
    return _renumber(rs[: i + 1] + fake + rs[i + 1 :])


def left_before_notification(trace: Trace) -> Trace:
    """The first client that reconnects presenting another profile disconnects at once, before
    any storage's ``HandoffAck`` reached its node."""
    presented: dict[tuple[str, int], str] = {}
    for i, r in enumerate(trace):
        if r.kind != "connect":
            continue
        c, n = r.detail.subscriber, r.detail.connection
        presented[(c, n)] = r.detail.filter
        if n > 0 and presented.get((c, n - 1)) not in (None, r.detail.filter):
            leave = attrs.evolve(r, kind="disconnect", detail=Disconnect(subscriber=c))
            rs = list(trace)
            return _renumber([*rs[: i + 1], leave, *rs[i + 1 :]])
    raise AssertionError("no reconnection with another profile in the trace")


def _unrouted_record(
    time: int,
    node: str,
    dest: str,
    visited: tuple[str, ...] = (),
    kind: str = "confirm",
    storage: str = "",
    epoch: int = -1,
) -> TraceRecord:
    detail = unrouted(node, (dest,), frozenset(visited), kind, storage, epoch)
    return TraceRecord(seq=0, time=time, node=node, kind="rejected", detail=detail)


def dropped_while_a_path_existed(trace: Trace) -> Trace:
    """Before the first fault (nothing down, nothing changed for 0.8 s), n1 drops a
    confirmation for n7 for want of a route."""
    i = next(i for i, r in enumerate(trace) if r.kind == "fault")
    rs = list(trace)
    rs.insert(i, _unrouted_record(trace[i].time - 1, "n1", "n7"))
    return _renumber(rs)


MUTATIONS: dict[str, Callable[[Trace], Trace]] = {
    "roam_exactly_once": duplicate_delivery,
    "roam_order": swapped_deliveries,
    "roam_complete": dropped_last_delivery,
    "selective_routing": event_toward_uninterested,
    "avoid_suspected": sent_over_failed_link,
    "route_while_path": dropped_while_a_path_existed,
    "reference_counts": registration_miscounted,
    "release_after_confirm": release_first,
    "system_sequence": sysin_past_a_gap,
    "notified_before_leaving": left_before_notification,
}


def test_every_invariant_has_a_mutation() -> None:
    assert set(MUTATIONS) == set(INVARIANTS)


@pytest.mark.parametrize("name", INVARIANTS)
def test_a_correct_trace_passes(name: str) -> None:
    assert _judge(_trace(), name) is None


@pytest.mark.parametrize("name", INVARIANTS)
def test_the_mutated_trace_fails_its_invariant(name: str) -> None:
    assert _judge(MUTATIONS[name](_trace()), name) == name


def test_a_delivery_outside_the_profile_is_not_exactly_once() -> None:
    assert _judge(delivery_outside_profile(_trace()), "roam_exactly_once") == "roam_exactly_once"


def test_fault_records_mark_links_down_and_up() -> None:
    checker = GESChecker(run_context(spec(), 1), ("avoid_suspected",))
    checker._fault(Fault(kind="link_fail", target="n3|n5", phase="start"))
    assert checker._is_down("n5", "n3")
    checker._fault(Fault(kind="link_fail", target="n3|n5", phase="end"))
    assert not checker._is_down("n3", "n5")
    checker._fault(Fault(kind="fail", target="n6", phase="start"))
    checker._fault(Fault(kind="fail", target="n6", phase="end"))
    assert checker._is_down("n4", "n6")  # failed forever
    checker._fault(Fault(kind="partition", target="n1,n2", phase="start"))
    assert checker._is_down("n2", "n3")
    assert not checker._is_down("n1", "n2")


def test_deliver_kind_other_than_event_is_not_judged() -> None:
    d = Deliver(subscriber="n1.u0", pubend="P0", tick=1, payload=None, kind="gap")
    r = TraceRecord(seq=0, time=0, node="n1", kind="deliver", detail=d)
    checker = GESChecker(run_context(spec(), 1))
    assert not checker.observe(r)


def _route_judge(*records: TraceRecord) -> str | None:
    """``route_while_path`` over ``records`` alone, on ``ges-small`` (clusters n1 n2 | n3 n4
    and n5 n6 | n7 n8; links n1-n4, n2-n3, n5-n8, n6-n7 between clusters, n3-n5 and n4-n6
    between the super-clusters)."""
    checker = GESChecker(run_context(spec(), 1), ("route_while_path",))
    for i, r in enumerate(records):
        if checker.observe(attrs.evolve(r, seq=i)):
            break
    return None if checker.violation is None else checker.violation.invariant


def _fault_record(time: int, kind: str, target: str, phase: str = "start") -> TraceRecord:
    f = Fault(kind=kind, target=target, phase=phase)
    return TraceRecord(seq=0, time=time, node=target.split("|")[0], kind="fault", detail=f)


def test_an_event_that_dead_ends_while_its_storage_had_a_path_is_caught() -> None:
    """n8 has no way to n1 avoiding the nodes the event came through, but its storage n2 is
    n1's neighbour: the storage's route dead-ended while another existed (part b)."""
    dead_end = _unrouted_record(500_000, "n8", "n1", ("n2", "n4", "n6", "n7"), "event", "n2", 3)
    assert _route_judge(dead_end) == "route_while_path"
    other = attrs.evolve(dead_end, detail=unrouted("n8", ("n1",), frozenset(), "confirm"))
    assert _route_judge(other) == "route_while_path"  # (a): from n8 itself there is a path
    visited_only = unrouted("n8", ("n1",), frozenset({"n2", "n4", "n6", "n7"}), "confirm")
    assert _route_judge(attrs.evolve(dead_end, detail=visited_only)) is None  # no origin known
    # a change 50 ms before: the storage's choice may have been right when it made it
    change = _fault_record(450_000, "link_fail", "n5|n6")
    assert _route_judge(change, dead_end) is None
    assert _route_judge(change, attrs.evolve(dead_end, time=551_000)) == "route_while_path"


def test_a_destination_down_cut_off_or_just_back_is_not_judged() -> None:
    failed = _fault_record(100, "fail", "n6")
    assert _route_judge(failed, _unrouted_record(500_000, "n5", "n6")) is None
    cut = (_fault_record(100, "link_fail", "n3|n5"), _fault_record(100, "link_fail", "n4|n6"))
    assert _route_judge(*cut, _unrouted_record(500_000, "n1", "n7")) is None
    back = (
        *cut,
        _fault_record(400_000, "link_fail", "n3|n5", "end"),
    )
    assert _route_judge(*back, _unrouted_record(450_000, "n1", "n7")) is None  # news in flight
    assert _route_judge(*back, _unrouted_record(501_000, "n1", "n7")) == "route_while_path"
    stalled = _fault_record(100, "stall_link", "n3|n5")  # stalling: not a path
    assert _route_judge(*cut[1:], stalled, _unrouted_record(500_000, "n1", "n7")) is None


def test_a_crash_that_ends_after_its_broker_failed_forever_restarts_nothing() -> None:
    """Found by ges-demo seed 32 (ges9): n20 crashed, then failed forever with its
    super-cluster, then its crash's end was recorded; the world restarts nothing, and the
    checker must not take n20 for up (a drop toward it is no violation)."""
    faults = (
        _fault_record(100_000, "crash", "n6"),
        _fault_record(200_000, "fail", "n6"),
        _fault_record(300_000, "crash", "n6", "end"),
    )
    assert _route_judge(*faults, _unrouted_record(600_000, "n5", "n6")) is None
    checker = GESChecker(run_context(spec(), 1), ("avoid_suspected",))
    for r in faults:
        checker.observe(r)
    assert checker._is_down("n4", "n6")
