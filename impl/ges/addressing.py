"""Hierarchical addressing of broker nodes [GES "The broker organization"].

Theory of operation
-------------------
A node's address is a tuple of ints, coarsest level first: in a 2-level system
``(super_cluster, cluster, node)``. A *level-ℓ unit* is named by the address prefix that leaves
out the last ℓ parts: a level-0 unit is one node, a level-1 unit a cluster, a level-2 unit a
super-cluster, and so on [GES: "This topology could be extended in a similar fashion to
comprise of super-super-clusters (level-3 units)..."]. The *block-limit* bounds the number of
units inside each unit at every level: 64 [GES: "This limit, the block-limit, is set at 64"].

A link between two nodes is a *level-ℓ link* when the nodes share their level-ℓ unit but not
their level-(ℓ-1) one: level 0 inside a cluster, level 1 between two clusters of one
super-cluster, level 2 between two super-clusters. A node with a level-ℓ link (ℓ ≥ 1) is a
*level-ℓ gatekeeper*: it provides the gateway between its units and the unit at the other end.

:class:`Hierarchy` is the static description every node starts from (the connection
information disseminated when the broker network is organised); it is plain data, validated at
the door, and never changes: failures are each node's own knowledge
(:mod:`gapless.impl.ges.connectivity`).

>>> h = Hierarchy.build({"a": (0, 0, 0), "b": (0, 0, 1), "c": (0, 1, 0), "d": (1, 0, 0)},
...                     [("a", "b"), ("b", "c"), ("c", "d")])
>>> h.link_level("a", "b"), h.link_level("b", "c"), h.link_level("c", "d")
(0, 1, 2)
>>> h.unit("c", 1), h.unit("c", 2)
((0, 1), (0,))
>>> h.gatekeeper_levels("c")
(1, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.errors import ProtocolMisuse

__all__ = ["BLOCK_LIMIT", "Address", "Hierarchy"]

BLOCK_LIMIT: Final = 64
"""Units inside one unit, at every level [GES "The broker organization"]."""

Address = tuple[int, ...]
"""A node's address, coarsest level first (see module doc)."""


def _validate(nodes: Mapping[str, Address], links: Iterable[tuple[str, str]]) -> None:
    lengths = {len(a) for a in nodes.values()}
    if len(lengths) > 1 or not lengths or 0 in lengths:
        raise ProtocolMisuse(
            "Hierarchy: every address must have the same length >= 1; got lengths "
            f"{sorted(lengths)}"
        )
    seen: dict[Address, str] = {}
    for name, addr in sorted(nodes.items()):
        if addr in seen:
            raise ProtocolMisuse(f"Hierarchy: nodes {seen[addr]!r} and {name!r} share {addr}")
        seen[addr] = name
        for part in addr:
            if not 0 <= part < BLOCK_LIMIT:
                raise ProtocolMisuse(
                    f"Hierarchy: node {name!r} address {addr} part {part} is outside "
                    f"0..{BLOCK_LIMIT - 1} (the block-limit)"
                )
    for a, b in links:
        if a not in nodes or b not in nodes or a == b:
            raise ProtocolMisuse(f"Hierarchy: link {a!r}-{b!r} names an unknown node or a loop")


@final
@attrs.frozen(kw_only=True, cache_hash=True)
class Hierarchy:
    """Node addresses and physical links (see module doc); build it with :meth:`build`."""

    nodes: PMap[str, Address]
    links: tuple[tuple[str, str], ...]
    neighbours: PMap[str, tuple[str, ...]]

    @staticmethod
    def build(nodes: Mapping[str, Address], links: Iterable[tuple[str, str]]) -> Hierarchy:
        """A validated hierarchy; a bad address or link raises ``ProtocolMisuse`` naming it."""
        pairs = sorted({(min(a, b), max(a, b)) for a, b in links})
        _validate(nodes, pairs)
        nbs: dict[str, list[str]] = {n: [] for n in nodes}
        for a, b in pairs:
            nbs[a].append(b)
            nbs[b].append(a)
        return Hierarchy(
            nodes=pmap({n: tuple(a) for n, a in nodes.items()}),
            links=tuple(pairs),
            neighbours=pmap({n: tuple(sorted(v)) for n, v in nbs.items()}),
        )

    @property
    def depth(self) -> int:
        """N: the number of levels above the nodes (2 for nodes, clusters, super-clusters)."""
        return len(next(iter(self.nodes.values()))) - 1

    def unit(self, node: str, level: int) -> Address:
        """The level-``level`` unit holding ``node`` (its address prefix)."""
        addr = self.nodes[node]
        return addr[: len(addr) - level]

    def shared(self, a: str, b: str) -> int:
        """The length of the address prefix ``a`` and ``b`` share."""
        x, y = self.nodes[a], self.nodes[b]
        n = 0
        while n < len(x) and x[n] == y[n]:
            n += 1
        return n

    def link_level(self, a: str, b: str) -> int:
        """The level of the link ``a``-``b``: 0 inside a cluster, ℓ between level-(ℓ-1)
        units of one level-ℓ unit."""
        return self.depth - self.shared(a, b)

    def view_unit(self, vertex: str, other: str) -> Address:
        """The unit ``other`` appears as in ``vertex``'s abbreviated view: the largest unit
        holding ``other`` but not ``vertex`` (``other``'s own address inside its cluster)."""
        return self.nodes[other][: self.shared(vertex, other) + 1]

    def gatekeeper_levels(self, node: str) -> tuple[int, ...]:
        """The levels ℓ >= 1 at which ``node`` is a gatekeeper (it has a level-ℓ link)."""
        return tuple(
            sorted({lv for nb in self.neighbours[node] if (lv := self.link_level(node, nb)) > 0})
        )

    def members(self, unit: Address) -> tuple[str, ...]:
        """The nodes inside ``unit``, by name."""
        return tuple(sorted(n for n, a in self.nodes.items() if a[: len(unit)] == unit))
