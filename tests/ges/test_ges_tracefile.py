"""GES trace files: written from a run, read back, judged offline with the verdict the
online checker gave; a file cut short or edited is refused."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _runs import MIXED, run, spec
from click.testing import CliRunner

from gapless.cli.main import cli
from gapless.invariants.ges_tracefile import read_ges_trace, trace_check, write_ges_trace
from gapless.invariants.tracefile import TraceFileError, read_protocol
from gapless.models.ges_protocol import check_context
from gapless.models.run import build
from gapless.spec.filters import reference_matcher


@cache
def _run(variant: str) -> Any:
    return run(variant, MIXED, record=True)


def _write(path: Path, variant: str, *, live: bool) -> Any:
    out = _run(variant)
    _entry, graph, wl, binding = build(spec(variant), 1)
    ctx = check_context(graph, wl, binding, reference_matcher())
    n = write_ges_trace(path, ctx, out.trace or (), live_end=live, meta={"variant": variant})
    return out, n


def test_a_passing_run_round_trips_and_passes_offline(tmp_path: Path) -> None:
    f = tmp_path / "ok.jsonl"
    out, n = _write(f, "none", live=True)
    assert out.verdict == "pass"
    assert read_protocol(f) == "ges"
    tf = read_ges_trace(f, matches=reference_matcher())
    assert len(tf.records) == n > 1000
    kinds = {r.kind for r in tf.records}
    assert {"publish", "persist", "persisted", "send", "deliver", "connect", "fault"} <= kinds
    got, violation = trace_check(f, matches=reference_matcher())
    assert violation is None
    assert got.live_end
    assert got.complete


@pytest.mark.parametrize(
    ("variant", "invariant"),
    [
        ("flooding", "selective_routing"),
        ("double-decrement", "reference_counts"),
        ("no-alternate-route", "route_while_path"),
    ],
)
def test_a_buggy_run_gets_the_same_violation_offline(
    tmp_path: Path, variant: str, invariant: str
) -> None:
    f = tmp_path / "bad.jsonl"
    out, _ = _write(f, variant, live=False)
    assert out.invariant == invariant
    _tf, violation = trace_check(f, matches=reference_matcher())
    assert violation is not None
    assert violation.invariant == invariant


def test_liveness_is_judged_only_on_a_file_that_ends_live(tmp_path: Path) -> None:
    f = tmp_path / "cut.jsonl"
    out = _run("none")
    _entry, graph, wl, binding = build(spec(), 1)
    ctx = check_context(graph, wl, binding, reference_matcher())
    half = [r for r in out.trace or () if r.time < 1_500_000]  # events still on their way
    write_ges_trace(f, ctx, half, live_end=True)
    _tf, violation = trace_check(f, matches=reference_matcher())
    assert violation is not None
    assert violation.invariant == "roam_complete"
    write_ges_trace(f, ctx, half, live_end=False)
    assert trace_check(f, matches=reference_matcher())[1] is None
    assert trace_check(f, ("roam_complete",), matches=reference_matcher())[1] is None


def test_a_file_cut_short_or_edited_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "ok.jsonl"
    _write(f, "none", live=True)
    lines = f.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-5]) + "\n")
    with pytest.raises(TraceFileError, match="no end record"):
        read_ges_trace(cut, matches=reference_matcher())
    row = json.loads(lines[10])
    row["time"] += 1
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join([*lines[:10], json.dumps(row), *lines[11:]]) + "\n")
    with pytest.raises(TraceFileError, match="sha256"):
        read_ges_trace(edited, matches=reference_matcher())
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], '{"seq": 0, "kind": "deliver"}']) + "\n")
    with pytest.raises(TraceFileError, match=r"bad\.jsonl:2"):
        read_ges_trace(bad, matches=reference_matcher())


def test_gapless_check_judges_a_ges_file(tmp_path: Path) -> None:
    ok, bad = tmp_path / "ok.jsonl", tmp_path / "bad.jsonl"
    _write(ok, "none", live=True)
    _write(bad, "flooding", live=False)
    r = CliRunner().invoke(cli, ["check", str(ok), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["verdict"] == "pass"
    r = CliRunner().invoke(cli, ["check", str(bad)])
    assert r.exit_code == 1
    assert "selective_routing" in r.output


def _old_style(lines: list[str]) -> str:
    """The same records as the writer before it used the shared envelope wrote them: one
    ``json.dumps(obj, sort_keys=True)`` line each, and an end record over those lines."""
    body = [json.dumps(json.loads(x), sort_keys=True) for x in lines[:-1]]
    digest = hashlib.sha256()
    for x in body:
        digest.update(x.encode("utf-8") + b"\n")
    end = {"end": {"records": len(body) - 1, "sha256": digest.hexdigest()}}
    return "\n".join([*body, json.dumps(end)]) + "\n"


def test_the_shared_envelope_writes_the_file_and_old_files_still_read(tmp_path: Path) -> None:
    new = tmp_path / "new.jsonl"
    _write(new, "none", live=True)
    lines = new.read_text().splitlines()
    assert json.loads(lines[-1])["end"]["records"] == len(lines) - 2
    compact = json.dumps(json.loads(lines[1]), sort_keys=True, separators=(",", ":"))
    assert lines[1] == compact  # written by write_envelope
    old = tmp_path / "old.jsonl"
    old.write_text(_old_style(lines))
    assert old.read_text() != new.read_text()
    a = read_ges_trace(new, matches=reference_matcher())
    b = read_ges_trace(old, matches=reference_matcher())
    assert a.records == b.records
    assert a.context.profiles == b.context.profiles
    assert trace_check(old, matches=reference_matcher())[1] is None


def _v2(lines: list[str]) -> str:
    """A version-2 file of the same run: its header says version 2 and has no ``settle_us``,
    and it holds no ``unrouted`` records (version 2 had none)."""
    header = json.loads(lines[0])
    header["version"] = 2
    del header["context"]["settle_us"]
    body = [json.dumps(header)]
    body += [x for x in lines[1:-1] if json.loads(x)["kind"] != "unrouted"]
    digest = hashlib.sha256()
    for x in body:
        digest.update(x.encode("utf-8") + b"\n")
    end = {"end": {"records": len(body) - 1, "sha256": digest.hexdigest()}}
    return "\n".join([*body, json.dumps(end)]) + "\n"


def test_unrouted_records_round_trip_and_version_2_files_still_read(tmp_path: Path) -> None:
    new = tmp_path / "v3.jsonl"
    out, _n = _write(new, "none", live=True)
    lines = new.read_text().splitlines()
    assert json.loads(lines[0])["version"] == 3
    drops = [r for r in out.trace or () if r.kind == "rejected"]
    assert drops  # the broker failing forever leaves messages without a route
    tf = read_ges_trace(new, matches=reference_matcher())
    assert [r.detail for r in tf.records if r.kind == "rejected"] == [r.detail for r in drops]
    old = tmp_path / "v2.jsonl"
    old.write_text(_v2(lines))
    tf2 = read_ges_trace(old, matches=reference_matcher())
    assert not [r for r in tf2.records if r.kind == "rejected"]
    assert tf2.context.settle_us == tf.context.settle_us
    assert trace_check(old, matches=reference_matcher())[1] is None
