"""``gapless bench durable`` runs end to end on a tiny workload: every figure and target is
there, the two sides wrote what the workload implies, bad parameters are refused."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gapless.benchmarks.durable import run
from gapless.cli.main import cli


def test_bench_durable_tiny_run() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "durable",
            "--json",
            "--param",
            "seconds=1",
            "--param",
            "kills=1",
            "--param",
            "constream_events=5",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["events"] == 800
    assert out["mean_matching"] == 25.0
    assert out["record_bytes_per_event"] == 8 + 8 + 16 * 25  # frame + 8 + 16 n
    assert out["paper_record_bytes_per_event"] == 408.0
    assert out["log_wchar"] == 800 * 25 * (8 + 418)  # every copy, framed
    assert out["crash_kills"] == 1
    assert out["pfs_write_us_10000"] > 0
    assert out["pfs_write_cost_ratio_10000"] > 0
    assert out["python_ns_per_iteration"] > 0
    assert set(out["targets"]) == {
        "pfs_bytes_ratio",
        "pfs_time_ratio",
        "crash_acknowledged_lost",
        "crash_inconsistent",
        "constream_cost_ratio_10000",
    }
    assert out["constream_events"] == 5
    assert out["constream_us_10000"] > 0
    assert out["targets"]["crash_acknowledged_lost"]["met"]


def test_bench_durable_refuses_bad_params() -> None:
    with pytest.raises(ValueError, match="unknown parameter"):
        run(speed="3")
    with pytest.raises(ValueError, match="integers"):
        run(seconds="many")
