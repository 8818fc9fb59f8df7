"""GES topologies: 22 broker nodes in clusters and super-clusters [GES "Results", Figure 6].

Theory of operation
-------------------
The paper measured two 22-node topologies with different clustering coefficients; its
Figure 6 is not in our copy, so we design two with the same hierarchy and different wiring:
two super-clusters of eleven nodes, each of three clusters (4, 4 and 3 nodes), nodes named
``n1`` .. ``n22`` with addresses ``(super_cluster, cluster, node)``.

* ``ges-dense``: every cluster is a clique (many triangles: a high clustering coefficient,
  like the paper's "cluster controllers provide control to local classrooms");
* ``ges-sparse``: every cluster is a ring or a path (no triangle inside a cluster: a low
  clustering coefficient, longer paths).

Both have two links between each pair of clusters of a super-cluster and two between the
super-clusters, so losing one gateway link leaves an alternate [GES "Conclusion"]. Each
super-cluster hosts one system stable storage (``storage`` node attribute): ``n6`` and
``n17``. Publisher ``P0`` is at ``n22`` (the paper's publisher node) and ``P1`` at ``n1``.
Every node hosts clients (role ``shb``), so any node is a roaming client's possible home.

``ges-small`` (eight nodes: two super-clusters of two 2-node clusters, storages ``n2`` and
``n7``, publishers at ``n8`` and ``n1``) keeps tests and fuzzing fast.

Graph attributes follow :mod:`gapless.models.topology` (``role``, ``cell``, ``pubends``) plus
``address`` per node, the graph's ``storages`` and its ``units`` (every cluster and
super-cluster as its brokers, comma-separated: what the fault kind ``fail_unit`` fails);
:func:`clustering_coefficient` is
networkx's average clustering (outside ``impl``, as the layering wants).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Final

import networkx as nx

__all__ = [
    "GES_TOPOLOGIES",
    "clustering_coefficient",
    "ges_dense",
    "ges_small",
    "ges_sparse",
]

_SIZES: Final = ((4, 4, 3), (4, 4, 3))
_STORAGES: Final = ("n6", "n17")
_SMALL: Final = ((2, 2), (2, 2))


def _nodes(sizes: tuple[tuple[int, ...], ...] = _SIZES) -> dict[str, tuple[int, int, int]]:
    out: dict[str, tuple[int, int, int]] = {}
    i = 1
    for sc, clusters in enumerate(sizes):
        for c, size in enumerate(clusters):
            for k in range(size):
                out[f"n{i}"] = (sc, c, k)
                i += 1
    return out


def _members(nodes: dict[str, tuple[int, int, int]], sc: int, c: int) -> list[str]:
    return sorted((n for n, a in nodes.items() if a[:2] == (sc, c)), key=lambda n: nodes[n])


def _build(
    intra: Callable[[list[str]], list[tuple[str, str]]],
    name: str,
    sizes: tuple[tuple[int, ...], ...] = _SIZES,
) -> nx.Graph:
    nodes = _nodes(sizes)
    g = nx.Graph(name=name)
    for n, addr in nodes.items():
        g.add_node(n, role="shb", cell=f"c{addr[0]}.{addr[1]}", address=addr)
    for sc, clusters in enumerate(sizes):
        groups = [_members(nodes, sc, c) for c in range(len(clusters))]
        for m in groups:
            g.add_edges_from(intra(m))
        for a in range(len(groups)):  # two links between each pair of clusters
            for b in range(a + 1, len(groups)):
                g.add_edge(groups[a][0], groups[b][-1])
                g.add_edge(groups[a][1], groups[b][0])
    if sizes == _SMALL:
        g.add_edges_from((("n3", "n5"), ("n4", "n6")))
        g.graph["pubends"] = (("P0", "n8"), ("P1", "n1"))
        g.graph["storages"] = ("n2", "n7")
    else:
        g.add_edges_from((("n9", "n12"), ("n11", "n20")))  # two super-cluster links
        g.graph["pubends"] = (("P0", "n22"), ("P1", "n1"))
        g.graph["storages"] = _STORAGES
    g.graph["cell_tree"] = ()
    g.graph["units"] = _units(nodes)
    return g


def _units(nodes: dict[str, tuple[int, int, int]]) -> tuple[str, ...]:
    """Every unit above a node — each cluster, then each super-cluster — as its brokers,
    comma-separated (the targets of the fault kind ``fail_unit``, :mod:`gapless.models.faults`)."""
    out = []
    for depth in (2, 1):
        groups: dict[tuple[int, ...], list[str]] = {}
        for n, addr in nodes.items():
            groups.setdefault(addr[:depth], []).append(n)
        out += [",".join(sorted(m, key=lambda n: nodes[n])) for _k, m in sorted(groups.items())]
    return tuple(out)


def _clique(m: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for i, a in enumerate(m) for b in m[i + 1 :]]


def _ring(m: list[str]) -> list[tuple[str, str]]:
    pairs = list(itertools.pairwise(m))
    if len(m) > 3:
        pairs.append((m[-1], m[0]))
    return pairs


def ges_dense() -> nx.Graph:
    """Clusters as cliques (high clustering coefficient)."""
    return _build(_clique, "ges-dense")


def ges_sparse() -> nx.Graph:
    """Clusters as rings or paths (low clustering coefficient)."""
    return _build(_ring, "ges-sparse")


def ges_small() -> nx.Graph:
    """Eight nodes: two super-clusters of two 2-node clusters (fast tests and fuzzing)."""
    return _build(_clique, "ges-small", _SMALL)


def clustering_coefficient(g: nx.Graph) -> float:
    """The average clustering coefficient of ``g`` (rounded to 3 places)."""
    return round(float(nx.average_clustering(g)), 3)


GES_TOPOLOGIES: Final[dict[str, Callable[[], nx.Graph]]] = {
    "ges-dense": ges_dense,
    "ges-sparse": ges_sparse,
    "ges-small": ges_small,
}
