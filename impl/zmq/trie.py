"""A persistent prefix trie recording which holders (peers) hold each prefix.

Theory of operation
-------------------
An XPUB socket routes a message to every peer that holds a subscription whose prefix starts
the message, and forwards a subscription upstream only when it is the *first* for its prefix,
an unsubscription only when it removes the *last* holder [ZMQ "Subscription Aggregation"].
libzmq keeps a set of pipes per prefix (``mtrie_t``); the paper speaks of reference counts;
what can be observed is the same, so this trie keeps a set of holders per prefix and reports
"first" and "last" as libzmq's ``mtrie_t::add`` / ``rm`` do.

The trie is a radix tree (edges carry byte strings, so a chain of one-child nodes is one
node) and it is persistent: every update copies only the nodes on one root-to-leaf path and
returns a new :class:`PrefixTrie`; old versions never change. An update that changes nothing
returns the same object. Nodes are plain tuples ``(label, holders, children)`` whose
``children`` dict (first byte of a child's label -> child) is never mutated after it is
built; only :class:`PrefixTrie` is public.

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

from collections.abc import Hashable, Iterator
from typing import Final, Literal, TypeAlias, final

import attrs

__all__ = ["LAST", "NOT_FOUND", "REMAIN", "PrefixTrie", "RemoveResult"]

RemoveResult: TypeAlias = Literal["not_found", "last", "remain"]
NOT_FOUND: Final = "not_found"
"""``remove`` found no such (prefix, holder): libzmq's ``mtrie_t::not_found``."""
LAST: Final = "last"
"""``remove`` took the prefix's last holder away: libzmq's ``last_value_removed``."""
REMAIN: Final = "remain"
"""``remove`` left other holders on the prefix: libzmq's ``values_remain``."""

_Node: TypeAlias = "tuple[bytes, frozenset[Hashable], dict[int, _Node]]"
_EMPTY: Final[frozenset[Hashable]] = frozenset()
_ROOT: Final[_Node] = (b"", _EMPTY, {})


def _common(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _with_child(node: _Node, child: _Node) -> _Node:
    children = dict(node[2])
    children[child[0][0]] = child
    return (node[0], node[1], children)


def _add(node: _Node, key: bytes, holder: Hashable) -> tuple[_Node, bool]:
    """``node`` (whose label is already matched) with ``holder`` added at ``key`` below it;
    and whether the prefix had no holder before. Returns ``node`` itself when unchanged."""
    label, holders, children = node
    if not key:
        if holder in holders:
            return node, False
        return (label, holders | {holder}, children), not holders
    child = children.get(key[0])
    if child is None:
        return _with_child(node, (key, frozenset((holder,)), {})), True
    clabel = child[0]
    if key.startswith(clabel):
        new_child, first = _add(child, key[len(clabel) :], holder)
        if new_child is child:
            return node, False
        return _with_child(node, new_child), first
    n = _common(clabel, key)
    lower: _Node = (clabel[n:], child[1], child[2])
    mid: _Node = (clabel[:n], _EMPTY, {clabel[n]: lower})
    new_mid, first = _add(mid, key[n:], holder)
    return _with_child(node, new_mid), first


def _normal(node: _Node) -> _Node | None:
    """A non-root node after a removal: None when it holds nothing, merged with its only
    child when it has no holder of its own (the radix tree keeps no empty chains)."""
    label, holders, children = node
    if holders:
        return node
    if not children:
        return None
    if len(children) == 1:
        (child,) = children.values()
        return (label + child[0], child[1], child[2])
    return node


def _remove(node: _Node, key: bytes, holder: Hashable) -> tuple[_Node, RemoveResult]:
    """``node`` with ``holder`` removed from ``key`` below it (not yet normalised)."""
    label, holders, children = node
    if not key:
        if holder not in holders:
            return node, NOT_FOUND
        rest = holders - {holder}
        return (label, rest, children), (REMAIN if rest else LAST)
    child = children.get(key[0])
    if child is None or not key.startswith(child[0]):
        return node, NOT_FOUND
    new_child, result = _remove(child, key[len(child[0]) :], holder)
    if result == NOT_FOUND:
        return node, NOT_FOUND
    kept = _normal(new_child)
    new_children = dict(children)
    if kept is None:
        del new_children[key[0]]
    else:
        new_children[key[0]] = kept
    return (label, holders, new_children), result


def _strip(
    node: _Node, prefix: bytes, holder: Hashable, out: list[tuple[bytes, bool]]
) -> _Node | None:
    """``node`` (full key ``prefix``) without ``holder`` anywhere below it; appends
    ``(prefix, emptied)`` to ``out`` in trie order for every prefix the holder held."""
    label, holders, children = node
    new_holders = holders
    if holder in holders:
        new_holders = holders - {holder}
        out.append((prefix, not new_holders))
    new_children = children
    for byte in sorted(children):
        child = children[byte]
        got = _strip(child, prefix + child[0], holder, out)
        if got is child:
            continue
        if new_children is children:
            new_children = dict(children)
        if got is None:
            del new_children[byte]
        else:
            new_children[byte] = got
    if new_holders is holders and new_children is children:
        return node
    changed: _Node = (label, new_holders, new_children)
    return _normal(changed) if prefix else changed  # the root (prefix b"") stays as it is


def _walk(node: _Node, prefix: bytes) -> Iterator[tuple[bytes, frozenset[Hashable]]]:
    if node[1]:
        yield prefix, node[1]
    children = node[2]
    for byte in sorted(children):
        child = children[byte]
        yield from _walk(child, prefix + child[0])


@final
@attrs.frozen(kw_only=True, eq=False)
class PrefixTrie:
    """A persistent map from prefix (bytes) to the non-empty set of holders holding it.

    Equality is by content (:meth:`items`); ``size`` is the number of prefixes held."""

    root: _Node = _ROOT
    size: int = 0

    @classmethod
    def empty(cls) -> PrefixTrie:
        """The trie holding nothing."""
        return _EMPTY_TRIE

    def __len__(self) -> int:
        return self.size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrefixTrie):
            return NotImplemented
        return self is other or (self.size == other.size and self.items() == other.items())

    def __hash__(self) -> int:
        return hash(self.items())

    def add(self, prefix: bytes, holder: Hashable) -> tuple[PrefixTrie, bool]:
        """The trie with ``holder`` holding ``prefix``, and whether it is the prefix's first
        holder (libzmq forwards only a first subscription upstream). Unchanged: ``self``."""
        root, first = _add(self.root, prefix, holder)
        if root is self.root:
            return self, False
        return PrefixTrie(root=root, size=self.size + (1 if first else 0)), first

    def remove(self, prefix: bytes, holder: Hashable) -> tuple[PrefixTrie, RemoveResult]:
        """The trie without ``holder`` on ``prefix``, and :data:`NOT_FOUND`, :data:`LAST`
        (no holder remains: libzmq forwards the unsubscription) or :data:`REMAIN`."""
        root, result = _remove(self.root, prefix, holder)
        if result == NOT_FOUND:
            return self, NOT_FOUND
        size = self.size - (1 if result == LAST else 0)
        return PrefixTrie(root=root, size=size), result

    def remove_holder(self, holder: Hashable) -> tuple[PrefixTrie, tuple[tuple[bytes, bool], ...]]:
        """The trie without ``holder`` anywhere (a disconnected peer [ZMQ "Disconnections and
        Reconnections"]), and ``(prefix, emptied)`` for every prefix it held, in trie order;
        ``emptied`` says no holder remains on that prefix."""
        out: list[tuple[bytes, bool]] = []
        root = _strip(self.root, b"", holder, out)
        if not out or root is None:  # None never happens: the root is not normalised
            return self, ()
        emptied = sum(1 for _, e in out if e)
        return PrefixTrie(root=root, size=self.size - emptied), tuple(out)

    def holders(self, prefix: bytes) -> frozenset[Hashable]:
        """The holders of exactly ``prefix`` (empty when nobody holds it)."""
        node = self.root
        key = prefix
        while key:
            child = node[2].get(key[0])
            if child is None or not key.startswith(child[0]):
                return _EMPTY
            key = key[len(child[0]) :]
            node = child
        return node[1]

    def match(self, message: bytes) -> frozenset[Hashable]:
        """Every holder of some prefix of ``message`` (each once) [ZMQ "Message routing &
        filtering"]."""
        node = self.root
        found = node[1]
        i = 0
        end = len(message)
        while i < end:
            child = node[2].get(message[i])
            if child is None or not message.startswith(child[0], i):
                break
            if child[1]:
                found = found | child[1]
            i += len(child[0])
            node = child
        return found

    def items(self) -> tuple[tuple[bytes, frozenset[Hashable]], ...]:
        """Every ``(prefix, holders)``, in trie (byte-lexicographic) order."""
        return tuple(_walk(self.root, b""))

    def prefixes(self) -> tuple[bytes, ...]:
        """Every prefix held, in trie order (the order libzmq resends them in)."""
        return tuple(p for p, _ in _walk(self.root, b""))

    def prefixes_of(self, holder: Hashable) -> tuple[bytes, ...]:
        """The prefixes ``holder`` holds, in trie order."""
        return tuple(p for p, hs in _walk(self.root, b"") if holder in hs)


_EMPTY_TRIE: Final = PrefixTrie()
