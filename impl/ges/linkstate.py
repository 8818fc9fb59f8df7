"""Connection losses and additions disseminated into every node's connectivity graph
[GES "The connectivity graph", "Conclusion": "connection losses (or additions) are
incorporated into the connectivity graph hosted at the broker nodes"].

Theory of operation
-------------------
A node learns of its own links' failures and recoveries from ``LinkChanged``; it stamps the
change with a *version* ``(now, node)`` (virtual time, then the reporting node: a total
order, and a later report of the same link wins) and floods it to its live neighbours as
:class:`~gapless.impl.ges.messages.LinkNews`. A node that hears news newer than what it knows
about a link keeps it and passes only what was new to its other live neighbours, so the
flood ends. When a link comes up, each end also sends the other everything it knows (a
restarted node lost its table). A node avoids, when routing, the links it suspects itself
and every link the news says is down: a failed broker's links are reported by its
neighbours, so every node routes around it, not only the nodes next to it.

Scope by level [GES "The connectivity graph": connection information is disseminated by
level; a super-cluster's connection is sent only within its super-super-cluster]. A link
lies in the smallest unit holding both its ends (a level-0 link in its cluster, a level-1
link in its super-cluster, a top-level link in the whole system); a node outside that unit
sees both ends as one unit of its abbreviated view
(:meth:`~gapless.impl.ges.addressing.Hierarchy.view_unit`), so the link is no edge of its
connectivity graph, and it is never one of the node's own links: the news cannot change any
route the node computes. So news of a link is passed only to neighbours inside the link's unit
(:func:`within_unit`, the policy's ``news_scope``; :func:`everywhere` is the flood it
replaces, kept to measure what scoping saves), and a link that comes up hands the other end
only the news in scope for it. Inside the unit every node still folds each link into its own
view at its own granularity (an edge between the units the ends appear as, with a link count:
:func:`~gapless.impl.ges.connectivity.view_edges`), which is the paper's rewriting at each
gatekeeper done by the receiver; the news itself stays per link, since per-link versions are
what make a later report win. A flood kept inside a unit reaches every node of it that is
connected to an end of the link inside the unit (each end reports its own link); a node cut
off from both ends inside the unit, but reachable around it, misses the news until a link of
its comes up again, as a node misses news lost to a drop window today.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pyrsistent import PMap

from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.aggregate import Pairs

__all__ = [
    "Entry",
    "News",
    "Pairs",
    "avoided",
    "everywhere",
    "in_scope",
    "within_unit",
]

Version = tuple[int, int, str]
Entry = tuple[tuple[str, str], Version, bool]
"""One piece of news: a link, its version, whether it is up."""

News = PMap[tuple[str, str], tuple[Version, bool]]


def avoided(suspected: frozenset[tuple[str, str]], news: News) -> frozenset[tuple[str, str]]:
    """The links routing avoids: suspected here, or down by the latest news."""
    return suspected | frozenset(link for link, (_v, up) in news.items() if not up)


def within_unit(h: Hierarchy, link: tuple[str, str], node: str) -> bool:
    """Whether ``node`` lies in the unit of ``link``: the smallest unit holding both ends,
    i.e. ``node`` shares with one end at least the prefix the ends share."""
    a, b = link
    return h.shared(node, a) >= h.shared(a, b)


def everywhere(h: Hierarchy, link: tuple[str, str], node: str) -> bool:
    """Every node hears of every link (the unscoped flood, for comparison)."""
    return True


def in_scope(
    entries: Iterable[Entry],
    h: Hierarchy,
    node: str,
    scope: Callable[[Hierarchy, tuple[str, str], str], bool],
) -> tuple[Entry, ...]:
    """The entries whose news is passed to ``node``."""
    return tuple(e for e in entries if scope(h, e[0], node))
