"""``fail_fast``: a campaign stops at the first committed chunk holding a failing schedule,
keeps what it committed, and reports the same verdict (some schedule failed) as the full run;
a campaign with no failure runs every seed (issue 18: the power bench's kill, in seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark_helpers import fake_env, fake_overrides, gapless

from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import CampaignConfig, CampaignConfigError, load_config
from gapless.spark_fuzz.store import read_rows

pytestmark = pytest.mark.usefixtures("fake_path")


def _config(tmp: Path, name: str, **extra: object) -> CampaignConfig:
    return load_config(
        None,
        fake_overrides(
            tmp / name, variant="buggy", schedules=60, chunk_size=5, duration_s=3.0, **extra
        ),
    )


def test_fail_fast_stops_after_the_first_failing_chunk(tmp_path: Path) -> None:
    full = run_campaign(_config(tmp_path, "full", id="full"), executor="loop")
    fast = run_campaign(_config(tmp_path, "fast", id="fast", fail_fast=True), executor="loop")
    full_rows = read_rows(full.directory).to_pylist()
    first_bad = min(r["seed"] for r in full_rows if r["verdict"] != "pass")
    assert full.summary["failed"] > 1  # the buggy variant fails on several seeds
    fast_rows = read_rows(fast.directory).to_pylist()
    # every chunk up to the first failing one, then nothing: chunks are 5 seeds
    assert [r["seed"] for r in fast_rows] == list(range(first_bad - first_bad % 5 + 5))
    assert fast.summary["failed"] >= 1
    assert fast.summary["stopped_at_first_failure"] is True
    assert not fast.interrupted
    drop = ("wall_s", "campaign_id")
    strip = [{k: v for k, v in r.items() if k not in drop} for r in fast_rows]
    assert strip == [{k: v for k, v in r.items() if k not in drop} for r in full_rows[: len(strip)]]


def test_fail_fast_without_a_failure_runs_every_seed(tmp_path: Path) -> None:
    cfg = load_config(
        None, fake_overrides(tmp_path, schedules=20, chunk_size=5, duration_s=3.0, fail_fast=True)
    )
    got = run_campaign(cfg, executor="loop")
    assert got.summary["passed"] == 20
    assert got.summary["stopped_at_first_failure"] is False


def test_fail_fast_is_not_part_of_the_campaign_identity(tmp_path: Path) -> None:
    a = load_config(None, fake_overrides(tmp_path))
    b = load_config(None, fake_overrides(tmp_path, fail_fast=True))
    assert a.campaign_id == b.campaign_id
    with pytest.raises(CampaignConfigError, match="fail_fast"):
        load_config(None, fake_overrides(tmp_path, fail_fast="yes"))


def test_fuzz_cli_fail_fast_exits_1_with_fewer_schedules(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["fuzz", "--protocol", "gd", "--variant", "buggy", "--schedules", "60"]
    args += ["--chunk-size", "5", "--duration", "3", "--out", str(out), "--executor", "loop"]
    args += ["--no-shrink", "--json", "--fail-fast"]
    config = tmp_path / "c.toml"
    config.write_text('backend = "fake_backend:FakeBackend"\n')
    done = gapless(*args, "--config", str(config), env=fake_env())
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["stopped_at_first_failure"] is True
    assert 0 < summary["schedules_committed"] < 60
