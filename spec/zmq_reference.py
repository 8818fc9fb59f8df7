"""Reference semantics for ZeroMQ subscription forwarding: slow and obviously correct.

:class:`ReferenceTrie` is a plain dict from prefix to the set of holders, with the same
operations and answers as ``gapless.impl.zmq.trie.PrefixTrie`` [ZMQ "Subscription
Aggregation"]: ``add`` says whether the holder is the prefix's first, ``remove`` whether it
was the last (or not found), ``match`` tries every held prefix against the message. It is
what the radix trie is tested against, operation by operation.

:func:`matches` and :func:`covers` are the matching rules the invariants use: a prefix
subscription matches a message that starts with it; a set of prefixes covers a message when
one of them matches it [ZMQ "Message routing & filtering"].

>>> r = ReferenceTrie()
>>> r.add(b"A", "p1"), r.add(b"A", "p2"), r.remove(b"A", "p1"), r.remove(b"A", "p1")
(True, False, 'remain', 'not_found')
>>> sorted(r.match(b"AB")), covers({b"X", b"AB"}, b"ABC"), matches(b"", b"anything")
(['p2'], True, True)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

__all__ = ["ReferenceTrie", "covers", "matches"]


def matches(prefix: bytes, message: bytes) -> bool:
    """A prefix subscription matches every message that starts with it."""
    return message[: len(prefix)] == prefix


def covers(prefixes: Iterable[bytes], message: bytes) -> bool:
    """Some prefix of ``prefixes`` matches ``message``."""
    return any(matches(p, message) for p in prefixes)


class ReferenceTrie:
    """A mutable dict of prefix -> set of holders (the reference; see module doc)."""

    def __init__(self) -> None:
        self.table: dict[bytes, set[Hashable]] = {}

    def add(self, prefix: bytes, holder: Hashable) -> bool:
        """Add ``holder`` to ``prefix``; True when nobody held ``prefix`` before."""
        holders = self.table.setdefault(prefix, set())
        first = not holders
        holders.add(holder)
        return first

    def remove(self, prefix: bytes, holder: Hashable) -> str:
        """Remove ``holder`` from ``prefix``: "not_found", "last" or "remain"."""
        holders = self.table.get(prefix, set())
        if holder not in holders:
            return "not_found"
        holders.discard(holder)
        if holders:
            return "remain"
        del self.table[prefix]
        return "last"

    def remove_holder(self, holder: Hashable) -> list[tuple[bytes, bool]]:
        """Remove ``holder`` everywhere; ``(prefix, emptied)`` for each prefix it held,
        sorted by prefix."""
        out = []
        for prefix in sorted(self.table):
            if holder in self.table[prefix]:
                out.append((prefix, self.remove(prefix, holder) == "last"))
        return out

    def match(self, message: bytes) -> frozenset[Hashable]:
        """Every holder of a prefix of ``message``."""
        found: set[Hashable] = set()
        for prefix, holders in self.table.items():
            if matches(prefix, message):
                found |= holders
        return frozenset(found)

    def items(self) -> list[tuple[bytes, frozenset[Hashable]]]:
        """Every (prefix, holders), sorted by prefix."""
        return [(p, frozenset(self.table[p])) for p in sorted(self.table)]
