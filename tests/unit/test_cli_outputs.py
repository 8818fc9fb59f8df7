"""Every output path a command will write is checked before any work (issue 12, defect 3):
an unwritable place is bad input, exit 2, nothing written, nothing run. Checked by creating
(and removing) a probe file, since permission bits do not stop root but ``/sys`` and
``/proc`` do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gapless.cli.main import cli


def _never(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("the run started before its output paths were checked")


@pytest.mark.parametrize("option", ["--plot", "--trace"])
@pytest.mark.parametrize("place", ["/sys/gapless-never.png", "/proc/gapless-never.png", "{dir}"])
def test_simulate_refuses_an_unwritable_output_before_running(
    option: str, place: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gapless.models.runner as runner

    monkeypatch.setattr(runner, "run_scenario", _never)
    (tmp_path / "a-directory.png").mkdir()
    target = place.replace("{dir}", str(tmp_path / "a-directory.png"))
    if option == "--trace":
        target = target.replace(".png", ".jsonl")
        (tmp_path / "a-directory.jsonl").mkdir()
    before = sorted(tmp_path.rglob("*"))
    result = CliRunner().invoke(cli, ["simulate", "--scenario", "gd-crash-p1", option, target])
    assert result.exit_code == 2, (result.output, result.exception)
    assert option in result.stderr
    assert "cannot be written" in result.stderr
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("option", ["--diagram", "--trace"])
def test_replay_refuses_an_unwritable_output_before_running(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gapless.spark_fuzz.counterexample as counterexample

    monkeypatch.setattr(counterexample, "load_counterexample", _never)
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "cx.json"), option, "/sys/x.mmd"])
    assert result.exit_code == 2, (result.output, result.exception)
    assert "cannot be written" in result.stderr
