"""The log-file store (real files + SQLite) and the in-memory store give the same observable
results for random operation sequences, restarts included, and both agree with the PFS
reference after each restart [DUR §4.1, §4.2]; torn tails, corruption, order mistakes and
fsync failures behave as ``models/durable_store.py`` promises."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gapless.impl.durable.pfs import PfsStream
from gapless.impl.durable.storage import (
    CorruptLog,
    FatalStorageError,
    Flush,
    PfsAppend,
    PfsChop,
    PfsRecord,
    PfsSync,
    PutLatestDelivered,
    StorageOrderError,
)
from gapless.models.durable_disk import SimDisk
from gapless.models.durable_store import (
    LogStore,
    MemoryStore,
    Recovered,
    SimMeta,
    StorageDriver,
    frame,
    read_frames,
)
from gapless.spec.durable_pfs import RefPfs

PUBENDS = ("P0", "P1")
SUBS = range(4)
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("deliver"),
            st.sampled_from(PUBENDS),
            st.integers(1, 3),
            st.frozensets(st.sampled_from(SUBS), max_size=3),
        ),
        st.tuples(st.just("sync")),
        st.tuples(
            st.just("ack"), st.sampled_from(SUBS), st.sampled_from(PUBENDS), st.integers(0, 6)
        ),
        st.tuples(st.just("chop"), st.sampled_from(PUBENDS)),
        st.tuples(
            st.just("ct"), st.sampled_from(SUBS), st.sampled_from(PUBENDS), st.integers(0, 9)
        ),
        st.tuples(st.just("flush")),
        st.tuples(st.just("restart")),
    ),
    max_size=40,
)


def observe(rec: Recovered) -> dict[str, object]:
    """What a restarted SHB can see: the tables it runs on and every subscriber's ticks."""
    reads = {
        (p, s): (lambda r: (r.lost_upto, r.q, r.known_upto))(pfs.read(s, after=-1, upto=200))
        for p, pfs in rec.pfs.items()
        for s in SUBS
    }
    nexts = {p: pfs.next_index for p, pfs in rec.pfs.items()}
    return {
        "latest": rec.tables.latest,
        "released": rec.tables.released,
        "checkpoints": rec.tables.checkpoints,
        "reads": reads,
        "next": nexts,
    }


@contextmanager
def real_store() -> Iterator[tuple[LogStore, Recovered]]:
    with tempfile.TemporaryDirectory() as root:
        store, rec = LogStore.open(root, segment_records=3)
        try:
            yield store, rec
        finally:
            store.close()


def run_ops(ops: list[tuple], drivers: list[StorageDriver]) -> list[list[dict[str, object]]]:
    """Run ``ops`` on every driver; what each observed at every restart."""
    refs = {p: RefPfs() for p in PUBENDS}
    t = dict.fromkeys(PUBENDS, 0)
    seen: list[list[dict[str, object]]] = [[] for _ in drivers]
    for op in ops:
        if op[0] == "deliver":
            _, p, dt, subs = op
            t[p] += dt
            refs[p].write(t[p], subs)
            for d in drivers:
                d.deliver(p, t[p], subs)
        elif op[0] == "sync":
            for d in drivers:
                d.sync_point()
            for r in refs.values():
                r.sync()
        elif op[0] == "ack":
            for d in drivers:
                d.ack(op[1], op[2], op[3] * 2)
        elif op[0] == "chop":
            for d in drivers:
                d.chop(op[1])
        elif op[0] == "ct":
            for d in drivers:
                d.checkpoint(op[1], op[2], op[3])
        elif op[0] == "flush":
            for d in drivers:
                d.flush()
        else:
            base = drivers[0]
            latest = {p: base.durable_latest.get(p, -1) for p in PUBENDS}
            released = {p: base.released_p(p) for p in PUBENDS}
            for k, d in enumerate(drivers):
                store, rec = d.store.restart()
                assert rec.tables.checkpoints == d.durable_checkpoints  # CT(s): what was flushed
                assert rec.tables.latest == d.durable_latest
                drivers[k] = StorageDriver(store, rec)
                seen[k].append(observe(rec))
                for p, pfs in rec.pfs.items():  # the reference after the same crash
                    after = refs[p].crash(latest_delivered=latest[p], released=released[p])
                    for s in SUBS:
                        r = pfs.read(s, after=-1, upto=200)
                        assert (r.lost_upto, r.q, r.known_upto) == after.read(s, after=-1, upto=200)
            refs = {
                p: refs[p].crash(latest_delivered=latest[p], released=released[p]) for p in PUBENDS
            }
            t = {p: max(t[p], latest[p]) for p in PUBENDS}
    return seen


@settings(max_examples=40)
@given(OPS)
def test_log_store_and_memory_store_agree(ops: list[tuple]) -> None:
    with real_store() as (store, rec):
        mem = MemoryStore()
        drivers = [StorageDriver(store, rec), StorageDriver(mem, mem.restart()[1])]
        seen = run_ops([*ops, ("restart",)], drivers)
        assert seen[0] == seen[1]
        drivers[0].store.close()


@settings(max_examples=40)
@given(OPS)
def test_sim_disk_store_agrees_without_power_loss(ops: list[tuple]) -> None:
    sim, _ = LogStore.open_on(SimDisk(), SimMeta(), segment_records=2)
    mem = MemoryStore()
    drivers = [StorageDriver(sim, sim.restart()[1]), StorageDriver(mem, mem.restart()[1])]
    seen = run_ops([*ops, ("restart",)], drivers)
    assert seen[0] == seen[1]


def _store_with_records(root: str, n: int = 5) -> None:
    store, rec = LogStore.open(root, segment_records=100)
    d = StorageDriver(store, rec)
    for t in range(1, n + 1):
        d.deliver("P0", t * 10, (1, 2))
    d.ack(1, "P0", 0)  # subscribers 1 and 2 have acknowledged nothing yet
    d.ack(2, "P0", 0)
    d.sync_point()
    store.close()


def _segment(root: str) -> str:
    (name,) = os.listdir(os.path.join(root, "pfs"))
    return os.path.join(root, "pfs", name)


def test_torn_tail_is_dropped_with_a_reason(tmp_path) -> None:
    root = str(tmp_path)
    _store_with_records(root)
    with open(_segment(root), "ab") as f:  # a sixth record, cut short by a crash
        f.write(frame(b"x" * 40)[:20])
    store, rec = LogStore.open(root)
    assert len(rec.notes) == 1
    assert "torn last record" in rec.notes[0]
    assert "cut short" in rec.notes[0]
    assert rec.pfs["P0"].read(1, after=-1, upto=50).q == (10, 20, 30, 40, 50)
    store.close()
    _, again = LogStore.open(root)  # the cut is durable: nothing to drop the second time
    assert again.notes == ()


def test_corruption_before_the_tail_names_file_and_offset(tmp_path) -> None:
    root = str(tmp_path)
    _store_with_records(root)
    path = _segment(root)
    with open(path, "r+b") as f:
        f.seek(8 + 10)  # a byte inside the first record's payload
        f.write(b"\xff")
    with pytest.raises(
        CorruptLog, match=r"/pfs/pfs-P0-0+\.log: corrupt at byte offset 0: checksum"
    ):
        LogStore.open(root)


def test_missing_synced_records_refuse(tmp_path) -> None:
    root = str(tmp_path)
    _store_with_records(root)
    path = _segment(root)
    os.truncate(path, os.path.getsize(path) - 48)  # exactly one whole record gone
    with pytest.raises(CorruptLog, match="1 records the tables say were synced are missing"):
        LogStore.open(root)


def test_records_above_latest_delivered_are_dropped(tmp_path) -> None:
    root = str(tmp_path)
    store, rec = LogStore.open(root, segment_records=2)
    d = StorageDriver(store, rec)
    for t in (1, 2, 3):
        d.deliver("P0", t, (1,))
    d.ack(1, "P0", 0)
    d.ack(2, "P0", 0)
    d.sync_point()
    for t in (4, 5, 6):  # synced by a PFS sync, but latestDelivered never flushed
        d.deliver("P0", t, (1,))
    store.apply(d.pfs["P0"].sync()[1])
    store, rec = store.restart()
    assert rec.pfs["P0"].read(1, after=0, upto=9).q == (1, 2, 3)
    assert rec.notes == ("P0: dropped 3 records above latestDelivered 3",)
    d = StorageDriver(store, rec)
    d.deliver("P0", 4, (1, 2))  # the constream delivers 4 again, now matching 2 as well
    d.sync_point()
    _, rec = store.restart()
    assert rec.pfs["P0"].read(2, after=0, upto=9).q == (4,)
    assert rec.notes == ()


@pytest.mark.parametrize("kind", ["memory", "log"])
def test_order_mistakes_are_refused(kind: str) -> None:
    mem: MemoryStore | LogStore = (
        MemoryStore() if kind == "memory" else LogStore.open_on(SimDisk(), SimMeta())[0]
    )
    rec = PfsRecord(timestamp=5, entries=((1, -1),))
    mem.apply([PfsAppend(pubend="P0", index=0, record=rec)])
    with pytest.raises(StorageOrderError, match="not synced"):
        mem.apply([PutLatestDelivered(pubend="P0", timestamp=5), Flush()])
    with pytest.raises(StorageOrderError, match="durable released"):
        mem.apply([PfsChop(pubend="P0", first_index=1, released=5)])
    mem.apply([PfsSync(pubend="P0", upto_index=0), PutLatestDelivered(pubend="P0", timestamp=5)])
    mem.apply([Flush()])  # now in order: released(p) = latestDelivered(p) = 5 is durable
    with pytest.raises(StorageOrderError, match="before the metadata"):
        mem.apply([PfsChop(pubend="P0", first_index=1, released=5)])
    sim, _ = LogStore.open_on(SimDisk(), SimMeta())
    with pytest.raises(StorageOrderError, match="expected 0"):
        sim.apply([PfsAppend(pubend="P0", index=3, record=rec)])


def test_fsync_failure_is_fatal_and_never_retried() -> None:
    disk = SimDisk(fail_sync_at=2)  # 1: the segment's directory entry; 2: the record
    store, rec = LogStore.open_on(disk, SimMeta())
    d = StorageDriver(store, rec)
    d.deliver("P0", 1, (1,))
    with pytest.raises(FatalStorageError, match="simulated fsync failure"):
        d.sync_point()
    syncs = disk.syncs
    with pytest.raises(FatalStorageError, match="failed earlier"):
        d.sync_point()
    assert disk.syncs == syncs  # not retried
    assert d.durable_latest == {}


def test_read_frames_reports_torn_only_in_the_last_segment() -> None:
    data = frame(b"a" * 8) + frame(b"b" * 8)[:5]
    assert read_frames("f", data, last=True).torn is not None
    with pytest.raises(CorruptLog, match="not the last"):
        read_frames("f", data, last=False)


def test_a_new_pfs_stream_per_pubend_after_restart() -> None:
    """A pubend that only saw silence comes back empty; with no subscriber, released(p) is
    latestDelivered(p), so its ticks are L."""
    mem = MemoryStore()
    d = StorageDriver(mem, mem.restart()[1])
    d.deliver("P1", 3, ())
    d.sync_point()
    _, rec = mem.restart()
    assert rec.pfs["P1"] == PfsStream.from_log(
        "P1", [], first_index=0, last_timestamp=3, chopped_through=3
    )


def test_a_failed_write_is_fatal_too() -> None:
    class FullDisk(SimDisk):
        def append(self, name: str, data: bytes) -> None:
            raise OSError(28, "No space left on device")

    store, rec = LogStore.open_on(FullDisk(), SimMeta())
    d = StorageDriver(store, rec)
    with pytest.raises(FatalStorageError, match="No space left"):
        d.deliver("P0", 1, (1,))
    with pytest.raises(FatalStorageError, match="failed earlier"):
        d.sync_point()


def test_a_missing_segment_refuses(tmp_path) -> None:
    """A segment gone from the middle, or from the front while the tables still point into
    it: recovery names the file and refuses."""
    root = str(tmp_path)
    store, rec = LogStore.open(root, segment_records=2)
    d = StorageDriver(store, rec)
    d.ack(1, "P0", 0)
    for t in range(1, 8):
        d.deliver("P0", t, (1,))
    d.sync_point()
    store.close()
    pfs = os.path.join(root, "pfs")
    names = sorted(os.listdir(pfs))
    assert len(names) == 4
    os.rename(os.path.join(pfs, names[1]), os.path.join(root, "aside"))
    with pytest.raises(
        CorruptLog,
        match=r"pfs-P0-000000000004\.log: corrupt at byte offset 0: segment starts at index 4, "
        r"expected 2",
    ):
        LogStore.open(root)
    os.rename(os.path.join(root, "aside"), os.path.join(pfs, names[1]))
    os.remove(os.path.join(pfs, names[0]))
    with pytest.raises(CorruptLog, match="records from index 0 are missing"):
        LogStore.open(root)
