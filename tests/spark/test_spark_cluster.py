"""A standalone Spark cluster on 127.0.0.1 (master + 2 workers from the pyspark package's
own scripts, free ports, own pid/log/work directories): SIGKILL one worker mid-campaign and
every seed's row is still there exactly once, with the verdicts of a local run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from spark_helpers import FAKE, fake_env, fake_overrides

from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.store import read_rows

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.usefixtures("fake_path")]

SPARK_HOME = Path(pyspark.__file__).resolve().parent
DAEMON = str(SPARK_HOME / "sbin" / "spark-daemon.sh")
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, base: Path, **extra: str) -> None:
        self.base = base
        self.env = fake_env(
            **extra,
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(base / "logs"),
            SPARK_PID_DIR=str(base / "pids"),
            SPARK_IDENT_STRING="gapless-test",
            PYSPARK_PYTHON=sys.executable,
            SPARK_NO_DAEMONIZE="",
        )
        del self.env["SPARK_NO_DAEMONIZE"]
        self.port = _free_port()
        self.ui = _free_port()
        self.started: list[tuple[str, int]] = []

    def daemon(self, action: str, cls: str, n: int, *args: str) -> None:
        subprocess.run(
            ["bash", DAEMON, action, cls, str(n), *args],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        self.daemon(
            "start",
            MASTER,
            1,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui),
        )
        self.started.append((MASTER, 1))
        for n in (1, 2):
            work = self.base / f"work{n}"
            work.mkdir(parents=True)
            self.daemon(
                "start",
                WORKER,
                n,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(work),
                f"spark://127.0.0.1:{self.port}",
            )
            self.started.append((WORKER, n))
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2) as r:
                    state = json.loads(r.read())
                if sum(w["state"] == "ALIVE" for w in state.get("workers", [])) == 2:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError("the standalone workers did not become ALIVE in 90 s")

    def pid(self, cls: str, n: int) -> int:
        path = self.base / "pids" / f"spark-gapless-test-{cls}-{n}.pid"
        return int(path.read_text().strip())

    def stop(self) -> None:
        for cls, n in reversed(self.started):
            try:
                pid = self.pid(cls, n)
            except (OSError, ValueError):
                continue
            subprocess.run(
                ["bash", DAEMON, "stop", cls, str(n)],
                env=self.env,
                capture_output=True,
                timeout=60,
                check=False,
            )
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # only the pid we started, if still there


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    # seed 45 (chunk 3) holds on its first run, so the test kills a worker while it runs a task
    c = Cluster(tmp_path / "cluster", GAPLESS_FAKE_HOLD=f"{HELD_SEED}:{tmp_path / 'held'}")
    try:
        c.start()
        yield c
    finally:
        c.stop()


HELD_SEED = 45


def _ancestors(pid: int) -> list[int]:
    """``pid`` and its ancestors, nearest first (from ``/proc``)."""
    chain = [pid]
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        chain.append(pid)
    return chain


def _kill_host_of(held: Path, workers: list[int]) -> None:
    """SIGKILL the worker whose executor runs the held task, and that executor: a machine
    lost mid-task, so the task fails for certain whatever the timing."""
    chain = _ancestors(int(held.read_text()))
    worker = next(p for p in chain if p in workers)
    executor = chain[chain.index(worker) - 1]
    os.kill(executor, signal.SIGKILL)
    os.kill(worker, signal.SIGKILL)


def test_worker_killed_mid_campaign_loses_and_duplicates_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    config = tmp_path / "c.toml"
    config.write_text(
        f'backend = "{FAKE}"\nid = "cluster"\nvariant = "buggy"\nschedules = 160\n'
        f'chunk_size = 20\nduration_s = 3.0\nout = "{out}"\nshrink = false\n'
        "[workload]\nwork_ms = 50\n"
    )
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gapless"),
            "fuzz",
            "--config",
            str(config),
            "--master",
            f"spark://127.0.0.1:{cluster.port}",
            "--json",
        ],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    held = tmp_path / "held"
    deadline = time.monotonic() + 120
    killed = False
    while time.monotonic() < deadline and proc.poll() is None:
        if held.exists() and held.read_text():
            _kill_host_of(held, [cluster.pid(WORKER, 1), cluster.pid(WORKER, 2)])
            killed = True
            break
        time.sleep(0.1)
    stdout, stderr = proc.communicate(timeout=300)
    assert killed, f"seed {HELD_SEED} never ran before the campaign ended"
    assert proc.returncode == 1, stderr  # the buggy variant fails some schedules
    summary = json.loads(stdout)
    assert summary["schedules"] == 160
    assert summary["executed"] == 160 - summary["skipped"]
    assert summary["spark_failed_tasks"] >= 1  # the kill cost a task: Spark re-ran it

    rows = read_rows(out / "campaign_id=cluster").to_pylist()
    assert [r["seed"] for r in rows] == list(range(160))  # each seed exactly once
    parts = sorted(p.name for p in (out / "campaign_id=cluster").glob("part-*.parquet"))
    assert len(parts) == 8

    local = load_config(
        None,
        fake_overrides(
            tmp_path,
            variant="buggy",
            schedules=160,
            duration_s=3.0,
            shrink=False,
            id="local",
            workload={"work_ms": 50},
        ),
    )
    local_rows = read_rows(run_campaign(local, executor="processes").directory).to_pylist()
    keys = ("seed", "verdict", "invariant", "schedule_digest", "trace_digest")
    assert [tuple(r[k] for k in keys) for r in rows] == [
        tuple(r[k] for k in keys) for r in local_rows
    ]
