"""Stable storage of a subscriber hosting broker: the PFS on append-only log files, the tables in
SQLite, recovery after a crash [DUR §4.1, §4.2, §5.2; issue 13 §4].

Theory of operation
-------------------
The SHB's roles are pure and emit the storage effects of :mod:`gapless.impl.durable.storage`;
a store carries them out, in order, and on restart hands back what survived (:class:`Recovered`).
Two stores with one interface (``apply``, ``restart``, ``close``):

* :class:`LogStore` — the real one. Each pubend's PFS log stream is a series of append-only
  *segment* files ``pfs-<pubend>-<first index>.log``; every record is framed by its length and
  a CRC-32 of its bytes. A :class:`PfsSync` fsyncs the pubend's dirty segments; a new segment is
  created only after the previous one was fsynced, and its directory entry is fsynced before
  the first record goes in; a chop removes whole segments below the new first index and
  fsyncs the directory. The tables — ``latestDelivered(p)``, ``released(s, p)``, ``CT(s, p)``
  and the PFS metadata — live in SQLite (stdlib ``sqlite3``, WAL, ``synchronous=FULL``), all
  the puts since the previous :class:`Flush` in one transaction [DUR §5.2]. The file system
  calls go through a :class:`~gapless.models.durable_disk.Disk`, real or simulated.
* :class:`MemoryStore` — dictionaries and lists, for the simulator, with the same durability
  (an unsynced record or an uncommitted put does not survive a restart) and the same checks.
  ``tests/durable/test_store.py`` runs both on random operation sequences and compares what
  each recovers.

Both refuse effects that break the durability order (:class:`StorageOrderError`):
``latestDelivered(p)`` flushed while a PFS record at or below it is unsynced, a chop past the
durable ``released(p) = min(latestDelivered(p), min_s released(s, p))``, a chop before its
new first index is committed. An fsync that fails is fatal (:class:`FatalStorageError`): the
store refuses every later call and is never retried.

Recovery, per pubend: read every segment and check every frame. A last record cut short, or
whose checksum fails where it ends the last segment, is a torn write: dropped, the file cut
back, and the reason logged (``Recovered.notes``). Anything wrong before the tail — a bad
checksum with data after it, a segment not starting where the previous ended, fewer records
than the tables say were synced — raises :class:`CorruptLog` naming the file and the byte
offset. Records above the durable ``latestDelivered(p)`` are then dropped (the metadata first,
then the files): the constream resumes delivery, to the subscribers and to the PFS, from
``latestDelivered(p)`` [DUR §4.1], and a subscriber created since must find itself in those
records when it writes them again. Ticks at or below the durable ``released(p)`` come back as L.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from gapless.impl.durable.pfs import PfsStream, decode_record, encode_record
from gapless.impl.durable.storage import (
    CorruptLog,
    DropSubscriber,
    FatalStorageError,
    Flush,
    PfsAppend,
    PfsChop,
    PfsRecord,
    PfsSync,
    PutCheckpoint,
    PutLatestDelivered,
    PutMove,
    PutPfsMeta,
    PutReleased,
    StorageEffect,
    StorageOrderError,
)
from gapless.models.durable_disk import Disk, RealDisk

__all__ = [
    "LogStore",
    "MemoryStore",
    "Recovered",
    "SqliteMeta",
    "Tables",
    "frame",
    "read_frames",
]

log = logging.getLogger("gapless.durable_store")

HEADER: Final = struct.Struct("<II")
"""A record's frame: the payload's length and its CRC-32, little-endian."""

Put = PutLatestDelivered | PutReleased | PutCheckpoint | PutPfsMeta | PutMove | DropSubscriber


def frame(payload: bytes) -> bytes:
    """``payload`` with its frame: length, CRC-32, bytes."""
    return HEADER.pack(len(payload), zlib.crc32(payload)) + payload


@attrs.frozen(kw_only=True)
class Frames:
    """The frames read from one file: ``(offset, payload)`` pairs, the length of the valid
    prefix and, when the file ends in a torn record, why."""

    payloads: tuple[tuple[int, bytes], ...]
    valid: int
    torn: str | None


def read_frames(path: str, data: bytes, *, last: bool) -> Frames:
    """Every frame of ``data`` (the content of ``path``). A torn record at the end is reported
    (only the ``last`` segment may have one); a bad checksum before the end raises."""
    out: list[tuple[int, bytes]] = []
    off, torn = 0, None
    while off < len(data):
        if len(data) - off < HEADER.size:
            torn = f"a frame header cut short ({len(data) - off} of {HEADER.size} bytes)"
            break
        length, crc = HEADER.unpack_from(data, off)
        end = off + HEADER.size + length
        if end > len(data):
            torn = f"a record cut short ({len(data) - off - HEADER.size} of {length} bytes)"
            break
        payload = data[off + HEADER.size : end]
        if zlib.crc32(payload) != crc:
            if end < len(data):
                raise CorruptLog(path, off, "checksum mismatch with records after it")
            torn = "checksum mismatch in the last record"
            break
        out.append((off, payload))
        off = end
    if torn is not None and not last:
        raise CorruptLog(path, off, f"{torn}, in a segment that is not the last")
    return Frames(payloads=tuple(out), valid=off, torn=torn)


@attrs.define
class Tables:
    """The committed tables: latestDelivered, released(s, p), CT(s, p), the PFS metadata,
    and the moves (reconnect-anywhere) by subscriber number."""

    latest: dict[str, int] = attrs.Factory(dict)
    released: dict[tuple[int, str], int] = attrs.Factory(dict)
    checkpoints: dict[tuple[int, str], int] = attrs.Factory(dict)
    pfs_meta: dict[str, PutPfsMeta] = attrs.Factory(dict)
    moves: dict[int, PutMove] = attrs.Factory(dict)

    def copy(self) -> Tables:
        return Tables(
            latest=dict(self.latest),
            released=dict(self.released),
            checkpoints=dict(self.checkpoints),
            pfs_meta=dict(self.pfs_meta),
            moves=dict(self.moves),
        )

    def put(self, p: Put) -> None:
        if isinstance(p, PutLatestDelivered):
            self.latest[p.pubend] = p.timestamp
        elif isinstance(p, PutReleased):
            self.released[(p.subscriber, p.pubend)] = p.timestamp
        elif isinstance(p, PutCheckpoint):
            self.checkpoints[(p.subscriber, p.pubend)] = p.timestamp
        elif isinstance(p, PutMove):
            self.moves[p.subscriber] = p
        elif isinstance(p, DropSubscriber):
            for table in (self.released, self.checkpoints):
                for key in [k for k in table if k[0] == p.subscriber]:
                    del table[key]
            self.moves.pop(p.subscriber, None)
        else:
            old = self.pfs_meta.get(p.pubend)
            if p.changed_only and old is not None:  # an update: the other entries stay
                merged = dict(old.last_index)
                merged.update(p.last_index)
                p = attrs.evolve(p, last_index=tuple(sorted(merged.items())))
            self.pfs_meta[p.pubend] = attrs.evolve(p, changed_only=False)

    def released_p(self, pubend: str) -> int:
        """``released(p) = min(latestDelivered(p), min_s released(s, p))`` [DUR §4.1]."""
        lows = [t for (_s, p), t in self.released.items() if p == pubend]
        return min([self.latest.get(pubend, -1), *lows])


class SqliteMeta:
    """The tables in SQLite: WAL journal, ``synchronous=FULL`` (a commit is on disk when it
    returns), one transaction per :meth:`commit`."""

    SCHEMA: Final = (
        "CREATE TABLE IF NOT EXISTS latest_delivered (pubend TEXT PRIMARY KEY, t INTEGER)",
        "CREATE TABLE IF NOT EXISTS released (subscriber INTEGER, pubend TEXT, t INTEGER, "
        "PRIMARY KEY (subscriber, pubend))",
        "CREATE TABLE IF NOT EXISTS checkpoint (subscriber INTEGER, pubend TEXT, t INTEGER, "
        "PRIMARY KEY (subscriber, pubend))",
        "CREATE TABLE IF NOT EXISTS pfs_meta (pubend TEXT PRIMARY KEY, first_index INTEGER, "
        "next_index INTEGER, last_timestamp INTEGER)",
        "CREATE TABLE IF NOT EXISTS pfs_last_index (pubend TEXT, subscriber INTEGER, "
        "idx INTEGER, PRIMARY KEY (pubend, subscriber))",
        "CREATE TABLE IF NOT EXISTS moves (subscriber INTEGER PRIMARY KEY, name TEXT, "
        "filter TEXT, previous TEXT, generation INTEGER, start TEXT, refilter_upto TEXT)",
    )

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None)
        mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise FatalStorageError(f"{path}: SQLite refused WAL mode (got {mode!r})")
        self.conn.execute("PRAGMA synchronous=FULL")
        for statement in self.SCHEMA:
            self.conn.execute(statement)

    def commit(self, puts: Sequence[Put]) -> None:
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            for p in puts:
                self._put(c, p)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    @staticmethod
    def _put(c: sqlite3.Connection, p: Put) -> None:
        if isinstance(p, PutLatestDelivered):
            c.execute(
                "INSERT OR REPLACE INTO latest_delivered VALUES (?, ?)", (p.pubend, p.timestamp)
            )
        elif isinstance(p, PutReleased):
            c.execute(
                "INSERT OR REPLACE INTO released VALUES (?, ?, ?)",
                (p.subscriber, p.pubend, p.timestamp),
            )
        elif isinstance(p, PutCheckpoint):
            c.execute(
                "INSERT OR REPLACE INTO checkpoint VALUES (?, ?, ?)",
                (p.subscriber, p.pubend, p.timestamp),
            )
        elif isinstance(p, PutMove):
            c.execute(
                "INSERT OR REPLACE INTO moves VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    p.subscriber,
                    p.name,
                    p.filter,
                    p.previous,
                    p.generation,
                    json.dumps(p.start),
                    json.dumps(p.refilter_upto),
                ),
            )
        elif isinstance(p, DropSubscriber):
            c.execute("DELETE FROM released WHERE subscriber = ?", (p.subscriber,))
            c.execute("DELETE FROM checkpoint WHERE subscriber = ?", (p.subscriber,))
            c.execute("DELETE FROM moves WHERE subscriber = ?", (p.subscriber,))
        else:
            c.execute(
                "INSERT OR REPLACE INTO pfs_meta VALUES (?, ?, ?, ?)",
                (p.pubend, p.first_index, p.next_index, p.last_timestamp),
            )
            if not p.changed_only:  # a replacement; else an update of the entries named
                c.execute("DELETE FROM pfs_last_index WHERE pubend = ?", (p.pubend,))
            c.executemany(
                "INSERT OR REPLACE INTO pfs_last_index VALUES (?, ?, ?)",
                [(p.pubend, s, i) for s, i in p.last_index],
            )

    def load(self) -> Tables:
        c = self.conn
        t = Tables()
        t.latest = dict(c.execute("SELECT pubend, t FROM latest_delivered"))
        t.released = {(s, p): v for s, p, v in c.execute("SELECT * FROM released")}
        t.checkpoints = {(s, p): v for s, p, v in c.execute("SELECT * FROM checkpoint")}
        lasts: dict[str, list[tuple[int, int]]] = {}
        for p, s, i in c.execute("SELECT * FROM pfs_last_index ORDER BY pubend, subscriber"):
            lasts.setdefault(p, []).append((s, i))
        for p, first, nxt, ts in c.execute("SELECT * FROM pfs_meta"):
            t.pfs_meta[p] = PutPfsMeta(
                pubend=p,
                first_index=first,
                next_index=nxt,
                last_timestamp=ts,
                last_index=tuple(lasts.get(p, ())),
            )
        for s, name, flt, previous, gen, start, upto in c.execute("SELECT * FROM moves"):
            t.moves[s] = PutMove(
                subscriber=s,
                name=name,
                filter=flt,
                previous=previous,
                generation=gen,
                start=tuple((str(q), int(v)) for q, v in json.loads(start)),
                refilter_upto=tuple((str(q), int(v)) for q, v in json.loads(upto)),
            )
        return t

    def close(self) -> None:
        self.conn.close()


class SimMeta:
    """The tables in memory, committed atomically (what SQLite with ``synchronous=FULL``
    promises): a power loss keeps exactly the committed state."""

    def __init__(self) -> None:
        self.committed = Tables()

    def commit(self, puts: Sequence[Put]) -> None:
        new = self.committed.copy()
        for p in puts:
            new.put(p)
        self.committed = new

    def load(self) -> Tables:
        return self.committed.copy()

    def close(self) -> None:
        """Nothing to release."""


Meta = SqliteMeta | SimMeta


@attrs.frozen(kw_only=True)
class Recovered:
    """What survived a restart: the committed tables, each pubend's PFS (every record synced,
    none above latestDelivered), and what recovery dropped and why."""

    tables: Tables
    pfs: dict[str, PfsStream]
    notes: tuple[str, ...]


class _Ordered:
    """The durability-order checks both stores share (see the module doc)."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.pending: list[Put] = []
        self.unsynced_low: dict[str, int] = {}  # pubend -> lowest unsynced record timestamp
        self.failed: str | None = None

    def check_alive(self) -> None:
        if self.failed is not None:
            raise FatalStorageError(f"the store failed earlier ({self.failed}); restart it")

    def check_flush(self) -> None:
        for p in self.pending:
            if isinstance(p, PutLatestDelivered):
                low = self.unsynced_low.get(p.pubend)
                if low is not None and low <= p.timestamp:
                    raise StorageOrderError(
                        f"latestDelivered({p.pubend}) = {p.timestamp} flushed while the PFS "
                        f"record at {low} is not synced; sync the PFS first [DUR §4.1]"
                    )

    def check_chop(self, e: PfsChop) -> None:
        durable = self.tables.released_p(e.pubend)
        if e.released > durable:
            raise StorageOrderError(
                f"chop of {e.pubend} up to {e.released}: the durable released(p) is {durable}; "
                "flush the release point before chopping"
            )
        meta = self.tables.pfs_meta.get(e.pubend)
        if meta is None or meta.first_index < e.first_index:
            raise StorageOrderError(
                f"chop of {e.pubend} to first index {e.first_index} before the metadata "
                "saying so was flushed"
            )


@attrs.define
class _Segments:
    """One pubend's segment files: their first indices, how many records the last holds,
    the next index, the segments written since their last fsync."""

    bases: list[int]
    in_last: int
    next_index: int
    dirty: set[str] = attrs.Factory(set)


def _segment_name(pubend: str, base: int) -> str:
    return f"pfs-{pubend}-{base:012d}.log"


def _parse_segment(name: str) -> tuple[str, int] | None:
    if not (name.startswith("pfs-") and name.endswith(".log")):
        return None
    pubend, _, base = name[4:-4].rpartition("-")
    return (pubend, int(base)) if base.isdigit() and pubend else None


_SAFE: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


class LogStore:
    """The PFS in append-only segment files on a :class:`Disk`, the tables in a
    :data:`Meta` (see the module doc). Open with :meth:`open` (a directory: real files and
    SQLite) or :meth:`open_on` (any disk and tables). ``ack_before_sync`` plants the bug
    "acknowledge before fsync": a :class:`PfsSync` returns having fsynced only what the
    *previous* sync asked for."""

    def __init__(
        self,
        disk: Disk,
        meta: Meta,
        tables: Tables,
        segments: dict[str, _Segments],
        *,
        segment_records: int,
        ack_before_sync: bool,
        root: str | None,
    ) -> None:
        self.disk = disk
        self.meta = meta
        self.order = _Ordered(tables)
        self.segments = segments
        self.segment_records = segment_records
        self.ack_before_sync = ack_before_sync
        self.root = root
        self._deferred: set[str] = set()

    @classmethod
    def open(cls, root: str, *, segment_records: int = 4096) -> tuple[LogStore, Recovered]:
        """Real files in ``root`` and SQLite in ``root/tables.db``."""
        disk = RealDisk(os.path.join(root, "pfs"))
        meta = SqliteMeta(os.path.join(root, "tables.db"))
        store, rec = cls.open_on(disk, meta, segment_records=segment_records)
        store.root = root
        return store, rec

    @classmethod
    def open_on(
        cls,
        disk: Disk,
        meta: Meta,
        *,
        segment_records: int = 4096,
        ack_before_sync: bool = False,
    ) -> tuple[LogStore, Recovered]:
        """Recover what ``disk`` and ``meta`` hold (see the module doc) and open a store."""
        tables = meta.load()
        found: dict[str, list[int]] = {}
        for name in disk.names():
            parsed = _parse_segment(name)
            if parsed is not None:
                found.setdefault(parsed[0], []).append(parsed[1])
        pubends = sorted(set(found) | set(tables.latest) | set(tables.pfs_meta))
        notes: list[str] = []
        pfs: dict[str, PfsStream] = {}
        segments: dict[str, _Segments] = {}
        for p in pubends:
            pfs[p], segments[p] = _recover_pubend(
                disk, meta, tables, p, sorted(found.get(p, [])), notes
            )
        store = cls(
            disk,
            meta,
            tables,
            segments,
            segment_records=segment_records,
            ack_before_sync=ack_before_sync,
            root=None,
        )
        return store, Recovered(tables=tables.copy(), pfs=pfs, notes=tuple(notes))

    def restart(self) -> tuple[LogStore, Recovered]:
        """Close and recover again from what is on disk (a process restart)."""
        self.close()
        if self.root is not None:
            return LogStore.open(self.root, segment_records=self.segment_records)
        return LogStore.open_on(
            self.disk,
            self.meta,
            segment_records=self.segment_records,
            ack_before_sync=self.ack_before_sync,
        )

    def close(self) -> None:
        self.disk.close()
        if isinstance(self.meta, SqliteMeta):
            self.meta.close()

    def _fsync(self, name: str | None) -> None:
        try:
            if name is None:
                self.disk.sync_dir()
            else:
                self.disk.sync(name)
        except OSError as exc:
            self.order.failed = f"fsync of {name or 'the directory'} failed: {exc}"
            raise FatalStorageError(f"{self.order.failed}; fatal, never retried") from exc

    def apply(self, effects: Iterable[StorageEffect]) -> None:
        """Carry out ``effects`` in order; when this returns, every :class:`PfsSync` and
        :class:`Flush` among them is durable."""
        self.order.check_alive()
        for e in effects:
            if isinstance(e, PfsAppend):
                self._append(e)
            elif isinstance(e, PfsSync):
                self._sync(e.pubend)
            elif isinstance(e, PfsChop):
                self._chop(e)
            elif isinstance(e, Flush):
                self.order.check_flush()
                self._commit(self.order.pending)
                self.order.pending = []
            else:
                self.order.pending.append(e)

    def _commit(self, puts: Sequence[Put]) -> None:
        try:
            self.meta.commit(puts)
        except sqlite3.Error as exc:
            self.order.failed = f"commit failed: {exc}"
            raise FatalStorageError(f"{self.order.failed}; fatal, never retried") from exc
        for p in puts:
            self.order.tables.put(p)

    def _append(self, e: PfsAppend) -> None:
        seg = self.segments.get(e.pubend)
        if seg is None and not set(e.pubend) <= _SAFE:
            raise StorageOrderError(f"pubend {e.pubend!r}: only letters, digits, '_' and '.'")
        seg = self.segments.setdefault(e.pubend, _Segments(bases=[], in_last=0, next_index=0))
        if e.index != seg.next_index:
            raise StorageOrderError(
                f"append to {e.pubend} at index {e.index}, expected {seg.next_index}"
            )
        if not seg.bases or seg.in_last >= self.segment_records:
            if seg.bases:  # the full segment is made durable before the next one starts
                self._sync_names(seg, {_segment_name(e.pubend, seg.bases[-1])})
            name = _segment_name(e.pubend, e.index)
            self.disk.create(name)
            self._fsync(None)  # its directory entry, before any record goes in
            seg.bases.append(e.index)
            seg.in_last = 0
        name = _segment_name(e.pubend, seg.bases[-1])
        try:
            self.disk.append(name, frame(encode_record(e.record)))
        except OSError as exc:  # a short or failed write leaves the tail unknown: fatal
            self.order.failed = f"write to {name} failed: {exc}"
            raise FatalStorageError(f"{self.order.failed}; fatal, never retried") from exc
        seg.dirty.add(name)
        seg.in_last += 1
        seg.next_index += 1
        low = self.order.unsynced_low
        low[e.pubend] = min(low.get(e.pubend, e.record.timestamp), e.record.timestamp)

    def _sync_names(self, seg: _Segments, names: set[str]) -> None:
        for name in sorted(names & seg.dirty):
            self._fsync(name)
        seg.dirty -= names

    def _sync(self, pubend: str) -> None:
        seg = self.segments.get(pubend)
        if seg is None:
            return
        if self.ack_before_sync:  # the planted bug: acknowledge first, fsync at the next sync
            self._sync_names(seg, set(self._deferred))
            self._deferred = set(seg.dirty)
        else:
            self._sync_names(seg, set(seg.dirty))
        self.order.unsynced_low.pop(pubend, None)

    def _chop(self, e: PfsChop) -> None:
        self.order.check_chop(e)
        seg = self.segments.get(e.pubend)
        if seg is None:
            return
        removed = False
        while len(seg.bases) > 1 and seg.bases[1] <= e.first_index:
            name = _segment_name(e.pubend, seg.bases.pop(0))
            self.disk.remove(name)
            seg.dirty.discard(name)
            removed = True
        if removed:
            self._fsync(None)


def _read_segments(
    disk: Disk, pubend: str, bases: list[int], notes: list[str]
) -> tuple[list[tuple[int, PfsRecord, str, int]], list[int]]:
    """Every record of ``pubend``'s segments as ``(index, record, file, offset)``, and how
    many each segment holds; a torn tail is cut off and noted, corruption raises."""
    records: list[tuple[int, PfsRecord, str, int]] = []
    counts: list[int] = []
    expect = bases[0] if bases else 0
    for k, base in enumerate(bases):
        name = _segment_name(pubend, base)
        where = disk.where(name)
        if base != expect:
            raise CorruptLog(where, 0, f"segment starts at index {base}, expected {expect}")
        frames = read_frames(where, disk.read(name), last=k == len(bases) - 1)
        if frames.torn is not None:
            notes.append(
                f"{name}: dropped a torn last record at byte offset {frames.valid}: {frames.torn}"
            )
            log.warning(notes[-1])
            disk.truncate(name, frames.valid)
            disk.sync(name)
        for off, payload in frames.payloads:
            try:
                record = decode_record(payload)
            except ValueError as exc:
                raise CorruptLog(where, off, str(exc)) from None
            if records and record.timestamp <= records[-1][1].timestamp:
                raise CorruptLog(where, off, f"timestamp {record.timestamp} is not increasing")
            records.append((expect, record, name, off))
            expect += 1
        counts.append(len(frames.payloads))
    return records, counts


def _recover_pubend(
    disk: Disk, meta: Meta, tables: Tables, pubend: str, bases: list[int], notes: list[str]
) -> tuple[PfsStream, _Segments]:
    """One pubend's PFS after a restart (see the module doc)."""
    records, counts = _read_segments(disk, pubend, bases, notes)
    end = bases[-1] + counts[-1] if bases else 0
    pm = tables.pfs_meta.get(pubend)
    first = pm.first_index if pm is not None else (bases[0] if bases else 0)
    if pm is not None and pm.next_index > pm.first_index:
        name = _segment_name(pubend, bases[-1]) if bases else f"pfs-{pubend}-*.log"
        if not bases or bases[0] > pm.first_index:
            raise CorruptLog(
                disk.where(name), 0, f"records from index {pm.first_index} are missing"
            )
        if end < pm.next_index:
            raise CorruptLog(
                disk.where(name),
                len(disk.read(name)),
                f"{pm.next_index - end} records the tables say were synced are missing",
            )
    latest = tables.latest.get(pubend, -1)
    live = [(i, r) for i, r, _n, _o in records if i >= first and r.timestamp <= latest]
    cut = next((k for k, (_i, r, _n, _o) in enumerate(records) if r.timestamp > latest), None)
    seg = _Segments(
        bases=list(bases), in_last=counts[-1] if counts else 0, next_index=max(end, first)
    )
    if cut is not None:
        index, _r, name, off = records[cut]
        kept = PfsStream.from_log(
            pubend, live, first_index=first, last_timestamp=latest, chopped_through=-1
        )
        meta_put = PutPfsMeta(
            pubend=pubend,
            first_index=first,
            next_index=index,
            last_timestamp=latest,
            last_index=kept.last_indices(),
        )
        meta.commit([meta_put])  # the tables stop claiming the dropped records first
        tables.put(meta_put)
        while seg.bases[-1] > index:
            disk.remove(_segment_name(pubend, seg.bases.pop()))
        disk.truncate(name, off)
        disk.sync(name)
        disk.sync_dir()
        seg.in_last, seg.next_index = index - seg.bases[-1], index
        notes.append(f"{pubend}: dropped {end - index} records above latestDelivered {latest}")
        log.info(notes[-1])
    stream = PfsStream.from_log(
        pubend,
        live,
        first_index=first,
        last_timestamp=latest,
        chopped_through=tables.released_p(pubend),
    )
    return stream, seg


class MemoryStore:
    """The same store in dictionaries and lists, for the simulator (see the module doc)."""

    def __init__(self, tables: Tables | None = None) -> None:
        self.order = _Ordered(tables if tables is not None else Tables())
        self.logs: dict[str, list[tuple[int, PfsRecord]]] = {}
        self.synced: dict[str, int] = {}  # pubend -> records below this index are synced
        self.first: dict[str, int] = {}

    def apply(self, effects: Iterable[StorageEffect]) -> None:
        """As :meth:`LogStore.apply`."""
        self.order.check_alive()
        for e in effects:
            if isinstance(e, PfsAppend):
                entries = self.logs.setdefault(e.pubend, [])
                expect = entries[-1][0] + 1 if entries else self.first.get(e.pubend, 0)
                if e.index != expect:
                    raise StorageOrderError(
                        f"append to {e.pubend} at index {e.index}, expected {expect}"
                    )
                entries.append((e.index, e.record))
                low = self.order.unsynced_low
                low[e.pubend] = min(low.get(e.pubend, e.record.timestamp), e.record.timestamp)
            elif isinstance(e, PfsSync):
                entries = self.logs.get(e.pubend, [])
                self.synced[e.pubend] = entries[-1][0] + 1 if entries else 0
                self.order.unsynced_low.pop(e.pubend, None)
            elif isinstance(e, PfsChop):
                self.order.check_chop(e)
                self.logs[e.pubend] = [
                    (i, r) for i, r in self.logs.get(e.pubend, []) if i >= e.first_index
                ]
                self.first[e.pubend] = e.first_index
            elif isinstance(e, Flush):
                self.order.check_flush()
                for p in self.order.pending:
                    self.order.tables.put(p)
                self.order.pending = []
            else:
                self.order.pending.append(e)

    def restart(self) -> tuple[MemoryStore, Recovered]:
        """What a restart keeps: committed tables, synced records up to latestDelivered."""
        tables = self.order.tables.copy()
        new = MemoryStore(tables.copy())
        pfs: dict[str, PfsStream] = {}
        notes: list[str] = []
        for p in sorted(set(self.logs) | set(tables.latest) | set(tables.pfs_meta)):
            pm = tables.pfs_meta.get(p)
            first = pm.first_index if pm is not None else self.first.get(p, 0)
            latest = tables.latest.get(p, -1)
            synced = [(i, r) for i, r in self.logs.get(p, []) if i < self.synced.get(p, 0)]
            kept = [(i, r) for i, r in synced if r.timestamp <= latest]
            if len(kept) < len(synced):
                notes.append(
                    f"{p}: dropped {len(synced) - len(kept)} records above latestDelivered {latest}"
                )
            new.logs[p] = kept
            new.synced[p] = kept[-1][0] + 1 if kept else 0
            new.first[p] = first
            live = [(i, r) for i, r in kept if i >= first]
            pfs[p] = PfsStream.from_log(
                p,
                live,
                first_index=first,
                last_timestamp=latest,
                chopped_through=tables.released_p(p),
            )
        return new, Recovered(tables=tables, pfs=pfs, notes=tuple(notes))

    def close(self) -> None:
        """Nothing to release."""


Store = LogStore | MemoryStore


class StorageDriver:
    """Drives a store the way an SHB's constream does [DUR §4.1, §4.2], for the tests, the
    crash child and the benchmark: :meth:`deliver` hands the PFS each delivered timestamp,
    :meth:`sync_point` syncs every PFS and then flushes ``latestDelivered`` with the buffered
    acknowledgements, :meth:`ack` buffers ``released(s, p)``, :meth:`checkpoint` a ``CT(s, p)``
    the SHB keeps (:meth:`flush` commits those alone), :meth:`chop` discards what the
    durable release point allows. ``durable_latest`` and ``durable_released`` are what the
    store has acknowledged as durable (they grow only when ``apply`` returned)."""

    def __init__(self, store: Store, recovered: Recovered) -> None:
        self.store = store
        self.pfs = dict(recovered.pfs)
        self.durable_latest = dict(recovered.tables.latest)
        self.durable_released = dict(recovered.tables.released)
        self.durable_checkpoints = dict(recovered.tables.checkpoints)
        self._acks: dict[tuple[int, str], int] = {}
        self._cts: dict[tuple[int, str], int] = {}

    def deliver(self, pubend: str, timestamp: int, subscribers: Iterable[int]) -> None:
        pfs = self.pfs.get(pubend) or PfsStream.empty(pubend)
        self.pfs[pubend], effects = pfs.write(timestamp, subscribers)
        self.store.apply(effects)

    def ack(self, subscriber: int, pubend: str, timestamp: int) -> None:
        """``subscriber`` acknowledged ``pubend`` up to ``timestamp`` (durable at the next
        sync point; an ack never goes past what was delivered, and released(s, p) never
        goes back: a checkpoint token only advances [DUR §2], and recovery takes every tick
        at or below the durable released(p) as L)."""
        pfs = self.pfs.get(pubend)
        top = pfs.last_timestamp if pfs is not None else -1
        key = (subscriber, pubend)
        before = max(self._acks.get(key, -1), self.durable_released.get(key, -1))
        self._acks[key] = max(before, min(timestamp, top))

    def checkpoint(self, subscriber: int, pubend: str, timestamp: int) -> None:
        """The SHB keeps ``CT(subscriber, pubend)`` (the second acknowledgement mode [DUR
        §5.2]): buffered, committed with the others at the next :meth:`flush` or sync point."""
        self._cts[(subscriber, pubend)] = timestamp

    def _checkpoint_puts(self) -> list[StorageEffect]:
        return [
            PutCheckpoint(subscriber=s, pubend=p, timestamp=t)
            for (s, p), t in sorted(self._cts.items())
        ]

    def flush(self) -> None:
        """Commit the buffered checkpoint tokens in one transaction [DUR §5.2]."""
        self.store.apply([*self._checkpoint_puts(), Flush()])
        self.durable_checkpoints.update(self._cts)
        self._cts.clear()

    def sync_point(self) -> None:
        effects: list[StorageEffect] = []
        latest: dict[str, int] = {}
        for p in sorted(self.pfs):
            self.pfs[p], fx = self.pfs[p].sync()
            effects.extend(fx)
            latest[p] = self.pfs[p].last_timestamp
            effects.append(PutLatestDelivered(pubend=p, timestamp=latest[p]))
        acks = dict(sorted(self._acks.items()))
        effects.extend(
            PutReleased(subscriber=s, pubend=p, timestamp=t) for (s, p), t in acks.items()
        )
        effects.extend(self._checkpoint_puts())
        effects.append(Flush())
        self.store.apply(effects)
        self._acks.clear()
        self.durable_latest.update(latest)
        self.durable_released.update(acks)
        self.durable_checkpoints.update(self._cts)
        self._cts.clear()

    def released_p(self, pubend: str) -> int:
        lows = [t for (_s, p), t in self.durable_released.items() if p == pubend]
        return min([self.durable_latest.get(pubend, -1), *lows])

    def chop(self, pubend: str) -> None:
        pfs = self.pfs.get(pubend)
        released = self.released_p(pubend)
        if pfs is None or released < 0:
            return
        self.pfs[pubend], effects = pfs.chop(released)
        self.store.apply(effects)
