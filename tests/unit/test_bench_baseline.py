"""``gapless bench NAME --baseline PATH``: the same benchmark run by an older checkout, side by
side, in one run on one machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gapless.benchmarks._baseline import BaselineError, run_baseline, speedups
from gapless.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def test_speedups_say_which_way_is_better() -> None:
    new = {"rate": 200.0, "cost_us": 5.0, "other": 1}
    old = {"rate": 100.0, "cost_us": 10.0}
    assert speedups(new, old, {"rate": "higher", "cost_us": "lower", "missing": "higher"}) == {
        "cost_us": 2.0,
        "rate": 2.0,
    }


def test_the_baseline_runs_the_old_checkouts_code(tmp_path: Path) -> None:
    """A fake 'older checkout': this tree's folders, but a benchmark whose ``run`` says where
    it was imported from — the child process must import the checkout, not the installed
    package."""
    old = tmp_path / "old"
    old.mkdir()
    for folder in ("spec", "impl", "invariants", "models"):
        (old / folder).symlink_to(ROOT / folder, target_is_directory=True)
    (old / "benchmarks").mkdir()
    (old / "benchmarks" / "__init__.py").write_text("", encoding="utf-8")
    (old / "benchmarks" / "probe.py").write_text(
        "def run():\n    return {'where': __file__, 'rate': 1.0}\n", encoding="utf-8"
    )
    got = run_baseline(str(old), "probe")
    assert got["rate"] == 1.0
    assert "gapless-baseline-" in got["where"]  # imported through the linked package


def test_a_bad_baseline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="not a gapless checkout"):
        run_baseline(str(tmp_path), "streams")
    r = CliRunner().invoke(cli, ["bench", "streams", "--baseline", str(tmp_path)])
    assert r.exit_code == 2
    assert "not a gapless checkout" in r.output


def test_sim_derives_a_baseline_iterations_per_message_from_its_speed() -> None:
    from gapless.benchmarks.sim import baseline_figures

    new = {"fig3_published": 5900, "python_ns_per_iteration": 200.0}
    # 60 simulated s at 10x per CPU s: 6 CPU s over 5,900 messages at 200 ns per iteration
    got = baseline_figures({"sim_speedup_fig3_per_cpu_s": 10.0}, new)
    assert got["iterations_per_message_fig3"] == round(6e9 / 5900 / 200.0, 1)
    # a baseline that reports the figure keeps its own; one without a speed gets none
    assert baseline_figures({"iterations_per_message_fig3": 7.0}, new) == {
        "iterations_per_message_fig3": 7.0
    }
    assert "iterations_per_message_fig3" not in baseline_figures({}, new)
