"""``canonical_state``'s prefix tie (issue 18): an IB whose A prefix stops one tick short of
what its cells acked is caught. The power bench's mutant ``forwarding.py:310`` (``:308``
before ``grow_a_prefix`` released the ledger; it keeps ``cur - 2``) was killed by ``make
test`` only through the fast paths' differential test: every later ack covers the tick it held
back, so no wire or delivery rule of the demo campaign saw it [GD §2.4, §3.1]. The correct
roles pass the same schedule."""

from __future__ import annotations

from pathlib import Path

from _staged_mutant import mutant, run_seed_staged

from gapless.models.gd_protocol import ENTRY as GD_ENTRY
from gapless.spark_fuzz.config import canonical_json, config_for_seed, load_config
from gapless.spark_fuzz.execute import run_seed

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "campaigns" / "demo.toml"
MUTANT = "impl/gd/forwarding.py:310:int constant#67"
SEED = 3  # a guaranteed-delivery setup of the demo on Figure 3


def test_an_ib_that_acks_one_tick_short_is_caught(tmp_path: Path) -> None:
    m = mutant(MUTANT)
    assert "prefix = cur - 2" in m.diff
    row = run_seed_staged(tmp_path, m, DEMO, SEED, 2.0)
    assert row["verdict"] == "violation", row["explanation"]
    assert row["invariant"] == "canonical_state"
    assert "the acknowledged prefix ends at tick" in row["explanation"]
    assert "is A in every downstream cell" in row["explanation"]


def test_the_correct_roles_pass_the_same_schedule() -> None:
    config = load_config(DEMO, {"duration_s": 2.0})
    assert config_for_seed(config, SEED).invariants == (), "judged on all of GD's invariants"
    assert "canonical_state" in GD_ENTRY.state_checked
    row = run_seed(canonical_json(config.to_data()), SEED).row
    assert row["verdict"] == "pass", row["explanation"]
    assert row["delivered"] > 0
