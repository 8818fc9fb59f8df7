"""A counterexample file that is invalid or inconsistent is bad input (issue 12, defects 4 and
5): ``gapless replay`` refuses it with exit 2, naming the key, before running anything. A file
whose top-level ``variant`` disagrees with its ``spec.variant`` would otherwise make the correct
protocol appear broken (a file claiming ``"none"`` "reproducing" a violation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gapless.cli.main import cli
from gapless.spark_fuzz.backend import load_backend
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.counterexample import (
    Counterexample,
    CounterexampleError,
    load_counterexample,
    to_data,
)

VARIANT = "unlogged-is-published"


@pytest.fixture
def gd_cx(tmp_path: Path) -> dict[str, Any]:
    """A valid GD counterexample's data (a crash of b1 in Figure 3), not yet shrunk."""
    config = load_config(
        None,
        {
            "protocol": "gd",
            "variant": VARIANT,
            "duration_s": 2.0,
            "workload": {"rate_per_pubend": 10.0, "drain_s": 2.0},
            "out": str(tmp_path / "out"),
        },
    )
    backend = load_backend("gd")
    spec = backend.make_spec(config)
    crash = {
        "kind": "crash",
        "at_us": 500_000,
        "duration_us": 300_000,
        "target": "b1",
        "stream": 7,
        "stall_us": 0,
        "probability": 0.0,
        "max_delay_us": 0,
    }
    cx = Counterexample(
        campaign_id="t",
        protocol="gd",
        backend=None,
        variant=VARIANT,
        topology="fig3",
        seed=1,
        invariant="logged_first",
        explanation="",
        spec=backend.spec_to_data(spec),
        schedule={"seed": 1, "events": [crash]},
        original_fault_events=1,
        shrunk_fault_events=1,
        duration_s=None,
        workload_scale=1.0,
        trace_digest="",
        shrink_runs=0,
    )
    return to_data(cx)


def _save(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "cx.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_fixture_is_a_valid_counterexample(gd_cx: dict[str, Any], tmp_path: Path) -> None:
    assert load_counterexample(_save(tmp_path, gd_cx)).variant == VARIANT


def _edit(data: dict[str, Any], where: str, value: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(data))
    *path, last = where.split(".")
    node = data
    for key in path:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return data


@pytest.mark.parametrize(
    ("where", "value", "fragment"),
    [
        ("spec.variant", "nope", "unknown variant 'nope'"),
        ("variant", "nope", "'variant' = 'nope'"),
        ("variant", "none", "'variant' = 'none' disagrees with spec.variant"),
        ("topology", "total-order", "'topology' = 'total-order' disagrees with spec.topology"),
        ("schedule.events.0.target", "b99", "target 'b99'"),
        ("schedule.events.0.kind", "meteor", "kind 'meteor'"),
    ],
)
def test_an_invalid_or_inconsistent_counterexample_is_refused(
    gd_cx: dict[str, Any], tmp_path: Path, where: str, value: Any, fragment: str
) -> None:
    path = _save(tmp_path, _edit(gd_cx, where, value))
    with pytest.raises(CounterexampleError, match=fragment):
        load_counterexample(path)
    result = CliRunner().invoke(cli, ["replay", str(path), "--diagram", str(tmp_path / "d.mmd")])
    assert result.exit_code == 2, (result.output, result.exception)
    assert fragment in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert not (tmp_path / "d.mmd").exists()
