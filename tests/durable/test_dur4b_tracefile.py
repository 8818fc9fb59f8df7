"""Durable trace files (``gapless-trace`` version 3, ``invariants/durable/tracefile.py``) and
the shared envelope they use (``invariants/trace_envelope.py``): the verdict judged from the
file equals the online verdict (the correct protocol and planted bugs), a planted bug's trace
is caught from the file alone by ``gapless check``, and truncated, edited or foreign files are
refused with the line and what is wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_durbind_protocol import FAULTS, _spec

from gapless.cli.check_cmd import check
from gapless.invariants.durable.tracefile import (
    read_durable_trace,
    trace_check,
    write_durable_trace,
)
from gapless.invariants.trace_envelope import read_envelope, write_envelope
from gapless.invariants.tracefile import TraceFileError
from gapless.models.protocols import protocol, scenario
from gapless.models.run import run_context, simulate
from gapless.spec.filters import reference_matcher

MATCH = reference_matcher()


def _write(tmp_path: Path, variant: str) -> tuple[Path, object]:
    spec = _spec(variant)
    out = simulate(spec, FAULTS, 1, record_trace=True)
    path = tmp_path / f"{variant}.trace"
    trace = out.trace or ()
    write_durable_trace(
        path,
        run_context(spec, 1),
        trace,
        live_end=out.verdict != "timeout",
        end=(trace[-1].seq + 1, out.end_time_us),
    )
    return path, out


@pytest.mark.parametrize(
    "variant",
    ["none", "back-pointer-off-by-one", "gap-to-non-catchup", "l-above-td", "switchover-early"],
)
def test_the_file_gives_the_online_verdict(tmp_path: Path, variant: str) -> None:
    path, out = _write(tmp_path, variant)
    tf, v = trace_check(path, matches=MATCH)
    assert len(tf.records) > 100
    online = out.violation  # type: ignore[attr-defined]
    if variant == "none":
        assert out.verdict == "pass"  # type: ignore[attr-defined]
        assert v is None
        return
    assert online is not None
    assert v is not None
    got = (v.invariant, v.subject, v.pubend, v.tick, v.time)
    assert got == (online.invariant, online.subject, online.pubend, online.tick, online.time)


def test_a_planted_bugs_trace_is_caught_from_the_file_alone(tmp_path: Path) -> None:
    path, _out = _write(tmp_path, "back-pointer-off-by-one")
    res = CliRunner().invoke(check, [str(path), "--json"])
    assert res.exit_code == 1, res.output
    verdict = json.loads(res.output)
    assert verdict["verdict"] == "violation"
    assert verdict["violation"]["invariant"] == "durable_exactly_once"
    assert verdict["complete"] is True
    # judged without that invariant, the file passes: the verdict comes from the records
    _tf, v = trace_check(path, ("release_horizon", "release_rule", "gap_legal"), matches=MATCH)
    assert v is None


def test_liveness_is_judged_at_the_end_from_the_file(tmp_path: Path) -> None:
    """A correct run's file without what happened after 4 s but its events (rewritten with
    a proper end record) fails no-loss at the end, and passes when liveness is off."""
    path, _out = _write(tmp_path, "none")
    tf = read_durable_trace(path, matches=MATCH)
    keep = [r for r in tf.records if r.kind == "dur_event" or r.time < 4_000_000]
    cut = tmp_path / "cut.trace"
    write_durable_trace(cut, tf.context, keep, live_end=True, end=tf.end)
    _tf, v = trace_check(cut, matches=MATCH)
    assert v is not None
    assert v.invariant == "durable_exactly_once"
    assert "never delivered" in v.message
    assert trace_check(cut, matches=MATCH, live_end=False)[1] is None


def test_truncated_edited_and_foreign_files_are_refused(tmp_path: Path) -> None:
    path, _out = _write(tmp_path, "none")
    lines = path.read_text().splitlines()
    cut = tmp_path / "cut.trace"
    cut.write_text("\n".join(lines[:-5]) + "\n")
    with pytest.raises(TraceFileError, match="incomplete: no end record"):
        read_durable_trace(cut, matches=MATCH)
    edited = tmp_path / "edited.trace"
    edited.write_text("\n".join([lines[0], *lines[2:]]) + "\n")
    with pytest.raises(TraceFileError, match="records, the file holds"):
        read_durable_trace(edited, matches=MATCH)
    v2 = tmp_path / "v2.trace"
    header = json.loads(lines[0])
    write_envelope(v2, {**header, "version": 2}, [])
    with pytest.raises(TraceFileError, match="protocol 'durable', version 3"):
        read_durable_trace(v2, matches=MATCH)
    bad = tmp_path / "bad.trace"
    write_envelope(
        bad, header, [{"seq": 0, "time": 0, "node": "x", "kind": "dur_nope", "detail": {}}]
    )
    with pytest.raises(TraceFileError, match="line 2: kind 'dur_nope'"):
        read_durable_trace(bad, matches=MATCH)


def test_the_envelope_round_trips_and_checks_its_digest(tmp_path: Path) -> None:
    p = tmp_path / "t.trace"
    header = {"format": "gapless-trace", "version": 3, "protocol": "x"}
    assert write_envelope(p, header, [{"a": 1}, {"b": [2]}]) == 2
    env = read_envelope(p, protocol="x", versions=(3,))
    assert env.rows == ((2, {"a": 1}), (3, {"b": [2]}))
    text = p.read_text().replace('{"a":1}', '{"a":2}')
    p.write_text(text)
    with pytest.raises(TraceFileError, match="sha256 does not match"):
        read_envelope(p, protocol="x", versions=(3,))


def test_the_registry_entry_writes_and_judges_durable_traces(tmp_path: Path) -> None:
    entry = protocol("durable")
    assert entry.write_trace is not None
    assert entry.trace_check is not None
    spec = _spec("gap-to-non-catchup")
    out = simulate(spec, FAULTS, 1, record_trace=True)
    path = tmp_path / "w.trace"
    entry.write_trace(path, scenario("dur-early-release"), out, run_context(spec, 1))
    res = CliRunner().invoke(check, [str(path)])
    assert res.exit_code == 1, res.output
    assert "gap_legal" in res.output


def test_a_fuzzed_counterexample_replays_to_a_durable_trace_file(tmp_path: Path) -> None:
    """``gapless fuzz`` finds a planted bug under an ``older_ct`` fault, ``gapless replay
    --trace`` writes the run as a durable trace file, and ``gapless check`` convicts it."""
    config = tmp_path / "dur.toml"
    config.write_text(
        'protocol = "durable"\nvariant = "gap-to-non-catchup"\ntopology = "dur-two"\n'
        f'schedules = 1\nseed = 1\nduration_s = 3.0\nout = "{tmp_path / "out"}"\n'
        '[workload]\nrate_per_pubend = 20.0\nsubscribers_per_shb = 2\nfilters = "keys"\n'
        'keys = 4\ndrain_s = 2.0\n[faults]\nprofile = "rates"\n[faults.rates]\nolder_ct = 2.0\n'
    )
    exe = str(Path(sys.executable).parent / "gapless")

    def gapless(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([exe, *args], capture_output=True, text=True, check=False)

    proc = gapless("fuzz", "--config", str(config), "--executor", "loop", "--json")
    assert proc.returncode == 1, proc.stderr
    cx = json.loads(proc.stdout)["counterexamples"][0]
    trace = tmp_path / "cx.trace"
    proc = gapless("replay", cx, "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    assert "trace digest: match" in proc.stdout
    proc = gapless("check", str(trace), "--json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["violation"]["invariant"] == "gap_legal"
