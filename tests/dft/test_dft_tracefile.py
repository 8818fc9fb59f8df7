"""DFT trace files: written by ``gapless simulate --trace``, judged by ``gapless check``; a
gapped naive run is caught from its file; cut or edited files are refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from gapless.cli.check_cmd import check
from gapless.invariants.dft import DFT_SAFETY
from gapless.invariants.dft_tracefile import read_dft_trace, trace_check, write_dft_trace
from gapless.invariants.tracefile import TraceFileError
from gapless.models.protocols import scenario
from gapless.models.run import run_context, simulate
from gapless.spec.filters import reference_matcher


def _write(tmp_path: Path, variant: str) -> tuple[Path, object]:
    sc = scenario("dft-gap-s1")
    spec = attrs.evolve(sc.spec, variant=variant, invariants=DFT_SAFETY)
    out = simulate(spec, sc.schedule, 0, record_trace=True)
    path = tmp_path / f"{variant}.jsonl"
    write_dft_trace(path, run_context(spec, 0), out.trace or ())
    return path, out


def test_round_trip_gives_the_online_verdict(tmp_path: Path) -> None:
    path, out = _write(tmp_path, "none")
    assert out.verdict == "pass"  # type: ignore[attr-defined]
    tf, violation = trace_check(path, matches=reference_matcher())
    assert violation is None
    assert tf.complete is True
    kinds = {r.kind for r in tf.records}
    assert {"connect", "publish", "send", "deliver", "persist", "fault"} <= kinds
    res = CliRunner().invoke(check, [str(path), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["verdict"] == "pass"


def test_the_naive_gap_is_caught_from_the_file(tmp_path: Path) -> None:
    path, out = _write(tmp_path, "naive")
    assert out.invariant == "gapless"  # type: ignore[attr-defined]
    _tf, violation = trace_check(path, DFT_SAFETY, matches=reference_matcher())
    assert violation is not None
    assert violation.invariant == "gapless"
    # every invariant: the naive run already missed δ-FT's bounded guarantee at the heal
    _tf, first = trace_check(path, matches=reference_matcher())
    assert first is not None
    assert first.invariant == "bounded_delivery"
    res = CliRunner().invoke(check, [str(path)])
    assert res.exit_code == 1, res.output


def test_cut_or_edited_files_are_refused(tmp_path: Path) -> None:
    path, _ = _write(tmp_path, "none")
    lines = path.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-5]) + "\n")
    with pytest.raises(TraceFileError, match="incomplete"):
        read_dft_trace(cut, matches=reference_matcher())
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join([lines[0], *lines[2:]]) + "\n")
    with pytest.raises(TraceFileError, match="records, the file holds"):
        read_dft_trace(edited, matches=reference_matcher())
    changed = tmp_path / "changed.jsonl"
    changed.write_text(
        "\n".join([lines[0], lines[1].replace('"time":', '"time": '), *lines[2:]]) + "\n"
    )
    with pytest.raises(TraceFileError, match="sha256"):
        read_dft_trace(changed, matches=reference_matcher())
    with pytest.raises(ValueError, match="unknown invariant"):
        trace_check(path, ("liveness",), matches=reference_matcher())


def _old_layout(lines: list[str]) -> list[str]:
    """``lines`` (header, records, end) as the DFT writer laid them out before it used the
    shared envelope (dft6): ``json.dumps(..., sort_keys=True)``'s ``", "`` and ``": "``
    separators, the end record over those lines."""
    body = [json.dumps(json.loads(line), sort_keys=True) for line in lines[:-1]]
    digest = hashlib.sha256()
    for line in body:
        digest.update(line.encode("utf-8") + b"\n")
    return [*body, json.dumps({"end": {"records": len(body) - 1, "sha256": digest.hexdigest()}})]


def test_a_file_written_before_the_shared_envelope_still_reads(tmp_path: Path) -> None:
    path, _ = _write(tmp_path, "naive")
    new = path.read_text().splitlines()
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(_old_layout(new)) + "\n")
    assert old.read_text() != path.read_text()  # another layout, the same records
    was, now = (
        read_dft_trace(old, matches=reference_matcher()),
        read_dft_trace(path, matches=reference_matcher()),
    )
    assert was.records == now.records
    assert was.meta == now.meta
    assert (
        trace_check(old, matches=reference_matcher())[1]
        == trace_check(path, matches=reference_matcher())[1]
    )
