"""``gapless bench campaign --param without=NAME``: what invariants cost, each schedule judged
with and without them in one process; bad parameters are refused naming what is allowed."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gapless.benchmarks import campaign
from gapless.cli.main import cli
from gapless.spark_fuzz.config import load_config


def test_without_leaves_the_named_invariants_out_of_every_setup() -> None:
    config = load_config(str(campaign.DEMO), {"out": "out/x"})
    lean = campaign._without(config, ("canonical_state", "quiet_delivery"))
    assert "canonical_state" not in lean.invariants
    assert "safety" in lean.invariants
    # a mix setup that names its own invariants keeps them, less the named ones
    best = lean.mix["best-effort"]["invariants"]
    assert "quiet_delivery" not in best
    assert "safety" in best
    assert config.mix["best-effort"]["invariants"] != best


@pytest.mark.parametrize(
    ("param", "says"),
    [
        ("without=nope", "without=nope names no invariant of gd; allowed: safety"),
        ("without=", "names no invariant; expected NAME"),
        ("schedules=0", "schedules='0' is not allowed; expected an integer >= 1"),
        ("seeds=3", "--param seeds is not allowed; allowed: schedules, without"),
    ],
)
def test_bad_parameters_exit_2_naming_what_is_allowed(param: str, says: str) -> None:
    got = CliRunner().invoke(cli, ["bench", "campaign", "--param", param])
    assert got.exit_code == 2
    assert says in got.output


def test_two_schedules_with_and_without_canonical_state() -> None:
    got = CliRunner().invoke(
        cli,
        [
            "bench",
            "campaign",
            "--json",
            "--param",
            "schedules=2",
            "--param",
            "without=canonical_state",
        ],
    )
    assert got.exit_code == 0, got.output
    out = json.loads(got.output)
    assert out["schedules"] == 2
    assert out["without"] == ["canonical_state"]
    assert out["verdicts"] == out["verdicts_without"] == {"pass": 2}
    assert out["cost_ratio"] == pytest.approx(out["cpu_s"] / out["cpu_s_without"], rel=0.05)
    assert "python_ns_per_iteration" in out
