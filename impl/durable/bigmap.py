"""Persistent containers for the SHB's per-subscriber state that stay cheap with 10,000
subscribers: :class:`ShardedMap` and :class:`ChunkedVector` [DUR §4, §5.1].

Theory of operation
-------------------
The SHB keeps per subscriber a session (what it was sent), a release record (``released(s,
p)``) and, in the PFS, ``lastIndex(s)``. Every event updates these for the subscribers it
matched, and the issue asks that the per-event cost grow with those, not with every hosted
subscriber (``constream_cost_ratio_10000``). pyrsistent's ``PMap`` and ``PVector`` give
O(log n) updates, but each new version is *one* object that the garbage collector traverses
whole: ``PVector``'s nodes are C structs, not Python objects, so a young vector of 10,000
entries costs the collector 10,000 visits at every generation-0 collection (about every 700
allocations), and the SHB makes a new one per event. Measured on this machine: 20 young
10,000-entry maps make one ``gc.collect(0)`` take 10 ms, 20 of 100 entries 39 µs.

Both containers here split the same data into small pieces that are separate Python objects,
so a new version is a few small young objects and the untouched pieces stay old:

* :class:`ShardedMap` — a mapping split by ``_shard(key)`` (hash bits) into ``PMap`` shards; an
  update makes a new shard and a new outer map of ``SHARDS`` entries. It is a read-only
  :class:`collections.abc.Mapping` with ``set``/``remove``/``discard`` returning new maps,
  like ``PMap``; iteration order is the shards' (as ``PMap``'s, by hash): callers that need an
  order sort.
* :class:`ChunkedVector` — values indexed ``0..n-1`` in ``PVector`` chunks of ``CHUNK``
  (``lastIndex``; the PFS's live records, appended at the end and dropped from the front).

>>> m = ShardedMap.of({"a": 1}).set("b", 2)
>>> m["b"], len(m), sorted(m.items()), m.remove("a") == {"b": 2}
(2, 2, [('a', 1), ('b', 2)], True)
>>> v = ChunkedVector.filled(70, -1).set_many({3: 7, 65: 9})
>>> v[3], v[65], v[4], len(v), len(v.extended(200, -1))
(7, 9, -1, 70, 200)
>>> w = ChunkedVector.of(range(40)).drop_first(35).append(40)
>>> list(w), w[0]
([35, 36, 37, 38, 39, 40], 35)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, Generic, TypeVar, final

from pyrsistent import PMap, PVector, pmap, pvector

from gapless.impl.errors import ProtocolMisuse

__all__ = ["CHUNK", "SHARDS", "ChunkedVector", "ShardedMap", "sharded"]

SHARDS: Final = 64
"""Shards of a :class:`ShardedMap`: an update's young objects are the outer map (this many
entries) and one shard (n / SHARDS entries)."""

CHUNK: Final = 32
"""Entries per chunk of a :class:`ChunkedVector`."""

K = TypeVar("K")
V = TypeVar("V")

_EMPTY: PMap[Any, Any] = pmap()


def _shard(key: object) -> int:
    """The shard of ``key``: bits of its hash *above* those a shard's ``PMap`` uses for its
    buckets (the low ones), mixed by a multiplication, so that the keys of one shard do not
    collide there."""
    return (hash(key) * 2654435761 >> 24) & (SHARDS - 1)


@final
class ShardedMap(Mapping[K, V], Generic[K, V]):
    """A persistent mapping in ``SHARDS`` ``PMap`` shards (module doc)."""

    __slots__ = ("_shards", "_size")

    def __init__(self, shards: PMap[int, PMap[K, V]] = _EMPTY, size: int = 0) -> None:
        self._shards = shards
        self._size = size

    @classmethod
    def of(cls, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> ShardedMap[K, V]:
        """The map holding ``items`` (a :class:`ShardedMap` itself: returned as it is)."""
        if isinstance(items, ShardedMap):
            return items
        pairs = items.items() if isinstance(items, Mapping) else items
        shards: dict[int, dict[K, V]] = {}
        for k, v in pairs:
            shards.setdefault(_shard(k), {})[k] = v
        size = sum(len(s) for s in shards.values())
        return cls(pmap({i: pmap(s) for i, s in shards.items()}), size)

    def __getitem__(self, key: K) -> V:
        return self._shards.get(_shard(key), _EMPTY)[key]  # type: ignore[no-any-return]

    def get(self, key: K, default: Any = None) -> Any:
        return self._shards.get(_shard(key), _EMPTY).get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._shards.get(_shard(key), _EMPTY)

    def __iter__(self) -> Iterator[K]:
        for shard in self._shards.values():
            yield from shard

    def __len__(self) -> int:
        return self._size

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ShardedMap):
            return self._size == other._size and self._shards == other._shards
        return Mapping.__eq__(self, other)

    def __hash__(self) -> int:
        return hash(self._shards)

    def __repr__(self) -> str:
        return f"ShardedMap({dict(self.items())!r})"

    def set(self, key: K, value: V) -> ShardedMap[K, V]:
        """The map with ``key`` bound to ``value``."""
        i = _shard(key)
        shard = self._shards.get(i, _EMPTY)
        new = shard.set(key, value)
        if new is shard:
            return self
        grown = self._size + (len(new) - len(shard))
        return ShardedMap(self._shards.set(i, new), grown)

    def remove(self, key: K) -> ShardedMap[K, V]:
        """The map without ``key``; :class:`KeyError` if absent (as ``PMap.remove``)."""
        i = _shard(key)
        shard = self._shards.get(i, _EMPTY).remove(key)
        shards = self._shards.set(i, shard) if shard else self._shards.remove(i)
        return ShardedMap(shards, self._size - 1)

    def discard(self, key: K) -> ShardedMap[K, V]:
        """The map without ``key``; the same map if absent."""
        return self.remove(key) if key in self else self


@final
class ChunkedVector(Generic[V]):
    """A persistent vector in ``PVector`` chunks of ``CHUNK`` (module doc); ``_start`` entries
    of the first chunk are dropped (:meth:`drop_first`)."""

    __slots__ = ("_chunks", "_size", "_start")

    def __init__(self, chunks: PVector[PVector[V]], size: int, start: int = 0) -> None:
        self._chunks = chunks
        self._size = size
        self._start = start

    @classmethod
    def filled(cls, size: int, fill: V) -> ChunkedVector[V]:
        """``size`` entries, each ``fill``."""
        empty: ChunkedVector[V] = cls(pvector(), 0)
        return empty.extended(size, fill)

    @classmethod
    def of(cls, values: Iterable[V]) -> ChunkedVector[V]:
        """The vector of ``values``."""
        vals = list(values)
        chunks = [pvector(vals[i : i + CHUNK]) for i in range(0, len(vals), CHUNK)]
        return cls(pvector(chunks), len(vals))

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: int) -> V:
        if not 0 <= index < self._size:
            raise IndexError(f"ChunkedVector index {index} out of range 0..{self._size - 1}")
        c, at = divmod(index + self._start, CHUNK)
        return self._chunks[c][at]

    def __iter__(self) -> Iterator[V]:
        for i in range(self._size):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChunkedVector):
            return NotImplemented
        if self._size != other._size:
            return False
        if self._start == other._start:
            return bool(self._chunks == other._chunks)
        return all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ChunkedVector({list(self)!r})"

    def append(self, value: V) -> ChunkedVector[V]:
        """The vector with ``value`` added at the end."""
        end = self._start + self._size
        c, at = divmod(end, CHUNK)
        if at == 0:
            chunks = self._chunks.append(pvector([value]))
        else:
            chunks = self._chunks.set(c, self._chunks[c].append(value))
        return ChunkedVector(chunks, self._size + 1, self._start)

    def drop_first(self, n: int) -> ChunkedVector[V]:
        """The vector without its first ``n`` entries (``0 <= n <= len``)."""
        if not 0 <= n <= self._size:
            raise ProtocolMisuse(f"ChunkedVector.drop_first({n}): allowed 0..{self._size}")
        if n == 0:
            return self
        whole, start = divmod(self._start + n, CHUNK)
        return ChunkedVector(self._chunks[whole:], self._size - n, start)

    def extended(self, size: int, fill: V) -> ChunkedVector[V]:
        """At least ``size`` entries, the new ones ``fill``; the same vector if long enough."""
        if size <= self._size:
            return self
        if self._start:
            raise ProtocolMisuse("ChunkedVector.extended: only on a vector never dropped from")
        chunks = self._chunks.evolver()
        n = self._size
        while n < size:
            c, at = divmod(n, CHUNK)
            take = min(CHUNK - at, size - n)
            if at == 0:
                chunks.append(pvector([fill] * take))
            else:
                chunks[c] = chunks[c].extend([fill] * take)
            n += take
        return ChunkedVector(chunks.persistent(), size)

    def set(self, index: int, value: V) -> ChunkedVector[V]:
        """The vector with ``self[index] = value``."""
        return self.set_many({index: value})

    def set_many(self, values: Mapping[int, V]) -> ChunkedVector[V]:
        """The vector with ``self[i] = v`` for each ``i: v`` (every ``i`` in range)."""
        if not values:
            return self
        by_chunk: dict[int, dict[int, V]] = {}
        for i, v in values.items():
            if not 0 <= i < self._size:
                raise IndexError(f"ChunkedVector index {i} out of range 0..{self._size - 1}")
            c, at = divmod(i + self._start, CHUNK)
            by_chunk.setdefault(c, {})[at] = v
        chunks = self._chunks.evolver()
        for c, sets in by_chunk.items():
            ev = chunks[c].evolver()
            for at, v in sets.items():
                ev[at] = v
            chunks[c] = ev.persistent()
        return ChunkedVector(chunks.persistent(), self._size, self._start)


def sharded(items: Mapping[Any, Any]) -> ShardedMap[Any, Any]:
    """``items`` as a :class:`ShardedMap` (itself if it is one): an attrs converter."""
    return ShardedMap.of(items)
