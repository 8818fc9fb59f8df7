"""The PFS [DUR §4.2] against its obvious reference: random writes, syncs, chops and batch
reads on :class:`gapless.impl.durable.pfs.PfsStream` and :class:`gapless.spec.durable_pfs.RefPfs`
give the same Q/S/L ticks; old values never change; no-ops return the same object."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.durable.pfs import PfsStream, decode_record, encode_record, record_size
from gapless.impl.durable.storage import (
    NO_INDEX,
    Flush,
    PfsAppend,
    PfsChop,
    PfsRecord,
    PfsSync,
    PutPfsMeta,
)
from gapless.impl.errors import InvalidRange, InvalidTick, ProtocolMisuse
from gapless.spec.durable_pfs import RefPfs

SUBS = st.integers(min_value=0, max_value=5)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(1, 3), st.frozensets(SUBS, max_size=4)),
        st.tuples(st.just("sync")),
        st.tuples(st.just("chop"), st.integers(0, 30)),
        st.tuples(
            st.just("read"),
            SUBS,
            st.integers(-1, 40),
            st.integers(0, 40),
            st.one_of(st.none(), st.integers(1, 4)),
        ),
    ),
    max_size=60,
)


def _read(impl: PfsStream, s: int, after: int, upto: int, limit: int | None) -> tuple:
    r = impl.read(s, after=after, upto=upto, limit=limit)
    return r.lost_upto, r.q, r.known_upto


@given(OPS)
def test_pfs_matches_reference(ops: list[tuple]) -> None:
    impl, ref, t = PfsStream.empty("P0"), RefPfs(), 0
    history: list[tuple[PfsStream, dict[int, tuple]]] = []
    for op in ops:
        if op[0] == "write":
            t += op[1]
            impl, _ = impl.write(t, op[2])
            ref.write(t, op[2])
        elif op[0] == "sync":
            impl, _ = impl.sync()
            ref.sync()
        elif op[0] == "chop":
            released = min(op[1], impl.synced_timestamp)
            if released < 0:
                continue
            impl, _ = impl.chop(released)
            ref.chop(released)
        else:
            _, s, after, upto, limit = op
            after, upto = min(after, upto), max(after, upto)
            assert _read(impl, s, after, upto, limit) == ref.read(
                s, after=after, upto=upto, limit=limit
            )
        # whole reads of every subscriber, remembered to check old values never change
        snap = {s: _read(impl, s, -1, 45, None) for s in range(6)}
        assert snap == {s: ref.read(s, after=-1, upto=45) for s in range(6)}
        history.append((impl, snap))
    for old, snap in history:
        assert {s: _read(old, s, -1, 45, None) for s in range(6)} == snap


@given(OPS)
def test_pfs_recovered_from_its_effects(ops: list[tuple]) -> None:
    """Replaying the effects (only what PfsSync made durable, chops applied) and recovering
    with ``from_log`` gives the reference's state after a crash."""
    impl, ref, t = PfsStream.empty("P0"), RefPfs(), 0
    log: dict[int, PfsRecord] = {}
    durable: set[int] = set()
    first = 0
    for op in ops:
        if op[0] == "write":
            t += op[1]
            impl, fx = impl.write(t, op[2])
            ref.write(t, op[2])
        elif op[0] == "sync":
            impl, fx = impl.sync()
            ref.sync()
        elif op[0] == "chop" and impl.synced_timestamp >= 0:
            released = min(op[1], impl.synced_timestamp)
            impl, fx = impl.chop(released)
            ref.chop(released)
        else:
            continue
        for e in fx:
            if isinstance(e, PfsAppend):
                log[e.index] = e.record
            elif isinstance(e, PfsSync):
                durable.update(i for i in log if i <= e.upto_index)
            elif isinstance(e, PfsChop):
                first = e.first_index
    latest = impl.synced_timestamp
    released = min(latest, ref.chopped) if ref.chopped >= 0 else -1
    kept = [(i, log[i]) for i in sorted(durable) if i >= first and log[i].timestamp <= latest]
    back = PfsStream.from_log(
        "P0", kept, first_index=first, last_timestamp=latest, chopped_through=released
    )
    after_crash = ref.crash(latest_delivered=latest, released=released)
    for s in range(6):
        assert _read(back, s, -1, 45, None) == after_crash.read(s, after=-1, upto=45)


def test_pfs_effects_and_no_ops() -> None:
    pfs = PfsStream.empty("P0")
    pfs, fx = pfs.write(1, (2, 1))
    assert fx == (
        PfsAppend(
            pubend="P0",
            index=0,
            record=PfsRecord(timestamp=1, entries=((1, NO_INDEX), (2, NO_INDEX))),
        ),
    )
    assert pfs.write(1, (3,)) == (pfs, ())
    assert pfs.write(1, (3,))[0] is pfs
    silent, fx = pfs.write(2, ())
    assert fx == ()
    assert silent.last_timestamp == 2
    assert silent.next_index == 1
    synced, fx = silent.sync()
    assert fx == (
        PfsSync(pubend="P0", upto_index=0),
        PutPfsMeta(
            pubend="P0",
            first_index=0,
            next_index=1,
            last_timestamp=2,
            last_index=((1, 0), (2, 0)),
            changed_only=True,
        ),
    )
    assert synced.sync()[0] is synced
    assert synced.sync()[1] == ()
    # a sync point writes lastIndex only for the subscribers written since the last one
    again, _ = synced.write(3, (2, 9))
    _, fx = again.sync()
    assert fx[-1].last_index == ((2, 1), (9, 1))
    assert fx[-1].changed_only
    more, _ = synced.write(5, (1,))
    chopped, fx = more.sync()[0].chop(2)
    assert fx[1:] == (Flush(), PfsChop(pubend="P0", first_index=1, released=2))
    assert fx[0].first_index == 1
    assert chopped.chop(2)[0] is chopped
    # a chop above what was synced breaks the durability order
    with pytest.raises(ProtocolMisuse, match="synced timestamp"):
        more.chop(5)


def test_pfs_caller_mistakes_are_typed() -> None:
    pfs = PfsStream.empty("P0")
    with pytest.raises(InvalidTick):
        pfs.write(-1, (1,))
    with pytest.raises(ProtocolMisuse, match="subscriber numbers"):
        pfs.write(1, (-3,))
    with pytest.raises(InvalidRange):
        pfs.read(1, after=5, upto=4)
    with pytest.raises(ProtocolMisuse, match="limit"):
        pfs.read(1, after=0, upto=4, limit=0)


def test_record_encoding_is_8_plus_16n() -> None:
    rec = PfsRecord(timestamp=123456789, entries=((1, NO_INDEX), (7, 42), (2**40, 3)))
    data = encode_record(rec)
    assert len(data) == record_size(3) == 8 + 16 * 3
    assert decode_record(data) == rec
    with pytest.raises(ValueError, match="8 \\+ 16 n"):
        decode_record(data[:-1])


def test_a_wrong_back_pointer_is_caught_by_the_reference() -> None:
    """Non-vacuity: a back-pointer off by one (one of the zoo's bugs) makes the batch read
    disagree with the reference."""
    impl, ref = PfsStream.empty("P0"), RefPfs()
    for t, subs in ((1, (1,)), (2, (2,)), (3, (1, 2)), (4, (1,))):
        impl, _ = impl.write(t, subs)
        ref.write(t, subs)
    good = _read(impl, 1, -1, 10, None)
    assert good == ref.read(1, after=-1, upto=10)
    rec = impl.record(3)
    broken = attrs.evolve(impl, records=impl.records.set(3, attrs.evolve(rec, entries=((1, 1),))))
    assert _read(broken, 1, -1, 10, None) != ref.read(1, after=-1, upto=10)


class _Counting(list):  # type: ignore[type-arg]
    """A record list that counts the records a read looks at."""

    looked = 0

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        _Counting.looked += 1
        return super().__getitem__(i)


def test_a_batch_read_follows_only_the_subscribers_records() -> None:
    """The point of back-pointers [DUR §4.2]: a read costs what the subscriber matched, not
    what the pubend logged. 10,000 records, subscriber 7 in every 1,000th: a read of it
    looks at its 10 records (and the one below the range that stops the walk), no more."""
    pfs = PfsStream.empty("P0")
    for t in range(1, 10_001):
        pfs, _ = pfs.write(t, (7, 1) if t % 1000 == 0 else (1,))
    counted = attrs.evolve(pfs, records=_Counting(pfs.records))
    _Counting.looked = 0
    r = counted.read(7, after=0, upto=10_000)
    assert r.q == tuple(range(1000, 10_001, 1000))
    assert _Counting.looked == 10
    _Counting.looked = 0
    r = counted.read(7, after=4500, upto=10_000)
    assert r.q == tuple(range(5000, 10_001, 1000))
    assert _Counting.looked == 7  # 6 in range, then the record at 4000 ends the walk
