"""Where a message goes next from a node, and where it goes back to at a dead end [GES
"Routing events": "At every node the best hops to reach the destinations are computed"].

Theory of operation
-------------------
A node splits a message's destinations by the next hop its connectivity graph gives toward
each, avoiding the links it suspects and the nodes the message visited
(:func:`split_by_hop`, over the policy's route rule,
:func:`gapless.impl.ges.connectivity.next_hop`). A destination with no next hop is a *dead
end* here; the message (or its copy toward those destinations) goes back along its trail to
the node that forwarded it (:func:`returns_to`), which is in the visited set — as this node
now is — and so tries its other ways: a depth-first search over the nodes' abbreviated views.
A gatekeeper cannot see inside the unit it routes into, so the gateway it picks may be cut off
inside that unit while another gateway leads on; the search finds the other one. It ends:
every forward step adds a node to the visited set, and a step back shortens the trail. Only
the message's origin (empty trail), or a node whose link back is suspected, drops it
(recorded, :func:`gapless.impl.ges.records.unrouted`).

>>> from gapless.impl.ges.addressing import Hierarchy
>>> from gapless.impl.ges.connectivity import next_hop
>>> h = Hierarchy.build({"a": (0, 0), "b": (0, 1), "c": (1, 0)}, [("a", "b"), ("a", "c")])
>>> split_by_hop(next_hop, h, "a", frozenset({("a", "c")}), ["b", "c"], frozenset({"a"}))
({'b': ['b']}, ['c'])
>>> returns_to("c", frozenset(), ("a",)), returns_to("c", frozenset({("a", "c")}), ("a",))
('a', None)
"""

from __future__ import annotations

from collections.abc import Iterable

from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.connectivity import RouteRule, link_key

__all__ = ["returns_to", "split_by_hop"]


def split_by_hop(
    rule: RouteRule,
    h: Hierarchy,
    vertex: str,
    avoid: frozenset[tuple[str, str]],
    dests: Iterable[str],
    seen: frozenset[str],
) -> tuple[dict[str, list[str]], list[str]]:
    """``dests`` grouped by their next hop from ``vertex`` (by ``rule``, avoiding the links in
    ``avoid`` and the nodes in ``seen``); those with none, in order."""
    groups: dict[str, list[str]] = {}
    lost: list[str] = []
    for d in dests:
        hop = rule(h, vertex, d, avoid, seen)
        if hop is not None:
            groups.setdefault(hop, []).append(d)
        else:
            lost.append(d)
    return groups, lost


def returns_to(vertex: str, avoid: frozenset[tuple[str, str]], back: tuple[str, ...]) -> str | None:
    """Where a message that found no way on from ``vertex`` goes: the last node of its trail
    ``back`` (the one that forwarded it here), unless ``vertex`` suspects the link to it;
    None at the message's origin (see module doc)."""
    if not back or link_key(vertex, back[-1]) in avoid:
        return None
    return back[-1]
