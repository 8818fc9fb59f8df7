"""Acknowledgements committed together [DUR §5.2] in the running network: ``ack_batch`` on
``campaigns/durable-shb-moves.toml`` (ack mode SHB, moves, SHB crashes, link faults, maxRetain
2 s) stays clean; the stores see fewer commits, and an observer the same trace."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs
import pytest

from gapless.impl.durable.storage import Flush, StorageEffect
from gapless.models.durable_store import MemoryStore
from gapless.models.run import simulate
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.runner_backend import RunnerBackend

CAMPAIGN = Path(__file__).resolve().parents[2] / "campaigns" / "durable-shb-moves.toml"


def test_batched_acks_keep_the_shb_moves_campaign_clean() -> None:
    backend = RunnerBackend("durable")
    spec = backend.make_spec(load_config(CAMPAIGN, check_backend=False))
    batched = attrs.evolve(spec, config=(*spec.config, ("ack_batch", 4)))
    for seed in (1, 2, 3):
        sched = backend.generate_schedule(spec, seed)
        out = backend.run(batched, sched, seed)
        assert out.verdict == "pass", (seed, out.explanation)
        plain = backend.run(spec, sched, seed)
        assert plain.verdict == "pass", (seed, plain.explanation)


def test_batched_acks_commit_less_often_and_look_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-vacuity: with ``ack_batch`` the SHBs' stores see fewer commits; what an observer
    sees is the same trace here (the timer commits the waiting acks before it reports)."""
    backend = RunnerBackend("durable")
    spec = backend.make_spec(load_config(CAMPAIGN, check_backend=False))
    spec = attrs.evolve(spec, config=(*spec.config, ("ack_every", 1)))  # acks every SHB tick
    batched = attrs.evolve(spec, config=(*spec.config, ("ack_batch", 4)))
    sched = backend.generate_schedule(spec, 1)
    commits = {"n": 0}
    real = MemoryStore.apply

    def counting(self: MemoryStore, effects: Iterable[StorageEffect]) -> None:
        effects = list(effects)
        commits["n"] += sum(isinstance(e, Flush) for e in effects)
        real(self, effects)

    monkeypatch.setattr(MemoryStore, "apply", counting)
    counts, digests = [], []
    for s in (spec, batched):
        commits["n"] = 0
        digests.append(simulate(s, sched, 1).trace_digest)
        counts.append(commits["n"])
    assert counts[1] < counts[0], counts
    assert digests[0] == digests[1]
