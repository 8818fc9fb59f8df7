"""Exit codes mean one thing each (issue 12): 0 pass, 1 a violation or failed pass mark, 2 bad
input with nothing written, 3 an internal error (one paragraph, the traceback in a file), 130
interrupted. Each command's mapping is tested here, in process, with the expensive core
replaced by a stand-in that returns the outcome the case needs; the commands' own tiers run
them for real."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gapless.cli.main import EXIT_CODES, cli

ROOT = Path(__file__).resolve().parents[2]


def _boom(*_args: Any, **_kwargs: Any) -> Any:
    raise RuntimeError("boom: something nobody expected")


def _interrupt(*_args: Any, **_kwargs: Any) -> Any:
    raise KeyboardInterrupt


# command -> (module attribute the command calls, arguments that reach that call)
REACHES: dict[str, tuple[str, str, Callable[[Path], list[str]]]] = {
    "prove": ("gapless.spec.proofs", "run_all", lambda _t: ["prove"]),
    "bench": ("gapless.benchmarks.streams", "run", lambda _t: ["bench", "streams"]),
    "check": (
        "gapless.invariants.tracefile",
        "read_protocol",
        lambda t: ["check", str(t / "t.jsonl")],
    ),
    "fuzz": (
        "gapless.spark_fuzz.campaign",
        "run_campaign",
        lambda t: ["fuzz", "--schedules", "1", "--out", str(t / "out")],
    ),
    "replay": (
        "gapless.spark_fuzz.counterexample",
        "load_counterexample",
        lambda t: ["replay", str(t / "cx.json")],
    ),
    "report": ("gapless.spark_fuzz.report", "write_report", lambda t: ["report", str(t)]),
    "protocols": ("gapless.cli.protocols_cmd", "registered", lambda _t: ["protocols"]),
    "zoo": (
        "gapless.spark_fuzz.zoo_campaign",
        "run_zoo",
        lambda t: ["zoo", "--schedules", "1", "--out", str(t / "out"), "--executor", "loop"],
    ),
    "simulate": (
        "gapless.models.runner",
        "run_scenario",
        lambda _t: ["simulate", "--scenario", "gd-crash-p1"],
    ),
}


def _patch(monkeypatch: pytest.MonkeyPatch, command: str, replacement: Any) -> None:
    import importlib

    module, attr, _args = REACHES[command]
    monkeypatch.setattr(importlib.import_module(module), attr, replacement)


@pytest.mark.parametrize("command", sorted(REACHES))
def test_an_unexpected_exception_exits_3_with_one_paragraph_and_a_traceback_file(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crash_dir = tmp_path / "crashes"
    crash_dir.mkdir()
    monkeypatch.setenv("GAPLESS_CRASH_DIR", str(crash_dir))
    monkeypatch.delenv("GAPLESS_TRACEBACK", raising=False)
    _patch(monkeypatch, command, _boom)
    result = CliRunner().invoke(cli, REACHES[command][2](tmp_path))
    assert result.exit_code == 3, (result.output, result.exception)
    assert "Traceback" not in result.output
    err = result.stderr
    assert f"gapless {command}: internal error: RuntimeError: boom" in err
    assert "raised at" in err
    assert "test_exit_codes.py" in err
    (written,) = crash_dir.iterdir()
    assert str(written) in err
    text = written.read_text(encoding="utf-8")
    assert text.startswith("Traceback")
    assert "boom: something nobody expected" in text
    assert len(err.strip().splitlines()) == 1  # one paragraph


def test_gapless_traceback_1_also_prints_the_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GAPLESS_CRASH_DIR", str(tmp_path))
    monkeypatch.setenv("GAPLESS_TRACEBACK", "1")
    _patch(monkeypatch, "check", _boom)
    result = CliRunner().invoke(cli, REACHES["check"][2](tmp_path))
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr


@pytest.mark.parametrize("command", ["check", "simulate", "report"])
def test_an_interrupt_exits_130(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, command, _interrupt)
    result = CliRunner().invoke(cli, REACHES[command][2](tmp_path))
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.stderr


def test_help_and_readme_document_every_exit_code() -> None:
    help_text = CliRunner().invoke(cli, ["--help"]).output
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for code, meaning in EXIT_CODES.items():
        assert f"{code:>3}  {meaning}" in help_text
        assert f"| `{code}` |" in readme, code
    assert set(EXIT_CODES) == {0, 1, 2, 3, 130}


# -- 0 / 1 / 2 of each command ------------------------------------------------------------


def _scenario_result(passed: bool) -> Callable[..., Any]:
    def run(name: str, *, keep_trace: bool = True) -> Any:
        from types import SimpleNamespace

        metrics = {
            "scenario": name,
            "pass": passed,
            "pass_marks": {"claim": passed},
        }
        return SimpleNamespace(spec=None), SimpleNamespace(trace=(), violation=None), metrics

    return run


@pytest.mark.parametrize(("passed", "code"), [(True, 0), (False, 1)])
def test_simulate_maps_pass_marks_to_0_and_1(
    passed: bool, code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, "simulate", _scenario_result(passed))
    result = CliRunner().invoke(cli, ["simulate", "--scenario", "gd-crash-p1", "--json"])
    assert result.exit_code == code, result.output


def _campaign(summary: dict[str, Any], interrupted: bool = False) -> Callable[..., Any]:
    def run(config: Any, **_kwargs: Any) -> Any:
        from types import SimpleNamespace

        full = {
            "campaign_id": config.campaign_id,
            "schedules": 1,
            "schedules_committed": 1,
            "passed": 0,
            "failed": 0,
            "errors": 0,
            "timeouts": 0,
            "by_invariant": {},
            "by_fault_kind": {},
            "executed": 1,
            "skipped": 0,
            "directory": "d",
            **summary,
        }
        return SimpleNamespace(summary=full, interrupted=interrupted)

    return run


@pytest.mark.parametrize(
    ("summary", "interrupted", "code"),
    [
        ({"passed": 1}, False, 0),
        ({"failed": 1}, False, 1),
        ({"errors": 1}, False, 1),
        ({"timeouts": 1}, False, 1),
        ({"passed": 1}, True, 130),
    ],
)
def test_fuzz_maps_verdicts_to_0_1_and_interrupt_to_130(
    summary: dict[str, Any],
    interrupted: bool,
    code: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _patch(monkeypatch, "fuzz", _campaign(summary, interrupted))
    result = CliRunner().invoke(cli, [*REACHES["fuzz"][2](tmp_path), "--json"])
    assert result.exit_code == code, result.output


@pytest.mark.parametrize(
    ("results", "code"),
    [
        ([{"bug": "b", "detected": True}, {"bug": "none", "detected": False}], 0),
        ([{"bug": "b", "detected": False}, {"bug": "none", "detected": False}], 1),
        ([{"bug": "b", "detected": True}, {"bug": "none", "detected": True}], 1),
    ],
)
def test_zoo_maps_detection_to_0_and_1(
    results: list[dict[str, Any]], code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, "zoo", lambda *_a, **_k: results)
    result = CliRunner().invoke(cli, [*REACHES["zoo"][2](tmp_path), "--json"])
    assert result.exit_code == code, result.output


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["simulate", "--scenario", "nope"], "unknown scenario"),
        (["check", "/nonexistent/t.jsonl"], "gapless check"),
        (["bench", "nope"], "Invalid value"),
        (["prove", "--variant", "nope"], "gapless prove"),
        (["fuzz", "--schedules", "0"], "schedules"),
        (["zoo", "--bug", "nope", "--out", "{tmp}/out"], "not a bug of the zoo"),
        (["replay", "/nonexistent/cx.json"], "gapless replay"),
        (["report", "{tmp}/empty"], "gapless report"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    args: list[str], fragment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    result = CliRunner().invoke(cli, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == 2, (result.output, result.exception)
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert sorted(tmp_path.rglob("*")) == before


def test_bench_exits_0_whatever_its_targets_say(monkeypatch: pytest.MonkeyPatch) -> None:
    missed = {"targets": {"t": {"value": 1.0, "target": ">= 2", "met": False}}}
    _patch(monkeypatch, "bench", lambda: dict(missed))
    result = CliRunner().invoke(cli, ["bench", "streams", "--json"])
    assert result.exit_code == 0, result.output


def test_a_failed_spark_job_is_named_in_the_paragraph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Py4J error's first line only says which JVM call failed; the Spark exception on its
    second line says why, so the paragraph carries both (and not the Java stack)."""

    def spark_failed(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError(
            "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.runJob.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in "
            "stage 1.0 failed 4 times\n\tat org.apache.spark.scheduler.DAGScheduler.x(...)"
        )

    monkeypatch.setenv("GAPLESS_CRASH_DIR", str(tmp_path))
    _patch(monkeypatch, "fuzz", spark_failed)
    result = CliRunner().invoke(cli, REACHES["fuzz"][2](tmp_path))
    assert result.exit_code == 3
    assert "PythonRDD.runJob" in result.stderr
    assert "SparkException: Job aborted due to stage failure" in result.stderr
    assert "DAGScheduler" not in result.stderr
