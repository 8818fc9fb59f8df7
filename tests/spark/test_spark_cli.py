"""The commands end to end (subprocesses): fuzz, replay, report, zoo; bad input exits 2 and
writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from spark_helpers import FAKE, gapless


def _config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(
        f'backend = "{FAKE}"\nschedules = 30\nduration_s = 3.0\nout = "{tmp_path / "out"}"\n'
        + extra
    )
    return path


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def test_fuzz_json_summary_replay_and_report(tmp_path: Path) -> None:
    config = _config(tmp_path, 'variant = "buggy"\n')
    proc = gapless("fuzz", "--config", str(config), "--executor", "loop", "--json")
    assert proc.returncode == 1, proc.stderr  # violations found
    summary = json.loads(proc.stdout)
    for key in ("schedules", "passed", "failed", "errors", "timeouts"):
        assert isinstance(summary[key], int)
    assert summary["schedules"] == 30
    assert summary["failed"] > 0
    assert summary["passed"] + summary["failed"] == 30
    assert summary["by_invariant"] == {"gapless": summary["failed"]}
    assert summary["counterexamples"]
    cx = summary["counterexamples"][0]
    diagram = tmp_path / "d.mmd"
    proc = gapless("replay", cx, "--diagram", str(diagram))
    assert proc.returncode == 0, proc.stderr
    assert "VIOLATION at" in proc.stdout
    assert diagram.read_text().startswith("sequenceDiagram")
    proc = gapless("report", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "out" / "report" / "index.html").read_text()
    assert "seed-" in page
    assert len(list((tmp_path / "out" / "report").glob("*.png"))) == 4


def test_correct_variant_exits_zero_and_flags_override(tmp_path: Path) -> None:
    config = _config(tmp_path)
    proc = gapless(
        "fuzz",
        "--config",
        str(config),
        "--executor",
        "loop",
        "--schedules",
        "12",
        "--campaign-id",
        "small",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["schedules"] == 12
    assert summary["campaign_id"] == "small"
    assert summary["failed"] == 0


def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cases = [
        ("fuzz", "--config", str(_config(tmp_path)), "--schedules", "0"),
        ("fuzz", "--config", str(_config(tmp_path)), "--variant", "nope"),
        ("fuzz", "--config", str(_config(tmp_path)), "--master", "yarn://x"),
        ("fuzz", "--protocol", "nope", "--out", str(out)),
        ("fuzz", "--config", str(tmp_path / "missing.toml")),
        ("replay", str(tmp_path / "missing.json")),
        ("report", str(tmp_path)),
    ]
    for args in cases:
        proc = gapless(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "allowed" in proc.stderr or "expected" in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert not out.exists()
    blocker = tmp_path / "blocker"
    blocker.write_text("keep")
    proc = gapless("fuzz", "--config", str(_config(tmp_path)), "--out", str(blocker / "x"))
    assert proc.returncode == 2
    assert "is a file" in proc.stderr
    assert blocker.read_text() == "keep"
    truncated = tmp_path / "t.json"
    truncated.write_text('{"format": "gapless-counterexample/1", "se')
    before = _tree(tmp_path)
    proc = gapless("replay", str(truncated), "--diagram", str(tmp_path / "d.mmd"))
    assert proc.returncode == 2
    assert "not valid JSON" in proc.stderr
    assert _tree(tmp_path) == before


def test_zoo_reports_every_bug_and_the_correct_protocol(tmp_path: Path) -> None:
    config = _config(tmp_path)
    proc = gapless("zoo", "--config", str(config), "--executor", "loop", "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert [r["bug"] for r in results] == ["buggy", "none"]
    buggy, none = results
    assert buggy["detected"] is True
    assert buggy["schedules_to_detect"] >= 1
    assert buggy["shrunk_fault_events"] == 2
    assert none["detected"] is False
    assert none["schedules_to_detect"] is None


def test_sigint_keeps_finished_chunks_and_resume_completes(tmp_path: Path) -> None:
    """Deterministic whatever the machine's load (issue 12, defect 9): the run of seed 12
    holds (a test hook of the fake backend) after chunks 0-4 and 5-9 are committed, and the
    SIGINT is sent only once it holds."""
    import signal
    import subprocess
    import sys
    import time

    from spark_helpers import fake_env

    config = _config(
        tmp_path, 'id = "int"\nchunk_size = 5\nshrink = false\n[workload]\nwork_ms = 20\n'
    )
    config.write_text(config.read_text().replace("schedules = 30", "schedules = 100"))
    held = tmp_path / "held"
    bin_ = str(Path(sys.executable).parent / "gapless")
    proc = subprocess.Popen(
        [bin_, "fuzz", "--config", str(config), "--executor", "loop", "--json"],
        env=fake_env(GAPLESS_FAKE_HOLD=f"12:{held}"),
        # a test run started in the background (``&`` in a script, nohup) ignores SIGINT, and
        # so would this child: give it the default disposition, so Python turns SIGINT into
        # KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not held.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert held.exists(), "the run never reached seed 12"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    first = json.loads(stdout)
    assert first["interrupted"] is True
    assert first["schedules"] == 100  # requested
    assert first["schedules_committed"] == 10  # chunks 0-4 and 5-9; 10-14 was cut off
    proc2 = gapless("fuzz", "--config", str(config), "--executor", "loop", "--json")
    assert proc2.returncode == 0, proc2.stderr
    second = json.loads(proc2.stdout)
    assert second["skipped"] == first["schedules_committed"]
    assert second["executed"] == 100 - first["schedules_committed"]
    assert second["schedules"] == 100


def test_a_gd_counterexample_exports_a_trace_that_check_convicts(tmp_path: Path) -> None:
    config = tmp_path / "gd.toml"
    config.write_text(
        'protocol = "gd"\nvariant = "unlogged-is-published"\ntopology = "fig3"\n'
        f'schedules = 2\nseed = 1\nduration_s = 2.0\nout = "{tmp_path / "out"}"\n'
        "[workload]\nrate_per_pubend = 10.0\ndrain_s = 2.0\n"
    )
    proc = gapless("fuzz", "--config", str(config), "--executor", "loop", "--json")
    assert proc.returncode == 1, proc.stderr
    cx = json.loads(proc.stdout)["counterexamples"][0]
    trace = tmp_path / "cx.jsonl"
    proc = gapless("replay", cx, "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    assert f"trace: {trace}" in proc.stdout
    proc = gapless("check", str(trace), "--json")
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["violation"]["invariant"] == "logged_first"
    # the fake backend cannot write trace files: refused before replaying, nothing written
    (tmp_path / "f").mkdir()
    fake = _config(tmp_path / "f", 'variant = "buggy"\n')
    proc = gapless("fuzz", "--config", str(fake), "--executor", "loop", "--json")
    fcx = json.loads(proc.stdout)["counterexamples"][0]
    proc = gapless("replay", fcx, "--trace", str(tmp_path / "f" / "t.jsonl"))
    assert proc.returncode == 2
    assert "cannot write trace files" in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "f" / "t.jsonl").exists()


def test_replay_refuses_an_unwritable_trace_path(tmp_path: Path) -> None:
    proc = gapless("replay", str(tmp_path / "cx.json"), "--trace", str(tmp_path / "no" / "t.jsonl"))
    assert proc.returncode == 2
    assert "--trace" in proc.stderr
    assert "existing writable directory" in proc.stderr
    assert list(tmp_path.iterdir()) == []
