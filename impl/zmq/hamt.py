"""A small persistent hash map: a hash array mapped trie (HAMT) of lists over dict leaves.

Theory of operation
-------------------
The map is a tree indexed by the key's hash, ``BITS`` bits per level: an inner node is a
list of ``2**BITS`` children, a leaf is a ``dict`` of at most ``LEAF`` entries (more only at
the last level, where the hash bits run out and equal hashes share a leaf). A leaf that grows
past ``LEAF`` is split into an inner node of leaves by the next ``BITS`` bits of the hash.
Every update copies the nodes on one root-to-leaf path (two or three lists of 32 and one
small dict at 100,000 entries) and shares the rest with the old version, which never changes:
no node is mutated after it is built (copy on write: the only writes are to a copy made in
the same function, before anyone else can see it). Nodes are lists and dicts rather than
tuples and frozen maps because they are CPython's cheapest containers to copy with one
change (``list.copy`` is a memory copy; changing one slot of a tuple costs a list, a
conversion back and twice the time, measured). An update that changes nothing returns the
same root.

The layout depends on ``hash(key)``, which for ``bytes`` changes with ``PYTHONHASHSEED``;
nothing observable may: :func:`items` is unordered, and callers sort what reaches a trace.

This is the persistent map :class:`gapless.impl.zmq.trie.PrefixTrie` keeps its prefixes in.
pyrsistent's ``pmap`` (buckets in a persistent vector) was measured at about 14,000
set-and-discard operations per second at 100,000 keys on this machine; this map does several
times that, because one update allocates a handful of small containers and no evolver.

>>> m = assoc(EMPTY, b"a", 1)
>>> m2 = assoc(m, b"b", 2)
>>> get(m2, b"a"), get(m2, b"b"), get(m, b"b"), sorted(items(dissoc(m2, b"a")))
(1, 2, None, [(b'b', 2)])
>>> dissoc(m2, b"zz") is m2
True
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any, Final, TypeAlias

__all__ = [
    "EMPTY",
    "Node",
    "Path",
    "assoc",
    "dissoc",
    "drop",
    "find",
    "get",
    "get_prefixes",
    "items",
    "put",
]

BITS: Final = 5
"""Hash bits per level: inner nodes are lists of 32 children."""
WIDTH: Final = 1 << BITS
MASK: Final = WIDTH - 1
LEAF: Final = 32
"""Entries a leaf holds before it is split (above the last level)."""
DEPTH: Final = 64 // BITS
"""Levels of inner nodes at most: past them the 64 hash bits are used up."""

Node: TypeAlias = "list[Any] | dict[Hashable, Any]"
Path: TypeAlias = "tuple[int, list[list[Any]], dict[Hashable, Any]]"
EMPTY: Final[Node] = {}
"""The empty map (a leaf; never mutated)."""


def get(root: Node, key: Hashable) -> Any:
    """The value of ``key``, or None when absent."""
    h = hash(key)
    node: Any = root
    while type(node) is list:
        node = node[h & MASK]
        h >>= BITS
    return node.get(key)


def _split(leaf: dict[Hashable, Any], shift: int) -> list[Any]:
    """An inner node holding ``leaf``'s entries, bucketed by the hash bits at ``shift``."""
    buckets: list[dict[Hashable, Any]] = [{} for _ in range(WIDTH)]
    for k, v in leaf.items():
        buckets[(hash(k) >> shift) & MASK][k] = v
    return list(buckets)


def find(root: Node, key: Hashable) -> Path:
    """Where ``key`` lives or would live: its hash, the inner nodes on its way down (root
    first) and the leaf at the bottom; what :func:`put` and :func:`drop` rebuild from."""
    h = bits = hash(key)
    inner: list[list[Any]] = []
    node: Any = root
    while type(node) is list:
        inner.append(node)
        node = node[bits & MASK]
        bits >>= BITS
    return h, inner, node


def put(path: Path, key: Hashable, value: Any) -> Node:
    """The map :func:`find` gave ``path`` for, with ``key`` bound to ``value``."""
    h, inner, leaf = path
    new_leaf = dict(leaf)
    new_leaf[key] = value
    new: Node = new_leaf
    if len(new_leaf) > LEAF and len(inner) < DEPTH:
        new = _split(new_leaf, len(inner) * BITS)
    shift = len(inner) * BITS
    for parent in reversed(inner):  # copy the way down, bottom up (inlined: the hot path)
        shift -= BITS
        copy = parent.copy()
        copy[(h >> shift) & MASK] = new
        new = copy
    return new


def drop(path: Path, key: Hashable) -> Node:
    """The map :func:`find` gave ``path`` for (its leaf holds ``key``), without ``key``."""
    h, inner, leaf = path
    new_leaf = dict(leaf)
    del new_leaf[key]
    return _rebuild(h, inner, new_leaf if new_leaf else EMPTY)


def assoc(root: Node, key: Hashable, value: Any) -> Node:
    """The map with ``key`` bound to ``value`` (``root`` itself when it already is)."""
    path = find(root, key)
    leaf = path[2]
    if key in leaf and leaf[key] is value:
        return root
    return put(path, key, value)


def dissoc(root: Node, key: Hashable) -> Node:
    """The map without ``key`` (``root`` itself when ``key`` is absent)."""
    path = find(root, key)
    if key not in path[2]:
        return root
    return drop(path, key)


def _rebuild(h: int, inner: list[list[Any]], new: Node) -> Node:
    """Copy the inner nodes (root first) on hash ``h``'s way down, with ``new`` in place of
    the leaf at the bottom."""
    shift = len(inner) * BITS
    for parent in reversed(inner):
        shift -= BITS
        copy = parent.copy()
        copy[(h >> shift) & MASK] = new
        new = copy
    return new


def get_prefixes(root: Node, message: bytes, lengths: Iterable[int]) -> list[Any]:
    """The values of the keys ``message[:k]`` for each ``k`` of ``lengths`` (ascending) up
    to ``len(message)``, those present, shortest first: :func:`get` for each, in one call."""
    found = []
    end = len(message)
    mask, width = MASK, BITS  # locals: this loop is the hot path of routing a message
    for k in lengths:
        if k > end:
            break
        key = message[:k]
        h = hash(key)
        node: Any = root
        while type(node) is list:
            node = node[h & mask]
            h >>= width
        got = node.get(key)
        if got is not None:
            found.append(got)
    return found


def items(root: Node) -> Iterator[tuple[Any, Any]]:
    """Every ``(key, value)``, in no particular order (it follows the keys' hashes)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if type(node) is list:
            stack.extend(node)
        else:
            assert isinstance(node, dict)
            yield from node.items()
