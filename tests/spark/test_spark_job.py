"""Campaigns on local Spark: same rows as a plain loop; interrupted (driver killed) then
resumed ends with one row per seed, the resumed run executing only the missing seeds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_helpers import FAKE, fake_env, fake_overrides

from gapless.spark_fuzz.campaign import SparkStatus, run_campaign
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.store import read_rows

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fake_path")]


def test_spark_rows_equal_loop_rows(tmp_path: Path) -> None:
    statuses: list[SparkStatus] = []
    from gapless.spark_fuzz.campaign import Progress

    spark_cfg = load_config(
        None,
        fake_overrides(
            tmp_path,
            variant="buggy",
            duration_s=3.0,
            schedules=120,
            chunk_size=15,
            master="local[2]",
            id="spark",
            max_counterexamples=1,
            workload={"work_ms": 5},
        ),
    )
    loop_cfg = load_config(
        None,
        fake_overrides(
            tmp_path,
            variant="buggy",
            duration_s=3.0,
            schedules=120,
            chunk_size=40,
            id="loop",
            shrink=False,
            workload={"work_ms": 5},
        ),
    )
    on_status = statuses.append
    spark_run = run_campaign(spark_cfg, executor="spark", progress=Progress(on_status=on_status))
    loop_run = run_campaign(loop_cfg, executor="loop")
    drop = ["wall_s", "campaign_id"]
    spark_rows = read_rows(spark_run.directory).drop_columns(drop).to_pylist()
    loop_rows = read_rows(loop_run.directory).drop_columns(drop).to_pylist()
    assert [r["seed"] for r in spark_rows] == list(range(120))
    assert spark_rows == loop_rows
    assert len(spark_run.executed) == 8
    assert spark_run.spark_startup_s > 0
    assert spark_run.counterexamples  # shrunk on the driver after the job
    assert statuses
    assert max(s.tasks_total for s in statuses) >= 1


def test_killed_driver_then_resume_runs_only_missing_seeds(tmp_path: Path) -> None:
    logs = tmp_path / "log1"
    logs.mkdir()
    out = tmp_path / "out"
    config = tmp_path / "c.toml"
    config.write_text(
        f'backend = "{FAKE}"\nid = "resume"\nschedules = 160\nchunk_size = 10\n'
        f'duration_s = 3.0\nout = "{out}"\nmaster = "local[2]"\nshrink = false\n'
        "[workload]\nwork_ms = 40\n"
    )
    gapless_bin = str(Path(sys.executable).parent / "gapless")
    proc = subprocess.Popen(
        [gapless_bin, "fuzz", "--config", str(config), "--json"],
        env=fake_env(GAPLESS_FAKE_LOG=str(logs)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    manifest = out / "campaign_id=resume" / "_manifest.json"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if manifest.exists():
                chunks = json.loads(manifest.read_text())["chunks"]
                if len(chunks) >= 3:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("the campaign committed no chunks in time")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM: no clean shutdown
        proc.wait()
    committed = _committed(out / "campaign_id=resume")
    assert 30 <= len(committed) < 160
    logs2 = tmp_path / "log2"
    logs2.mkdir()
    resumed = subprocess.run(
        [gapless_bin, "fuzz", "--config", str(config), "--json"],
        env=fake_env(GAPLESS_FAKE_LOG=str(logs2)),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    executed = sorted(int(line) for f in logs2.iterdir() for line in f.read_text().split())
    assert executed == sorted(set(range(160)) - committed)  # each missing seed exactly once
    assert summary["executed"] == len(executed)
    assert summary["skipped"] == len(committed)
    seeds = read_rows(out / "campaign_id=resume").column("seed").to_pylist()
    assert seeds == list(range(160))


def _committed(root: Path) -> set[int]:
    seeds: set[int] = set()
    for part in root.glob("part-*.parquet"):
        _, first, last = part.stem.split("-")
        seeds.update(range(int(first), int(last) + 1))
    return seeds


def test_a_killed_python_worker_is_retried_in_local_mode(tmp_path: Path) -> None:
    """Issue 12, defect 2: ``kill -9`` of one pyspark Python worker mid-task on a local master
    that does not set task attempts (``local[2]``) costs a task attempt, not the campaign: the
    task is re-run, the summary counts the retry, and every seed's row is there exactly once.
    The campaign runs in its own process, so its JVM (and the Python workers it forks)
    inherits ``GAPLESS_FAKE_LOG``, whatever JVM an earlier test left in this one."""
    import threading

    log = tmp_path / "log"
    log.mkdir()
    out = tmp_path / "out"
    config = tmp_path / "c.toml"
    config.write_text(
        f'backend = "{FAKE}"\nid = "kill"\nschedules = 40\nchunk_size = 10\nduration_s = 10.0\n'
        f'out = "{out}"\nshrink = false\nmaster = "local[2]"\n[workload]\nwork_ms = 60\n'
    )
    killed: list[int] = []
    done = threading.Event()

    def kill_a_busy_worker() -> None:
        # no deadline of its own: Spark's start-up on a loaded machine can take a minute
        while not done.is_set() and not killed:
            for f in log.glob("seeds-*.log"):
                seeds = f.read_text().split()
                # a worker whose last seed is not the last of its chunk of 10 is mid-task
                if seeds and int(seeds[-1]) % 10 != 9:
                    pid = int(f.stem.split("-")[1])
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    try:
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "gapless"),
                "fuzz",
                "--config",
                str(config),
                "--json",
            ],
            env=fake_env(GAPLESS_FAKE_LOG=str(log)),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        done.set()
        killer.join()
    assert killed, "no worker was seen mid-task"
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["schedules"] == summary["schedules_committed"] == 40
    assert summary["spark_failed_tasks"] >= 1  # the killed attempt, re-run
    assert summary["spark_tasks"] >= 4 + summary["spark_failed_tasks"]  # attempts
    rows = read_rows(out / "campaign_id=kill").column("seed").to_pylist()
    assert rows == list(range(40))  # each seed exactly once
