"""Connection news rewritten into aggregated entries at the gatekeepers [GES "The connectivity
graph": connection information is rewritten as it crosses units, so a node hears of a unit's
connections only at the granularity of its abbreviated view].

Theory of operation
-------------------
A node sees a link as an edge between the units its ends appear as
(:meth:`~gapless.impl.ges.addressing.Hierarchy.view_unit`). When neither end is a node of its
own cluster, every link between the same two units is the same edge to it, and all that its
routes depend on is whether that edge has a live link left (every link between two units seen
from one node has the same level, hence the same cost:
:func:`~gapless.impl.ges.connectivity.view_edges`). Such a node (the *receiver*) is told of
those links by one *aggregated entry* per unit pair ``(U, V)``: ``(pair, weight, live)``, the
number of live links between ``U`` and ``V`` and the weight of the knowledge it was derived
from, instead of one entry per link (:func:`unit_pair`, the policy's ``news_key``;
:func:`per_link` keeps every entry per link, as before, to measure what the rewriting saves).

Who writes an aggregated entry. A node ``g`` sending news to a neighbour ``m`` that sees a
link as the pair ``P`` either

* sees the links of ``P`` as ``P`` itself — it holds ``P``'s aggregated entry and passes it
  on unchanged (a flood, like per-link news: a node keeps the heaviest entry per pair and
  passes on only what was new to it); or
* sees them finer (per link, or as finer unit pairs) — it is a gatekeeper of ``P`` for ``m``:
  it *derives* ``P``'s live count from what it knows (:func:`derive`) and, whenever that count
  changes from the last one it stated, states it with the weight of its knowledge; or
* sees some of them coarser — it cannot say, and sends nothing about ``P`` (``m`` hears it
  from a node that sees finer).

The weight. Per link, the per-link news is totally ordered by version ``(now, reports,
node)``, and a gatekeeper knows, per link of ``P``, the newest version it heard (or nothing).
The weight of its statement is ``(sum of now, sum of reports)`` over those versions (a finer
pair contributes its entry's weight). It grows strictly whenever the gatekeeper hears newer
news of a link of ``P`` (a newer version has a later ``now``, or the same ``now`` and more
reports, up to the reporting node's name, which it leaves out), and two gatekeepers that
heard the same news state the same weight and count — so the second statement is not new to a
receiver and is not flooded again: the weight, unlike a stamp of the sender's clock, lets the
several gatekeepers of a pair speak with one voice.

Why it converges. Once the news stops, every gatekeeper of ``P`` has heard the newest news of
every link of ``P`` (the per-link flood inside the unit reaches them, as before): the same
final knowledge, with the one greatest weight ``w*`` and the true count. A receiver keeps the
heaviest statement it got; a gatekeeper's statements grow in weight, so the heaviest one
received is some gatekeeper's last (a later one would be heavier, and reaches the receiver
too). If that last statement's count were not the true one, that gatekeeper's count changes
when it reaches the final knowledge, and it states again, heavier: so the heaviest statement
is of a gatekeeper whose last count is the true one. A gatekeeper that restarted with an empty
table states only what it knows, and its statements weigh less than those of the others until
it has heard as much (a stamp of its clock would have let its ignorance win). While messages
are lost, the same repair as for per-link news applies: when a link comes up each end sends
the other its whole table, with the aggregated entries it holds or stated last. What is lost
against per-link news: a receiver takes a pair's count from one gatekeeper's knowledge, not
from the union of everyone's reports, so a gatekeeper cut off from a report inside its unit
states a stale count until it hears it (with per-link news the receiver would have had the
report from another node); and two reports of one link at the same ``now`` with the same
report counter from its two ends weigh the same (both ends report the same change).

Routing reads an aggregated entry as that many live links between the two units
(:func:`expand`: the others are taken as down), which gives the receiver's connectivity graph
the same edges and costs as the per-link news would. The one difference: routing around the
nodes a message has visited removes the links that touch them, and which links of a pair are
the live ones is not known to the receiver (it only matters to a fallback route).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from pyrsistent import PMap

from gapless.impl.ges.addressing import Address, Hierarchy

__all__ = [
    "Pair",
    "PairEntry",
    "Pairs",
    "Weight",
    "count_changed",
    "derive",
    "expand",
    "grouping",
    "per_link",
    "unit_pair",
]

Link = tuple[str, str]
Version = tuple[int, int, str]
Weight = tuple[int, int]
"""What an aggregated entry is derived from: the sums of the ``now`` and of the report
counters of the newest news of each of its links (or of its finer pairs' weights)."""
Pair = tuple[Address, Address]
PairEntry = tuple[Pair, Weight, int]
"""An aggregated entry: a unit pair, its weight, its live link count."""
Pairs = PMap[Pair, tuple[Weight, int]]


def unit_pair(h: Hierarchy, node: str, link: Link) -> Pair | None:
    """The unit pair ``node`` sees ``link`` as, when neither end is a node of its cluster;
    None when it sees the link per link (an end in its own cluster)."""
    a, b = link
    ua, ub = h.view_unit(node, a), h.view_unit(node, b)
    full = len(h.nodes[node])
    if len(ua) == full or len(ub) == full:
        return None
    return (ua, ub) if ua <= ub else (ub, ua)


def per_link(h: Hierarchy, node: str, link: Link) -> Pair | None:
    """Every link per link (no rewriting: the news before aggregation)."""
    return None


@lru_cache(maxsize=4096)
def grouping(h: Hierarchy, node: str, key: object) -> Mapping[Pair, tuple[Link, ...]]:
    """The links ``node`` sees as each unit pair (by the rule ``key``), sorted; links it sees
    per link, or inside one unit, are left out."""
    out: dict[Pair, list[Link]] = {}
    for link in h.links:
        pair = key(h, node, link)  # type: ignore[operator]
        if pair is not None and pair[0] != pair[1]:
            out.setdefault(pair, []).append(link)
    return {p: tuple(sorted(ls)) for p, ls in out.items()}


def expand(h: Hierarchy, node: str, key: object, pairs: Pairs) -> frozenset[Link]:
    """The links routing takes as down for the aggregated entries ``node`` holds: for a pair
    with ``live`` of its ``n`` links live, the first ``n - live`` (which ones does not change
    the node's connectivity graph: they are one edge to it)."""
    groups = grouping(h, node, key)
    down: set[Link] = set()
    for pair, (_v, live) in pairs.items():
        links = groups.get(pair, ())
        down.update(links[: max(0, len(links) - live)])
    return frozenset(down)


def derive(
    h: Hierarchy,
    node: str,
    key: object,
    links: tuple[Link, ...],
    pair: Pair,
    news: Mapping[Link, tuple[Version, bool]],
    pairs: Pairs,
) -> tuple[int, Weight] | None:
    """The live count ``node`` states for ``pair`` (whose links are ``links``) and the weight
    of what it knows of them, from what it knows finer: a link it sees per link is live unless
    its newest news says down, and weighs its news's ``(now, reports)``; a finer pair counts
    its held entry (all its links when it holds none) and weighs that entry's weight. None
    when ``node`` sees a link of the pair as the pair itself or coarser (it cannot say)."""
    mine = grouping(h, node, key)
    live, at, reports = 0, 0, 0
    counted: set[Pair] = set()
    for link in links:
        own = key(h, node, link)  # type: ignore[operator]
        if own is None:
            heard = news.get(link)
            live += heard is None or heard[1]
            if heard is not None:
                at, reports = at + heard[0][0], reports + heard[0][1]
            continue
        if own == pair or not _finer(own, pair):
            return None
        if own not in counted:
            counted.add(own)
            held = pairs.get(own)
            if held is None:
                live += len(mine.get(own, ()))
            else:
                live += held[1]
                at, reports = at + held[0][0], reports + held[0][1]
    return live, (at, reports)


def count_changed(live: int, last: int | None, links: int) -> bool:
    """Whether a gatekeeper states a pair's live count ``live``: when it differs from its
    last statement ``last`` (or, never stated, from all ``links`` live, what every receiver
    assumes)."""
    return live != (links if last is None else last)


def _finer(own: Pair, pair: Pair) -> bool:
    """Whether ``own`` refines ``pair`` (each of its units inside one of ``pair``'s)."""

    def inside(u: Address, v: Address) -> bool:
        return len(u) >= len(v) and u[: len(v)] == v

    a, b = own
    p, q = pair
    return (inside(a, p) and inside(b, q)) or (inside(a, q) and inside(b, p))
