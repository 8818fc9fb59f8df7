"""The ``durable`` protocol in the running network [DUR §2-5]: the registry entry, the binding's
determinism, the correct protocol clean under faults, every planted bug caught by the
invariant it breaks, and the scenarios' pass marks (``dur-disconnect`` at a reduced scale).
"""

from __future__ import annotations

import os
import subprocess
import sys

import attrs
import pytest
from _dur_harness import small_shb_crash

from gapless.impl.durable.ct import CheckpointToken
from gapless.invariants.durable.online import durable_record
from gapless.models.durable_scenarios import durable_figures, durable_pass_marks
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.protocols import protocol, scenario
from gapless.models.run import simulate
from gapless.models.runner import generate_schedule, run_scenario
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec

_S = 1_000_000


def _spec(variant: str = "none", topology: str = "dur-two", **config: object) -> RunSpec:
    return RunSpec(
        protocol="durable",
        variant=variant,
        topology=topology,
        workload=WorkloadSpec(rate_per_pubend=40.0, subscribers_per_shb=3, filters="keys", keys=4),
        duration_us=5 * _S,
        drain_us=3 * _S,
        config=tuple(sorted(config.items())),
    )


#: a subscriber disconnected for 1 s, and the other SHB crashed for 0.5 s
FAULTS = FaultSchedule(
    seed=0,
    events=(
        FaultEvent(kind="disconnect", target="shb1.u0", at_us=1 * _S, duration_us=1 * _S, stream=0),
        FaultEvent(kind="crash", target="shb2", at_us=2 * _S, duration_us=_S // 2, stream=1),
    ),
)


#: a subscriber reconnects while the PHB's link is down: its catchup stream waits 1.5 s
CATCHUP_STALLED = FaultSchedule(
    seed=0,
    events=(
        FaultEvent(kind="disconnect", target="shb1.u0", at_us=1 * _S, duration_us=1 * _S, stream=0),
        FaultEvent(
            kind="link_fail", target="ib|phb", at_us=1_900_000, duration_us=1_600_000, stream=1
        ),
    ),
)


def test_a_stalled_catchup_is_clean_and_shows_the_catchup_ack_bug() -> None:
    out = simulate(_spec(), CATCHUP_STALLED, 1)
    assert out.verdict == "pass", out.explanation
    bad = simulate(_spec("released-from-catchup-ack"), CATCHUP_STALLED, 1)
    assert bad.invariant == "release_rule", bad.explanation


def test_the_protocol_is_registered_with_its_invariants_variants_and_scenarios() -> None:
    e = protocol("durable")
    assert e.invariants == (
        "release_horizon",
        "release_rule",
        "gap_legal",
        "durable_exactly_once",
    )
    assert set(e.variants) >= {
        "l-above-td",
        "switchover-early",
        "gap-to-non-catchup",
        "ct-before-consumption",
        "node-max-of-children",
        "released-from-catchup-ack",
    }
    names = {s.name for s in e.scenarios}
    assert {"dur-early-release", "dur-disconnect", "dur-shb-crash"} <= names
    assert scenario("dur-disconnect").protocol == "durable"


def test_same_seed_same_digest_other_seed_other_digest() -> None:
    a = simulate(_spec(), FAULTS, 3)
    b = simulate(_spec(), FAULTS, 3)
    c = simulate(_spec(), FAULTS, 4)
    assert a.verdict == b.verdict == c.verdict == "pass", (a.explanation, c.explanation)
    assert a.trace_digest == b.trace_digest
    assert a.trace_digest != c.trace_digest
    assert a.counters.delivered > 0


_DIGEST_OF_A_RUN = """
from gapless.impl.durable.ct import CheckpointToken
from gapless.invariants.durable.online import durable_record
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import simulate
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec
spec = RunSpec(protocol="durable", topology="dur-two-early", duration_us=3_000_000,
    drain_us=2_000_000, workload=WorkloadSpec(rate_per_pubend=40.0, subscribers_per_shb=3,
    filters="keys", keys=4))
ev = (FaultEvent(kind="disconnect", target="shb1.u0", at_us=1_000_000, duration_us=1_000_000,
    stream=0), FaultEvent(kind="crash", target="shb2", at_us=1_500_000, duration_us=500_000,
    stream=1))
print(simulate(spec, FaultSchedule(seed=0, events=ev), 1).trace_digest)
"""


def test_same_digest_whatever_the_string_hash_seed() -> None:
    """The SHB's timer effects come in hash-map order; the binding puts them in name order."""
    digests = {
        subprocess.run(
            [sys.executable, "-c", _DIGEST_OF_A_RUN],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(digests) == 1
    assert len(next(iter(digests))) == 64


def test_the_correct_protocol_is_clean_under_faults_with_early_release_and_older_cts() -> None:
    long_away = FaultSchedule(  # longer than maxRetain (2 s): early release, then gaps
        seed=0,
        events=(
            *FAULTS.events,
            FaultEvent(kind="disconnect", target="shb2.u1", at_us=_S, duration_us=3 * _S, stream=2),
        ),
    )
    out = simulate(
        _spec(topology="dur-two-early", older_ct_percent=100), long_away, 1, record_trace=True
    )
    assert out.verdict == "pass", out.explanation
    kinds = {r.detail.kind for r in out.trace or () if r.kind == "deliver"}
    assert {"event", "silence", "gap"} <= kinds
    acked: dict[str, CheckpointToken] = {}
    older = 0
    for d in filter(None, map(durable_record, out.trace or ())):
        if d.kind == "dur_ack":
            acked[d.detail.subscriber] = d.detail.ct
        elif d.kind == "dur_connect" and d.detail.subscriber in acked:
            older += not acked[d.detail.subscriber].leq(d.detail.ct)
    assert older >= 1  # a reconnection presented a CT below its latest acknowledgement


def test_ack_mode_shb_is_clean_under_faults() -> None:
    out = simulate(_spec(topology="dur-two-early", ack_mode="shb"), FAULTS, 1)
    assert out.verdict == "pass", out.explanation


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_correct_protocol_is_clean_on_demo_seeds(seed: int) -> None:
    """Random swarm schedules of the demo campaign's fault kinds (``dur-two-early``)."""
    spec = attrs.evolve(
        _spec(topology="dur-two-early"),
        faults=attrs.evolve(
            _spec().faults,
            rates=(
                ("crash", 0.3),
                ("disconnect", 1.0),
                ("drop", 0.3),
                ("duplicate", 0.3),
                ("link_fail", 0.2),
                ("reorder", 0.3),
            ),
            swarm=True,
        ),
    )
    sched = generate_schedule(spec, seed)
    out = simulate(spec, sched, seed)
    assert out.verdict == "pass", out.explanation


@pytest.mark.parametrize(
    ("variant", "caught_by"),
    [
        ("l-above-td", "release_rule"),
        ("switchover-early", "durable_exactly_once"),
        ("gap-to-non-catchup", "gap_legal"),
        ("ct-before-consumption", "durable_exactly_once"),
        ("node-max-of-children", "release_horizon"),
        ("released-from-catchup-ack", "release_rule"),
    ],
)
def test_each_planted_bug_is_caught_by_its_invariant(variant: str, caught_by: str) -> None:
    out = simulate(_spec(variant), FAULTS, 1)
    assert out.verdict == "violation"
    assert out.invariant == caught_by, out.explanation
    assert caught_by in protocol("durable").variants[variant].caught_by


def test_early_release_scenario_meets_its_marks() -> None:
    _sc, outcome, m = run_scenario("dur-early-release")
    assert m["pass"], m["pass_marks"]
    assert set(m["gaps_by_subscriber"]) == {"shb1.u0"}
    assert m["gap_ticks_not_early_released"] == 0
    assert m["lost"] == 0
    assert m["duplicates"] == 0
    assert outcome.verdict == "pass"


def test_disconnect_scenario_at_60_s_meets_its_marks() -> None:
    """``dur-disconnect-60`` [DUR §5.1]: the 600 s experiment's rates (4 pubends, 800 events/s
    in all, 40 subscribers at 200 events/s, the SHB at its capacity) for 60 s, each subscriber
    away 5 s once, staggered: nothing lost or duplicated, no gap, every subscriber caught up
    (about 2 CPU min; the 600 s run: ``gapless simulate --scenario dur-disconnect``)."""
    sc = scenario("dur-disconnect-60")
    outcome = simulate(sc.spec, sc.schedule, 0, record_trace=True)
    m = durable_figures(sc, outcome, ())
    marks = durable_pass_marks(sc.name, m)
    assert all(marks.values()), (marks, m["explanation"])
    assert outcome.verdict == "pass"
    assert m["catchup_s"]["n"] == 40
    assert m["lost"] == 0
    assert m["duplicates"] == 0
    assert m["gaps_delivered"] == 0


def test_the_figures_catch_a_loss_the_marks_would_miss_otherwise() -> None:
    """Non-vacuity of ``lost``: drop one delivered event message from a clean trace."""
    sc = scenario("dur-early-release")
    spec = attrs.evolve(sc.spec, duration_us=15 * _S)
    outcome = simulate(spec, sc.schedule, 0, record_trace=True)
    trace = outcome.trace or ()
    first = next(i for i, r in enumerate(trace) if r.kind == "deliver" and r.detail.kind == "event")
    cut = attrs.evolve(outcome, trace=trace[:first] + trace[first + 1 :])
    assert durable_figures(sc, outcome, ())["lost"] == 0
    assert durable_figures(sc, cut, ())["lost"] == 1


def test_shb_crash_scenario_at_reduced_scale_meets_its_marks() -> None:
    """``dur-shb-crash`` with 4 subscribers, 200 events/s, the SHB down 5 s and its
    subscribers back 3 s after the restart (the full scenario: ``gapless simulate --scenario
    dur-shb-crash``): latestDelivered flat while it is down, released(p) flat until they
    reconnect, the constream catching up faster than the pubends publish [DUR §5.3]."""
    sc = small_shb_crash(
        subscribers=4,
        rate=50.0,
        crash_s=5,
        down_s=5,
        back_after_restart_s=3,
        duration_s=16,
        drain_s=3,
    )
    spec = sc.spec
    outcome = simulate(spec, sc.schedule, 0, record_trace=True)
    m = durable_figures(sc, outcome, ())
    marks = durable_pass_marks(sc.name, m)
    assert all(marks.values()), (marks, m["explanation"])
    assert 5.0 <= m["latest_delivered_flat_s"] <= 6.0
    assert m["catchup_slope_ratio"] > 2
