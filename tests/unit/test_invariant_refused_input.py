"""``refused_input`` on real runs (issue 18): a role that refuses a duplicated D as
"conflicting data" (the one-operator mutant ``old != d`` -> ``old == d`` of
``impl/gd/istream.py``, which the tests killed and the demo campaign passed) is caught within
the demo's first four schedules (the first, until the one-sideways-hop fix, by a copy bounced
back sideways; now the fourth, by a duplicate from p1); the correct protocol refuses nothing
on the demo's first schedules, best-effort ones included."""

from __future__ import annotations

import json
from pathlib import Path

from _staged_mutant import mutant, run_staged

from gapless.spark_fuzz.config import canonical_json, config_for_seed, load_config, setup_of_seed
from gapless.spark_fuzz.execute import run_seed

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "campaigns" / "demo.toml"
MUTANT = "impl/gd/istream.py:142:compare NotEq#39"

_RUN = (
    "import json, sys\n"
    "from gapless.spark_fuzz.config import canonical_json, load_config\n"
    "from gapless.spark_fuzz.execute import run_seed\n"
    "c = load_config(sys.argv[1], {'schedules': 4, 'duration_s': 3.0})\n"
    "for seed in c.seeds():\n"
    "    row = run_seed(canonical_json(c.to_data()), seed).row\n"
    "    if row['verdict'] != 'pass':\n"
    "        break\n"
    "print(json.dumps(row))\n"
)


def test_a_refused_duplicate_is_caught_on_the_demos_first_schedules(tmp_path: Path) -> None:
    m = mutant(MUTANT)
    assert "elif old == d:" in m.diff
    out = run_staged(tmp_path, m, _RUN, str(DEMO))
    row = json.loads(out)
    assert row["verdict"] == "violation", row["explanation"]
    assert row["invariant"] == "refused_input"
    assert "conflicting data" in row["explanation"]


def test_the_correct_protocol_refuses_nothing() -> None:
    config = load_config(DEMO, {"duration_s": 3.0})
    setups = {setup_of_seed(config, s): s for s in range(config.seed, config.seed + 40)}
    assert set(setups) == {"", "total-order", "best-effort"}
    for seed in sorted(setups.values()):
        sub = config_for_seed(config, seed)
        assert "refused_input" in (sub.invariants or ("refused_input",))
        row = run_seed(canonical_json(config.to_data()), seed).row
        assert row["verdict"] == "pass", (seed, row["explanation"])
