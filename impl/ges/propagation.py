"""Profile propagation to the gatekeepers of each level, with per-edge destination reference
counts [GES "Profiles and the profile graph", "Routing events"].

Theory of operation
-------------------
A client's registration is news: ``(client, connection, node, profile)`` — the client
attached to ``node`` with its ``connection``-th registration (a connection, or a profile
change within one), presenting ``profile``. A later registration replaces an earlier one,
wherever each was, and each has a unique id (client and number), so news delivered twice, or
late, changes nothing twice [GES: "Every profile change has a unique-id associated it, which
aids in ensuring that the reference count scheme does not fail due to delivery of the same
profile change multiple times"].

**Where it goes.** Not to every node: to the gatekeepers that gate events into the units
holding ``node`` [GES: "the changes need to be propagated to relevant nodes, that maintain
profiles for different levels ... A profile change in broker ... needs to be propagated to the
unit (cluster, super-cluster, etc) gatekeeper within the unit that the broker is a part of"].
For each level ``l >= 1``, the level-``l`` gatekeepers inside the unit where level-``l``
links lie that holds ``node`` (a level-``l`` link joins two level-``l`` units of one
level-``l+1`` unit): the gateways between the clusters of its super-cluster (the cluster's own
gateways among them), then every gateway between the super-clusters of its
super-super-cluster, and so on (:func:`gatekeepers`). Why these suffice: an event that crosses
a level-``l`` link into a unit holding ``node`` from outside it is sent by an end of that link,
which lies in ``node``'s level-``l+1`` unit and has a level-``l`` link — one of them; inside
``node``'s cluster there is no gateway to cross (``tests/ges/test_ges_propagation.py`` walks
every route on both 22-node topologies with links down). A node that has not heard of a
client lets its copies go, so nodes outside this set route as before and only the
gatekeepers prune.

**How it goes.** The node the client attaches to sends one :class:`~gapless.impl.ges.messages.
ProfileNews` toward all of them, split at each hop by next hop like an event (one copy per
link toward the gatekeepers behind it); each gatekeeper merges it and answers a
:class:`~gapless.impl.ges.messages.ProfileAck`; the node keeps, per client, its latest
registration and the gatekeepers that have not acknowledged it (``spreading``), and resends it
to them every tick. A gatekeeper's table only grows newer, so once it acknowledged a
registration it holds it or a newer one — until it crashes: a restarted gatekeeper (empty
table) sends every node it gatekeeps for a :class:`~gapless.impl.ges.messages.ProfileAsk`
every tick until that node answers with the registrations of the clients attached to it
(``asking``), so that a late copy of an older registration cannot stay its last word about a
client connected there.

Every node keeps, beside the registrations it heard (:class:`Interest`), a profile graph
whose destinations are the *units of its own abbreviated view*
(:meth:`~gapless.impl.ges.addressing.Hierarchy.view_unit`): the nodes of its cluster, the
other clusters of its super-cluster, the other super-clusters. A client's registration adds
its profile at the unit its node appears as; a newer registration removes the older one's
(with the policy's ``unregister``: decrementing the per-edge destination reference counts)
and adds its own. So a gatekeeper into a unit knows, per edge of the profile graph, how many
predicates of that unit want the edge traversed — the paper's profile at each level.

Gatekeeping (:func:`passes`): before a node sends an event's copy toward a destination
node, it checks, for each target client the storage named there, its own view: if the
latest registration it heard of that client is at that node, the copy goes only if its
profile graph says the unit behind the hop wants that profile's edges (counts above zero
along the profile's path) and the profile matches the event [GES: "Properties (a) and (b)
ensure that the events routed to a unit, are those that have at least one client interested
in the content"]. If it heard of no registration, or of one at another node, its view is
older or newer than the storage's and it cannot judge: the copy goes (the storage's
destination list, computed from the handoffs it received, is the routing's other half). An
event stored before a client's profile change whose copy a gatekeeper holds back is in the
client's recovery queue (``spec/ges.md``, "Profile changes"); anything else held back is
retransmitted by its storage until the gatekeeper has heard the newer registration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.filters import parse_filter
from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.profiles import ProfileGraph, path_of

__all__ = [
    "Interest",
    "News",
    "acknowledged",
    "gatekeepers",
    "merge",
    "origins",
    "passes",
    "spread",
    "unit_name",
]

News = tuple[str, int, str, str]
"""One registration: ``(client, connection, node, profile)``."""


@final
@attrs.frozen(kw_only=True)
class Interest:
    """What one node knows of the clients' registrations (see module doc). ``table``: per
    client the latest ``(connection, node, profile)`` it heard; ``graph``: their profiles at
    the units of this node's view, with per-edge reference counts; ``spreading``: per client
    attached here, its latest registration and the gatekeepers that have not acknowledged it;
    ``asking``: after a restart at ``since``, the nodes that have not answered its ask."""

    table: PMap[str, tuple[int, str, str]] = attrs.field(factory=pmap)
    graph: ProfileGraph = attrs.field(factory=ProfileGraph)
    spreading: PMap[str, tuple[News, frozenset[str]]] = attrs.field(factory=pmap)
    asking: frozenset[str] = frozenset()
    since: int = -1


@lru_cache(maxsize=1024)
def gatekeepers(h: Hierarchy, node: str) -> tuple[str, ...]:
    """The gatekeepers a registration at ``node`` goes to: for each level ``l >= 1``, the
    nodes of ``node``'s level-``l+1`` unit that have a level-``l`` link (``node`` itself left
    out).

    >>> h = Hierarchy.build({"a": (0, 0, 0), "b": (0, 0, 1), "c": (0, 1, 0), "d": (1, 0, 0)},
    ...                     [("a", "b"), ("b", "c"), ("c", "d")])
    >>> gatekeepers(h, "a"), gatekeepers(h, "d")
    (('b', 'c', 'd'), ('c',))
    """
    out: set[str] = set()
    for level in range(1, h.depth + 1):
        for x in h.members(h.unit(node, level + 1)):
            if any(h.link_level(x, nb) == level for nb in h.neighbours[x]):
                out.add(x)
    return tuple(sorted(out - {node}))


@lru_cache(maxsize=1024)
def origins(h: Hierarchy, gatekeeper: str) -> tuple[str, ...]:
    """The nodes whose registrations go to ``gatekeeper`` (whom it asks after a restart)."""
    return tuple(n for n in sorted(h.nodes) if gatekeeper in gatekeepers(h, n))


def spread(mine: Interest, entry: News, dests: frozenset[str]) -> Interest:
    """``mine`` with ``entry`` (a registration of a client attached here) to be sent to
    ``dests`` too (beside any gatekeeper still owed its latest registration)."""
    old = mine.spreading.get(entry[0])
    if old is not None and old[0][1] > entry[1]:
        return mine
    owed = dests | old[1] if old is not None and old[0] == entry else dests
    if old == (entry, owed) or not owed:
        return mine
    return attrs.evolve(mine, spreading=mine.spreading.set(entry[0], (entry, owed)))


def acknowledged(mine: Interest, gatekeeper: str, ids: Iterable[tuple[str, int]]) -> Interest:
    """``mine`` once ``gatekeeper`` acknowledged ``ids``: it is owed them no more."""
    spreading = mine.spreading
    for client, number in ids:
        got = spreading.get(client)
        if got is None or got[0][1] != number or gatekeeper not in got[1]:
            continue
        owed = got[1] - {gatekeeper}
        spreading = spreading.set(client, (got[0], owed)) if owed else spreading.remove(client)
    if spreading is mine.spreading:
        return mine
    return attrs.evolve(mine, spreading=spreading)


def unit_name(h: Hierarchy, vertex: str, node: str) -> str:
    """The unit ``node`` appears as in ``vertex``'s view, as a destination name."""
    return "u" + ".".join(str(x) for x in h.view_unit(vertex, node))


def merge(
    mine: Interest,
    entries: Iterable[News],
    h: Hierarchy,
    vertex: str,
    unregister: Callable[[ProfileGraph, str, str], ProfileGraph],
) -> tuple[Interest, tuple[News, ...]]:
    """``mine`` with every registration newer than the one it holds for that client; the
    registrations that were new. The same object when nothing was new."""
    table, graph = mine.table, mine.graph
    new: list[News] = []
    for client, connection, node, profile in entries:
        old = table.get(client)
        if old is not None and old[0] >= connection:
            continue
        if old is not None:
            graph = unregister(graph, old[2], unit_name(h, vertex, old[1]))
        graph = graph.add(profile, unit_name(h, vertex, node))
        table = table.set(client, (connection, node, profile))
        new.append((client, connection, node, profile))
    if not new:
        return mine, ()
    return attrs.evolve(mine, table=table, graph=graph), tuple(new)


@lru_cache(maxsize=4096)
def _path(profile: str) -> tuple[tuple[Any, ...], ...]:
    return path_of(profile)


def passes(
    mine: Interest,
    h: Hierarchy,
    vertex: str,
    client: str,
    node: str,
    attributes: Mapping[str, Any],
) -> bool:
    """Whether this node lets a copy of an event for ``client`` at ``node`` go toward
    ``node`` (see module doc)."""
    got = mine.table.get(client)
    if got is None or got[1] != node:
        return True  # its view is older or newer than the storage's: it cannot judge
    profile = got[2]
    unit = unit_name(h, vertex, node)
    graph = mine.graph
    path = _path(profile)
    end = path[-1] if path else ()
    if graph.ends.get(end, pmap()).get(unit, 0) <= 0:
        return False
    if any(graph.count(edge, unit) <= 0 for edge in path):
        return False
    return parse_filter(profile).matches(attributes)
