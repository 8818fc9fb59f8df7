"""Profiles and the profile graph [GES "Profiles and the profile graph"].

Theory of operation
-------------------
A client's *profile* is the set of constraints an event must satisfy to interest it. We
write one as a filter expression (:mod:`gapless.impl.filters`); a conjunction of comparisons
``attr OP literal`` becomes a sequence of *constraints*, one per comparison, in the order of
the event signature's attributes (:data:`SIGNATURE`, then the others by name). Any other
filter (``or``, ``not``) is one opaque constraint on the whole event. ``true`` has no
constraint: it matches every event.

The profile graph organises the constraints of many profiles as Gryphon's matching tree
[GES: "We use the general matching algorithm, presented in [1], of the Gryphon system"]: a
profile is a path of edges from the root, one edge per constraint; profiles that share a
prefix of constraints share those edges. Along every edge we keep, per *destination* (a unit:
for a stable storage, the node a client is registered at), the number of predicates in that
destination interested in traversing it — the per-edge destination reference count [GES:
"If the unit already exists in the routing information, we increment the predicate count
associated with that destination"]. A profile's destination also sits at the end of its last
edge (``ends``), which is what an event must reach to be destined there.

An event traverses the graph from the root along every edge whose constraint it satisfies
and that some destination still uses; every ``ends`` entry it reaches adds that destination
to the event's destination list [GES: "for each destination edge that is encountered if the
event satisfies the destination edge constraint, that destination is added to the
destination list associated with the event"].

Removing a profile decrements the counts along its path; an entry leaves an edge only at
zero, and an edge with no destination left leaves the graph. A count never goes negative:
removing what is not there is refused (returns the same graph).

>>> g = ProfileGraph().add('loc == "NY" and p > 3', "b1").add('loc == "NY"', "b2")
>>> g.destinations({"loc": "NY", "p": 5}), g.destinations({"loc": "NY", "p": 1})
(('b1', 'b2'), ('b2',))
>>> g.add('loc == "NY"', "b2").remove('loc == "NY"', "b2").destinations({"loc": "NY"})
('b2',)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.filters import And, Cmp, Filter, evaluate, parse_filter

__all__ = ["SIGNATURE", "Constraint", "EdgeKey", "ProfileGraph", "constraints", "path_of"]

SIGNATURE: Final = ("loc", "p", "k", "n")
"""The event signature: the order of attributes constraints are organised in."""


@final
@attrs.frozen
class Constraint:
    """One constraint: ``attr OP literal``, or (``op == "expr"``) a whole filter's text."""

    attr: str
    op: str
    literal: Any

    def satisfied(self, attributes: Mapping[str, Any]) -> bool:
        """Whether an event with ``attributes`` satisfies this constraint."""
        if self.op == "expr":
            return parse_filter(str(self.literal)).matches(attributes)
        return evaluate(Cmp(self.attr, self.op, self.literal), attributes)


EdgeKey = tuple[Constraint, ...]
"""An edge, named by the path of constraints from the root up to and including its own."""


def _rank(c: Constraint) -> tuple[int, str, str, str]:
    pos = SIGNATURE.index(c.attr) if c.attr in SIGNATURE else len(SIGNATURE)
    return (pos, c.attr, c.op, repr(c.literal))


def constraints(text: str) -> tuple[Constraint, ...]:
    """The profile ``text`` as its ordered constraints (see module doc)."""
    f: Filter = parse_filter(text)
    node = f.node
    if f.match_all:
        return ()
    items = node.items if isinstance(node, And) else (node,)
    if all(isinstance(i, Cmp) for i in items):
        cs = [Constraint(i.attr, i.op, i.literal) for i in items if isinstance(i, Cmp)]
        return tuple(sorted(set(cs), key=_rank))
    return (Constraint("*", "expr", text),)


def path_of(text: str) -> tuple[EdgeKey, ...]:
    """The edges of the profile ``text``, root first."""
    cs = constraints(text)
    return tuple(cs[: i + 1] for i in range(len(cs)))


Counts = PMap[str, int]


def _bump(counts: Counts, dest: str, by: int) -> Counts:
    n = counts.get(dest, 0) + by
    return counts.set(dest, n) if n > 0 else counts.discard(dest)


@final
@attrs.frozen(kw_only=True)
class ProfileGraph:
    """Edges with per-destination predicate counts (``edges``), and the destinations whose
    profiles end at each edge (``ends``; the root is the empty key)."""

    edges: PMap[EdgeKey, Counts] = attrs.field(factory=pmap)
    ends: PMap[EdgeKey, Counts] = attrs.field(factory=pmap)

    def add(self, text: str, dest: str) -> ProfileGraph:
        """The graph with one more profile ``text`` of ``dest``."""
        return self.change(text, dest, 1)

    def remove(self, text: str, dest: str) -> ProfileGraph:
        """The graph without one profile ``text`` of ``dest`` (the same graph if absent)."""
        return self.change(text, dest, -1)

    def change(self, text: str, dest: str, by: int) -> ProfileGraph:
        """Add (``by`` > 0) or remove (``by`` < 0) ``|by|`` profiles ``text`` of ``dest``;
        a removal of more than is there is refused (the same graph)."""
        path = path_of(text)
        end: EdgeKey = path[-1] if path else ()
        if by < 0 and self.ends.get(end, pmap()).get(dest, 0) < -by:
            return self
        edges = self.edges
        for key in path:
            counts = _bump(edges.get(key, pmap()), dest, by)
            edges = edges.set(key, counts) if counts else edges.discard(key)
        ends_counts = _bump(self.ends.get(end, pmap()), dest, by)
        ends = self.ends.set(end, ends_counts) if ends_counts else self.ends.discard(end)
        return ProfileGraph(edges=edges, ends=ends)

    def count(self, key: EdgeKey, dest: str) -> int:
        """The predicate count of ``dest`` along edge ``key``."""
        return self.edges.get(key, pmap()).get(dest, 0)

    def destinations(self, attributes: Mapping[str, Any]) -> tuple[str, ...]:
        """The destination list of an event with ``attributes`` (sorted)."""
        found: set[str] = set(self.ends.get((), pmap()))
        frontier: list[EdgeKey] = [()]
        children = self._children()
        while frontier:
            here = frontier.pop()
            for child in children.get(here, ()):
                if child[-1].satisfied(attributes):
                    found.update(self.ends.get(child, pmap()))
                    frontier.append(child)
        return tuple(sorted(found))

    def _children(self) -> dict[EdgeKey, list[EdgeKey]]:
        out: dict[EdgeKey, list[EdgeKey]] = {}
        for key in sorted(self.edges, key=lambda k: (len(k), [_rank(c) for c in k])):
            out.setdefault(key[:-1], []).append(key)
        return out
