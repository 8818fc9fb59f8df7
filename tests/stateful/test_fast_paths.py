"""The roles' fast paths (``GDConfig.fast_paths``) are shortcuts, not different rules: on
fault-injected runs of every topology they give the same trace (every effect: sends, deliveries,
persists, coverage labels) as the general rules, and the differential check catches a fast path
that deviates."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from gapless.impl.effects import Deliver, DeliverCohort
from gapless.impl.gd import pubend, subend
from gapless.models.faults import FaultProfile
from gapless.models.runner import RunOutcome, RunSpec, generate_schedule, run
from gapless.models.workload import WorkloadSpec

SPECS = [
    RunSpec(
        topology=topo,
        workload=WorkloadSpec(rate_per_pubend=20.0, filters="mixed"),
        faults=FaultProfile(swarm=True, max_duration_us=2_000_000),
        duration_us=5_000_000,
        drain_us=10_000_000,
    )
    for topo in ("fig3", "total-order", "two-broker")
]
SEEDS = (1, 2)


def _both(spec: RunSpec, seed: int) -> tuple[RunOutcome, RunOutcome]:
    outs = []
    for fast in (True, False):
        s = attrs.evolve(spec, config=(("fast_paths", fast),))
        outs.append(run(s, generate_schedule(s, seed), seed))
    return outs[0], outs[1]


#: name -> (the room it lives in, its function name there)
FAST_PATHS: dict[str, tuple[Any, str]] = {
    "_shb_in_order": (subend, "shb_in_order"),
    "_phb_publish_in_order": (pubend, "publish_in_order"),
}


@pytest.fixture
def fast_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each fast path produced a step."""
    calls = dict.fromkeys(FAST_PATHS, 0)

    def counting(name: str) -> Any:
        module, attr = FAST_PATHS[name]
        real = getattr(module, attr)

        def fn(*args: Any, **kwargs: Any) -> Any:
            got = real(*args, **kwargs)
            if got is not None:
                calls[name] += 1
            return got

        return fn

    for name, (module, attr) in FAST_PATHS.items():
        monkeypatch.setattr(module, attr, counting(name))
    return calls


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.topology)
@pytest.mark.parametrize("seed", SEEDS)
def test_fast_paths_give_the_general_rules_trace(
    spec: RunSpec, seed: int, fast_calls: dict[str, int]
) -> None:
    fast, general = _both(spec, seed)
    assert fast_calls["_phb_publish_in_order"] > 0, "the PHB fast path was taken"
    if spec.topology == "total-order":
        # every subscriber there reads the merged stream: the SHB's recogniser must decline
        assert fast_calls["_shb_in_order"] == 0
    else:
        assert fast_calls["_shb_in_order"] > 0, "the SHB fast path was taken"
    assert fast.verdict == general.verdict, (fast.explanation, general.explanation)
    assert fast.coverage == general.coverage
    assert fast.trace_digest == general.trace_digest


def test_a_deviating_shb_fast_path_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-vacuity: a fast path that forgets to deliver changes the trace."""
    real = subend.shb_in_order

    def forgetful(*args: Any, **kwargs: Any) -> Any:
        out: list[Any] = args[5].out  # the Step: its effects so far
        before = len(out)
        state = real(*args, **kwargs)
        out[before:] = [e for e in out[before:] if not isinstance(e, (Deliver, DeliverCohort))]
        return state

    monkeypatch.setattr(subend, "shb_in_order", forgetful)
    fast, general = _both(SPECS[0], SEEDS[0])
    assert fast.trace_digest != general.trace_digest
    assert fast.verdict == "violation"
    assert general.verdict != "violation"


def test_a_deviating_phb_fast_path_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-vacuity: a PHB fast path that forgets the silence before each D changes the trace
    (and a subscriber stalls on the gap until it nacks)."""
    from gapless.impl.effects import Send
    from gapless.impl.gd.messages import Knowledge

    real = pubend.publish_in_order

    def silent_less(*args: Any, **kwargs: Any) -> Any:
        out: list[Any] = args[5].out  # the Step: its effects so far
        before = len(out)
        got = real(*args, **kwargs)
        if got is None:
            return None
        out[before:] = [
            Send(to=e.to, msg=attrs.evolve(e.msg, silence=()))
            if isinstance(e, Send) and isinstance(e.msg, Knowledge)
            else e
            for e in out[before:]
        ]
        return got

    monkeypatch.setattr(pubend, "publish_in_order", silent_less)
    fast, general = _both(SPECS[0], SEEDS[0])
    assert fast.trace_digest != general.trace_digest
