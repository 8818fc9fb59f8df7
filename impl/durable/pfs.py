"""The persistent filtering subsystem (PFS) of one pubend, as a pure value [DUR §4.2].

Theory of operation
-------------------
The PFS remembers which timestamps matched which durable subscriber, so that a catchup stream
can rebuild a reconnecting subscriber's Q and S ticks without retrieving and refiltering every
event it missed [DUR §4.2]. One :class:`PfsStream` is one pubend's *log stream*:

* **write** — the constream hands it, in timestamp order, each timestamp it delivers with the
  subscribers the event matched (:meth:`PfsStream.write`). A timestamp that matched at least
  one subscriber becomes one record: the timestamp and, for each matching subscriber, the index
  of that subscriber's previous record (a back-pointer, Figure 2). A timestamp nobody matched
  writes nothing, it only advances ``last_timestamp``. The PFS is *precise*: only a matching
  timestamp is ever Q for a subscriber.
* **metadata** — ``last_index[s]`` (``lastIndex(s)``: the subscriber's latest record, a
  persistent vector indexed by subscriber number, in small chunks
  (:class:`~gapless.impl.durable.bigmap.ChunkedVector`): updating it for the matching subscribers
  costs what they number, nearly independent of how many subscribers the SHB hosts) and
  ``last_timestamp`` (``lastTimestamp``: everything up to it has been written; the paper
  defines it as the latest Q tick written, and a silence the constream delivers advances it
  too, so that a reader knows those ticks are S).
* **sync** — records are durable only once synced (:meth:`PfsStream.sync`, the paper's sync
  points, every 200 events per subscriber in §5.1.2); the sync also writes the metadata of the
  synced prefix.
* **batch read** — :meth:`PfsStream.read` rebuilds one subscriber's ticks for a range by
  following back-pointers from ``lastIndex(s)``: ticks above ``last_timestamp`` are Q (not yet
  known), the listed timestamps are Q (matched: nack them), everything else up to what the
  read determined is S. A bounded read returns the earliest ``limit`` Q ticks (the catchup
  stream's read buffer [DUR §5.3]).
* **chop** — records at or below a durable release point are discarded
  (:meth:`PfsStream.chop`); their ticks are L for every subscriber, a prefix of time [DUR §4.2].

Every operation returns ``(stream, effects)`` with the storage effects of
:mod:`gapless.impl.durable.storage`; an operation that changes nothing returns the same object
and ``()``. :mod:`gapless.spec.durable_pfs` is the obvious reference (per-subscriber lists of
matching timestamps) that ``tests/durable/test_pfs.py`` runs it against.

>>> pfs = PfsStream.empty("P0")
>>> pfs, fx = pfs.write(1, (1, 2))
>>> pfs, _ = pfs.write(3, (2,))
>>> pfs, _ = pfs.write(4, (1, 3))
>>> pfs, _ = pfs.write(5, (2, 3))
>>> pfs.record(2).entries  # timestamp 4: s1's previous record is index 0, s3 has none
((1, 0), (3, -1))
>>> r = pfs.read(3, after=0, upto=10)
>>> r.q, r.known_upto  # ticks 4, 5 are Q; 1-3 are S; 6-10 still unknown
((4, 5), 5)
>>> len(encode_record(pfs.record(2))) == 8 + 16 * 2
True
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Iterable
from functools import lru_cache
from itertools import chain
from typing import Final, final

import attrs

from gapless.impl.durable.bigmap import ChunkedVector
from gapless.impl.durable.storage import (
    NO_INDEX,
    Flush,
    PfsAppend,
    PfsChop,
    PfsRecord,
    PfsSync,
    PutPfsMeta,
    StorageEffect,
    SubscriberId,
)
from gapless.impl.errors import InvalidRange, InvalidTick, ProtocolMisuse

__all__ = [
    "MAX_SUBSCRIBERS",
    "PAPER_PFS",
    "PfsPolicy",
    "PfsRead",
    "PfsStream",
    "decode_record",
    "encode_record",
    "record_size",
]

MAX_SUBSCRIBERS: Final = 1 << 24
"""Subscriber numbers are ``0 <= s < MAX_SUBSCRIBERS``: an SHB numbers its durable
subscribers densely, and ``lastIndex`` is a vector indexed by that number."""

_TS: Final = struct.Struct("<q")
_ENTRY: Final = struct.Struct("<qq")
_EMPTY_INDEX: ChunkedVector[int] = ChunkedVector.of(())
_EMPTY_RECORDS: ChunkedVector[PfsRecord] = ChunkedVector.of(())

Effects = tuple[StorageEffect, ...]


def record_size(matching: int) -> int:
    """Bytes of a record matching ``matching`` subscribers: ``8 + 16 n`` [DUR §4.2 note 2]."""
    return _TS.size + _ENTRY.size * matching


@lru_cache(maxsize=256)
def _layout(matching: int) -> struct.Struct:
    return struct.Struct(f"<{1 + 2 * matching}q")


def encode_record(record: PfsRecord) -> bytes:
    """The record as bytes: the timestamp, then ``(subscriber, previous index)`` pairs, each
    a little-endian signed 64-bit integer (``8 + 16 n`` bytes)."""
    entries = record.entries
    return _layout(len(entries)).pack(record.timestamp, *chain.from_iterable(entries))


def decode_record(data: bytes) -> PfsRecord:
    """The inverse of :func:`encode_record`; :class:`ValueError` for bytes of a wrong size."""
    if len(data) < _TS.size or (len(data) - _TS.size) % _ENTRY.size:
        raise ValueError(f"a PFS record is 8 + 16 n bytes; got {len(data)}")
    (timestamp,) = _TS.unpack_from(data)
    entries = tuple(_ENTRY.iter_unpack(data[_TS.size :]))
    return PfsRecord(timestamp=timestamp, entries=entries)


def _pairs(lasts: ChunkedVector[int]) -> tuple[tuple[SubscriberId, int], ...]:
    """``(subscriber, lastIndex(subscriber))`` for every subscriber with a record."""
    return tuple((s, i) for s, i in enumerate(lasts) if i != NO_INDEX)


def _previous(record: PfsRecord, subscriber: SubscriberId) -> int | None:
    """The back-pointer of ``subscriber`` in ``record`` (its entries are sorted); None when
    the record does not name ``subscriber``. The paper's writes never lead a chain to such a
    record; a wrong back-pointer (:class:`PfsPolicy`) does, and the read ends the chain there
    (it finds fewer Q ticks, never another subscriber's)."""
    entries = record.entries
    at = bisect_left(entries, (subscriber, NO_INDEX - 1))
    if at == len(entries) or entries[at][0] != subscriber:
        return None
    return entries[at][1]


@final
@attrs.frozen(kw_only=True)
class PfsPolicy:
    """How a record's back-pointers are written [DUR §4.2, Figure 2]: each is the index of
    the subscriber's previous record, ``lastIndex(s)`` (the paper); ``back_pointer_slip``
    less than that (a planted bug: a back-pointer off by one, so a batch read following the
    chain misses the subscriber's earlier matching timestamps and serves them as silence)."""

    back_pointer_slip: int = 0

    def back_pointer(self, last_index: int) -> int:
        """The back-pointer written for a subscriber whose latest record is ``last_index``."""
        if last_index == NO_INDEX or not self.back_pointer_slip:
            return last_index
        return max(NO_INDEX, last_index - self.back_pointer_slip)


PAPER_PFS: Final = PfsPolicy()
"""The paper's back-pointers."""


@final
@attrs.frozen(kw_only=True)
class PfsRead:
    """What a batch read determined for ticks ``(after, upto]`` of one subscriber:

    * ticks in ``(after, lost_upto]`` are L (chopped: released, information discarded);
    * ``q`` — the Q ticks (matching timestamps) in ``(lost_upto, known_upto]``, ascending;
    * every other tick in ``(lost_upto, known_upto]`` is S;
    * ticks in ``(known_upto, upto]`` are still unknown (Q) to the reader.
    """

    lost_upto: int
    q: tuple[int, ...]
    known_upto: int


@final
@attrs.frozen(kw_only=True)
class PfsStream:
    """One pubend's PFS log stream and its metadata (see the module doc). ``records`` holds
    the live (unchopped) records, ``records[0]`` at ``first_index`` (:meth:`record` looks
    one up by index); ``synced_*`` is the state as of the last sync —
    what a crash keeps; ``policy`` how back-pointers are written (:class:`PfsPolicy`)."""

    pubend: str
    first_index: int = 0
    next_index: int = 0
    last_timestamp: int = -1
    chopped_through: int = -1
    last_index: ChunkedVector[int] = _EMPTY_INDEX
    records: ChunkedVector[PfsRecord] = _EMPTY_RECORDS
    synced_index: int = 0
    synced_timestamp: int = -1
    synced_last_index: ChunkedVector[int] = _EMPTY_INDEX
    policy: PfsPolicy = PAPER_PFS

    @classmethod
    def empty(cls, pubend: str, policy: PfsPolicy = PAPER_PFS) -> PfsStream:
        """A PFS stream with no record; every tick unknown."""
        return cls(pubend=pubend, policy=policy)

    def with_policy(self, policy: PfsPolicy) -> PfsStream:
        """This stream writing its next records under ``policy`` (a recovered stream takes
        its SHB's policy); the same object when it already does."""
        return self if policy == self.policy else attrs.evolve(self, policy=policy)

    @classmethod
    def from_log(
        cls,
        pubend: str,
        records: Iterable[tuple[int, PfsRecord]],
        *,
        first_index: int,
        last_timestamp: int,
        chopped_through: int,
    ) -> PfsStream:
        """The stream recovered from durable storage: the live ``(index, record)`` pairs in
        index order (indices consecutive from ``first_index``), every one synced, and
        ``last_timestamp`` — latestDelivered(p), what the constream had written [DUR §4.1]."""
        recs: dict[int, PfsRecord] = {}
        last: dict[SubscriberId, int] = {}
        expect = first_index
        for index, record in records:
            if index != expect:
                raise ProtocolMisuse(f"PfsStream.from_log: index {index}, expected {expect}")
            if record.timestamp > last_timestamp:
                raise InvalidTick(
                    f"PfsStream.from_log: record {index} at {record.timestamp} is past "
                    f"last_timestamp {last_timestamp}"
                )
            recs[index] = record
            for s, _prev in record.entries:
                last[s] = index
            expect += 1
        top = max(last, default=-1)
        lasts = ChunkedVector.of(last.get(s, NO_INDEX) for s in range(top + 1))
        return cls(
            pubend=pubend,
            first_index=first_index,
            next_index=expect,
            last_timestamp=last_timestamp,
            chopped_through=chopped_through,
            last_index=lasts,
            records=ChunkedVector.of(recs.values()),
            synced_index=expect,
            synced_timestamp=last_timestamp,
            synced_last_index=lasts,
        )

    def last_indices(self) -> tuple[tuple[SubscriberId, int], ...]:
        """``lastIndex(s)`` of every subscriber with a record, by subscriber."""
        return _pairs(self.last_index)

    def record(self, index: int) -> PfsRecord:
        """The live record at ``index``."""
        if not self.first_index <= index < self.next_index:
            raise ProtocolMisuse(
                f"PfsStream.record({index}): live records are {self.first_index} to "
                f"{self.next_index - 1}"
            )
        return self.records[index - self.first_index]

    def write(
        self, timestamp: int, subscribers: Iterable[SubscriberId]
    ) -> tuple[PfsStream, Effects]:
        """The constream delivered ``timestamp``, matching ``subscribers`` (none for a
        silence) [DUR §4.2 "API"]. A timestamp at or below ``last_timestamp`` was written
        already (the constream resumes from latestDelivered after a crash): ignored."""
        if type(timestamp) is not int or timestamp < 0:
            raise InvalidTick(f"PfsStream.write: timestamp {timestamp!r} is not an int >= 0")
        if timestamp <= self.last_timestamp:
            return self, ()
        matched = sorted(set(subscribers))
        if not matched:
            return attrs.evolve(self, last_timestamp=timestamp), ()
        if matched[0] < 0 or matched[-1] >= MAX_SUBSCRIBERS:
            raise ProtocolMisuse(
                f"PfsStream.write: subscriber numbers {matched[0]}..{matched[-1]}; allowed "
                f"0 <= s < {MAX_SUBSCRIBERS}"
            )
        index = self.next_index
        lasts = self.last_index.extended(matched[-1] + 1, NO_INDEX)
        slip = self.policy.back_pointer
        prevs = [slip(lasts[s]) for s in matched]
        lasts = lasts.set_many(dict.fromkeys(matched, index))
        record = PfsRecord(timestamp=timestamp, entries=tuple(zip(matched, prevs, strict=True)))
        new = PfsStream(
            pubend=self.pubend,
            first_index=self.first_index,
            next_index=index + 1,
            last_timestamp=timestamp,
            chopped_through=self.chopped_through,
            last_index=lasts,
            records=self.records.append(record),
            synced_index=self.synced_index,
            synced_timestamp=self.synced_timestamp,
            synced_last_index=self.synced_last_index,
            policy=self.policy,
        )
        return new, (PfsAppend(pubend=self.pubend, index=index, record=record),)

    def _meta(
        self, first_index: int, changed: tuple[tuple[SubscriberId, int], ...] = ()
    ) -> PutPfsMeta:
        """The metadata of the synced prefix, ``lastIndex`` only where ``changed``."""
        return PutPfsMeta(
            pubend=self.pubend,
            first_index=first_index,
            next_index=self.synced_index,
            last_timestamp=self.synced_timestamp,
            last_index=changed,
            changed_only=True,
        )

    def _changed_since_sync(self) -> tuple[tuple[SubscriberId, int], ...]:
        """``lastIndex(s)`` of the subscribers named by a record written since the last sync:
        the only entries that changed (its cost is those records' entries, not the hosted
        subscribers)."""
        names: set[SubscriberId] = set()
        records = self.records
        for at in range(self.synced_index - self.first_index, len(records)):
            names.update(s for s, _prev in records[at].entries)
        lasts = self.last_index
        return tuple((s, lasts[s]) for s in sorted(names))

    def sync(self) -> tuple[PfsStream, Effects]:
        """A sync point: make every record written so far durable, then record the
        metadata of the synced prefix (durable at the caller's next :class:`Flush`, which
        may then carry latestDelivered up to ``last_timestamp`` [DUR §4.1])."""
        if self.synced_index == self.next_index and self.synced_timestamp == self.last_timestamp:
            return self, ()
        changed = self._changed_since_sync()
        new = attrs.evolve(
            self,
            synced_index=self.next_index,
            synced_timestamp=self.last_timestamp,
            synced_last_index=self.last_index,
        )
        effects: Effects = ()
        if self.synced_index < self.next_index:
            effects = (PfsSync(pubend=self.pubend, upto_index=self.next_index - 1),)
        return new, (*effects, new._meta(new.first_index, changed))

    def chop(self, released: int) -> tuple[PfsStream, Effects]:
        """Discard the records at or below ``released``, a release point the caller has made
        durable [DUR §4.2]: the metadata's new first index is committed first, then the
        records go, so a crash in between leaves records nobody reads, never the reverse."""
        if released <= self.chopped_through:
            return self, ()
        if released > self.synced_timestamp:
            raise ProtocolMisuse(
                f"PfsStream.chop({released}): above the synced timestamp "
                f"{self.synced_timestamp}; released(p) <= latestDelivered(p), which is "
                "flushed only after the PFS records under it are synced"
            )
        first = self.first_index
        while first < self.synced_index and self.record(first).timestamp <= released:
            first += 1
        records = self.records.drop_first(first - self.first_index)
        new = attrs.evolve(self, first_index=first, chopped_through=released, records=records)
        if first == self.first_index:
            return new, ()
        chop = PfsChop(pubend=self.pubend, first_index=first, released=released)
        return new, (new._meta(first), Flush(), chop)

    def read(
        self, subscriber: SubscriberId, *, after: int, upto: int, limit: int | None = None
    ) -> PfsRead:
        """Subscriber ``subscriber``'s ticks in ``(after, upto]`` [DUR §4.2]: follow the
        back-pointers from ``lastIndex(s)`` down to ``after``; with ``limit``, return only
        the earliest ``limit`` Q ticks (and determine ticks only up to the next one)."""
        if upto < after:
            raise InvalidRange(f"PfsStream.read: upto {upto} < after {after}")
        if limit is not None and limit < 1:
            raise ProtocolMisuse(f"PfsStream.read: limit {limit} must be >= 1 or None")
        lost = min(upto, self.chopped_through) if self.chopped_through > after else after
        hi = max(lost, min(upto, self.last_timestamp))
        found: list[int] = []
        lasts = self.last_index
        index = lasts[subscriber] if 0 <= subscriber < len(lasts) else NO_INDEX
        while index >= self.first_index:
            record = self.records[index - self.first_index]
            previous = _previous(record, subscriber)
            if record.timestamp <= lost or previous is None:
                break
            if record.timestamp <= hi:
                found.append(record.timestamp)
            index = previous
        found.reverse()
        if limit is not None and len(found) > limit:
            return PfsRead(lost_upto=lost, q=tuple(found[:limit]), known_upto=found[limit] - 1)
        return PfsRead(lost_upto=lost, q=tuple(found), known_upto=hi)
