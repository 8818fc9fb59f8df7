"""The ``rules`` profile reaches the first tick (issue 18 §2: boundaries): its faults may start
at time 0, so the demo's schedules crash pubend hosts and fail bundle members in the first
second — before the first message is logged, acked and released."""

from __future__ import annotations

from pathlib import Path

from gapless.models.topology import TOPOLOGIES, fig3
from gapless.spark_fuzz.config import canonical_json, load_config
from gapless.spark_fuzz.execute import prepare_seed
from gapless.spark_fuzz.profiles import RULES_WARMUP_US, rules_profile

ROOT = Path(__file__).resolve().parents[2]


def test_the_rules_profile_starts_faults_at_the_first_tick() -> None:
    assert RULES_WARMUP_US == 0
    assert rules_profile({"crash": 0.2}, fig3(), None).warmup_us == 0


def test_the_demo_crashes_pubend_hosts_in_the_first_second() -> None:
    config = load_config(ROOT / "campaigns" / "demo.toml")
    text = canonical_json(config.to_data())
    early: dict[str, int] = {}
    for seed in config.seeds():
        _config, backend, spec = prepare_seed(text, seed)
        hosts = {h for _p, h in TOPOLOGIES[spec.topology]().graph["pubends"]}
        for e in backend.generate_schedule(spec, seed).events:
            if e.at_us < 1_000_000:
                key = "host crash" if e.kind == "crash" and e.target in hosts else e.kind
                early[key] = early.get(key, 0) + 1
    # before the change the world's one-second warm-up kept every fault out of the first second
    assert early.get("host crash", 0) >= 3, early
    assert sum(early.values()) >= 30, early
