"""Determinism of the real guaranteed-delivery campaign: the same seed gives the same
schedule digest and trace digest in the driver, in Spark executors and in a plain loop,
under any ``PYTHONHASHSEED`` and any number of partitions (each in its own subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

SEEDS = 6
OVERRIDES: dict[str, Any] = {
    "protocol": "gd",
    "topology": "fig3",
    "schedules": SEEDS,
    "seed": 11,
    "duration_s": 2.0,
    "workload": {"drain_s": 1.5, "filters": "mixed"},
    "faults": {"profile": "swarm"},
    "shrink": False,
    "master": "local[2]",
}

LOOP = """
import json, sys
from gapless.spark_fuzz.config import load_config, canonical_json
from gapless.spark_fuzz.execute import run_seed
config = load_config(None, json.loads(sys.argv[1]))
cj = canonical_json(config.to_data())
rows = [run_seed(cj, s).row for s in config.seeds()]
print("RESULT " + json.dumps({r["seed"]: [r["schedule_digest"], r["trace_digest"], r["verdict"]]
                               for r in rows}))
"""

SPARK = """
import json, sys
from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import load_config, canonical_json
from gapless.spark_fuzz.execute import run_seed
from gapless.spark_fuzz.session import start_spark
from gapless.spark_fuzz.store import read_rows
overrides = json.loads(sys.argv[1])
sc = start_spark("local[2]")
out = {}
for chunk in (1, 4):
    config = load_config(None, dict(overrides, chunk_size=chunk, id=f"p{chunk}", out=sys.argv[2]))
    run = run_campaign(config, executor="spark", spark_context=sc)
    out[f"spark-chunk{chunk}"] = {r["seed"]: [r["schedule_digest"], r["trace_digest"], r["verdict"]]
                                 for r in read_rows(run.directory).to_pylist()}
sc.stop()
config = load_config(None, dict(overrides, out=sys.argv[2]))
cj = canonical_json(config.to_data())
out["driver"] = {s: [run_seed(cj, s).row[k] for k in ("schedule_digest", "trace_digest", "verdict")]
                 for s in config.seeds()}
print("RESULT " + json.dumps(out))
"""


def _run(code: str, hashseed: str, *args: str) -> Any:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(OVERRIDES), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise AssertionError(f"subprocess failed ({proc.returncode}): {proc.stderr[-3000:]}")


def test_same_seed_same_digest_everywhere(tmp_path: Path) -> None:
    loop_a = _run(LOOP, "0")
    loop_b = _run(LOOP, "4242")
    spark = _run(SPARK, "99", str(tmp_path / "out"))
    assert len(loop_a) == SEEDS
    for digests in loop_a.values():
        assert digests[2] in ("pass", "violation"), loop_a  # a real run, not an error
        assert len(digests[1]) == 64
    assert loop_a == loop_b
    assert spark["driver"] == loop_a
    assert spark["spark-chunk1"] == loop_a
    assert spark["spark-chunk4"] == loop_a
