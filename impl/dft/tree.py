"""The primary tree: built by joins, primary paths, Δ-neighbourhoods [DFT §I, §II, Figure 2].

Theory of operation
-------------------
Brokers join one at a time, each creating one *primary link* to a broker already in the
system; the links form the *primary tree* [DFT §II]. Routing (the static layer of Figure 2)
follows primary paths P(A, B); failures only change which sessions forward along them. A
joining broker learns its Δ-neighbourhood — the brokers within distance Δ = δ + 1 in the tree
— and tells them it arrived [DFT §I]; those are the only brokers it may open sessions to, so
it can bypass at most δ unreachable brokers in a row.

:class:`PrimaryTree` is an immutable value (a parent map in join order). Every broker role
holds the same value: the routing layer. The paper obtains the locations it needs from
trailing paths carried in messages; we let the roles read them from the tree (``spec/dft.md``
records this as a modelling choice). Sessions stay limited to the Δ-neighbourhood.

Paths are lists of brokers, both ends included: ``path(a, b)[0] == a``.

>>> t = PrimaryTree.build([("B1", None), ("B2", "B1"), ("B3", "B2"), ("B4", "B2")])
>>> t.path("B1", "B4")
('B1', 'B2', 'B4')
>>> sorted(t.neighbourhood("B1", 2))
['B2', 'B3', 'B4']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, final

import attrs
from pyrsistent import PMap, PVector, pmap, pvector

from gapless.impl.errors import ProtocolMisuse

__all__ = ["PrimaryTree", "complete_tree"]


@final
@attrs.frozen(kw_only=True, eq=False, slots=False)
class PrimaryTree:
    """The primary tree: ``parent`` of every broker (``None`` for the first), in join order."""

    parent: PMap[str, str | None] = attrs.field(factory=pmap)
    order: PVector[str] = attrs.field(factory=pvector)
    children: PMap[str, tuple[str, ...]] = attrs.field(factory=pmap)
    depth: PMap[str, int] = attrs.field(factory=pmap)

    @staticmethod
    def build(joins: Iterable[tuple[str, str | None]]) -> PrimaryTree:
        """The tree after the ``(broker, attach_to)`` joins, in order."""
        tree = PrimaryTree()
        for broker, attach in joins:
            tree = tree.join(broker, attach)
        return tree

    def join(self, broker: str, attach_to: str | None) -> PrimaryTree:
        """The tree after ``broker`` joins by a primary link to ``attach_to`` [DFT §II].
        The first broker joins with ``attach_to=None``."""
        if broker in self.parent:
            raise ProtocolMisuse(f"PrimaryTree.join: {broker!r} already joined")
        if attach_to is None:
            if self.order:
                raise ProtocolMisuse(
                    f"PrimaryTree.join: {broker!r} has no attach point; allowed: one of "
                    f"{sorted(self.parent)[:5]}..."
                )
            depth = 0
        elif attach_to not in self.parent:
            raise ProtocolMisuse(
                f"PrimaryTree.join: {broker!r} attaches to {attach_to!r}, which has not joined"
            )
        else:
            depth = self.depth[attach_to] + 1
        children = self.children.set(broker, ())
        if attach_to is not None:
            children = children.set(attach_to, (*children[attach_to], broker))
        return PrimaryTree(
            parent=self.parent.set(broker, attach_to),
            order=self.order.append(broker),
            children=children,
            depth=self.depth.set(broker, depth),
        )

    def __contains__(self, broker: object) -> bool:
        # the plain-dict view of ``parent`` (:meth:`_memo`): asked of every message a broker
        # receives (``role._unknown``), where a ``PMap`` lookup walks its buckets in Python
        return broker in self._memo()[0]

    def neighbours(self, broker: str) -> tuple[str, ...]:
        """The brokers one primary link away."""
        up = self.parent[broker]
        return self.children[broker] if up is None else (up, *self.children[broker])

    def _memo(self) -> tuple[dict[str, str | None], dict[str, int], dict[Any, Any]]:
        """Plain-dict views of ``parent`` and ``depth`` and a path memo, built on first use.
        The tree never changes, so memoising is invisible (same answers, faster)."""
        memo = self.__dict__.get("_memo_cache")
        if memo is None:
            memo = (dict(self.parent), dict(self.depth), {})
            object.__setattr__(self, "_memo_cache", memo)
        return memo

    def path(self, a: str, b: str) -> tuple[str, ...]:
        """The primary path P(a, b), both ends included [DFT §II]."""
        memo = self.__dict__.get("_memo_cache")
        if memo is not None:  # the hot path: a memoised path, one lookup
            got = memo[2].get((a, b))
            if got is not None:
                return got  # type: ignore[no-any-return]
        parent, depth, paths = self._memo()
        left: list[str] = [a]
        right: list[str] = [b]
        x, y = a, b
        while depth[x] > depth[y]:
            x = parent[x] or x
            left.append(x)
        while depth[y] > depth[x]:
            y = parent[y] or y
            right.append(y)
        while x != y:
            x = parent[x] or x
            y = parent[y] or y
            left.append(x)
            right.append(y)
        right.pop()
        result = (*left, *reversed(right))
        if len(paths) < 1_000_000:
            paths[(a, b)] = result
        return result

    def distance(self, a: str, b: str) -> int:
        """The number of primary links on P(a, b)."""
        return len(self.path(a, b)) - 1

    def next_hop(self, a: str, b: str) -> str:
        """The neighbour of ``a`` on P(a, b) (``a != b``)."""
        memo = self.__dict__.get("_memo_cache")
        if memo is not None:
            got = memo[2].get((a, b))
            if got is not None:
                return got[1]  # type: ignore[no-any-return]
        return self.path(a, b)[1]

    def on_path(self, x: str, a: str, b: str) -> bool:
        """Is ``x`` on P(a, b), ends included?"""
        return x in self.path(a, b)

    def neighbourhood(self, broker: str, radius: int) -> frozenset[str]:
        """The brokers within ``radius`` primary links of ``broker``, itself excluded."""
        seen = {broker}
        frontier = [broker]
        for _ in range(radius):
            nxt: list[str] = []
            for x in frontier:
                for n in self.neighbours(x):
                    if n not in seen:
                        seen.add(n)
                        nxt.append(n)
            frontier = nxt
        seen.discard(broker)
        return frozenset(seen)

    def beyond(self, detector: str, pnodes: tuple[str, ...], x: str) -> bool:
        """Is ``x`` beyond the partition ``pnodes`` detected by ``detector``: in the subtree
        of the last pnode away from the detector, and not a pnode [DFT §III]?"""
        if x in pnodes or x == detector:
            return False
        p = self.path(detector, x)
        return p[1 : len(pnodes) + 1] == pnodes

    def on_or_beyond(self, detector: str, pnodes: tuple[str, ...], x: str) -> bool:
        """``x`` is a pnode or beyond the partition [DFT §III, Figure 8 line 11]."""
        return x in pnodes or self.beyond(detector, pnodes, x)


def complete_tree(n: int, fanout: int, prefix: str = "B") -> PrimaryTree:
    """The complete tree on ``n`` brokers in which broker i joins broker (i - 1) // fanout
    (names ``B0``...), the tree the issue fixes for the paper's §IX networks."""
    if n < 1 or fanout < 1:
        raise ProtocolMisuse(f"complete_tree: n={n}, fanout={fanout}; allowed: both >= 1")
    joins: list[tuple[str, str | None]] = [(f"{prefix}0", None)]
    joins += [(f"{prefix}{i}", f"{prefix}{(i - 1) // fanout}") for i in range(1, n)]
    return PrimaryTree.build(joins)
