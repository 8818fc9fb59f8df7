"""Fault schedules: pure generation, per-event random streams, JSON round trips, validation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.errors import ProtocolMisuse
from gapless.models.faults import (
    DEFAULT_RATES,
    FAULT_KINDS,
    FaultEvent,
    FaultProfile,
    FaultSchedule,
    Targets,
    from_json,
    generate,
    to_json,
    without_event,
)
from gapless.models.runner import (
    RunSpec,
    clip_schedule,
    generate_schedule,
    spec_from_dict,
    spec_to_dict,
    with_duration,
    with_max_messages,
)
from gapless.models.topology import brokers, links, topology

G = topology("fig3")
TARGETS = Targets(brokers=brokers(G), links=links(G), subscribers=("s1.u0", "s2.u0"))
ALL = FaultProfile(rates=tuple((k, 0.3) for k in FAULT_KINDS))


@given(seed=st.integers(0, 2**32))
def test_generation_is_a_pure_function_and_round_trips(seed: int) -> None:
    a = generate(ALL, TARGETS, duration_us=30_000_000, seed=seed)
    b = generate(ALL, TARGETS, duration_us=30_000_000, seed=seed)
    assert a == b
    assert from_json(to_json(a)) == a
    assert all(e.at_us >= ALL.warmup_us for e in a.events)
    assert [e.at_us for e in a.events] == sorted(e.at_us for e in a.events)


@given(seed=st.integers(0, 2**32))
def test_removing_a_kind_leaves_the_other_events_unchanged(seed: int) -> None:
    full = generate(ALL, TARGETS, duration_us=30_000_000, seed=seed)
    fewer = FaultProfile(rates=tuple((k, 0.3) for k in FAULT_KINDS if k != "drop"))
    part = generate(fewer, TARGETS, duration_us=30_000_000, seed=seed)
    assert part.events == tuple(e for e in full.events if e.kind != "drop")


def test_without_event_keeps_every_other_event_and_its_stream() -> None:
    s = generate(ALL, TARGETS, duration_us=30_000_000, seed=3)
    assert len(s.events) >= 3
    for i in range(len(s.events)):
        t = without_event(s, i)
        assert t.events == s.events[:i] + s.events[i + 1 :]
    with pytest.raises(ProtocolMisuse, match="outside"):
        without_event(s, len(s.events))


def test_event_streams_differ_and_are_reproducible() -> None:
    s = generate(ALL, TARGETS, duration_us=30_000_000, seed=3)
    streams = [e.stream for e in s.events]
    assert len(set(streams)) == len(streams)
    e = s.events[0]
    assert e.rng().random() == e.rng().random()


def test_swarm_enables_a_subset_of_kinds() -> None:
    kinds = set()
    for seed in range(20):
        s = generate(FaultProfile(swarm=True), TARGETS, duration_us=60_000_000, seed=seed)
        assert set(s.kinds) <= set(DEFAULT_RATES)
        kinds.add(s.kinds)
    assert len(kinds) > 5  # different seeds pick different subsets


def test_targets_match_kinds() -> None:
    s = generate(ALL, TARGETS, duration_us=60_000_000, seed=9)
    for e in s.events:
        if e.kind in ("crash", "stall_broker"):
            assert e.target in TARGETS.brokers
        elif e.kind == "disconnect":
            assert e.target in TARGETS.subscribers
        elif e.kind == "partition":
            assert set(e.target.split(",")) <= set(TARGETS.brokers)
        else:
            assert e.target in TARGETS.links
        if e.kind.startswith("stall"):
            assert e.stall_us > 0


def test_bad_events_and_profiles_are_refused_with_clear_messages() -> None:
    with pytest.raises(ProtocolMisuse, match="kind 'meteor' is unknown; allowed: crash"):
        FaultEvent(kind="meteor", at_us=0, duration_us=1, target="b1", stream=1)
    with pytest.raises(ProtocolMisuse, match="times must be >= 0"):
        FaultEvent(kind="crash", at_us=-1, duration_us=1, target="b1", stream=1)
    with pytest.raises(ProtocolMisuse, match="probability"):
        FaultEvent(kind="drop", at_us=0, duration_us=1, target="b1|b2", stream=1, probability=2)
    with pytest.raises(ProtocolMisuse, match="rate of 'crash' must be >= 0"):
        FaultProfile(rates=(("crash", -1.0),))
    with pytest.raises(ProtocolMisuse, match="not a valid fault schedule"):
        from_json('{"seed": 1, "events": [{"kind": "crash"}]}')
    with pytest.raises(ProtocolMisuse, match="not a valid fault schedule"):
        from_json("{truncated")


def test_run_spec_round_trips_and_validates() -> None:
    spec = RunSpec(faults=FaultProfile(swarm=True), config=(("gct_us", 100_000),))
    data = json.loads(json.dumps(spec_to_dict(spec)))
    assert spec_from_dict(data) == spec
    with pytest.raises(ProtocolMisuse, match="topology 'mesh' is unknown; allowed: fig3"):
        spec_from_dict({**data, "topology": "mesh"})
    with pytest.raises(ProtocolMisuse, match="invariants"):
        spec_from_dict({**data, "invariants": ["safety", "bogus"]})
    with pytest.raises(ProtocolMisuse, match="invalid run spec"):
        spec_from_dict({**data, "duration_us": "long"})


def test_shrink_helpers() -> None:
    spec = RunSpec(faults=ALL, duration_us=30_000_000)
    s = generate_schedule(spec, 4)
    short = with_duration(spec, 10_000_000)
    clipped = clip_schedule(s, short.duration_us)
    assert clipped.events == tuple(e for e in s.events if e.at_us < 10_000_000)
    assert with_max_messages(spec, 5).workload.max_messages == 5
    assert isinstance(s, FaultSchedule)
