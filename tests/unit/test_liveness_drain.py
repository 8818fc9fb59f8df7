"""Liveness needs a drain long enough for a message lost at the tail of the run to be
repaired [GD §3.2]: no later message shows its gap, so only the pubend's AckExpected does, once
the tick is AET old, at the pubend's next periodic check; the acks then climb the cell tree.

Guided seed 1001's child schedule 1092 (``benchmarks/guided10_liveness_seed1092.json``) was
flagged under the old 11 s drain: AckExpected went out 10.99 s after the lost tick and the acks
reached the pubend 0.2 s later, past the end of the run. With the campaigns' drain the same
schedule passes, and a failure judged that early now says the drain may be what is short."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from gapless.invariants.gd import delivery
from gapless.models.run import run_context
from gapless.spark_fuzz.backend import load_backend
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.counterexample import load_counterexample, replay

ROOT = Path(__file__).resolve().parents[2]
SEED_1092 = ROOT / "benchmarks" / "guided10_liveness_seed1092.json"
#: what comes on top of tail_repair_us: link delays and the repair's nack/retransmission
ROUND_TRIPS_US = 500_000


@pytest.mark.parametrize("campaign", ["demo.toml", "guided.toml"])
def test_the_gd_campaigns_drain_longer_than_a_tail_repair(campaign: str) -> None:
    config = load_config(ROOT / "campaigns" / campaign)
    backend = load_backend(config.protocol, config.backend)
    spec = backend.make_spec(config)
    need = delivery.tail_repair_us(run_context(spec, next(iter(config.seeds()))))
    assert need is not None
    assert need == 11_200_000  # AET 10 s + 1 s check period + 2 levels x 100 ms ack delay
    assert spec.drain_us >= need + ROUND_TRIPS_US


def test_the_schedule_flagged_under_the_short_drain_passes_under_the_campaigns() -> None:
    cx = load_counterexample(SEED_1092)
    config = load_config(ROOT / "campaigns" / "guided.toml")
    backend = load_backend(cx.protocol, cx.backend)
    spec = attrs.evolve(
        backend.spec_from_data(cx.spec), drain_us=backend.make_spec(config).drain_us
    )
    out = backend.run(spec, backend.schedule_from_data(cx.schedule), cx.seed)
    assert out.verdict == "pass", out.explanation


def test_a_liveness_failure_judged_before_a_tail_repair_says_so() -> None:
    got = replay(load_counterexample(SEED_1092))
    assert got.reproduced
    assert got.digest == "match"
    assert "judged only 11.150 s after the first tick above that prefix" in (
        got.outcome.explanation or ""
    )
    assert "a longer drain is needed" in (got.outcome.explanation or "")


def test_the_hint_appears_only_before_a_tail_repair_could_end() -> None:
    config = load_config(ROOT / "campaigns" / "demo.toml")
    spec = load_backend(config.protocol, config.backend).make_spec(config)
    ctx = run_context(spec, next(iter(config.seeds())))
    need = delivery.tail_repair_us(ctx)
    assert need is not None
    assert delivery._too_early(ctx, need) == ""
    assert "a longer drain is needed" in delivery._too_early(ctx, need - 1)
    assert delivery.tail_repair_us(attrs.evolve(ctx, aet_us=None)) is None
    assert delivery._too_early(attrs.evolve(ctx, aet_us=None), 0) == ""
