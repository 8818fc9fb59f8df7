"""Campaign results on disk: Parquet partitioned by campaign, committed atomically per chunk.

Theory of operation
-------------------
Layout under the output directory (Hive-style partitioning, readable by pyarrow, pandas,
DuckDB and Spark; names starting with ``_`` are ignored by those readers)::

    OUT/campaign_id=ID/part-<first>-<last>.parquet   one chunk of rows, seeds first..last
    OUT/campaign_id=ID/_faults/part-<first>-<last>.parquet   per seed: fault kinds, events
    OUT/campaign_id=ID/_manifest.json   config, chunks and their per-chunk summaries
    OUT/campaign_id=ID/_counterexamples/seed-<S>.json   shrunk counterexamples
    OUT/campaign_id=ID/_summary.json   the last summary printed
    OUT/campaign_id=ID/_tmp/   staging; emptied at open

Commit protocol (the equivalent of Spark's file commit protocol, done by the driver): a chunk
is written to ``_tmp/<unique>/``, fsynced, then renamed into place — the fault side file
first, the row file last. A chunk is committed exactly when its row file exists; a rename is
atomic, so a reader never sees half a file, and a chunk's name is its seed range, so a
chunk can never be committed twice. The manifest is rewritten atomically after each commit;
if the driver dies between a rename and the manifest update, :meth:`CampaignStore.open`
rebuilds the missing entries from the files. Chunks only ever cover seeds not yet
committed, so resumed runs never overlap. A lock file (``fcntl.flock``) stops two drivers
from writing one campaign at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, final

import pyarrow as pa
import pyarrow.parquet as pq

from gapless.impl.errors import GaplessError
from gapless.spark_fuzz.config import MAX_SEED, CampaignConfig, canonical_json
from gapless.spark_fuzz.execute import COLUMNS, SeedResult

__all__ = [
    "FAULTS_SCHEMA",
    "FILE_SCHEMA",
    "ROW_SCHEMA",
    "CampaignStore",
    "OutputError",
    "chunk_ranges",
    "read_rows",
]

ROW_SCHEMA: Final = pa.schema(
    [
        ("campaign_id", pa.string()),
        ("seed", pa.int64()),
        ("schedule_digest", pa.string()),
        ("verdict", pa.string()),
        ("invariant", pa.string()),
        ("explanation", pa.string()),
        ("published", pa.int64()),
        ("delivered", pa.int64()),
        ("nacks", pa.int64()),
        ("nack_range", pa.int64()),
        ("retransmissions", pa.int64()),
        ("latency_p50", pa.float64()),
        ("latency_p99", pa.float64()),
        ("latency_max", pa.float64()),
        ("trace_digest", pa.string()),
        ("coverage", pa.string()),
        ("wall_s", pa.float64()),
    ]
)
assert tuple(ROW_SCHEMA.names) == COLUMNS

FILE_SCHEMA: Final = ROW_SCHEMA.remove(0)
"""A part file's schema: ``campaign_id`` lives in the directory name (Hive partitioning), as
Spark's ``partitionBy`` writes it; reading the output directory as a dataset restores it."""

FAULTS_SCHEMA: Final = pa.schema(
    [
        ("seed", pa.int64()),
        ("fault_kinds", pa.list_(pa.string())),
        ("fault_events", pa.int64()),
    ]
)

_PART_RE: Final = re.compile(r"^part-(\d{12})-(\d{12})\.parquet$")
assert len(str(MAX_SEED)) == 12  # the largest seed a part file's name can hold
MANIFEST_FORMAT: Final = 1


class OutputError(GaplessError, OSError):
    """An output directory that cannot be used (unwritable, locked, or holding another
    configuration under the same campaign id)."""


def chunk_ranges(seeds: Sequence[int], chunk_size: int) -> list[tuple[int, int]]:
    """Split sorted distinct ``seeds`` into contiguous ``(first, last)`` ranges of at most
    ``chunk_size`` seeds.

    >>> chunk_ranges([1, 2, 3, 4, 7, 8], 3)
    [(1, 3), (4, 4), (7, 8)]
    """
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    prev = 0
    for seed in seeds:
        if start is None:
            start = prev = seed
        elif seed == prev + 1 and seed - start < chunk_size:
            prev = seed
        else:
            ranges.append((start, prev))
            start = prev = seed
    if start is not None:
        ranges.append((start, prev))
    return ranges


def _part_name(first: int, last: int) -> str:
    return f"part-{first:012d}-{last:012d}.parquet"


def _chunk_summary(results: Iterable[SeedResult]) -> dict[str, Any]:
    verdicts: Counter[str] = Counter()
    invariants: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {}
    rows = 0
    for r in results:
        rows += 1
        verdict = r.row["verdict"]
        verdicts[verdict] += 1
        if verdict == "violation":
            invariants[r.row["invariant"] or "?"] += 1
        for kind in r.fault_kinds or ("none",):
            by_kind.setdefault(kind, Counter())[verdict] += 1
    return {
        "rows": rows,
        "by_verdict": dict(sorted(verdicts.items())),
        "by_invariant": dict(sorted(invariants.items())),
        "by_fault_kind": {k: dict(sorted(v.items())) for k, v in sorted(by_kind.items())},
    }


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync_file(path)


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _fsync_file(tmp)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@final
class CampaignStore:
    """The on-disk state of one campaign. Open it with :meth:`open` (takes the lock)."""

    def __init__(self, root: Path, config: CampaignConfig, lock_fd: int) -> None:
        self.root = root
        self.config = config
        self._lock_fd = lock_fd
        self.manifest: dict[str, Any] = {}

    # -- opening ------------------------------------------------------------------------------

    @staticmethod
    def campaign_dir(out: str | Path, campaign_id: str) -> Path:
        return Path(out) / f"campaign_id={campaign_id}"

    @classmethod
    def check_writable(cls, out: str | Path) -> None:
        """Raise :class:`OutputError` unless ``out`` is (or can be made) a writable directory.
        Creates nothing."""
        path = Path(out)
        probe = path
        while not probe.exists():
            if probe.parent == probe:
                break
            probe = probe.parent
        if probe.exists() and not probe.is_dir():
            raise OutputError(
                f"output directory {str(out)!r}: {str(probe)!r} is a file; "
                "expected a directory that exists or can be created"
            )
        if not os.access(probe, os.W_OK | os.X_OK):
            raise OutputError(
                f"output directory {str(out)!r}: {str(probe)!r} is not writable; "
                "expected a directory you can write to"
            )

    @classmethod
    def open(cls, out: str | Path, config: CampaignConfig) -> CampaignStore:
        cls.check_writable(out)
        root = cls.campaign_dir(out, config.campaign_id)
        manifest_path = root / "_manifest.json"
        if manifest_path.exists():
            try:
                existing = json.loads(manifest_path.read_text(encoding="utf-8"))
                identity = existing["identity"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise OutputError(
                    f"output directory {str(root)!r}: its _manifest.json is unreadable ({exc}); "
                    "expected a manifest written by gapless fuzz (move the directory away)"
                ) from exc
            if canonical_json(identity) != canonical_json(config.identity()):
                raise OutputError(
                    f"campaign id {config.campaign_id!r} in {str(out)!r} already holds a different "
                    "configuration; expected the same configuration (to resume it) or another "
                    "--campaign-id"
                )
        try:
            root.mkdir(parents=True, exist_ok=True)
            (root / "_faults").mkdir(exist_ok=True)
            lock_fd = os.open(root / "_lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputError(
                f"output directory {str(root)!r}: cannot be created ({exc.strerror or exc}); "
                "expected a writable directory"
            ) from exc
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(lock_fd)
            raise OutputError(
                f"campaign {config.campaign_id!r} in {str(out)!r} is being written by another "
                "process; expected one driver per campaign"
            ) from exc
        store = cls(root, config, lock_fd)
        shutil.rmtree(root / "_tmp", ignore_errors=True)
        store._load_manifest()
        return store

    def close(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> CampaignStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- manifest -----------------------------------------------------------------------------

    def _load_manifest(self) -> None:
        path = self.root / "_manifest.json"
        chunks: dict[str, Any] = {}
        if path.exists():
            chunks = json.loads(path.read_text(encoding="utf-8")).get("chunks", {})
        on_disk = {p.name for p in self.root.glob("part-*.parquet") if _PART_RE.match(p.name)}
        chunks = {name: info for name, info in chunks.items() if name in on_disk}
        for name in sorted(on_disk - set(chunks)):
            chunks[name] = self._rebuild_chunk_summary(name)
        self.manifest = {
            "format": MANIFEST_FORMAT,
            "campaign_id": self.config.campaign_id,
            "identity": self.config.identity(),
            "config": self.config.to_data(),
            "chunks": dict(sorted(chunks.items())),
        }
        _write_json_atomic(path, self.manifest)

    def _rebuild_chunk_summary(self, name: str) -> dict[str, Any]:
        m = _PART_RE.match(name)
        assert m is not None
        rows = pq.read_table(self.root / name, columns=["seed", "verdict", "invariant"])
        faults_path = self.root / "_faults" / name
        kinds: dict[int, tuple[str, ...]] = {}
        events: dict[int, int] = {}
        if faults_path.exists():
            ft = pq.read_table(faults_path).to_pylist()
            kinds = {r["seed"]: tuple(r["fault_kinds"]) for r in ft}
            events = {r["seed"]: r["fault_events"] for r in ft}
        results = [
            SeedResult(
                row=r, fault_kinds=kinds.get(r["seed"], ()), fault_events=events.get(r["seed"], 0)
            )
            for r in rows.to_pylist()
        ]
        info = _chunk_summary(results)
        info.update(first=int(m.group(1)), last=int(m.group(2)))
        return info

    # -- seeds --------------------------------------------------------------------------------

    def committed_ranges(self) -> list[tuple[int, int]]:
        return sorted((c["first"], c["last"]) for c in self.manifest["chunks"].values())

    def committed_seeds(self) -> set[int]:
        seeds: set[int] = set()
        for first, last in self.committed_ranges():
            seeds.update(range(first, last + 1))
        return seeds

    def missing_seeds(self, seeds: Iterable[int]) -> list[int]:
        """The seeds of ``seeds`` not yet committed, sorted."""
        ranges = self.committed_ranges()
        out: list[int] = []
        i = 0
        for seed in sorted(seeds):
            while i < len(ranges) and ranges[i][1] < seed:
                i += 1
            if i < len(ranges) and ranges[i][0] <= seed <= ranges[i][1]:
                continue
            out.append(seed)
        return out

    # -- commit -------------------------------------------------------------------------------

    def commit(self, first: int, last: int, results: Sequence[SeedResult]) -> None:
        """Atomically commit the rows of seeds ``first..last`` (one per seed, in order)."""
        seeds = [r.row["seed"] for r in results]
        if seeds != list(range(first, last + 1)):
            raise GaplessError(
                f"commit: chunk {first}..{last} got rows for seeds {seeds[:5]}...; "
                "expected exactly one row per seed, in order"
            )
        name = _part_name(first, last)
        if name in self.manifest["chunks"] or (self.root / name).exists():
            raise GaplessError(f"commit: chunk {name} is already committed")
        staging = self.root / "_tmp" / uuid.uuid4().hex
        staging.mkdir(parents=True)
        rows = pa.Table.from_pylist([r.row for r in results], schema=FILE_SCHEMA)
        faults = pa.Table.from_pylist(
            [
                {
                    "seed": r.row["seed"],
                    "fault_kinds": list(r.fault_kinds),
                    "fault_events": r.fault_events,
                }
                for r in results
            ],
            schema=FAULTS_SCHEMA,
        )
        pq.write_table(rows, staging / name)
        pq.write_table(faults, staging / ("faults-" + name))
        _fsync_file(staging / name)
        _fsync_file(staging / ("faults-" + name))
        os.replace(staging / ("faults-" + name), self.root / "_faults" / name)
        _fsync_dir(self.root / "_faults")
        os.replace(staging / name, self.root / name)
        _fsync_dir(self.root)
        shutil.rmtree(staging, ignore_errors=True)
        info = _chunk_summary(results)
        info.update(first=first, last=last)
        self.manifest["chunks"][name] = info
        self.manifest["chunks"] = dict(sorted(self.manifest["chunks"].items()))
        _write_json_atomic(self.root / "_manifest.json", self.manifest)

    # -- reading ------------------------------------------------------------------------------

    def summary_counts(self) -> dict[str, Any]:
        verdicts: Counter[str] = Counter()
        invariants: Counter[str] = Counter()
        kinds: dict[str, Counter[str]] = {}
        rows = 0
        for info in self.manifest["chunks"].values():
            rows += info["rows"]
            verdicts.update(info["by_verdict"])
            invariants.update(info["by_invariant"])
            for kind, counts in info["by_fault_kind"].items():
                kinds.setdefault(kind, Counter()).update(counts)
        return {
            "rows": rows,
            "by_verdict": dict(sorted(verdicts.items())),
            "by_invariant": dict(sorted(invariants.items())),
            "by_fault_kind": {k: dict(sorted(v.items())) for k, v in sorted(kinds.items())},
        }

    def write_summary(self, summary: dict[str, Any]) -> None:
        _write_json_atomic(self.root / "_summary.json", summary)

    def counterexample_dir(self) -> Path:
        path = self.root / "_counterexamples"
        path.mkdir(exist_ok=True)
        return path

    def part_files(self) -> list[Path]:
        return [self.root / name for name in self.manifest["chunks"]]


def read_rows(campaign_dir: str | Path) -> pa.Table:
    """Every committed row of one campaign directory, sorted by seed (all ``COLUMNS``)."""
    root = Path(campaign_dir)
    parts = sorted(p for p in root.glob("part-*.parquet") if _PART_RE.match(p.name))
    if not parts:
        return ROW_SCHEMA.empty_table()
    table = pa.concat_tables([pq.read_table(p, schema=FILE_SCHEMA) for p in parts])
    campaign_id = root.name.split("=", 1)[1] if "=" in root.name else root.name
    table = table.add_column(
        0, "campaign_id", pa.array([campaign_id] * table.num_rows, pa.string())
    )
    return table.sort_by("seed")


def read_faults(campaign_dir: str | Path) -> pa.Table:
    """The fault side files of one campaign directory, sorted by seed."""
    root = Path(campaign_dir)
    parts = sorted(
        (root / "_faults" / p.name)
        for p in root.glob("part-*.parquet")
        if _PART_RE.match(p.name) and (root / "_faults" / p.name).exists()
    )
    if not parts:
        return FAULTS_SCHEMA.empty_table()
    return pa.concat_tables([pq.read_table(p, schema=FAULTS_SCHEMA) for p in parts]).sort_by("seed")


def iter_campaign_dirs(out: str | Path) -> Iterator[Path]:
    """Every ``campaign_id=...`` directory under ``out``, sorted."""
    yield from sorted(p for p in Path(out).glob("campaign_id=*") if p.is_dir())
