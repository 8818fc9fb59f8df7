"""Campaign power (issue 18 §2): per-transition coverage, the ``rules`` fault profile and
coverage-guided schedules — deterministic, resumable, one row per schedule, compared with a
blind twin in the same run."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd import PAPER_POLICY, handle, initial_states
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.step import timer_key
from gapless.impl.inputs import Restart, TimerFired
from gapless.models.faults import FaultEvent, FaultProfile, FaultSchedule, Targets, generate
from gapless.models.gd_binding import to_gd_topology
from gapless.models.runner import RunSpec, generate_schedule, run
from gapless.models.topology import fig3
from gapless.models.workload import WorkloadSpec, generate_workload
from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import CampaignConfigError, load_config
from gapless.spark_fuzz.guided import (
    aligned_chunks,
    mutate,
    plan_chunk,
    read_plan,
    schedule_for,
)
from gapless.spark_fuzz.profiles import focus_targets, rules_profile
from gapless.spark_fuzz.report import write_report
from gapless.spark_fuzz.runner_backend import RunnerBackend
from gapless.spark_fuzz.store import read_rows
from gapless.spark_fuzz.transitions import (
    GD_EFFECT_ONLY,
    GD_ERRORS,
    GD_LATTICE,
    coverage_report,
    reachable,
)

IMPL_GD = Path(__file__).resolve().parents[2] / "impl" / "gd"

# -- per-transition coverage ---------------------------------------------------------------


def test_the_lattice_labels_are_the_ones_the_rooms_emit() -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in IMPL_GD.glob("*.py"))
    found = set(re.findall(r'"([KC]:[A-Z*]+->[A-Z*]+)"', text)) | {"K:D->F(filter)"}
    assert found == set(GD_LATTICE) | set(GD_ERRORS)


def test_effect_only_rules_never_change_the_state() -> None:
    """The rules left out of ``reachable`` really return the same state (else they would be
    counted and belong in it)."""
    topo = to_gd_topology(fig3(), generate_workload(WorkloadSpec(), fig3(), duration_us=1, seed=0))
    states = initial_states(topo, GDConfig(), PAPER_POLICY)
    for name in ("p1", "b1", "s1"):
        st, _ = handle(states[name], Restart(), 0)
        for what in GD_EFFECT_ONLY:
            kind = what[len("TimerFired(") : -1]
            if name != "p1" and kind == "aet":
                continue
            got, effects = handle(st, TimerFired(key=timer_key(st.epoch, kind)), 5_000_000)
            assert got is st, (name, kind)
            assert effects  # it does act: it sends and re-arms


def test_a_run_counts_rules_and_rule_transition_pairs() -> None:
    spec = RunSpec(duration_us=2_000_000, drain_us=3_000_000)
    out = run(spec, generate_schedule(spec, 1), 1)
    cov = dict(out.coverage)
    assert cov["R:PHB Publish"] > 0
    assert cov["R:SHB Receive(Knowledge) K:Q->D"] > 0
    rules = {k for k in cov if k.startswith("R:") and k.count(" ") == 1}
    assert rules <= set(reachable("gd"))


def _row(seed: int, cov: dict[str, int], verdict: str = "pass") -> dict[str, Any]:
    return {"seed": seed, "verdict": verdict, "coverage": json.dumps(cov)}


def test_coverage_report_lists_what_no_schedule_reached_and_the_growth() -> None:
    universe = reachable("gd")
    rows = [_row(1, {"K:Q->D": 3}), _row(2, {"K:Q->D": 1, "R:IB Receive(Nack)": 2, "x": 1})]
    rep = coverage_report("gd", rows, [(1, 1), (2, 2)])
    assert rep["reachable"] == len(universe)
    assert rep["reached"] == 2
    assert "R:IB Receive(Nack)" not in rep["never_reached"]
    assert "R:PHB Receive(Nack)" in rep["never_reached"]
    assert len(rep["never_reached"]) == len(universe) - 2
    assert [(g["schedules"], g["reached"], g["labels"]) for g in rep["growth"]] == [
        (1, 1, 1),
        (2, 2, 3),
    ]
    assert coverage_report("zmq", rows)["reachable"] == 0


# -- the rules profile -----------------------------------------------------------------------

_TARGETS = Targets(brokers=("b1", "b2", "p1"), links=("b1|p1", "b2|p1", "b1|b2"), subscribers=())


def test_shaping_off_generates_what_the_profile_always_did() -> None:
    base = FaultProfile(swarm=True)
    shaped = attrs.evolve(base, focus=(("crash", ("p1",)),), focus_bias=0.0)
    for seed in range(5):
        a = generate(base, _TARGETS, duration_us=10_000_000, seed=seed)
        assert generate(shaped, _TARGETS, duration_us=10_000_000, seed=seed) == a


def test_shaping_focuses_targets_and_stretches_durations_only() -> None:
    rates = (("crash", 2.0), ("link_fail", 2.0), ("partition", 2.0))
    base = FaultProfile(rates=rates)
    shaped = attrs.evolve(
        base,
        focus=(("crash", ("p1",)), ("link_fail", ("b1|p1",))),
        focus_bias=1.0,
        long_fraction=1.0,
        long_duration_us=10_000_000,
    )
    plain = generate(base, _TARGETS, duration_us=10_000_000, seed=3)
    got = generate(shaped, _TARGETS, duration_us=10_000_000, seed=3)
    assert len(got.events) == len(plain.events) > 3
    for e in got.events:
        assert 10_000_000 <= e.duration_us <= 15_000_000
        if e.kind == "crash":
            assert e.target == "p1"
        if e.kind == "link_fail":
            assert e.target == "b1|p1"
    assert sorted((e.at_us, e.stream) for e in got.events) == sorted(
        (e.at_us, e.stream) for e in plain.events
    )
    short = attrs.evolve(base, partition_us=(600_000, 1_800_000))
    parts = generate(short, _TARGETS, duration_us=10_000_000, seed=3).events
    assert all(600_000 <= e.duration_us <= 1_800_000 for e in parts if e.kind == "partition")


def test_swarm_weights_enable_kinds() -> None:
    rates = (("crash", 5.0), ("drop", 5.0), ("reorder", 5.0))
    always = FaultProfile(rates=rates, swarm=True, swarm_weights=(("crash", 1.0),))
    never = attrs.evolve(always, swarm_weights=(("crash", 0.0),))
    for seed in range(5):
        assert "crash" in generate(always, _TARGETS, duration_us=20_000_000, seed=seed).kinds
        kinds = generate(never, _TARGETS, duration_us=20_000_000, seed=seed).kinds
        assert "crash" not in kinds


def test_a_profile_rejects_bad_shaping() -> None:
    with pytest.raises(ProtocolMisuse, match="focus_bias"):
        FaultProfile(focus_bias=2.0)
    with pytest.raises(ProtocolMisuse, match="swarm weight"):
        FaultProfile(swarm_weights=(("meteor", 0.5),))


def test_the_rules_profile_on_figure_3() -> None:
    focus = dict(focus_targets(fig3()))
    assert "b1|p1" in focus["link_fail"]  # a member of the bundle p1 -> IB1
    assert "b1|s1" in focus["link_fail"]
    assert "b1|b2" not in focus["link_fail"]  # inside a cell: not a bundle member
    assert set(focus["crash"]) == {"p1", "b1", "b2", "b3", "b4"}
    prof = rules_profile({"crash": 0.2, "partition": 0.1}, fig3(), GDConfig())
    assert prof.swarm
    assert prof.long_duration_us == GDConfig().aet_us
    assert prof.partition_us == (GDConfig().nrt_us, 3 * GDConfig().nrt_us)
    assert dict(prof.swarm_weights) == {"crash": 0.6, "partition": 0.6}


# -- guided schedules ------------------------------------------------------------------------


def _ev(kind: str, at: int, target: str = "b1") -> FaultEvent:
    return FaultEvent(kind=kind, at_us=at, duration_us=1_000_000, target=target, stream=at)


def test_mutation_is_deterministic_and_keeps_events_valid() -> None:
    parent = FaultSchedule(seed=1, events=(_ev("crash", 1_000_000), _ev("crash", 2_000_000)))
    fresh = FaultSchedule(seed=9, events=(_ev("link_fail", 500_000, "b1|p1"),))
    a = mutate(parent, fresh, random.Random(5), 5_000_000, 7)
    assert a == mutate(parent, fresh, random.Random(5), 5_000_000, 7)
    child, ops = a
    assert child.seed == 7
    assert 1 <= len(ops) <= 3
    assert all(0 <= e.at_us < 5_000_000 or e in parent.events for e in child.events)
    kinds = set()
    for s in range(40):
        _c, o = mutate(parent, fresh, random.Random(s), 5_000_000, 7)
        kinds.update(o)
    assert kinds == {"add", "remove", "stretch", "move"}


def _config(tmp: Path, **kw: Any) -> Any:
    data: dict[str, Any] = {
        "protocol": "gd",
        "topology": "fig3",
        "schedules": 6,
        "seed": 1,
        "duration_s": 1.5,
        "chunk_size": 2,
        "workload": {"drain_s": 1.0, "filters": "mixed", "rate_per_pubend": 10.0},
        "faults": {"profile": "rules"},
        "shrink": False,
        "out": str(tmp),
        "guided": True,
        "id": "g",
    }
    data.update(kw)
    return load_config(None, data)


def test_guided_is_a_checked_key_and_leaves_blind_ids_alone(tmp_path: Path) -> None:
    with pytest.raises(CampaignConfigError, match="guided"):
        _config(tmp_path, guided="yes")
    blind = _config(tmp_path, guided=False, id=None)
    assert "guided" not in blind.identity()
    assert _config(tmp_path, id=None).campaign_id != blind.campaign_id


def test_parents_are_the_rows_that_reached_rare_transitions(tmp_path: Path) -> None:
    config = _config(tmp_path)
    backend = RunnerBackend("gd")
    spec = backend.make_spec(config)
    rows = [_row(1, {"a": 1}), _row(2, {"a": 1, "rare": 1}), _row(3, {"a": 1})]
    known = {s: generate_schedule(spec, s) for s in (1, 2, 3)}
    plan = plan_chunk(config, backend, spec, rows, known, 4, 83)
    assert plan == plan_chunk(config, backend, spec, rows, known, 4, 83)
    parents = [e["origin"]["parent"] for e in plan.values() if e["origin"] != "blind"]
    blind = [s for s, e in plan.items() if e["origin"] == "blind"]
    assert parents  # mutants
    assert blind  # and some blind exploration
    assert parents.count(2) > parents.count(1) + parents.count(3)  # 2 reached the rare label
    assert aligned_chunks(config, [3, 4, 6]) == [(3, 4), (5, 6)]


def test_a_guided_campaign_is_resumable_and_reports_growth_beside_blind(tmp_path: Path) -> None:
    full = run_campaign(_config(tmp_path / "a"), executor="loop")
    vs = full.summary["versus_blind"]
    assert [g["schedules"] for g in vs["guided_growth"]] == [2, 4, 6]
    assert [g["schedules"] for g in vs["blind_growth"]] == [2, 4, 6]
    assert set(vs["reached"]) >= {"blind_final", "guided_schedules", "half"}
    # the first chunk has no parents: guided and blind ran the same schedules
    rows = {r["seed"]: r for r in read_rows(full.directory).to_pylist()}
    assert len(rows) == 6
    twin = full.directory.parent / "campaign_id=g-blind"
    blind_rows = {r["seed"]: r for r in read_rows(twin).to_pylist()}
    assert [rows[s]["schedule_digest"] for s in (1, 2)] == [
        blind_rows[s]["schedule_digest"] for s in (1, 2)
    ]
    plan = read_plan(_config(tmp_path / "a"))
    assert sorted(plan) == [1, 2, 3, 4, 5, 6]
    assert any(e["origin"] != "blind" for e in plan.values())
    # interrupted after 4 seeds, then resumed: the same plans and rows
    run_campaign(_config(tmp_path / "b", schedules=4), executor="loop")
    resumed = run_campaign(_config(tmp_path / "b"), executor="loop")
    assert resumed.skipped == 4
    again = {r["seed"]: r for r in read_rows(resumed.directory).to_pylist()}
    assert {s: (r["schedule_digest"], r["trace_digest"]) for s, r in again.items()} == {
        s: (r["schedule_digest"], r["trace_digest"]) for s, r in rows.items()
    }
    # the report names the transitions no schedule reached
    page = write_report(tmp_path / "a").read_text(encoding="utf-8")
    reached = full.summary["coverage"]["reached"]
    assert f"{reached} of {len(reachable('gd'))} reached by some schedule" in page
    # a counterexample shrinks the schedule the seed ran with
    config = _config(tmp_path / "a")
    backend = RunnerBackend("gd")
    spec = backend.make_spec(config)
    mutant = next(s for s, e in plan.items() if e["origin"] != "blind")
    assert schedule_for(config, backend, spec, mutant) == backend.schedule_from_data(
        plan[mutant]["schedule"]
    )
