"""Power loss on the simulated disk [issue 13 §4]: a SIGKILL keeps the page cache, a power loss
does not. After any power loss — unsynced writes dropped, or any prefix kept with the last one
torn, unsynced directory changes undone — recovery reads a consistent state and nothing the
store acknowledged as durable is lost. The planted bug "acknowledge before fsync" is caught."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from gapless.impl.durable.storage import CorruptLog
from gapless.models.durable_disk import SimDisk
from gapless.models.durable_store import LogStore, SimMeta, StorageDriver
from gapless.spec.durable_pfs import RefPfs

PUBENDS = ("P0", "P1")
SUBS = range(3)
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("deliver"),
            st.sampled_from(PUBENDS),
            st.integers(1, 3),
            st.frozensets(st.sampled_from(SUBS), min_size=1, max_size=3),
        ),
        st.tuples(st.just("sync")),
        st.tuples(
            st.just("ack"), st.sampled_from(SUBS), st.sampled_from(PUBENDS), st.integers(0, 9)
        ),
        st.tuples(st.just("chop"), st.sampled_from(PUBENDS)),
        st.tuples(st.just("power_loss")),
    ),
    max_size=50,
)


def run(ops: list[tuple], seed: int, *, ack_before_sync: bool = False) -> str:
    """``"ok"``, or how the run went wrong: ``"refused"`` (recovery raised) or ``"lost"``
    (something acknowledged as durable did not come back)."""
    rng = random.Random(seed)
    disk, meta = SimDisk(), SimMeta()
    store, rec = LogStore.open_on(disk, meta, segment_records=2, ack_before_sync=ack_before_sync)
    d = StorageDriver(store, rec)
    refs = {p: RefPfs() for p in PUBENDS}
    t = dict.fromkeys(PUBENDS, 0)
    for s in SUBS:
        for p in PUBENDS:
            d.ack(s, p, 0)
    for op in ops:
        if op[0] == "deliver":
            _, p, dt, subs = op
            t[p] += dt
            refs[p].write(t[p], subs)
            d.deliver(p, t[p], subs)
        elif op[0] == "sync":
            d.sync_point()
            for r in refs.values():
                r.sync()
        elif op[0] == "ack":
            d.ack(op[1], op[2], op[3] * 2)
        elif op[0] == "chop":
            d.chop(op[1])
        else:
            latest = {p: d.durable_latest.get(p, -1) for p in PUBENDS}
            released = {p: d.released_p(p) for p in PUBENDS}
            disk.power_loss(rng)
            try:
                store, rec = LogStore.open_on(
                    disk, meta, segment_records=2, ack_before_sync=ack_before_sync
                )
            except CorruptLog:
                return "refused"
            refs = {
                p: refs[p].crash(latest_delivered=latest[p], released=released[p]) for p in PUBENDS
            }
            if {p: rec.tables.latest.get(p, -1) for p in PUBENDS} != latest:
                return "lost"
            for p, pfs in rec.pfs.items():
                for s in SUBS:
                    r = pfs.read(s, after=-1, upto=500)
                    if (r.lost_upto, r.q, r.known_upto) != refs[p].read(s, after=-1, upto=500):
                        return "lost"
            d = StorageDriver(store, rec)
            t = {p: max(t[p], latest[p]) for p in PUBENDS}
    return "ok"


@settings(max_examples=150)
@given(OPS, st.integers(0, 2**32))
def test_power_loss_never_loses_what_was_acknowledged(ops: list[tuple], seed: int) -> None:
    assert run([*ops, ("power_loss",)], seed) == "ok"


def _workload(rng: random.Random) -> list[tuple]:
    ops: list[tuple] = []
    for _ in range(rng.randint(3, 8)):
        ops += [
            ("deliver", rng.choice(PUBENDS), rng.randint(1, 3), frozenset({rng.randrange(3)}))
            for _ in range(rng.randint(1, 5))
        ]
        ops.append(("sync",))
        if rng.random() < 0.3:
            ops.append(("power_loss",))
    return [*ops, ("power_loss",)]


def test_acknowledge_before_fsync_is_caught() -> None:
    """Non-vacuity: the same workloads and power losses, run on the correct store and on the
    planted bug; the correct one never fails, the bug is caught (recovery refuses, or an
    acknowledged record is missing) in a good share of the runs."""
    caught = {"ok": 0, "refused": 0, "lost": 0}
    for seed in range(60):
        ops = _workload(random.Random(seed))
        assert run(ops, seed) == "ok"
        caught[run(ops, seed, ack_before_sync=True)] += 1
    assert caught["refused"] + caught["lost"] >= 10, caught


def test_power_loss_tears_and_drops_unsynced_writes() -> None:
    """The simulated disk itself: synced content always survives; of unsynced appends, a
    prefix survives, the last possibly torn; unsynced creations may vanish."""
    outcomes = set()
    for seed in range(200):
        disk = SimDisk()
        disk.create("a")
        disk.sync_dir()
        disk.append("a", b"0123")
        disk.sync("a")
        disk.append("a", b"4567")
        disk.append("a", b"89")
        disk.create("b")
        disk.power_loss(random.Random(seed))
        data = disk.read("a")
        assert b"0123456789".startswith(data)
        assert data.startswith(b"0123")
        outcomes.add((len(data), "b" in disk.names()))
    assert {4, 8, 10} <= {n for n, _ in outcomes}  # dropped, kept whole, kept all
    assert {5, 6, 7, 9} & {n for n, _ in outcomes}  # torn
    assert {True, False} == {b for _, b in outcomes}
