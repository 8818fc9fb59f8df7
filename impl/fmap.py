"""FMap: a small immutable mapping for per-pubend and per-neighbour tables.

A node keeps a handful of maps keyed by pubend or neighbour (the pubend's log, the messages
being logged, the last assigned tick, link status, total-order groups, an ostream's curious
brokers). They hold a few entries and change on every published message, where
``pyrsistent.pmap.set`` costs several microseconds for its hash-trie bookkeeping. A copy of a
dict of a few entries costs a fraction of that, so these tables are an immutable ``dict``
subclass: every mutator raises, ``set`` / ``remove`` / ``discard`` return changed copies (the
pmap API the roles use). Maps that grow with the number of subscribers (an SHB's connections)
stay pmaps, whose updates do not copy the whole table.

>>> m = FMap({"P0": 1})
>>> m2 = m.set("P1", 2)
>>> m, m2
(FMap({'P0': 1}), FMap({'P0': 1, 'P1': 2}))
>>> m2.remove("P0"), m2.discard("P9") is m2
(FMap({'P1': 2}), True)
>>> m["P0"] = 5
Traceback (most recent call last):
...
TypeError: FMap is immutable; use set/remove/discard, which return a changed copy
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from gapless.impl.errors import ProtocolMisuse

__all__ = ["EMPTY", "FMap"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class FMap(dict[_K, _V]):
    """An immutable dict (see module doc). Equal to any mapping with the same items; hashable."""

    __slots__ = ()

    def set(self, key: _K, value: _V) -> FMap[_K, _V]:
        """A copy with ``key`` bound to ``value`` (``self`` when it already is)."""
        if key in self and dict.__getitem__(self, key) is value:
            return self
        new: FMap[_K, _V] = FMap(self)
        dict.__setitem__(new, key, value)
        return new

    def remove(self, key: _K) -> FMap[_K, _V]:
        """A copy without ``key``; a missing key is a misuse (as ``pmap.remove``)."""
        if key not in self:
            raise ProtocolMisuse(
                f"FMap.remove: key {key!r} is not in the map; allowed: {list(self)}"
            )
        new: FMap[_K, _V] = FMap(self)
        dict.__delitem__(new, key)
        return new

    def discard(self, key: _K) -> FMap[_K, _V]:
        """A copy without ``key`` (``self`` when it is absent)."""
        return self.remove(key) if key in self else self

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return f"FMap({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FMap, (dict(self),))

    def _immutable(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("FMap is immutable; use set/remove/discard, which return a changed copy")

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable


EMPTY: FMap[Any, Any] = FMap()
