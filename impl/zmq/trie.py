"""A persistent prefix trie recording which holders (peers) hold each prefix.

Theory of operation
-------------------
An XPUB socket routes a message to every peer that holds a subscription whose prefix starts
the message, and forwards a subscription upstream only when it is the *first* for its prefix,
an unsubscription only when it removes the *last* holder [ZMQ "Subscription Aggregation"].
libzmq keeps a set of pipes per prefix (``mtrie_t``); the paper speaks of reference counts;
what can be observed is the same, so this trie keeps a set of holders per prefix and reports
"first" and "last" as libzmq's ``mtrie_t::add`` / ``rm`` do.

Why a hashed map is this trie
-----------------------------
A (byte-wise, uncompressed) trie has one node per prefix of a key it holds; libzmq's
``mtrie_t`` hangs a set of pipes on some of those nodes, and what it *keeps* is exactly the
relation prefix -> pipes for the nodes whose set is not empty: every answer it gives (first,
last, the pipes matching a message, the prefixes resent in trie order) is a function of that
relation alone. This type keeps the same relation in a persistent hash map
(:mod:`gapless.impl.zmq.hamt`) keyed by the prefix, plus a per-length index (how many
prefixes of each length are held). The trie's operations map one to one:

* add / remove at a node = insert into / delete from the node's holder set, found by one hash
  lookup instead of a walk down ``len(prefix)`` edges;
* matching walks the trie along the message and collects the holders of every node on the
  path; the nodes on that path are the message's prefixes ``message[:k]``, so looking up
  ``message[:k]`` for each length ``k`` that the index says is held visits the same
  holder-carrying nodes (and only those);
* trie (preorder, children by byte) order is byte-lexicographic order of the keys, since a
  prefix sorts before its extensions and siblings sort by their first differing byte: the
  walks sort the keys.

Measured (``gapless bench zmq``, 100,000 live prefixes, alternating a new prefix's add and an
old one's remove): the previous path-copied radix tree of dicts did 18,000-50,000 ops/s,
dominated by copying the 16-entry child dicts of the top levels on every update; pyrsistent's
``pmap`` about 14,000; this representation copies two or three 32-tuples and one small dict
per update (see the README for the figures).

Every update returns a new :class:`PrefixTrie` and leaves the old one unchanged; an update
that changes nothing returns the same object.

``spec/zmq_reference.py`` is the slow, obviously-correct reference (a dict of prefix -> set of
holders) this type is tested against, operation by operation.

>>> t0 = PrefixTrie.empty()
>>> t1, first = t0.add(b"AB", "p1")
>>> t2, again = t1.add(b"A", "p2")
>>> first, again, sorted(t2.match(b"ABC")), sorted(t2.match(b"AX")), len(t0), len(t2)
(True, True, ['p1', 'p2'], ['p2'], 0, 2)
>>> t3, result = t2.remove(b"AB", "p1")
>>> result, t3.prefixes(), t2.prefixes()
('last', (b'A',), (b'A', b'AB'))
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final, Literal, TypeAlias, final

import attrs

from gapless.impl.zmq import hamt

__all__ = ["LAST", "NOT_FOUND", "REMAIN", "PrefixTrie", "RemoveResult"]

RemoveResult: TypeAlias = Literal["not_found", "last", "remain"]
NOT_FOUND: Final = "not_found"
"""``remove`` found no such (prefix, holder): libzmq's ``mtrie_t::not_found``."""
LAST: Final = "last"
"""``remove`` took the prefix's last holder away: libzmq's ``last_value_removed``."""
REMAIN: Final = "remain"
"""``remove`` left other holders on the prefix: libzmq's ``values_remain``."""

_EMPTY: Final[frozenset[Hashable]] = frozenset()
_NO_COUNTS: Final[dict[int, int]] = {}


def _counted(counts: dict[int, int], length: int, delta: int) -> dict[int, int]:
    """``counts`` (prefixes held per length, keys ascending) with ``delta`` more of
    ``length``: a new dict, its keys still ascending (dicts keep insertion order)."""
    new = dict(counts)
    n = new.get(length, 0) + delta
    if not n:
        del new[length]
    elif n == delta:  # a length not held before: put it in its place
        new[length] = n
        return dict(sorted(new.items()))
    else:
        new[length] = n
    return new


@final
@attrs.frozen(kw_only=True, eq=False)
class PrefixTrie:
    """A persistent map from prefix (bytes) to the non-empty set of holders holding it.

    Equality is by content (:meth:`items`). ``table`` maps each prefix held to its holders;
    ``counts`` is the per-length index: how many prefixes of each length are held, keys in
    ascending order (never mutated); ``len()`` is the number of prefixes held."""

    table: hamt.Node = hamt.EMPTY
    counts: dict[int, int] = _NO_COUNTS

    @classmethod
    def empty(cls) -> PrefixTrie:
        """The trie holding nothing."""
        return _EMPTY_TRIE

    def __len__(self) -> int:
        return sum(self.counts.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrefixTrie):
            return NotImplemented
        return self is other or (self.counts == other.counts and self.items() == other.items())

    def __hash__(self) -> int:
        return hash(self.items())

    def add(self, prefix: bytes, holder: Hashable) -> tuple[PrefixTrie, bool]:
        """The trie with ``holder`` holding ``prefix``, and whether it is the prefix's first
        holder (libzmq forwards only a first subscription upstream). Unchanged: ``self``."""
        path = hamt.find(self.table, prefix)
        holders: frozenset[Hashable] | None = path[2].get(prefix)
        if holders is None:
            table = hamt.put(path, prefix, frozenset((holder,)))
            counts = _counted(self.counts, len(prefix), 1)
            return PrefixTrie(table=table, counts=counts), True
        if holder in holders:
            return self, False
        table = hamt.put(path, prefix, holders | {holder})
        return PrefixTrie(table=table, counts=self.counts), False

    def remove(self, prefix: bytes, holder: Hashable) -> tuple[PrefixTrie, RemoveResult]:
        """The trie without ``holder`` on ``prefix``, and :data:`NOT_FOUND`, :data:`LAST`
        (no holder remains: libzmq forwards the unsubscription) or :data:`REMAIN`."""
        path = hamt.find(self.table, prefix)
        holders: frozenset[Hashable] | None = path[2].get(prefix)
        if holders is None or holder not in holders:
            return self, NOT_FOUND
        if len(holders) > 1:
            table = hamt.put(path, prefix, holders - {holder})
            return PrefixTrie(table=table, counts=self.counts), REMAIN
        table = hamt.drop(path, prefix)
        counts = _counted(self.counts, len(prefix), -1)
        return PrefixTrie(table=table, counts=counts), LAST

    def remove_holder(self, holder: Hashable) -> tuple[PrefixTrie, tuple[tuple[bytes, bool], ...]]:
        """The trie without ``holder`` anywhere (a disconnected peer [ZMQ "Disconnections and
        Reconnections"]), and ``(prefix, emptied)`` for every prefix it held, in trie order;
        ``emptied`` says no holder remains on that prefix."""
        held = sorted(p for p, hs in hamt.items(self.table) if holder in hs)
        trie = self
        out = []
        for prefix in held:
            trie, result = trie.remove(prefix, holder)
            out.append((prefix, result == LAST))
        return trie, tuple(out)

    def holders(self, prefix: bytes) -> frozenset[Hashable]:
        """The holders of exactly ``prefix`` (empty when nobody holds it)."""
        got: frozenset[Hashable] | None = hamt.get(self.table, prefix)
        return _EMPTY if got is None else got

    def match(self, message: bytes) -> frozenset[Hashable]:
        """Every holder of some prefix of ``message`` (each once) [ZMQ "Message routing &
        filtering"]: the holders on the trie path the message spells (see module doc)."""
        found = _EMPTY
        for got in hamt.get_prefixes(self.table, message, self.counts):  # lengths ascending
            found = found | got if found else got
        return found

    def items(self) -> tuple[tuple[bytes, frozenset[Hashable]], ...]:
        """Every ``(prefix, holders)``, in trie (byte-lexicographic) order."""
        return tuple(sorted(hamt.items(self.table)))

    def prefixes(self) -> tuple[bytes, ...]:
        """Every prefix held, in trie order (the order libzmq resends them in)."""
        return tuple(sorted(p for p, _ in hamt.items(self.table)))

    def prefixes_of(self, holder: Hashable) -> tuple[bytes, ...]:
        """The prefixes ``holder`` holds, in trie order."""
        return tuple(sorted(p for p, hs in hamt.items(self.table) if holder in hs))


_EMPTY_TRIE: Final = PrefixTrie()
