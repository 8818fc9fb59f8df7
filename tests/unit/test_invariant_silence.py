"""``silence_hides_nothing`` on real runs: the correct protocol's F on the wire never covers a
logged message its edge owes, on the demo's first schedules of Figure 3 (rich filters, swarm
faults from the first tick) and of the total-order merge topology. The hand-made violating
and passing traces are in ``test_invariants_nonvacuity.py``."""

from __future__ import annotations

from pathlib import Path

from gapless.invariants import INVARIANTS
from gapless.spark_fuzz.config import canonical_json, config_for_seed, load_config, setup_of_seed
from gapless.spark_fuzz.execute import run_seed

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "campaigns" / "demo.toml"


def test_the_correct_protocol_never_hides_a_message_behind_silence() -> None:
    assert "silence_hides_nothing" in INVARIANTS
    config = load_config(DEMO)
    short = load_config(DEMO, {"duration_s": 3.0})
    seeds: dict[str, list[int]] = {}
    for s in config.seeds():
        seeds.setdefault(setup_of_seed(config, s), []).append(s)
    # full length, seed 10 answers a nack at 5.26 s with F over a tick the receiving cell had
    # acked (allowed: final there); short runs of filtered edges, sideways repairs and
    # total-order merges under faults
    runs = [(config, 10), *((short, s) for s in (*seeds[""][:2], *seeds["total-order"][:2]))]
    for cfg, seed in runs:
        sub = config_for_seed(cfg, seed)
        assert not sub.invariants or "silence_hides_nothing" in sub.invariants
        row = run_seed(canonical_json(cfg.to_data()), seed).row
        assert row["verdict"] == "pass", (seed, row["invariant"], row["explanation"])
