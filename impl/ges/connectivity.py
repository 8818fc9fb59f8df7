"""Each node's connectivity graph and the cheapest-path routing over it
[GES "The connectivity graph", "Routing events"].

Theory of operation
-------------------
A node (the *vertex*) does not keep the whole broker network: its connectivity graph is an
abbreviated view whose graph nodes are *units* — the nodes of its own cluster, the other
clusters of its super-cluster, the other super-clusters, and so on
(:meth:`~gapless.impl.ges.addressing.Hierarchy.view_unit`). Every physical link whose ends
appear as two different units adds an edge between them; the edge's *link count* is the number
of such links and its *cost* the cheapest of them, from the link cost matrix: a level-ℓ link
costs ``LINK_COST[ℓ]``, growing with the level [GES: "the cost associated with traversing a
level-ℓ link from a unit u_x increases with increasing values of both x and ℓ"].

Routing toward a destination node: find the unit it appears as, run a shortest-path search
(Dijkstra, written here: ``impl`` imports no graph library) from the vertex, and take the
first edge. If that edge goes to a node of the vertex's cluster, that node is the next hop;
if it goes to a coarser unit, the vertex is a gatekeeper into it and the next hop is its
cheapest live neighbour inside that unit. When the message has reached that unit, the node
there routes again with its own view, so every node takes the best decision it can
[GES: "At every node the best hops to reach the destinations are computed"].

Failures: a link the vertex has been told is down (``LinkChanged(up=False)``) is *suspected*
and leaves its view, and so does every link to a node already on the message's path (the
visited set), which makes a route loop-free: "Nodes and links that have not been failure
suspected are the only entities that can be part of the shortest path" [GES "Routing
events"]. The link count tells whether losing a link partitions two units; with another
link left, routing uses the alternate link [GES "Conclusion"].

>>> from gapless.impl.ges.addressing import Hierarchy
>>> h = Hierarchy.build({"a": (0, 0), "b": (0, 1), "c": (1, 0), "d": (1, 1)},
...                     [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
>>> next_hop(h, "a", "d", frozenset(), frozenset())  # straight into d's cluster
'c'
>>> next_hop(h, "a", "d", frozenset({("a", "c")}), frozenset())  # the alternate link
'b'
>>> next_hop(h, "a", "d", frozenset({("a", "b"), ("a", "c")}), frozenset()) is None
True
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Set
from functools import lru_cache
from typing import Final, final

import attrs

from gapless.impl.ges.addressing import Address, Hierarchy

__all__ = ["LINK_COST", "Edge", "RouteRule", "cheapest_path", "link_key", "next_hop", "view_edges"]

LINK_COST: Final = (1, 4, 16, 64, 256, 1024, 4096)
"""The link cost matrix: the cost of a level-ℓ link (index ℓ)."""


def link_key(a: str, b: str) -> tuple[str, str]:
    """A physical link as its sorted pair of node names."""
    return (a, b) if a < b else (b, a)


@final
@attrs.frozen(kw_only=True)
class Edge:
    """An edge of the connectivity graph between two units: ``count`` physical links, the
    cheapest costing ``cost``."""

    count: int
    cost: int


def view_edges(
    h: Hierarchy, vertex: str, suspected: Set[tuple[str, str]], avoid: Set[str]
) -> dict[tuple[Address, Address], Edge]:
    """The vertex's connectivity graph: edges between units (both directions), built from
    the links it does not suspect and that touch no node in ``avoid``."""
    me = h.nodes[vertex]
    edges: dict[tuple[Address, Address], Edge] = {}
    for a, b in h.links:
        if (a, b) in suspected or a in avoid or b in avoid:
            continue
        ua = me if a == vertex else h.view_unit(vertex, a)
        ub = me if b == vertex else h.view_unit(vertex, b)
        if ua == ub:
            continue
        cost = LINK_COST[min(h.link_level(a, b), len(LINK_COST) - 1)]
        for key in ((ua, ub), (ub, ua)):
            old = edges.get(key)
            edges[key] = (
                Edge(count=1, cost=cost)
                if old is None
                else Edge(count=old.count + 1, cost=min(old.cost, cost))
            )
    return edges


def cheapest_path(
    edges: dict[tuple[Address, Address], Edge], source: Address, target: Address
) -> tuple[Address, ...] | None:
    """The cheapest path of units from ``source`` to ``target`` (ties broken by the units'
    order, so it is deterministic), or None when there is none."""
    adj: dict[Address, list[tuple[Address, int]]] = {}
    for (u, v), e in sorted(edges.items()):
        adj.setdefault(u, []).append((v, e.cost))
    best: dict[Address, int] = {source: 0}
    prev: dict[Address, Address] = {}
    heap: list[tuple[int, Address]] = [(0, source)]
    done: set[Address] = set()
    while heap:
        d, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        if u == target:
            break
        for v, c in adj.get(u, ()):
            nd = d + c
            if nd < best.get(v, nd + 1):
                best[v] = nd
                prev[v] = u
                heapq.heappush(heap, (nd, v))
    if target not in done:
        return None
    path = [target]
    while path[-1] != source:
        path.append(prev[path[-1]])
    return tuple(reversed(path))


def _gateway(
    h: Hierarchy, vertex: str, unit: Address, suspected: Set[tuple[str, str]], avoid: Set[str]
) -> str | None:
    """The vertex's cheapest unsuspected neighbour inside ``unit`` (a gatekeeper's gateway)."""
    options = [
        (LINK_COST[min(h.link_level(vertex, nb), len(LINK_COST) - 1)], nb)
        for nb in h.neighbours[vertex]
        if h.nodes[nb][: len(unit)] == unit
        and link_key(vertex, nb) not in suspected
        and nb not in avoid
    ]
    return min(options)[1] if options else None


RouteRule = Callable[[Hierarchy, str, str, frozenset[tuple[str, str]], frozenset[str]], str | None]
"""The shape of :func:`next_hop` (a policy field)."""


def next_hop(
    h: Hierarchy,
    vertex: str,
    dest: str,
    suspected: frozenset[tuple[str, str]],
    visited: frozenset[str],
) -> str | None:
    """The neighbour ``vertex`` sends to for ``dest``: the first hop of the cheapest path in
    its connectivity graph that avoids suspected links and visited nodes; None when ``dest``
    is unreachable that way (or is the vertex). Pure; the route that ignores ``visited`` is
    cached on its (hashable) arguments and used whenever its hop is not visited."""
    hop = _hop(h, vertex, dest, suspected, frozenset())
    if hop is None or hop not in visited:
        return hop
    return _hop(h, vertex, dest, suspected, visited - {vertex})


@lru_cache(maxsize=65_536)
def _hop(
    h: Hierarchy,
    vertex: str,
    dest: str,
    suspected: frozenset[tuple[str, str]],
    avoid: frozenset[str],
) -> str | None:
    if dest == vertex:
        return None
    edges = view_edges(h, vertex, suspected, avoid)
    path = cheapest_path(edges, h.nodes[vertex], h.view_unit(vertex, dest))
    if path is None or len(path) < 2:
        return None
    first = path[1]
    if len(first) == len(h.nodes[vertex]):  # a node of the vertex's own cluster
        return next(n for n, a in h.nodes.items() if a == first)
    return _gateway(h, vertex, first, suspected, avoid)
