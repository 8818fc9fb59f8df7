"""The ``join`` fault kind [DFT §I, §II]: the generator draws joins among a topology's
joiners, the world starts them absent and joins them through the binding's ``join`` seam,
and a campaign schedule with joins replays bit for bit (digest, verdict, trace file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gapless.impl.dft.role import join, new_role, unjoined
from gapless.impl.dft.tree import complete_tree
from gapless.impl.errors import ProtocolMisuse
from gapless.invariants.dft_tracefile import trace_check, write_dft_trace
from gapless.models.dft_binding import TREE13_LATE, tree13_join, with_late, within_budget
from gapless.models.faults import (
    FaultEvent,
    FaultProfile,
    FaultSchedule,
    Targets,
    from_json,
    generate,
    to_json,
)
from gapless.models.run import run_context, simulate
from gapless.models.runner import fault_targets, generate_schedule
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.runner_backend import RunnerBackend
from gapless.spec.filters import reference_matcher

_S = 1_000_000
_DEMO = Path(__file__).resolve().parents[2] / "campaigns" / "dft-demo.toml"
_JOINERS = tuple(b for b, _ in TREE13_LATE)


def _demo_spec():  # type: ignore[no-untyped-def]
    backend = RunnerBackend("dft")
    return backend.make_spec(load_config(_DEMO, {}))


def _join(broker: str, at_us: int) -> FaultEvent:
    return FaultEvent(kind="join", at_us=at_us, duration_us=0, target=broker, stream=0)


def test_the_generator_joins_each_joiner_at_most_once_and_only_joiners() -> None:
    targets = Targets(brokers=("B0", "J1", "J2"), links=(), subscribers=(), joiners=("J1", "J2"))
    profile = FaultProfile(rates=(("join", 5.0),))
    for seed in range(20):
        s = generate(profile, targets, duration_us=10 * _S, seed=seed)
        got = [e.target for e in s.events]
        assert got
        assert len(got) == len(set(got))
        assert set(got) <= {"J1", "J2"}
        assert all(e.at_us >= profile.warmup_us for e in s.events)
        assert generate(profile, targets, duration_us=10 * _S, seed=seed) == s
    # both orders occur: the order is drawn per schedule
    firsts = {
        generate(profile, targets, duration_us=10 * _S, seed=k).events[0].target for k in range(20)
    }
    assert firsts == {"J1", "J2"}
    no_joiners = Targets(brokers=("B0",), links=(), subscribers=())
    assert generate(profile, no_joiners, duration_us=10 * _S, seed=1).events == ()


def test_the_demo_campaign_draws_joins_of_the_topology_joiners() -> None:
    spec = _demo_spec()
    assert spec.topology == "dft-tree13-join"
    assert fault_targets(spec).joiners == _JOINERS
    joins = [
        e for seed in range(1, 11) for e in generate_schedule(spec, seed).events if e.kind == "join"
    ]
    assert joins
    assert {e.target for e in joins} <= set(_JOINERS)


def test_a_joiner_is_absent_until_its_join_then_serves_like_any_broker() -> None:
    """J15 publishes and hosts a subscriber: nothing of it happens before its join at 1.5 s
    (no record names it), then it announces itself and its flows are whole; J13 and J14,
    never joined, stay out of the run entirely."""
    spec = _demo_spec()
    out = simulate(
        spec, FaultSchedule(seed=0, events=(_join("J15", 3 * _S // 2),)), 0, record_trace=True
    )
    assert out.verdict == "pass", out.explanation
    trace = out.trace or ()
    j15 = [r for r in trace if r.node == "J15"]
    assert j15
    assert min(r.time for r in j15) == 3 * _S // 2
    assert not [r for r in trace if r.node in ("J13", "J14")]
    deliveries = [r for r in trace if r.kind == "deliver"]
    assert [r for r in deliveries if r.detail.pubend == "J15"]  # its flow reaches others
    assert [r for r in deliveries if r.node == "J15"]  # its subscriber is served
    sent = [r.detail.msg for r in trace if r.kind == "send" and r.node == "J15"]
    assert any(type(m).__name__ == "Arrival" for m in sent)  # it announced itself [DFT §I]


def test_a_crash_of_a_broker_not_joined_yet_is_ignored_not_a_join() -> None:
    """Before the stand-in was removed a restart *was* the join; now a crash and restart of
    an absent joiner leave it absent, and a join later still brings it in."""
    spec = _demo_spec()
    crash = FaultEvent(kind="crash", at_us=_S, duration_us=_S // 2, target="J14", stream=1)
    only_crash = simulate(spec, FaultSchedule(seed=0, events=(crash,)), 0, record_trace=True)
    assert not [r for r in only_crash.trace or () if r.node == "J14" and r.kind != "fault"]
    both = simulate(
        spec, FaultSchedule(seed=0, events=(crash, _join("J14", 2 * _S))), 0, record_trace=True
    )
    assert both.verdict == "pass", both.explanation
    j14 = [r for r in both.trace or () if r.node == "J14" and r.kind != "fault"]
    assert j14
    assert min(r.time for r in j14) >= 2 * _S


def test_a_join_of_a_broker_that_is_not_a_joiner_is_refused() -> None:
    spec = _demo_spec()
    with pytest.raises(ProtocolMisuse, match="not a joiner; allowed: J13, J14, J15"):
        simulate(spec, FaultSchedule(seed=0, events=(_join("B4", _S),)), 0)


def test_the_role_join_seam_takes_only_a_broker_not_joined_yet() -> None:
    tree = complete_tree(4, 3)
    newcomer = join(unjoined("J9", "B1", tree))
    assert "J9" in newcomer.tree  # type: ignore[union-attr]
    with pytest.raises(ProtocolMisuse, match="in the system already"):
        join(new_role("B1", tree))


def test_the_budget_does_not_count_an_absent_joiner_only_a_joined_one() -> None:
    g = with_late(complete_tree(13, 3), (("J13", "B4"),), ["J13", "B0"], ["B7", "B12"])
    crash = FaultEvent(kind="crash", at_us=_S, duration_us=_S, target="J13", stream=0)
    assert within_budget(g, (crash,))
    assert not within_budget(g, (_join("J13", _S // 2), crash))
    with pytest.raises(ProtocolMisuse, match="not a broker of the initial tree"):
        with_late(complete_tree(4, 3), (("J9", "J8"),), [], [])


def _schedule_with_joins(spec, want: int = 2):  # type: ignore[no-untyped-def]
    for seed in range(1, 200):
        s = generate_schedule(spec, seed)
        kinds = [e.kind for e in s.events]
        if kinds.count("join") >= want and ("crash" in kinds or "link_fail" in kinds):
            return seed, s
    raise AssertionError("no demo schedule with joins among the first 200 seeds")


def test_a_campaign_schedule_with_joins_replays_bit_for_bit(tmp_path: Path) -> None:
    """Same seed, same schedule (through its JSON form, as a counterexample file carries it):
    the same trace digest, verdict, counters; its trace file is judged as the run was."""
    spec = _demo_spec()
    seed, schedule = _schedule_with_joins(spec)
    first = simulate(spec, schedule, seed, record_trace=True)
    again = simulate(spec, from_json(to_json(schedule)), seed)
    assert (again.trace_digest, again.verdict, again.counters) == (
        first.trace_digest,
        first.verdict,
        first.counters,
    )
    joined = [r for r in first.trace or () if r.kind == "fault" and r.detail.kind == "join"]
    assert len(joined) >= 2
    path = tmp_path / "joins.jsonl"
    write_dft_trace(path, run_context(spec, seed), first.trace or ())
    tf, violation = trace_check(path, matches=reference_matcher())
    assert [r for r in tf.records if r.kind == "fault" and r.detail.kind == "join"]
    assert (violation is None) == (first.verdict != "violation"), first.explanation
    # and a run without its joins is another run
    bare = FaultSchedule(
        seed=schedule.seed, events=tuple(e for e in schedule.events if e.kind != "join")
    )
    assert simulate(spec, bare, seed).trace_digest != first.trace_digest


def test_the_join_scenario_topology_names_its_joiners() -> None:
    g = tree13_join()
    assert g.graph["joiners"] == _JOINERS
    assert {b for b, _ in g.graph["dft_late"]} == set(_JOINERS)


def test_a_join_waits_while_its_attach_point_is_down() -> None:
    """A newcomer joins by a link to a broker already there [DFT §II]: J14's join at 1.2 s,
    while B9 (its attach point) is crashed from 1 s to 2 s, happens at B9's restart."""
    spec = _demo_spec()
    crash = FaultEvent(kind="crash", at_us=_S, duration_us=_S, target="B9", stream=1)
    out = simulate(
        spec,
        FaultSchedule(seed=0, events=(crash, _join("J14", 6 * _S // 5))),
        0,
        record_trace=True,
    )
    j14 = [r for r in out.trace or () if r.node == "J14" and r.kind != "fault"]
    assert j14
    assert min(r.time for r in j14) == 2 * _S
