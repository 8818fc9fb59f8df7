"""GDTopology: brokers, cells, links, pubends, the virtual tree and the subscriptions, as data.

Theory of operation
-------------------
[GD §3] maps a *virtual* broker tree onto physical brokers. Each virtual broker is a *cell*:
a PHB (pubend hosting broker) or an SHB (subscriber hosting broker) is a cell of one broker;
an intermediate virtual broker (IB) may be a cell of several brokers that are linked to one
another. A virtual link between two cells is a *link bundle*: every physical link between a
broker of one and a broker of the other [GD §3.1].

A :class:`GDTopology` value holds:

* ``brokers`` — name -> :class:`BrokerSpec` (``role`` "PHB" | "IB" | "SHB", ``cell``);
* ``links`` — physical links, unordered pairs (stored sorted);
* ``pubends`` — pubend id -> the PHB hosting it;
* ``cell_edges`` — the virtual tree over cells, unordered pairs. The knowledge tree of a pubend
  [GD §3] is this tree rooted at the cell of the pubend's PHB, without the other PHB cells (a PHB
  only publishes), unless ``trees`` gives that pubend its own ``(parent_cell, child_cell)``
  edges;
* ``subscribers`` — name -> :class:`SubscriberSpec` (its SHB, its filter text, and the total-order
  ``group`` it reads, or None for publisher order [GD §2.3]);
* ``edge_filters`` — optional explicit filter text of the edge *into* a cell; every other edge's
  filter is the disjunction of the filters of the subscribers below it [GD §3.1];
* ``groups`` — total-order merge groups: name -> the pubends merged by tick [GD §2.3, Fig. 1].

Pubend numbers (:meth:`GDTopology.number`) are positions in the sorted pubend ids; they pick
the tick residue [GD §2.2] and the link of a bundle (the pubend "hash", [GD §3.1]).
The value is pure data; :func:`figure3` builds the paper's failure-injection network.

>>> t = figure3()
>>> t.cell_brokers("IB1"), t.parent_cell("P0", "s1"), t.child_cells("P0", "p1")
(('b1', 'b2'), 'IB1', ('IB1', 'IB2'))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.errors import ProtocolMisuse

__all__ = [
    "ROLES",
    "BrokerSpec",
    "GDTopology",
    "SubscriberSpec",
    "figure3",
    "total_order",
    "two_broker",
]

ROLES: Final = ("PHB", "IB", "SHB")


@final
@attrs.frozen(kw_only=True)
class BrokerSpec:
    """One physical broker: its ``role`` (PHB, IB or SHB) and its ``cell``."""

    role: str
    cell: str


@final
@attrs.frozen(kw_only=True)
class SubscriberSpec:
    """A subscriber at SHB ``shb`` with filter text ``filter``; ``group`` names the total-order
    merge group it reads (None: publisher order, every pubend)."""

    shb: str
    filter: str = "true"
    group: str | None = None


def _pairs(value: Iterable[Iterable[str]]) -> tuple[tuple[str, str], ...]:
    out = set()
    for pair in value:
        a, b = tuple(pair)
        out.add((a, b) if a <= b else (b, a))
    return tuple(sorted(out))


def _str_map(value: Mapping[str, str]) -> PMap[str, str]:
    return pmap({str(k): str(v) for k, v in value.items()})


def _brokers(value: Mapping[str, Any]) -> PMap[str, BrokerSpec]:
    return pmap(
        {
            k: v if isinstance(v, BrokerSpec) else BrokerSpec(role=v[0], cell=v[1])
            for k, v in value.items()
        }
    )


def _subscribers(value: Mapping[str, Any]) -> PMap[str, SubscriberSpec]:
    out = {}
    for k, v in value.items():
        if isinstance(v, SubscriberSpec):
            out[k] = v
        elif isinstance(v, str):
            out[k] = SubscriberSpec(shb=v)
        else:
            out[k] = SubscriberSpec(shb=v[0], filter=v[1], group=v[2] if len(v) > 2 else None)
    return pmap(out)


def _trees(
    value: Mapping[str, Iterable[tuple[str, str]]],
) -> PMap[str, tuple[tuple[str, str], ...]]:
    return pmap({k: tuple((str(a), str(b)) for a, b in v) for k, v in value.items()})


def _groups(value: Mapping[str, Iterable[str]]) -> PMap[str, tuple[str, ...]]:
    return pmap({k: tuple(sorted(v)) for k, v in value.items()})


@final
@attrs.frozen(kw_only=True)
class GDTopology:
    """The GD network as data (see the module doc). Construction validates it and raises
    :class:`~gapless.impl.errors.ProtocolMisuse` naming what is wrong."""

    brokers: PMap[str, BrokerSpec] = attrs.field(converter=_brokers)
    links: tuple[tuple[str, str], ...] = attrs.field(converter=_pairs)
    pubends: PMap[str, str] = attrs.field(converter=_str_map)
    cell_edges: tuple[tuple[str, str], ...] = attrs.field(converter=_pairs)
    subscribers: PMap[str, SubscriberSpec] = attrs.field(factory=pmap, converter=_subscribers)
    edge_filters: PMap[str, str] = attrs.field(factory=pmap, converter=_str_map)
    groups: PMap[str, tuple[str, ...]] = attrs.field(factory=pmap, converter=_groups)
    trees: PMap[str, tuple[tuple[str, str], ...]] = attrs.field(factory=pmap, converter=_trees)
    _parents: PMap[str, PMap[str, str | None]] = attrs.field(
        init=False, eq=False, repr=False, default=pmap()
    )

    def __attrs_post_init__(self) -> None:
        _validate(self)
        object.__setattr__(self, "_parents", _orient(self))

    # -- cells ---------------------------------------------------------------------------

    def cells(self) -> tuple[str, ...]:
        """Every cell, sorted."""
        return tuple(sorted({b.cell for b in self.brokers.values()}))

    def cell_of(self, broker: str) -> str:
        return self.brokers[broker].cell

    def cell_brokers(self, cell: str) -> tuple[str, ...]:
        """The physical brokers of ``cell``, sorted."""
        return tuple(sorted(n for n, b in self.brokers.items() if b.cell == cell))

    def neighbours(self, broker: str) -> tuple[str, ...]:
        """Brokers linked to ``broker``, sorted."""
        found = [v if u == broker else u for u, v in self.links if broker in (u, v)]
        return tuple(sorted(found))

    # -- pubends and trees -----------------------------------------------------------------

    def number(self, pubend: str) -> int:
        """The pubend's number: its position among the sorted pubend ids [GD §2.2]."""
        return sorted(self.pubends).index(pubend)

    def parent_cell(self, pubend: str, cell: str) -> str | None:
        """The upstream cell of ``cell`` in ``pubend``'s tree (None at the root / off-tree)."""
        return self._parents[pubend].get(cell)

    def in_tree(self, pubend: str, cell: str) -> bool:
        return cell in self._parents[pubend]

    def child_cells(self, pubend: str, cell: str) -> tuple[str, ...]:
        """The downstream cells of ``cell`` in ``pubend``'s tree, sorted."""
        return tuple(sorted(c for c, p in self._parents[pubend].items() if p == cell))

    def subtree_cells(self, pubend: str, cell: str) -> tuple[str, ...]:
        """``cell`` and every cell below it in ``pubend``'s tree, sorted."""
        out = {cell}
        frontier = [cell]
        while frontier:
            c = frontier.pop()
            for child in self.child_cells(pubend, c):
                if child not in out:
                    out.add(child)
                    frontier.append(child)
        return tuple(sorted(out))

    def subscribers_below(self, pubend: str, cell: str) -> tuple[str, ...]:
        """Subscribers hosted by SHBs in ``cell``'s subtree of ``pubend``'s tree, sorted."""
        cells = set(self.subtree_cells(pubend, cell))
        return tuple(
            sorted(
                s
                for s, spec in self.subscribers.items()
                if self.brokers[spec.shb].cell in cells and _reads(self, spec, pubend)
            )
        )


def _reads(topo: GDTopology, spec: SubscriberSpec, pubend: str) -> bool:
    return spec.group is None or pubend in topo.groups.get(spec.group, ())


def _fail(what: str) -> ProtocolMisuse:
    return ProtocolMisuse(f"GDTopology: {what}")


def _validate(t: GDTopology) -> None:
    for name, b in sorted(t.brokers.items()):
        if b.role not in ROLES:
            raise _fail(f"broker {name!r} has role {b.role!r}; allowed: {', '.join(ROLES)}")
    cells: dict[str, list[str]] = {}
    for name, spec in sorted(t.brokers.items()):
        cells.setdefault(spec.cell, []).append(name)
    for cell, members in sorted(cells.items()):
        roles = {t.brokers[m].role for m in members}
        if len(roles) > 1:
            raise _fail(f"cell {cell!r} mixes roles {sorted(roles)}; allowed: one role per cell")
        if roles != {"IB"} and len(members) > 1:
            raise _fail(
                f"cell {cell!r} has brokers {members}; allowed: one broker per PHB or SHB cell"
            )
    for u, v in t.links:
        for x in (u, v):
            if x not in t.brokers:
                raise _fail(f"link {u}-{v} names unknown broker {x!r}")
        if u == v:
            raise _fail(f"link {u}-{v} joins a broker to itself")
    for u, v in t.cell_edges:
        for x in (u, v):
            if x not in cells:
                raise _fail(f"cell edge {u}-{v} names unknown cell {x!r}; cells: {sorted(cells)}")
    for p, host in sorted(t.pubends.items()):
        if host not in t.brokers or t.brokers[host].role != "PHB":
            raise _fail(f"pubend {p!r} is hosted by {host!r}; allowed: a PHB broker")
    for s, sub in sorted(t.subscribers.items()):
        if sub.shb not in t.brokers or t.brokers[sub.shb].role != "SHB":
            raise _fail(f"subscriber {s!r} is at {sub.shb!r}; allowed: an SHB broker")
        if sub.group is not None and sub.group not in t.groups:
            raise _fail(f"subscriber {s!r} reads unknown group {sub.group!r}")
    for g, group in sorted(t.groups.items()):
        for p in group:
            if p not in t.pubends:
                raise _fail(f"group {g!r} names unknown pubend {p!r}")
    for c in sorted(t.edge_filters):
        if c not in cells:
            raise _fail(f"edge filter for unknown cell {c!r}")
    for p in sorted(t.trees):
        if p not in t.pubends:
            raise _fail(f"tree given for unknown pubend {p!r}")


def _orient(t: GDTopology) -> PMap[str, PMap[str, str | None]]:
    adjacency: dict[str, set[str]] = {}
    for a, b in t.cell_edges:
        adjacency.setdefault(a, set()).add(b)
        adjacency.setdefault(b, set()).add(a)
    phb_cells = {b.cell for b in t.brokers.values() if b.role == "PHB"}
    out: dict[str, PMap[str, str | None]] = {}
    for p, host in sorted(t.pubends.items()):
        root = t.brokers[host].cell
        parents: dict[str, str | None] = {root: None}
        if p in t.trees:
            for parent, child in t.trees[p]:
                if child in parents:
                    raise _fail(f"tree of pubend {p!r}: cell {child!r} has two parents")
                parents[child] = parent
        else:
            frontier = [root]
            while frontier:
                c = frontier.pop()
                for n in sorted(adjacency.get(c, ())):
                    if n in phb_cells:
                        continue  # another pubend's PHB is never downstream [GD §3]
                    if n in parents:
                        if parents[c] != n:
                            raise _fail(f"cell edges form a cycle through {n!r}; allowed: a tree")
                        continue
                    parents[n] = c
                    frontier.append(n)
        out[p] = pmap(parents)
    return pmap(out)


def figure3(pubends: int = 4, subscribers_per_shb: int = 1, filter: str = "true") -> GDTopology:
    """The failure-injection network of [GD §4.2, Figure 3]: p1 (PHB) hosting ``pubends``
    pubends P0..; cell IB1 = b1, b2; cell IB2 = b3, b4; s1, s2 under IB1; s3-s5 under IB2.
    Subscribers are named ``<shb>-<i>``."""
    brokers: dict[str, tuple[str, str]] = {"p1": ("PHB", "p1")}
    brokers.update(dict.fromkeys(("b1", "b2"), ("IB", "IB1")))
    brokers.update(dict.fromkeys(("b3", "b4"), ("IB", "IB2")))
    brokers.update({s: ("SHB", s) for s in ("s1", "s2", "s3", "s4", "s5")})
    links = [("p1", b) for b in ("b1", "b2", "b3", "b4")] + [("b1", "b2"), ("b3", "b4")]
    links += [(b, s) for b in ("b1", "b2") for s in ("s1", "s2")]
    links += [(b, s) for b in ("b3", "b4") for s in ("s3", "s4", "s5")]
    edges = [("p1", "IB1"), ("p1", "IB2"), ("IB1", "s1"), ("IB1", "s2")]
    edges += [("IB2", s) for s in ("s3", "s4", "s5")]
    subs = {
        f"{s}-{i}": SubscriberSpec(shb=s, filter=filter)
        for s in ("s1", "s2", "s3", "s4", "s5")
        for i in range(subscribers_per_shb)
    }
    return GDTopology(
        brokers=brokers,
        links=links,
        pubends={f"P{i}": "p1" for i in range(pubends)},
        cell_edges=edges,
        subscribers=subs,
    )


def two_broker(
    subscribers: Mapping[str, str] | None = None,
    pubends: int = 1,
    *,
    phb: str = "phb",
    shb: str = "shb",
) -> GDTopology:
    """The two-broker network of [GD §4.1]: PHB ``phb`` linked to SHB ``shb`` (the simulated
    world's ``two-broker`` topology names them ``p1`` and ``s1``); ``subscribers`` maps
    subscriber name -> filter text."""
    subs = {n: SubscriberSpec(shb=shb, filter=f) for n, f in (subscribers or {}).items()}
    return GDTopology(
        brokers={phb: ("PHB", phb), shb: ("SHB", shb)},
        links=[(phb, shb)],
        pubends={f"P{i}": phb for i in range(pubends)},
        cell_edges=[(phb, shb)],
        subscribers=subs,
    )


def total_order() -> GDTopology:
    """Two pubends on two PHBs merged into one total order, like [GD Figure 1]'s Topic 2:
    T1 at p1 and T2 at p2, through cell IB1 = b1, b2, to SHBs s1 and s2 (group ``total``)."""
    brokers: dict[str, tuple[str, str]] = {"p1": ("PHB", "p1"), "p2": ("PHB", "p2")}
    brokers.update(dict.fromkeys(("b1", "b2"), ("IB", "IB1")))
    brokers.update({s: ("SHB", s) for s in ("s1", "s2")})
    links = [(p, b) for p in ("p1", "p2") for b in ("b1", "b2")] + [("b1", "b2")]
    links += [(b, s) for b in ("b1", "b2") for s in ("s1", "s2")]
    return GDTopology(
        brokers=brokers,
        links=links,
        pubends={"T1": "p1", "T2": "p2"},
        cell_edges=[("p1", "IB1"), ("p2", "IB1"), ("IB1", "s1"), ("IB1", "s2")],
        groups={"total": ("T1", "T2")},
    )
