"""The demo campaign that ``make demo`` runs is a valid configuration of the correct protocol."""

from __future__ import annotations

from pathlib import Path

from gapless.spark_fuzz.config import load_config

DEMO = Path(__file__).resolve().parents[2] / "campaigns" / "demo.toml"


def test_demo_campaign_is_valid_and_fuzzes_the_correct_protocol() -> None:
    config = load_config(DEMO)
    assert config.variant == "none"
    assert config.topology == "fig3"
    assert len(config.seeds()) == config.schedules >= 100


def test_every_shipped_campaign_is_valid_and_fuzzes_the_correct_protocol() -> None:
    files = sorted(DEMO.parent.glob("*.toml"))
    assert len(files) >= 3
    for path in files:
        config = load_config(path)
        assert config.variant == "none", path.name
        assert len(config.seeds()) == config.schedules, path.name
