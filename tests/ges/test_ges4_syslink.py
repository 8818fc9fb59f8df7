"""System-level sequence numbers and acknowledgements between the system storages of
different top-level units (run config ``system_links = true``) [GES "Stable storages"]: each
pair of system storages numbers the events one destines into the other's unit from 1; the
receiver writes them strictly in sequence, acknowledges cumulatively, and asks once for what
a gap lacks; the origin releases an event only after every peer acknowledged it and resends
on a negative acknowledgement; a crash of either end rebuilds the numbers from the writes.
The invariant ``system_sequence`` catches a gap or a duplicate in a receiver's writes."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import attrs
import pytest
from _ges_harness import Trace, file_verdict, judge, passing_trace, reseq, same_verdict
from _runs import MIXED, fault, run, spec
from hypothesis import given
from hypothesis import strategies as hs
from pyrsistent import pmap

from gapless.impl.effects import Persist
from gapless.impl.ges import PAPER_POLICY, GESConfig, handle, initial_state
from gapless.impl.ges.crashes import crash
from gapless.impl.ges.messages import Routed, SysAck, SysForward, SysNack, wire
from gapless.impl.ges.policy import GESPolicy
from gapless.impl.ges.storage import StorageState, confirm, handoff, store
from gapless.impl.ges.syslink import acked, forwards, held, number, rebuild, receive, resend
from gapless.impl.ges.variants import VARIANTS
from gapless.impl.inputs import Persisted, Receive
from gapless.invariants.ges import INVARIANTS
from gapless.models.ges_binding import network
from gapless.models.ges_topology import ges_small
from gapless.models.run import build
from gapless.models.runspec import RunSpecError

LINKS = {"config": {"system_links": True}}
LOSSY = (fault("drop", 0.5, 2.0, "n3|n5", 1, probability=0.8),)


def _origin() -> StorageState:
    """System storage n2 of ges-small (super-cluster of n1-n4) with a client at n4 (its own
    unit) and one at n6 (n7's unit), both interested in everything."""
    st = StorageState(name="n2")
    for name, node in (("a", "n4"), ("b", "n6")):
        st, _rec, _ = handoff(st, name, 0, node, None, "true", PAPER_POLICY)
    return st


def _stored(st: StorageState, seq: int) -> tuple[StorageState, int]:
    net = network(ges_small(), system_links=True)
    st, ev = store(st, "P1", seq, pmap({"k": seq}), net.brokers, PAPER_POLICY)
    assert ev is not None
    st, ev = number(st, ev, net.storage_of, PAPER_POLICY)
    return st, ev.epoch


# ------------------------------------------------------------------ numbering and counting


def test_each_event_destined_into_another_unit_gets_the_next_number_of_that_pair() -> None:
    st = _origin()
    st, e1 = _stored(st, 0)
    st, e2 = _stored(st, 1)
    assert [dict(st.events[e].peers) for e in (e1, e2)] == [{"n7": 1}, {"n7": 2}]
    assert st.peer_next["n7"] == 3
    # two clients and one peer: the predicate count holds all three
    assert st.events[e1].remaining == 3
    (f,) = forwards("n2", st.events[e1])
    assert (f.storage, f.origin, f.seq, f.epoch) == ("n7", "n2", 1, e1)


def test_an_event_for_the_own_unit_only_has_no_peer() -> None:
    st = StorageState(name="n2")
    st, _rec, _ = handoff(st, "a", 0, "n4", None, "true", PAPER_POLICY)
    st, e = _stored(st, 0)
    assert st.events[e].peers == pmap()
    assert "n7" not in st.peer_next


def test_the_origin_releases_only_once_the_peer_acknowledged() -> None:
    st = _origin()
    st, e = _stored(st, 0)
    for c in ("a", "b"):
        st, gone = confirm(st, e, c, PAPER_POLICY)
        assert gone is None  # the peer has not acknowledged it yet
    st, out = acked(st, SysAck(storage="n2", unit="n7", upto=1), PAPER_POLICY)
    assert [ev.epoch for ev in out] == [e]
    assert e not in st.events
    again, none = acked(st, SysAck(storage="n2", unit="n7", upto=1), PAPER_POLICY)
    assert none == ()
    assert again is st


def test_a_cumulative_acknowledgement_covers_every_earlier_number() -> None:
    st = _origin()
    for seq in range(3):
        st, _e = _stored(st, seq)
    st, _ = acked(st, SysAck(storage="n2", unit="n7", upto=2), PAPER_POLICY)
    assert [sorted(ev.peers_pending) for _e, ev in sorted(st.events.items())] == [[], [], ["n7"]]
    assert [ev.peers["n7"] for ev in resend(st, SysNack(storage="n2", unit="n7", want=1))] == [3]


# ------------------------------------------------------------------ receiving


def _fwd(seq: int) -> SysForward:
    return SysForward(
        storage="n7", origin="n2", seq=seq, epoch=10 + seq, pubend="P1", attributes=pmap()
    )


def test_the_receiver_writes_in_sequence_and_nacks_a_gap_once() -> None:
    st = StorageState(name="n7")
    st, answer, write_it = receive(st, _fwd(1), PAPER_POLICY)
    assert write_it
    assert answer is None
    st, answer, write_it = receive(st, _fwd(3), PAPER_POLICY)  # 2 was lost
    assert not write_it
    assert answer == SysNack(storage="n2", unit="n7", want=2)
    st2, answer, write_it = receive(st, _fwd(4), PAPER_POLICY)
    assert (answer, write_it) == (None, False)
    assert st2 is st
    # 1 is being written: no answer until it is durable, then a cumulative acknowledgement
    same, answer, write_it = receive(st, _fwd(1), PAPER_POLICY)
    assert (answer, write_it) == (None, False)
    assert same is st
    st, ack = held(st, _fwd(1))
    assert ack == SysAck(storage="n2", unit="n7", upto=1)
    _st, answer, write_it = receive(st, _fwd(1), PAPER_POLICY)  # a retransmission
    assert (answer, write_it) == (SysAck(storage="n2", unit="n7", upto=1), False)


def test_the_planted_receivers_write_past_a_gap_or_write_again() -> None:
    skip = VARIANTS["sys-skip-gap"].policy
    again = VARIANTS["sys-write-again"].policy
    st = StorageState(name="n7")
    st, _a, _w = receive(st, _fwd(1), PAPER_POLICY)
    st, _ack = held(st, _fwd(1))
    assert receive(st, _fwd(3), skip)[2] is True
    assert receive(st, _fwd(1), again)[2] is True


def test_a_crash_rebuilds_the_numbers_from_the_writes() -> None:
    st = _origin()
    st, e1 = _stored(st, 0)
    st, _e2 = _stored(st, 1)
    rebuilt = rebuild(StorageState(name="n2"), [st.events[e1]], [("n7", 4), ("n7", 5)])
    # only the first event's log write completed: the second number is given again
    assert rebuilt.peer_next == pmap({"n7": 2})
    assert (rebuilt.sys_held["n7"], rebuilt.sys_expect["n7"]) == (5, 6)


def test_a_node_writes_a_peer_event_then_acknowledges_it_and_keeps_it_across_a_crash() -> None:
    net = network(ges_small(), system_links=True)
    s = initial_state("n7", net, GESConfig(), PAPER_POLICY)
    f = _fwd(1)
    s, effects = handle(
        s, Receive(sender="n8", msg=Routed(dest="n7", visited=frozenset(), body=f)), 1
    )
    (p,) = effects
    assert type(p) is Persist
    assert p.key == ("sysin", "n7", "n2", 1)
    s, effects = handle(s, Persisted(key=p.key), 3)
    acks = [e.msg.body for e in effects if type(getattr(e, "msg", None)) is Routed]
    assert acks == [SysAck(storage="n2", unit="n7", upto=1)]
    assert wire(effects[0].msg).kind == "sys_ack"  # type: ignore[attr-defined]
    s = crash(s)
    assert s.store is not None
    assert s.store.sys_expect["n2"] == 2


# ------------------------------------------------------------------ whole runs


@cache
def _links_trace() -> Trace:
    return passing_trace(MIXED, **LINKS)


def test_a_run_with_the_links_passes_and_every_peer_holds_its_whole_sequence() -> None:
    trace = _links_trace()
    done = [r.detail.key for r in trace if r.kind == "persisted" and r.detail.key[0] == "sysin"]
    pairs: dict[tuple[str, str], list[int]] = {}
    for _k, peer, origin, seq in done:
        pairs.setdefault((peer, origin), []).append(seq)
    assert set(pairs) == {("n2", "n7"), ("n7", "n2")}
    for seqs in pairs.values():
        assert seqs == list(range(1, len(seqs) + 1))
    kinds = {r.detail.wire.kind for r in trace if r.kind == "send"}
    assert {"sys_forward", "sys_ack"} <= kinds


def test_a_lossy_link_between_the_units_is_repaired_by_nacks_and_retransmission() -> None:
    out = run("none", LOSSY, record=True, **LINKS)
    assert out.verdict == "pass", out.explanation
    assert out.trace is not None
    assert any(r.kind == "send" and r.detail.wire.kind == "sys_nack" for r in out.trace)


def _judge(trace: Trace, name: str) -> str | None:
    return judge(trace, name, **LINKS)


@pytest.mark.parametrize("name", INVARIANTS)
def test_a_links_trace_passes_every_invariant(name: str) -> None:
    assert _judge(_links_trace(), name) is None


def _without_sysin(trace: Trace, seq: int) -> Trace:
    """``trace`` without the completion of the first ``sysin`` write of number ``seq``."""
    i = next(
        i
        for i, r in enumerate(trace)
        if r.kind == "persisted" and r.detail.key[0] == "sysin" and r.detail.key[3] == seq
    )
    return reseq(trace[:i] + trace[i + 1 :])


def test_a_gap_in_a_receivers_writes_is_caught() -> None:
    got = _judge(_without_sysin(_links_trace(), 2), "system_sequence")
    assert got is not None
    assert "a gap" in got


def test_a_duplicate_in_a_receivers_writes_is_caught() -> None:
    trace = _links_trace()
    i = next(i for i, r in enumerate(trace) if r.kind == "persisted" and r.detail.key[0] == "sysin")
    persist = next(
        r for r in trace[:i] if r.kind == "persist" and r.detail.key == trace[i].detail.key
    )
    extra = (attrs.evolve(persist, time=trace[i].time), trace[i])
    got = _judge(reseq(trace[: i + 1] + extra + trace[i + 1 :]), "system_sequence")
    assert got is not None
    assert "a duplicate" in got


def test_a_release_before_the_peer_held_the_event_is_caught() -> None:
    got = _judge(_without_sysin(_links_trace(), 1), "release_after_confirm")
    assert got is not None
    assert "before system storage" in got


def test_a_number_never_held_at_the_end_is_caught() -> None:
    """Liveness (judged with ``roam_complete``): the last number sent on a pair never
    completed its write."""
    trace = _links_trace()
    last = max(
        r.detail.key[3]
        for r in trace
        if r.kind == "persisted" and r.detail.key[0] == "sysin" and r.detail.key[1] == "n2"
    )
    cut = tuple(
        r
        for r in trace
        if not (
            r.kind == "persisted"
            and r.detail.key[:2] == ("sysin", "n2")
            and r.detail.key[3] == last
        )
    )
    got = _judge(reseq(cut), "roam_complete")
    assert got is not None
    assert f"up to number {last - 1} of {last}" in got


@pytest.mark.parametrize("variant", ["none", "sys-skip-gap"])
def test_a_links_trace_file_gets_the_online_verdict_offline(tmp_path: Path, variant: str) -> None:
    out, violation = file_verdict(tmp_path, variant, LOSSY, SysForward, **LINKS)
    same_verdict(out, violation, variant, "system_sequence")


def test_a_bad_system_links_value_is_refused() -> None:
    with pytest.raises(RunSpecError, match="system_links"):
        build(spec(config={"system_links": "yes"}), 1)


# ------------------------------------------------------------------ any arrival order


def _hold(steps: list[tuple[str, int]], policy: GESPolicy) -> list[int]:
    """Play ``steps`` at receiver n7 (see the property below): the numbers it holds, in the
    order its writes completed; checks every answer on the way."""
    peer = StorageState(name="n7")
    in_flight: list[SysForward] = []
    done: list[int] = []
    for what, seq in steps:
        if what == "arrive":
            peer, answer, write_it = receive(peer, _fwd(seq), policy)
            if write_it:
                in_flight.append(_fwd(seq))
            if type(answer) is SysAck:
                assert answer.upto <= max(done, default=0)
            if type(answer) is SysNack:
                assert answer.want == peer.sys_expect.get("n2", 1)
        elif what == "complete" and in_flight:
            f = in_flight.pop(0)
            done.append(f.seq)
            peer, ack = held(peer, f)
            assert ack.upto == max(done)
        elif what == "crash":
            in_flight = []
            peer = rebuild(StorageState(name="n7"), [], [("n2", n) for n in done])
    return done


@given(
    hs.lists(
        hs.one_of(
            hs.tuples(hs.just("arrive"), hs.integers(1, 8)),
            hs.tuples(hs.just("complete"), hs.just(0)),
            hs.tuples(hs.just("crash"), hs.just(0)),
        ),
        max_size=60,
    )
)
def test_a_receiver_holds_a_gapless_duplicate_free_prefix_whatever_arrives(
    steps: list[tuple[str, int]],
) -> None:
    """Numbers arrive lost, duplicated and in any order; writes complete in the order they
    were asked; the receiver may crash (in-flight writes lost). What it holds is always
    ``1..k``, each once, and it never acknowledges a number it does not hold."""
    done = _hold(steps, PAPER_POLICY)
    assert done == list(range(1, len(done) + 1))


@pytest.mark.parametrize(
    ("variant", "held_numbers"),
    [("sys-skip-gap", [1, 3]), ("sys-write-again", [1, 2, 1])],
)
def test_the_planted_receivers_break_the_prefix(variant: str, held_numbers: list[int]) -> None:
    """Non-vacuity of the property above: 2 is lost and 3 arrives (a gap), or 1 is
    retransmitted after it was held (a duplicate)."""
    steps = [("arrive", 1), ("complete", 0)]
    if variant == "sys-skip-gap":
        steps += [("arrive", 3), ("complete", 0)]
    else:
        steps += [("arrive", 2), ("complete", 0), ("arrive", 1), ("complete", 0)]
    assert _hold(steps, VARIANTS[variant].policy) == held_numbers
    assert _hold(steps, PAPER_POLICY) != held_numbers
