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
(:mod:`gapless.impl.zmq.hamt`) keyed by the prefix, plus a per-length index (the lengths
prefixes have had: the depths of the trie at which nodes may carry holders). The trie's
operations map one to one:

* add / remove at a node = insert into / delete from the node's holder set, found by one hash
  lookup instead of a walk down ``len(prefix)`` edges;
* matching walks the trie along the message and collects the holders of every node on the
  path; the nodes on that path are the message's prefixes ``message[:k]``, so looking up
  ``message[:k]`` for each length ``k`` of the index visits the same holder-carrying nodes,
  skipping depths where no node carries anything;
* trie (preorder, children by byte) order is byte-lexicographic order of the keys, since a
  prefix sorts before its extensions and siblings sort by their first differing byte: the
  walks sort the keys.

Measured (``gapless bench zmq --baseline``, 100,000 live prefixes, alternating a new
prefix's add and an old one's remove, old and new code in one run): the path-copied radix
tree of dicts this replaced copied the 16-entry child dicts of four or five levels per update,
recursively; pyrsistent's ``pmap`` was slower still (about 14,000 ops/s); this representation
copies three lists of 32 and one dict of about three entries, in loops, and does about 2.2
times the radix tree's updates per CPU second. Matching pays for it: a hash of each
``message[:k]`` costs more than a step down a tree, and ``match`` runs at about 0.65 times
the tree's rate (the README has the figures).

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


@final
@attrs.frozen(kw_only=True, eq=False)
class PrefixTrie:
    """A persistent map from prefix (bytes) to the non-empty set of holders holding it.

    Equality is by content (:meth:`items`). ``table`` maps each prefix held to its holders.
    ``lengths`` is the per-length index, ascending: every length a prefix held by this trie
    or an earlier version of it has had. It only grows (a new length costs one sorted copy;
    a removal costs nothing), so it may name a length no prefix has any more: matching then
    makes a lookup that finds nothing, and never makes more than ``len(message) + 1`` — the
    bound of a walk down a trie. ``len()`` counts the prefixes held (a walk: not for hot
    paths)."""

    table: hamt.Node = hamt.EMPTY
    lengths: tuple[int, ...] = ()

    @classmethod
    def empty(cls) -> PrefixTrie:
        """The trie holding nothing."""
        return _EMPTY_TRIE

    def __len__(self) -> int:
        return sum(1 for _ in hamt.items(self.table))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrefixTrie):
            return NotImplemented
        return self is other or self.items() == other.items()

    def __hash__(self) -> int:
        return hash(self.items())

    def add(self, prefix: bytes, holder: Hashable) -> tuple[PrefixTrie, bool]:
        """The trie with ``holder`` holding ``prefix``, and whether it is the prefix's first
        holder (libzmq forwards only a first subscription upstream). Unchanged: ``self``."""
        path = hamt.find(self.table, prefix)
        holders: frozenset[Hashable] | None = path[2].get(prefix)
        lengths = self.lengths
        if holders is None:
            table = hamt.put(path, prefix, frozenset((holder,)))
            if len(prefix) not in lengths:
                lengths = tuple(sorted((*lengths, len(prefix))))
            return PrefixTrie(table=table, lengths=lengths), True
        if holder in holders:
            return self, False
        table = hamt.put(path, prefix, holders | {holder})
        return PrefixTrie(table=table, lengths=lengths), False

    def remove(self, prefix: bytes, holder: Hashable) -> tuple[PrefixTrie, RemoveResult]:
        """The trie without ``holder`` on ``prefix``, and :data:`NOT_FOUND`, :data:`LAST`
        (no holder remains: libzmq forwards the unsubscription) or :data:`REMAIN`."""
        path = hamt.find(self.table, prefix)
        holders: frozenset[Hashable] | None = path[2].get(prefix)
        if holders is None or holder not in holders:
            return self, NOT_FOUND
        if len(holders) > 1:
            table = hamt.put(path, prefix, holders - {holder})
            return PrefixTrie(table=table, lengths=self.lengths), REMAIN
        return PrefixTrie(table=hamt.drop(path, prefix), lengths=self.lengths), LAST

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
        for got in hamt.get_prefixes(self.table, message, self.lengths):
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
