"""Topologies as data: physical brokers, cells and links as networkx graphs [GD §3, Figure 3].

Theory of operation
-------------------
A topology is an undirected :class:`networkx.Graph` whose nodes are physical brokers and
whose edges are physical links. Everything else is graph data, so a topology can be printed,
drawn, compared and converted to a role's own topology value:

* node attributes: ``role`` (``"phb"``, ``"ib"`` or ``"shb"``) and ``cell`` (the virtual
  broker the physical broker belongs to [GD §3]; a PHB or SHB is a cell of its own, named
  after the broker);
* edge attributes: ``kind`` (``"tree"`` for a link between cells, ``"cell"`` between two
  brokers of one cell, used for sideways routing [GD §3.1]);
* graph attributes: ``name``; ``pubends`` (sorted ``(pubend, host broker)`` pairs);
  ``cell_tree`` (sorted ``(upstream cell, downstream cell)`` pairs: the virtual broker tree);
  ``order`` (``"publisher"`` or ``"total"``) and ``merged`` (the pubends whose streams are
  merged into one totally ordered stream [GD §2.3, Figure 1]).

Two topologies ship: ``fig3`` (GD Figure 3: p1; b1, b2 in cell IB1; b3, b4 in IB2; s1, s2
under IB1; s3–s5 under IB2; every intermediate broker linked to p1; four pubends P0–P3 at p1)
and ``total-order`` (like GD Figure 1's Topic 2: pubends T1 at p1 and T2 at p2 merged into
one total order, through cell IB1 = b1, b2, to s1 and s2).

>>> g = topology("fig3")
>>> sorted(n for n, d in g.nodes(data=True) if d["cell"] == "IB1")
['b1', 'b2']
>>> links(g)[:3]
('b1|b2', 'b1|p1', 'b1|s1')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import networkx as nx

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd.topology import GDTopology, figure3
from gapless.impl.gd.topology import total_order as gd_total_order
from gapless.impl.gd.topology import two_broker as gd_two_broker

__all__ = [
    "TOPOLOGIES",
    "brokers",
    "cell_members",
    "cell_of",
    "downstream_cells",
    "fig3",
    "graph_of",
    "link_name",
    "links",
    "pubends",
    "shbs",
    "shbs_below",
    "topology",
    "total_order",
    "two_broker",
    "upstream_cells",
]


def link_name(a: str, b: str) -> str:
    """The canonical name ``"a|b"`` (ends sorted) of the link between ``a`` and ``b``."""
    x, y = sorted((a, b))
    return f"{x}|{y}"


def graph_of(name: str, t: GDTopology, *, order: str = "publisher") -> nx.Graph:
    """The world's graph of the GD network ``t`` (defined once, in
    :mod:`gapless.impl.gd.topology`): roles lower-cased, each link a ``"cell"`` edge inside a
    cell or a ``"tree"`` edge between cells, the cell tree oriented from each pubend's PHB,
    and the pubends of ``t``'s total-order group as ``merged``."""
    merged = tuple(sorted({p for group in t.groups.values() for p in group}))
    tree = sorted(
        {
            (parent, cell)
            for p in t.pubends
            for cell in t.cells()
            if (parent := t.parent_cell(p, cell)) is not None
        }
    )
    g = nx.Graph(
        name=name,
        pubends=tuple(sorted(t.pubends.items())),
        cell_tree=tuple(tree),
        order=order,
        merged=merged,
    )
    for cell in t.cells():
        for m in t.cell_brokers(cell):
            g.add_node(m, role=t.brokers[m].role.lower(), cell=cell)
    for a, b in t.links:
        g.add_edge(a, b, kind="cell" if t.cell_of(a) == t.cell_of(b) else "tree")
    return g


def fig3() -> nx.Graph:
    """GD Figure 3: the 10-broker, 8-cell network of the failure experiments [GD §4.2]."""
    return graph_of("fig3", figure3(pubends=4))


def total_order() -> nx.Graph:
    """Two pubends on two PHBs merged into one total order, like GD Figure 1's Topic 2."""
    return graph_of("total-order", gd_total_order(), order="total")


def two_broker() -> nx.Graph:
    """GD §4.1's asymmetric configuration: one PHB ``p1`` (pubend P0) and one SHB ``s1``."""
    return graph_of("two-broker", gd_two_broker(pubends=1, phb="p1", shb="s1"))


TOPOLOGIES: Final[dict[str, Callable[[], nx.Graph]]] = {
    "fig3": fig3,
    "total-order": total_order,
    "two-broker": two_broker,
}


def topology(name: str) -> nx.Graph:
    """The topology called ``name`` (a fresh graph each call)."""
    try:
        return TOPOLOGIES[name]()
    except KeyError:
        raise ProtocolMisuse(
            f"topology: {name!r} is unknown; allowed: {', '.join(sorted(TOPOLOGIES))}"
        ) from None


def brokers(g: nx.Graph) -> tuple[str, ...]:
    """Every physical broker, sorted."""
    return tuple(sorted(g.nodes))


def shbs(g: nx.Graph) -> tuple[str, ...]:
    """The subscriber hosting brokers, sorted."""
    return tuple(sorted(n for n, d in g.nodes(data=True) if d["role"] == "shb"))


def links(g: nx.Graph) -> tuple[str, ...]:
    """Every physical link as ``"a|b"``, sorted."""
    return tuple(sorted(link_name(a, b) for a, b in g.edges))


def pubends(g: nx.Graph) -> tuple[tuple[str, str], ...]:
    """``(pubend, host)`` pairs, sorted."""
    return tuple(g.graph["pubends"])


def cell_of(g: nx.Graph, broker: str) -> str:
    """The cell (virtual broker) of a physical broker."""
    return str(g.nodes[broker]["cell"])


def cell_members(g: nx.Graph, cell: str) -> tuple[str, ...]:
    """The physical brokers of ``cell``, sorted."""
    return tuple(sorted(n for n, d in g.nodes(data=True) if d["cell"] == cell))


def downstream_cells(g: nx.Graph, cell: str) -> tuple[str, ...]:
    """The cells directly downstream of ``cell`` in the virtual broker tree, sorted."""
    return tuple(sorted(down for up, down in g.graph["cell_tree"] if up == cell))


def upstream_cells(g: nx.Graph, cell: str) -> tuple[str, ...]:
    """The cells directly upstream of ``cell``, sorted."""
    return tuple(sorted(up for up, down in g.graph["cell_tree"] if down == cell))


def shbs_below(g: nx.Graph, cell: str) -> tuple[str, ...]:
    """Every SHB at or below ``cell`` in the virtual broker tree, sorted."""
    out: set[str] = set()
    todo = [cell]
    while todo:
        c = todo.pop()
        members = cell_members(g, c)
        out.update(m for m in members if g.nodes[m]["role"] == "shb")
        todo.extend(downstream_cells(g, c))
    return tuple(sorted(out))
