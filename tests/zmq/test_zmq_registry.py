"""ZeroMQ through the registry: the entry, the zmq-tree scenario, world runs of the correct
protocol and of the planted bugs (the zoo's campaign, in this process)."""

from __future__ import annotations

import attrs
import pytest

from gapless.impl.zmq.variants import VARIANTS
from gapless.models.faults import FaultProfile
from gapless.models.protocols import protocol, scenario
from gapless.models.runner import generate_schedule, run, run_scenario
from gapless.models.runspec import RunSpec, RunSpecError
from gapless.models.workload import WorkloadSpec
from gapless.models.zmq_binding import SUBSCRIPTIONS, subscription_of
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.runner_backend import RunnerBackend
from gapless.spark_fuzz.zoo_campaign import suite_configs

SPEC = RunSpec(
    protocol="zmq",
    topology="zmq-small",
    workload=WorkloadSpec(rate_per_pubend=50.0, subscribers_per_shb=6),
    faults=FaultProfile(
        rates=(("crash", 0.3), ("disconnect", 1.0), ("link_fail", 0.5)), swarm=True
    ),
    duration_us=3_000_000,
    drain_us=1_000_000,
)
WORLD_CAUGHT = sorted(VARIANTS)


def test_the_entry_describes_the_protocol() -> None:
    d = protocol("zmq").describe()
    assert d["wire_schema"]["name"] == "ZmqWire"
    assert set(d["invariants"]) == {
        "completeness",
        "minimal_traffic",
        "subscription_consistency",
        "no_unsubscribed_delivery",
    }
    assert d["scenarios"] == ["zmq-tree"]
    assert len(d["variants"]) == len(VARIANTS) >= 5
    assert scenario("zmq-tree").protocol == "zmq"


def test_a_bad_config_key_names_the_allowed_ones() -> None:
    spec = attrs.evolve(SPEC, config=(("verbos", True),))
    with pytest.raises(RunSpecError, match="allowed keys: verbose"):
        run(spec, generate_schedule(spec, 1), 1)


def test_subscriptions_spread_and_change_on_reconnect() -> None:
    firsts = {subscription_of(f"d3a.u{i}", 0) for i in range(25)}
    assert len(firsts) > 10
    assert firsts <= set(SUBSCRIPTIONS)
    everyone = {subscription_of(f"d3{c}.u{i}", 0) for c in "abcd" for i in range(25)}
    assert {k for k, _ in everyone} == {"prefix", "suffix"}  # an unknown kind is exercised
    assert any(subscription_of(f"s1.u{i}", 0) != subscription_of(f"s1.u{i}", 1) for i in range(4))


def test_zmq_tree_scenario_settles_without_loss_or_stale_subscriptions() -> None:
    _, outcome, m = run_scenario("zmq-tree")
    assert m["pass"], m
    assert outcome.verdict == "pass"
    assert len(m["upstream_subscriptions"]) == 3  # one count per level of devices, top first
    assert m["upstream_subscriptions"] == sorted(m["upstream_subscriptions"])
    assert (m["lost"], m["stale_subscriptions"], m["excess_messages"]) == (0, 0, 0)
    assert m["measured_messages"] > 100


@pytest.mark.parametrize("options", [(), (("verboser", True),), (("subsumption", True),)])
def test_correct_protocol_passes_swarm_schedules(options: tuple[tuple[str, bool], ...]) -> None:
    spec = attrs.evolve(SPEC, config=options)
    for seed in range(8):
        outcome = run(spec, generate_schedule(spec, seed), seed)
        assert outcome.verdict == "pass", (seed, outcome.explanation)


@pytest.mark.parametrize("name", WORLD_CAUGHT)
def test_each_planted_bug_is_caught_by_a_swarm_campaign(name: str) -> None:
    spec = attrs.evolve(SPEC, variant=name)
    for seed in range(40):
        outcome = run(spec, generate_schedule(spec, seed), seed)
        if outcome.verdict == "violation":
            assert outcome.invariant in VARIANTS[name].caught_by
            return
    pytest.fail(f"{name}: no violation in 40 swarm schedules")


def test_a_campaign_without_rates_injects_only_the_protocols_fault_kinds() -> None:
    config = load_config(None, {"protocol": "zmq", "topology": "zmq-small"})
    spec = RunnerBackend("zmq").make_spec(config)
    kinds = {k for k, _ in spec.faults.rates}
    assert kinds == {"crash", "link_fail", "disconnect"}  # no duplication over TCP


@pytest.mark.parametrize("name", sorted(n for n, v in VARIANTS.items() if v.topology))
def test_the_zoo_as_users_run_it_catches_the_refcount_bugs_on_their_topology(name: str) -> None:
    """``gapless zoo --protocol zmq`` (no config) runs each variant on the topology it names
    too; there the default workload's single subscribers share prefixes, and a shared
    prefix's holder leaving is what the reference-counting bugs mishandle."""
    suite = suite_configs({"protocol": "zmq", "schedules": 40})
    assert sorted(c.topology for c in suite) == ["zmq-fan", "zmq-small"]
    config = next(c for c in suite if c.topology == VARIANTS[name].topology)
    spec = attrs.evolve(RunnerBackend("zmq").make_spec(config), variant=name)
    correct = attrs.evolve(spec, variant="none")
    for seed in range(config.seed, config.seed + 15):
        outcome = run(spec, generate_schedule(spec, seed), seed)
        if outcome.verdict == "violation":
            assert outcome.invariant in VARIANTS[name].caught_by
            assert run(correct, generate_schedule(correct, seed), seed).verdict == "pass"
            return
    pytest.fail(f"{name}: no violation in the zoo's first 15 schedules on {config.topology}")


def test_gapless_protocols_shows_the_topology_a_variant_names() -> None:
    described = {v["name"]: v for v in protocol("zmq").describe()["variants"]}
    assert described["forward-every-subscription"]["topology"] == "zmq-fan"
    assert described["sub-does-not-filter"]["topology"] is None
