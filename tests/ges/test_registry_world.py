"""GES plugged in through the registry and the world's seams: the entry, the topologies, the
fault budget, roaming clients with resume tokens, brokers that fail forever, determinism,
and the ges-roam figures read from a trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from _runs import MIXED, fault, run, spec

from gapless.models.faults import FAULT_KINDS, FaultEvent, FaultSchedule
from gapless.models.ges_binding import make_binding, within_budget
from gapless.models.ges_scenarios import roam_figures, roam_pass_marks
from gapless.models.ges_topology import GES_TOPOLOGIES, clustering_coefficient
from gapless.models.protocols import protocol, scenario
from gapless.models.run import Run
from gapless.models.runspec import RunSpecError
from gapless.models.workload import generate_workload


def test_the_entry_is_registered_with_its_zoo_scenarios_and_faults() -> None:
    ges = protocol("ges").describe()
    assert len(ges["variants"]) >= 5
    assert "ges-roam" in ges["scenarios"]
    assert "fail" in ges["fault_kinds"]
    assert ges["fault_budget"] is True
    assert ges["wire_schema"]["name"] == "GesWire"
    assert scenario("ges-roam").protocol == "ges"
    assert tuple(protocol("gd").fault_kinds) == FAULT_KINDS  # GD's kinds are unchanged


def test_two_22_node_topologies_with_different_clustering() -> None:
    dense, sparse = GES_TOPOLOGIES["ges-dense"](), GES_TOPOLOGIES["ges-sparse"]()
    assert dense.number_of_nodes() == sparse.number_of_nodes() == 22
    assert clustering_coefficient(dense) == 0.553
    assert clustering_coefficient(sparse) == 0.0


def test_bad_config_is_refused_naming_the_keys() -> None:
    g = GES_TOPOLOGIES["ges-small"]()
    wl = generate_workload(spec().workload, g, duration_us=1, seed=0)
    with pytest.raises(RunSpecError, match="retry_us"):
        make_binding(spec(config=(("nope", 1),)), g, wl)


def test_the_budget_excludes_a_failed_storage_or_a_cut_network() -> None:
    g = GES_TOPOLOGIES["ges-small"]()
    assert within_budget(g, (fault("fail", 1, 1, "n6"),))
    assert not within_budget(g, (fault("fail", 1, 1, "n7"),))  # a storage
    assert not within_budget(g, (fault("fail", 1, 1, "n5"), fault("fail", 1, 1, "n6")))


def test_clients_roam_with_their_resume_token_and_failed_brokers_never_restart() -> None:
    out = run("none", MIXED, record=True)
    assert out.verdict == "pass", out.explanation
    trace = out.trace or ()
    roams = [r for r in trace if r.kind == "connect" and r.detail.connection > 0]
    assert any(r.detail.subscriber == "n3.u0" and r.node != "n3" for r in roams)
    assert all(isinstance(r.detail.resume, tuple) for r in roams)
    failed_at = next(r.time for r in trace if r.kind == "fault" and r.detail.kind == "fail")
    assert not [r for r in trace if r.node == "n6" and r.time > failed_at and r.kind != "fault"]
    moved = [r for r in roams if r.time > failed_at and r.detail.subscriber.startswith("n6.")]
    assert {r.detail.subscriber for r in moved} == {"n6.u0", "n6.u1"}


def test_same_seed_same_digest_and_the_world_keeps_failed_brokers_down() -> None:
    a, b = run("none", MIXED), run("none", MIXED)
    assert a.trace_digest == b.trace_digest
    r = Run(spec(), FaultSchedule(seed=1, events=MIXED), 1)
    r.world.run(duration_us=3_000_000, drain_us=1_000_000)
    assert not r.world.nodes["n6"].alive
    assert r.world.nodes["n2"].alive  # a crash restarts


def test_a_storage_that_fails_forever_is_out_of_budget_not_a_violation() -> None:
    events: tuple[FaultEvent, ...] = (fault("fail", 1.0, 0.3, "n7"),)
    out = run("none", events)
    assert out.verdict == "out_of_budget", out.explanation


def test_roam_figures_from_a_small_run() -> None:
    sc = attrs.evolve(scenario("ges-roam"), spec=spec(), events=MIXED)
    out = run("none", MIXED, record=True)
    m = roam_figures(sc, out, ())
    assert (m["lost"], m["duplicates"], m["out_of_order"]) == (0, 0, 0)
    assert m["roams"] >= 3
    assert m["recovery_ms"]["p50"] is not None
    assert all(roam_pass_marks("ges-roam", m).values())


_DIGEST_OF_A_RUN = """
import sys
sys.path.insert(0, sys.argv[1])
from _runs import MIXED, run
print(run("none", MIXED).trace_digest)
"""


def test_same_digest_whatever_the_string_hash_seed() -> None:
    """Nothing reaches the trace in a hash order (the outbox retransmission once did)."""
    here = str(Path(__file__).parent)
    digests = {
        subprocess.run(
            [sys.executable, "-c", _DIGEST_OF_A_RUN, here],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(digests) == 1
    assert len(next(iter(digests))) == 64
