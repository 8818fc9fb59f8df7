"""ZeroMQ trace files: round trip, offline verdicts equal to online ones, malformed files
refused with the line named, ``gapless check`` on them."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
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
        ('{"format": "gapless-trace", "version": 3, "protocol": "zmq"}', ":1: the header"),
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
    lines[2] = re.sub(r'"seq": ?\d+', '"seq": "two"', lines[2])
    path.write_text("\n".join(_resealed(lines[:-1])) + "\n")  # a writer's bad field, not an edit
    with pytest.raises(TraceFileError, match=r":3: field 'seq' = 'two' is not int"):
        read_zmq_trace(path)


def _resealed(lines: list[str]) -> list[str]:
    """``lines`` (header and records) with the end record that vouches for them."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8") + b"\n")
    return [*lines, json.dumps({"end": {"records": len(lines) - 1, "sha256": digest.hexdigest()}})]


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


def _written(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "t.jsonl"
    write_zmq_trace(path, TREE, run_script(TREE, BASIC).records)
    return path, path.read_text().splitlines()


def test_the_end_record_vouches_for_every_line(tmp_path: Path) -> None:
    path, lines = _written(tmp_path)
    end = json.loads(lines[-1])["end"]
    assert end["records"] == len(lines) - 2
    tf = read_zmq_trace(path)
    assert tf.complete is True
    assert len(tf.records) == end["records"]


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (lambda ls: ls[:-1], "incomplete: no end record"),  # the end record itself lost
        (lambda ls: ls[: len(ls) // 2], "incomplete: no end record"),  # head -n
        (lambda ls: [*ls[:5], *ls[6:]], "says .* records, the file holds"),  # a line dropped
        (lambda ls: [*ls, ls[3]], "a line after the end record"),
        (lambda ls: [*ls[:3], ls[3].replace('"time":', '"time":1'), *ls[4:]], "sha256"),
    ],
    ids=["no-end", "head", "dropped-line", "line-after", "edited"],
)
def test_a_cut_or_edited_file_is_refused(
    tmp_path: Path, cut: Callable[[list[str]], list[str]], message: str
) -> None:
    path, lines = _written(tmp_path)
    path.write_text("\n".join(cut(lines)) + "\n")
    with pytest.raises(TraceFileError, match=message):
        read_zmq_trace(path)
    refused = CliRunner().invoke(cli, ["check", str(path)])
    assert refused.exit_code == 2, refused.output


def test_a_version_1_file_is_read_with_a_warning(tmp_path: Path) -> None:
    path, lines = _written(tmp_path)
    header = json.loads(lines[0])
    header["version"] = 1
    path.write_text("\n".join([json.dumps(header), *lines[1:-1]]) + "\n")
    tf = read_zmq_trace(path)
    assert tf.complete is None
    assert len(tf.records) == len(lines) - 2
    checked = CliRunner().invoke(cli, ["check", str(path)])
    assert checked.exit_code == 0, checked.output
    assert "version-1 trace file" in checked.output
    fresh = CliRunner().invoke(cli, ["check", str(_written(tmp_path)[0])])
    assert "version-1" not in fresh.output


def test_a_file_written_before_the_shared_envelope_still_reads(tmp_path: Path) -> None:
    """The writer's layout before it used the shared envelope (dft6): ``", "`` and ``": "``
    separators; the same records read back."""
    path, lines = _written(tmp_path)
    old = tmp_path / "old.jsonl"
    body = [json.dumps(json.loads(line), sort_keys=True) for line in lines[:-1]]
    old.write_text("\n".join(_resealed(body)) + "\n")
    assert old.read_text() != path.read_text()
    assert read_zmq_trace(old).records == read_zmq_trace(path).records
    assert read_zmq_trace(old).complete is True
