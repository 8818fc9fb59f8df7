"""Trace files (``gapless.invariants.tracefile``): a recorded run written, read back and checked
offline gives the online verdict; edits that break an invariant are caught from the file;
malformed files are refused with the line and field named; ``gapless check`` exit codes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gapless.cli.main import cli
from gapless.impl.effects import Deliver, DeliverCohort
from gapless.impl.trace import Published, TraceRecord
from gapless.invariants import INVARIANTS
from gapless.invariants.tracefile import (
    FORMAT,
    VERSION,
    TraceFileError,
    check_trace_file,
    read_protocol,
    read_trace,
    write_trace,
)
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import run_context, simulate
from gapless.models.runner import RunSpec, generate_schedule
from gapless.models.workload import WorkloadSpec
from gapless.spec.filters import reference_matcher

S = 1_000_000
M = reference_matcher()

FAULTS = FaultSchedule(
    seed=5,
    events=(
        FaultEvent(
            kind="drop",
            at_us=300_000,
            duration_us=600_000,
            target="b1|s1",
            stream=11,
            probability=0.5,
        ),
        FaultEvent(kind="crash", at_us=800_000, duration_us=700_000, target="b3", stream=12),
        FaultEvent(
            kind="reorder",
            at_us=200_000,
            duration_us=900_000,
            target="b2|p1",
            stream=13,
            max_delay_us=30_000,
        ),
    ),
)


def _spec(variant: str = "none", filters: str = "mixed") -> RunSpec:
    return RunSpec(
        variant=variant,
        topology="fig3",
        workload=WorkloadSpec(rate_per_pubend=20.0, subscribers_per_shb=2, filters=filters),
        duration_us=2 * S,
        drain_us=4 * S,
    )


def _write(tmp_path: Path, spec: RunSpec, schedule: FaultSchedule, name: str = "t.jsonl") -> Any:
    outcome = simulate(spec, schedule, 3, record_trace=True)
    path = tmp_path / name
    n = write_trace(
        path,
        run_context(spec, 3),
        outcome.trace,
        live_end=outcome.verdict == "pass",
        meta={"seed": 3},
    )
    assert n == len(outcome.trace)
    return path, outcome


@pytest.fixture(scope="module")
def passing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return _write(tmp_path_factory.mktemp("trace"), _spec(), FAULTS)


def _lines(path: Path) -> list[dict[str, Any]]:
    """The header and the records of a file (its end record left out)."""
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert set(lines[-1]) == {"end"}
    return lines[:-1]


def _signed(lines: list[str]) -> str:
    """The lines with the end record the format specifies: the record count and the sha256
    of every line before it, each followed by a newline."""
    digest = hashlib.sha256("".join(x + "\n" for x in lines).encode("utf-8")).hexdigest()
    end = json.dumps({"end": {"records": len(lines) - 1, "sha256": digest}})
    return "".join(x + "\n" for x in [*lines, end])


def _save(path: Path, lines: list[dict[str, Any]]) -> None:
    """Write edited lines as a complete file (as another implementation would write it)."""
    path.write_text(_signed([json.dumps(x) for x in lines]), encoding="utf-8")


def test_a_faulty_run_read_back_passes_offline_with_the_same_observations(
    passing: tuple[Path, Any],
) -> None:
    path, outcome = passing
    assert outcome.verdict == "pass"
    kinds = {r.kind for r in outcome.trace}
    assert {"drop", "fault", "deliver", "persisted"} <= kinds  # the faults did something
    tf, violation = check_trace_file(path, matches=M)
    assert violation is None
    assert tf.live_end
    assert tf.meta == {"seed": 3}
    assert len(tf.records) == len(outcome.trace)
    for a, b in zip(outcome.trace, tf.records, strict=True):
        assert (a.seq, a.time, a.node, a.kind) == (b.seq, b.time, b.node, b.kind)
        if a.kind in ("send", "receive", "drop"):
            assert a.detail.wire == b.detail.wire
        elif a.kind == "deliver":
            assert (a.detail.pubend, a.detail.tick) == (b.detail.pubend, b.detail.tick)
            assert dict(a.detail.payload.attributes) == dict(b.detail.payload.attributes)
            assert a.detail.payload.published_at == b.detail.payload.published_at
        elif a.kind == "publish":
            assert a.detail == b.detail


@pytest.mark.parametrize(
    ("variant", "filters", "invariant"),
    [("unlogged-is-published", "all", "logged_first"), ("ack-before-delivery", "all", None)],
)
def test_a_planted_bug_is_caught_from_the_file_as_online(
    tmp_path: Path, variant: str, filters: str, invariant: str | None
) -> None:
    path, outcome = _write(tmp_path, _spec(variant, filters), FAULTS)
    assert outcome.verdict == "violation"
    if invariant is not None:
        assert outcome.invariant == invariant
    _tf, violation = check_trace_file(path, matches=M)
    assert violation is not None
    assert violation.invariant == outcome.invariant
    assert (violation.subject, violation.tick) == (
        outcome.violation.subject,
        outcome.violation.tick,
    )


def _first(lines: list[dict[str, Any]], kind: str, pred: Any = lambda _x: True) -> int:
    return next(i for i, x in enumerate(lines) if x.get("kind") == kind and pred(x))


def test_a_deleted_delivery_is_caught(passing: tuple[Path, Any], tmp_path: Path) -> None:
    lines = _lines(passing[0])
    # a delivery in the middle of the run, followed by later ones on the same stream
    i = _first(lines, "deliver", lambda x: x["time"] > 1 * S)
    del lines[i]
    out = tmp_path / "cut.jsonl"
    _save(out, lines)
    _tf, violation = check_trace_file(out, matches=M)
    assert violation is not None
    # the SHB's acks now run ahead of its deliveries, too
    assert violation.invariant in ("gapless", "liveness", "ack_consolidation")
    _tf, violation = check_trace_file(out, ["gapless", "liveness"], matches=M)
    assert violation is not None
    assert violation.invariant in ("gapless", "liveness")


def test_a_repeated_delivery_is_caught(passing: tuple[Path, Any], tmp_path: Path) -> None:
    lines = _lines(passing[0])
    i = _first(lines, "deliver")
    lines.insert(i + 1, dict(lines[i]))
    for k, x in enumerate(lines[1:], start=0):  # renumber
        x["seq"] = k
    out = tmp_path / "dup.jsonl"
    _save(out, lines)
    _tf, violation = check_trace_file(out, matches=M)
    assert violation is not None
    assert violation.invariant in ("exactly_once", "order")


def test_a_changed_payload_is_caught(passing: tuple[Path, Any], tmp_path: Path) -> None:
    lines = _lines(passing[0])
    i = _first(lines, "deliver")
    lines[i]["detail"]["payload"]["attributes"] = {"loc": "nowhere", "forged": 1}
    out = tmp_path / "forged.jsonl"
    _save(out, lines)
    _tf, violation = check_trace_file(out, matches=M)
    assert violation is not None
    assert violation.invariant in ("no_e", "safety")


def test_liveness_is_judged_only_when_the_header_says_the_run_drained(
    passing: tuple[Path, Any], tmp_path: Path
) -> None:
    lines = _lines(passing[0])
    # a prefix of the run, cut while messages are in flight: every safety invariant still
    # holds, but the run did not drain
    cut = [lines[0]] + [x for x in lines[1:] if x["time"] <= 1 * S]
    out = tmp_path / "prefix.jsonl"
    _save(out, cut)
    _tf, violation = check_trace_file(out, matches=M)
    assert violation is not None
    assert violation.invariant == "liveness"
    cut[0]["live_end"] = False
    _save(out, cut)
    assert check_trace_file(out, matches=M)[1] is None
    assert check_trace_file(out, live_end=True, matches=M)[1] is not None


def test_choosing_invariants(passing: tuple[Path, Any], tmp_path: Path) -> None:
    lines = _lines(passing[0])
    i = _first(lines, "deliver")
    lines[i]["detail"]["payload"]["attributes"] = {"forged": 1}
    out = tmp_path / "forged.jsonl"
    _save(out, lines)
    assert check_trace_file(out, ["order", "nack_consolidation"], matches=M)[1] is None
    with pytest.raises(ValueError, match=r"unknown invariant.*allowed: safety"):
        check_trace_file(out, ["no-such"], matches=M)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ls: ls.__setitem__(3, "{not json"), r"line 4: not JSON"),
        (lambda ls: ls.__setitem__(0, json.dumps({"format": "other"})), r"line 1: format 'other'"),
        (
            lambda ls: ls.__setitem__(0, json.dumps({**json.loads(ls[0]), "version": 9})),
            r"line 1: version 9 is not supported; allowed: 1",
        ),
        (
            lambda ls: ls.__setitem__(2, json.dumps({**json.loads(ls[2]), "kind": "teleport"})),
            r"line 3: kind 'teleport' is not one of",
        ),
        (
            lambda ls: ls.__setitem__(2, json.dumps({**json.loads(ls[2]), "seq": -5})),
            r"line 3: record.seq must be an integer >= 0",
        ),
        (
            lambda ls: ls.__setitem__(3, json.dumps({**json.loads(ls[3]), "seq": 0})),
            r"line 4: seq 0 does not follow seq",
        ),
        (
            lambda ls: ls.__setitem__(
                2, json.dumps({k: v for k, v in json.loads(ls[2]).items() if k != "detail"})
            ),
            r"line 3: record lacks field 'detail'",
        ),
        (
            lambda ls: ls.__setitem__(
                0,
                json.dumps(
                    {
                        **json.loads(ls[0]),
                        "context": {
                            **json.loads(ls[0])["context"],
                            "subscriptions": [
                                {"name": "x", "shb": "s1", "filter": "p >", "order": "publisher"}
                            ],
                        },
                    }
                ),
            ),
            r"line 1: subscription 'x': filter 'p >' is invalid",
        ),
        (
            lambda ls: ls.__setitem__(
                0,
                json.dumps(
                    {
                        **json.loads(ls[0]),
                        "context": {**json.loads(ls[0])["context"], "roles": {"b1": "boss"}},
                    }
                ),
            ),
            r"line 1: context.roles\['b1'\] 'boss' is not one of \['phb', 'ib', 'shb'\]",
        ),
    ],
)
def test_malformed_files_are_refused_naming_the_line_and_field(
    passing: tuple[Path, Any], tmp_path: Path, edit: Any, message: str
) -> None:
    ls = passing[0].read_text(encoding="utf-8").splitlines()[:50]
    edit(ls)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(ls) + "\n", encoding="utf-8")
    with pytest.raises(TraceFileError, match=message):
        read_trace(bad, matches=M)


def test_a_bad_wire_summary_names_the_field(passing: tuple[Path, Any], tmp_path: Path) -> None:
    lines = _lines(passing[0])
    i = _first(lines, "send")
    lines[i]["detail"]["wire"]["nack_ranges"] = [[5, 2]]
    bad = tmp_path / "bad.jsonl"
    _save(bad, lines[: i + 1])
    with pytest.raises(TraceFileError, match=rf"line {i + 1}: detail.wire.nack_ranges: \[5, 2\]"):
        read_trace(bad, matches=M)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(TraceFileError, match="empty file"):
        read_trace(tmp_path / "empty.jsonl", matches=M)
    with pytest.raises(TraceFileError, match="no such trace file"):
        read_trace(tmp_path / "absent.jsonl", matches=M)


def test_an_unwritable_attribute_leaves_no_file(passing: tuple[Path, Any], tmp_path: Path) -> None:
    tf = read_trace(passing[0], matches=M)
    bad = TraceRecord(
        seq=len(tf.records),
        time=tf.records[-1].time,
        node="p1",
        kind="publish",
        detail=Published(pubend="P0", index=99, attributes={"blob": b"\x00"}),
    )
    out = tmp_path / "never.jsonl"
    with pytest.raises(TraceFileError, match=r"attribute 'blob'.*allowed: str, int, float"):
        write_trace(out, tf.context, (*tf.records[:10], bad))
    assert not out.exists()
    assert os.listdir(tmp_path) == []


def test_a_read_file_writes_back_the_same_text(passing: tuple[Path, Any], tmp_path: Path) -> None:
    tf = read_trace(passing[0], matches=M)
    again = tmp_path / "again.jsonl"
    write_trace(again, tf.context, tf.records, live_end=tf.live_end, meta=tf.meta)
    assert again.read_text(encoding="utf-8") == passing[0].read_text(encoding="utf-8")


def test_deliveries_of_either_shape_read_back(passing: tuple[Path, Any]) -> None:
    tf = read_trace(passing[0], matches=M)
    shapes = {type(r.detail) for r in tf.records if r.kind == "deliver"}
    assert shapes <= {Deliver, DeliverCohort}
    assert shapes


# ------------------------------------------------------------------------------------ CLI


def test_cli_check_exit_codes(passing: tuple[Path, Any], tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(cli, ["check", str(passing[0])])
    assert ok.exit_code == 0, ok.output
    assert "pass:" in ok.output
    assert f"{len(INVARIANTS)} invariants hold" in ok.output
    as_json = runner.invoke(cli, ["check", str(passing[0]), "--json", "--invariant", "order"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.output)["invariants"] == ["order"]

    lines = _lines(passing[0])
    lines[_first(lines, "deliver")]["detail"]["payload"]["attributes"] = {"forged": 1}
    forged = tmp_path / "forged.jsonl"
    _save(forged, lines)
    bad = runner.invoke(cli, ["check", str(forged), "--json"])
    assert bad.exit_code == 1
    v = json.loads(bad.output)["violation"]
    assert v["invariant"] in ("no_e", "safety")
    assert v["events"]
    human = runner.invoke(cli, ["check", str(forged)])
    assert human.exit_code == 1
    assert "violated at t=" in human.output

    unknown = runner.invoke(cli, ["check", str(passing[0]), "--invariant", "nope"])
    assert unknown.exit_code == 2
    assert "allowed: safety" in unknown.output
    (tmp_path / "junk.jsonl").write_text("junk\n", encoding="utf-8")
    junk = runner.invoke(cli, ["check", str(tmp_path / "junk.jsonl")])
    assert junk.exit_code == 2
    assert "line 1: not JSON" in junk.output


def test_cli_simulate_refuses_a_trace_path_in_a_missing_directory(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        cli, ["simulate", "--scenario", "gd-crash-p1", "--trace", str(tmp_path / "no" / "t.jsonl")]
    )
    assert r.exit_code == 2
    assert "does not exist" in r.output
    assert list(tmp_path.iterdir()) == []


def test_the_format_name_is_in_the_header(passing: tuple[Path, Any]) -> None:
    header = _lines(passing[0])[0]
    assert header["format"] == FORMAT
    assert header["version"] == VERSION == 2
    assert {"subscriptions", "cell_of", "cell_tree", "pubend_host", "roles"} <= set(
        header["context"]
    )


def test_a_gz_name_writes_gzip_that_reads_back_the_same(
    passing: tuple[Path, Any], tmp_path: Path
) -> None:
    tf = read_trace(passing[0], matches=M)
    gz = tmp_path / "t.jsonl.gz"
    write_trace(gz, tf.context, tf.records, live_end=tf.live_end, meta=tf.meta)
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    assert gz.stat().st_size < passing[0].stat().st_size / 4
    back = read_trace(gz, matches=M)
    assert back.records == tf.records
    assert check_trace_file(gz, matches=M)[1] is None
    # the same trace gives the same bytes (no time or name in the gzip header)
    again = tmp_path / "again.jsonl.gz"
    write_trace(again, tf.context, tf.records, live_end=tf.live_end, meta=tf.meta)
    assert again.read_bytes() == gz.read_bytes()
    # a truncated download is refused, not half-read
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    with pytest.raises(TraceFileError, match="cannot be read as gzip"):
        read_trace(cut, matches=M)


def test_check_finds_the_protocol_in_the_header(passing: tuple[Path, Any], tmp_path: Path) -> None:
    lines = _lines(passing[0])
    assert lines[0]["protocol"] == "gd"
    runner = CliRunner()
    # a file written before the header named its protocol is guaranteed delivery's
    del lines[0]["protocol"]
    old = tmp_path / "old.jsonl"
    _save(old, lines)
    assert read_protocol(old) == "gd"
    assert runner.invoke(cli, ["check", str(old)]).exit_code == 0
    # an unregistered protocol is refused before anything is judged
    lines[0]["protocol"] = "carrier-pigeon"
    other = tmp_path / "other.jsonl"
    _save(other, lines)
    refused = runner.invoke(cli, ["check", str(other)])
    assert refused.exit_code == 2
    assert "protocol 'carrier-pigeon' is unknown; allowed: " in refused.output
    assert "gd" in refused.output.split("allowed: ")[1].replace(",", " ").split()


# ------------------------------------------------- truncation (issue 12, defect 6)


def _cut(path: Path, out: Path, keep: int) -> None:
    """``head -n KEEP path > out``: a file cut at a line boundary."""
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(text[:keep]), encoding="utf-8")


def test_a_file_cut_at_a_line_boundary_is_refused_as_incomplete(
    passing: tuple[Path, Any], tmp_path: Path
) -> None:
    total = len(passing[0].read_text(encoding="utf-8").splitlines())
    cut = tmp_path / "cut.jsonl"
    for keep in (1, total // 2, total - 1):
        _cut(passing[0], cut, keep)
        with pytest.raises(TraceFileError, match="incomplete: no end record"):
            read_trace(cut, matches=M)
    result = CliRunner().invoke(cli, ["check", str(cut)])
    assert result.exit_code == 2, result.output
    assert "incomplete" in result.stderr
    assert "violated" not in result.output  # refused, not judged


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ls: ls[:2] + ls[3:], "end record says"),  # a record line removed
        (lambda ls: [*ls, ls[-1]], "after the end record"),
        (lambda ls: [*ls[:-2], ls[-2].replace('"time": ', '"time": 1'), ls[-1]], "sha256"),
    ],
)
def test_a_file_that_disagrees_with_its_end_record_is_refused(
    passing: tuple[Path, Any], tmp_path: Path, edit: Any, message: str
) -> None:
    lines = passing[0].read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(x + "\n" for x in edit(lines)), encoding="utf-8")
    with pytest.raises(TraceFileError, match=message):
        read_trace(bad, matches=M)


def test_a_version_1_file_is_read_and_flagged_unverifiable(
    passing: tuple[Path, Any], tmp_path: Path
) -> None:
    lines = _lines(passing[0])
    lines[0]["version"] = 1
    old = tmp_path / "v1.jsonl"
    old.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    tf, violation = check_trace_file(old, matches=M)
    assert violation is None
    assert tf.complete is None
    assert read_trace(passing[0], matches=M).complete is True
    result = CliRunner().invoke(cli, ["check", str(old), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["complete"] is None
    assert "truncation cannot be detected" in result.stderr


def test_the_ack_expected_rule_travels_in_the_header(tmp_path: Path) -> None:
    """The pubend's liveness parameters are written to the header and read back, so
    ``ack_expected_timing`` is judged offline as online; a file without them leaves it
    unjudged, a bad value is refused with the field named."""
    spec = RunSpec(duration_us=300_000, drain_us=300_000)
    out = simulate(spec, generate_schedule(spec, 1), 1, record_trace=True)
    ctx = run_context(spec, 1)
    path = tmp_path / "t.jsonl"
    write_trace(path, ctx, out.trace or (), live_end=True)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["context"]["aet_us"] == 10_000_000
    assert header["context"]["ack_expected_period_us"] == 1_000_000
    assert read_trace(path, matches=reference_matcher()).context.aet_us == 10_000_000
    bad = header | {"context": header["context"] | {"aet_us": -5}}
    lines = path.read_text().splitlines()
    (tmp_path / "bad.jsonl").write_text("\n".join([json.dumps(bad), *lines[1:-1]]) + "\n")
    with pytest.raises(TraceFileError, match="aet_us must be a positive integer"):
        read_trace(tmp_path / "bad.jsonl", matches=reference_matcher())
