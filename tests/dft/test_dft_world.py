"""DFT through the registry and the kit's world: binding, topologies, fault budget, verdicts."""

from __future__ import annotations

import pytest

from gapless.models.faults import FaultEvent, FaultProfile, FaultSchedule
from gapless.models.protocols import protocol
from gapless.models.run import simulate
from gapless.models.runner import generate_schedule
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.runner_backend import RunnerBackend

_S = 1_000_000


def _spec(variant: str = "none", topology: str = "dft-chain6", delta: int = 1) -> RunSpec:
    return RunSpec(
        protocol="dft",
        variant=variant,
        topology=topology,
        workload=WorkloadSpec(rate_per_pubend=20.0, filters="mixed", subscribers_per_shb=1),
        faults=FaultProfile(),
        duration_us=4 * _S,
        drain_us=2 * _S,
        config=(("delta", delta),),
    )


def _links(*targets: str) -> FaultSchedule:
    return FaultSchedule(
        seed=0,
        events=tuple(
            FaultEvent(kind="link_fail", at_us=_S, duration_us=2 * _S, target=t, stream=i)
            for i, t in enumerate(targets)
        ),
    )


def test_dft_is_registered_with_its_variants_invariants_and_budget() -> None:
    entry = protocol("dft")
    assert entry.within_budget is not None
    assert "legitimate_propagation" in entry.invariants
    assert "bounded_delivery" not in entry.safety_invariants
    assert {"naive", "short-seqvec"} <= set(entry.variants)
    assert entry.describe()["wire_schema"]["name"] == "DFTWire"


def test_a_link_failure_within_delta_passes_every_invariant() -> None:
    out = simulate(_spec(), _links("C3|C4"), 0)
    assert out.verdict == "pass", out.explanation
    assert out.counters.delivered > 0


def test_two_failures_in_a_window_of_three_are_out_of_budget_not_a_violation() -> None:
    out = simulate(_spec(), _links("C1|C2", "C2|C3"), 0)
    assert out.verdict == "out_of_budget", out.explanation


def test_same_seed_same_digest() -> None:
    a = simulate(_spec(), _links("C3|C4"), 3)
    b = simulate(_spec(), _links("C3|C4"), 3)
    assert a.trace_digest == b.trace_digest


def test_short_seqvec_is_caught_in_the_world() -> None:
    # a link failure in the middle of the chain: re-sent publications reach brokers that
    # already had them; with sequence vectors over δ brokers one is delivered twice
    out = simulate(_spec("short-seqvec"), _links("C1|C2"), 0)
    assert out.verdict == "violation", out.explanation
    assert out.invariant == "exactly_once"
    good = simulate(_spec(), _links("C1|C2"), 0)
    assert good.verdict == "out_of_budget", good.explanation  # C1-C2 touches S at C2


def _zoo_spec(variant: str) -> RunSpec:
    """``campaigns/dft-zoo.toml`` as a RunSpec."""
    return RunSpec(
        protocol="dft",
        variant=variant,
        topology="dft-fig1",
        workload=WorkloadSpec(rate_per_pubend=10.0, filters="mixed", subscribers_per_shb=1),
        faults=FaultProfile(rates=(("link_fail", 1.0), ("disconnect", 1.0)), swarm=True),
        duration_us=4 * _S,
        drain_us=2 * _S,
    )


@pytest.mark.parametrize(
    ("variant", "seed", "invariant"),
    [
        # since dft8 the untagged confirmation itself is caught (``partition_tables``,
        # Figure 5 l. 33-35), before the unsafe delivery it leads to (``safety``)
        ("untagged-confirmations", 11, "partition_tables"),
        ("deliver-tagged", 11, "safety"),
        ("drop-local-target", 3, "gapless"),
    ],
)
def test_the_zoo_campaign_catches_a_bug_at_its_pinned_seed(
    variant: str, seed: int, invariant: str
) -> None:
    """Pinned: the first seed of ``campaigns/dft-zoo.toml`` that catches each bug (a
    subscriber reconnects — a new subscription — while a link failure stands)."""
    bad = simulate(_zoo_spec(variant), generate_schedule(_zoo_spec(variant), seed), seed)
    assert (bad.verdict, bad.invariant) == ("violation", invariant), bad.explanation
    good = simulate(_zoo_spec("none"), generate_schedule(_zoo_spec("none"), seed), seed)
    assert good.verdict in ("pass", "out_of_budget"), good.explanation


def test_the_default_zoo_catches_early_accept_on_the_slow_branch() -> None:
    """``gapless zoo --protocol dft``'s swarm campaign on ``dft-slow-branch`` (the topology
    the variant names): pinned, its first catching seed; the correct protocol passes it."""
    backend = RunnerBackend("dft")
    base = {"protocol": "dft", "topology": "dft-slow-branch", "faults": {"profile": "swarm"}}
    for variant, want in (("early-accept", ("violation", "safety")), ("none", None)):
        spec = backend.make_spec(load_config(None, {**base, "variant": variant}))
        out = backend.run(spec, backend.generate_schedule(spec, 10), 10)
        if want is None:
            assert out.verdict in ("pass", "out_of_budget"), out.explanation
        else:
            assert (out.verdict, out.invariant) == want, out.explanation


def test_the_default_zoo_catches_the_recovery_bugs() -> None:
    """``gapless zoo --protocol dft``'s swarm campaign (crashes with restarts among its fault
    kinds) on ``dft-slow-branch``: pinned, its first schedule catches each recovery bug
    [DFT §VII, §VIII-B]; the correct protocol passes it."""
    backend = RunnerBackend("dft")
    base = {"protocol": "dft", "topology": "dft-slow-branch", "faults": {"profile": "swarm"}}
    for name in ("forget-stamps", "no-sync", "none"):
        spec = backend.make_spec(load_config(None, {**base, "variant": name}))
        out = backend.run(spec, backend.generate_schedule(spec, 0), 0)
        if name == "none":
            assert out.verdict in ("pass", "out_of_budget"), out.explanation
        else:
            assert (out.verdict, out.invariant) == ("violation", "bounded_delivery"), name
