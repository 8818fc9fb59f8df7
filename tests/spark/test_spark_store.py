"""The Parquet store: atomic chunks, exactly one row per seed, resume, manifest rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from spark_helpers import fake_overrides

from gapless.spark_fuzz.campaign import run_campaign
from gapless.spark_fuzz.config import canonical_json, load_config
from gapless.spark_fuzz.execute import COLUMNS, run_chunk
from gapless.spark_fuzz.store import CampaignStore, OutputError, chunk_ranges, read_rows

pytestmark = pytest.mark.usefixtures("fake_path")


def test_chunk_ranges_split_contiguous_runs() -> None:
    assert chunk_ranges([], 5) == []
    assert chunk_ranges([0, 1, 2, 3, 4, 5, 6], 3) == [(0, 2), (3, 5), (6, 6)]
    assert chunk_ranges([0, 2, 3, 9], 10) == [(0, 0), (2, 3), (9, 9)]


def test_dataset_has_exactly_the_issue_columns(tmp_path: Path) -> None:
    config = load_config(None, fake_overrides(tmp_path, chunk_size=7, shrink=False))
    run_campaign(config, executor="loop")
    table = pq.read_table(tmp_path / "out")  # hive partitioning restores campaign_id
    assert sorted(table.column_names) == sorted(COLUMNS)
    assert table.num_rows == 40
    rows = read_rows(tmp_path / "out" / f"campaign_id={config.campaign_id}")
    assert rows.column_names == list(COLUMNS)
    assert rows.column("seed").to_pylist() == list(range(40))
    assert set(rows.column("campaign_id").to_pylist()) == {config.campaign_id}


def test_resume_skips_committed_seeds_and_extends(tmp_path: Path) -> None:
    config = load_config(None, fake_overrides(tmp_path, schedules=20, chunk_size=6, shrink=False))
    first = run_campaign(config, executor="loop")
    assert first.executed == ((0, 5), (6, 11), (12, 17), (18, 19))
    again = run_campaign(config, executor="loop")
    assert again.executed == ()
    assert again.skipped == 20
    more = load_config(None, fake_overrides(tmp_path, schedules=30, chunk_size=6, shrink=False))
    extended = run_campaign(more, executor="loop")
    assert extended.executed == ((20, 25), (26, 29))
    rows = read_rows(extended.directory).column("seed").to_pylist()
    assert rows == list(range(30))


def test_commit_is_atomic_and_never_duplicates(tmp_path: Path) -> None:
    config = load_config(None, fake_overrides(tmp_path, shrink=False))
    cj = canonical_json(config.to_data())
    with CampaignStore.open(config.out, config) as store:
        store.commit(0, 4, run_chunk(cj, 0, 4))
        with pytest.raises(Exception, match="already committed"):
            store.commit(0, 4, run_chunk(cj, 0, 4))
        with pytest.raises(Exception, match="one row per seed"):
            store.commit(5, 9, run_chunk(cj, 5, 8))
        root = store.root
    # the driver died between a rename and the manifest update: the manifest is rebuilt
    manifest = json.loads((root / "_manifest.json").read_text())
    manifest["chunks"] = {}
    (root / "_manifest.json").write_text(json.dumps(manifest))
    # a half-written staging file is never a chunk
    (root / "_tmp").mkdir(exist_ok=True)
    (root / "_tmp" / "x").mkdir()
    (root / "_tmp" / "x" / "part-000000000005-000000000009.parquet").write_bytes(b"PAR1 trunc")
    with CampaignStore.open(config.out, config) as store:
        assert store.committed_ranges() == [(0, 4)]
        assert store.missing_seeds(range(8)) == [5, 6, 7]
        assert not (root / "_tmp").exists()
        assert store.summary_counts()["rows"] == 5


def test_one_driver_per_campaign_and_identity_is_checked(tmp_path: Path) -> None:
    config = load_config(None, fake_overrides(tmp_path, id="same"))
    with CampaignStore.open(config.out, config), pytest.raises(OutputError, match="another"):
        CampaignStore.open(config.out, config)
    other = load_config(None, fake_overrides(tmp_path, id="same", variant="buggy"))
    with pytest.raises(OutputError, match="different configuration"):
        CampaignStore.open(other.out, other)


def test_unwritable_output_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="is a file"):
        CampaignStore.check_writable(blocker / "out")


def test_processes_and_loop_agree_row_for_row(tmp_path: Path) -> None:
    a = load_config(
        None, fake_overrides(tmp_path, variant="buggy", shrink=False, id="a", duration_s=3.0)
    )
    b = load_config(
        None, fake_overrides(tmp_path, variant="buggy", shrink=False, id="b", duration_s=3.0)
    )
    ra = read_rows(run_campaign(a, executor="loop").directory).drop_columns(
        ["wall_s", "campaign_id"]
    )
    rb = read_rows(run_campaign(b, executor="processes").directory).drop_columns(
        ["wall_s", "campaign_id"]
    )
    assert ra.to_pylist() == rb.to_pylist()
    assert {"violation", "pass"} == set(ra.column("verdict").to_pylist())


def test_an_interrupted_summary_reports_requested_and_committed(tmp_path: Path) -> None:
    """Issue 12, defect 8: after an interrupt ``schedules`` is what was asked for and
    ``schedules_committed`` what is on disk (it used to report only the latter, as
    ``schedules``)."""
    from gapless.spark_fuzz.campaign import Progress

    config = load_config(None, fake_overrides(tmp_path, schedules=30, chunk_size=5, shrink=False))
    chunks: list[int] = []

    def on_chunk(first: int, _last: int, _verdicts: dict[str, int]) -> None:
        chunks.append(first)
        if len(chunks) == 2:
            raise KeyboardInterrupt  # as Ctrl-C landing right after the second commit

    run = run_campaign(config, executor="loop", progress=Progress(on_chunk=on_chunk))
    assert run.interrupted
    assert run.summary["schedules"] == 30
    assert run.summary["schedules_committed"] == 10
    assert run.summary["executed"] == 10
    done = run_campaign(config, executor="loop")
    assert done.summary["schedules"] == done.summary["schedules_committed"] == 30
