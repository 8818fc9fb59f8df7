"""ZeroMQ trace files: round trip, offline verdicts equal to online ones, malformed files
refused with the line named, ``gapless check`` on them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _zmq_scenarios import BASIC, TREE
from click.testing import CliRunner

from gapless.cli.main import cli
from gapless.impl.zmq.variants import policy_named
from gapless.invariants.tracefile import TraceFileError
from gapless.invariants.zmq import check
from gapless.invariants.zmq_tracefile import (
    check_zmq_trace_file,
    read_zmq_trace,
    write_zmq_trace,
)
from gapless.models.zmq_net import run_script

KEPT = ("subscribe", "publish", "send", "receive", "deliver", "link", "fault")


def test_round_trip_keeps_every_judged_record(tmp_path: Path) -> None:
    net = run_script(TREE, BASIC)
    path = tmp_path / "t.jsonl"
    n = write_zmq_trace(path, TREE, net.records, meta={"why": "test"})
    tf = read_zmq_trace(path)
    kept = [r for r in net.records if r.kind in KEPT]
    assert n == len(kept) == len(tf.records)
    assert list(tf.records) == kept
    assert tf.topology == TREE
    assert tf.meta == {"why": "test"}


def test_offline_verdict_equals_online(tmp_path: Path) -> None:
    bad = run_script(TREE, BASIC, policy=policy_named("no-unsubscribe-on-disconnect"))
    path = tmp_path / "bug.jsonl"
    write_zmq_trace(path, TREE, bad.records)
    _, offline = check_zmq_trace_file(path)
    assert offline == check(TREE, bad.records) != []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"format": "gapless-trace", "version": 2, "protocol": "zmq"}', ":1: the header"),
        ("not json", ":1: not JSON"),
    ],
)
def test_a_malformed_header_is_refused(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(TraceFileError, match=message):
        read_zmq_trace(path)


def test_a_malformed_record_names_its_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_zmq_trace(path, TREE, run_script(TREE, BASIC).records[:3])
    lines = path.read_text().splitlines()
    lines[2] = re.sub(r'"seq": \d+', '"seq": "two"', lines[2])
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFileError, match=r":3: field 'seq' = 'two' is not int"):
        read_zmq_trace(path)


def test_gapless_check_judges_a_zmq_trace(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_zmq_trace(good, TREE, run_script(TREE, BASIC).records)
    bug = run_script(TREE, BASIC, policy=policy_named("xsub-filters-for-first-peer"))
    write_zmq_trace(bad, TREE, bug.records)
    runner = CliRunner()
    ok = runner.invoke(cli, ["check", str(good)])
    assert ok.exit_code == 0, ok.output
    assert "4 invariants hold" in ok.output
    failed = runner.invoke(cli, ["check", str(bad), "--invariant", "completeness"])
    assert failed.exit_code == 1
    assert "completeness violated" in failed.output
