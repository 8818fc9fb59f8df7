"""Profile propagation to the gatekeepers, with per-edge destination reference counts
[GES "Profiles and the profile graph", "Routing events"].

Theory of operation
-------------------
A client's registration is news: ``(client, connection, node, profile)`` — the client
attached to ``node`` with its ``connection``-th connection, presenting ``profile``. The node
it attaches to stamps it (the connection number orders a client's registrations: a later
connection replaces an earlier one, wherever each was) and floods it to its live neighbours
as :class:`~gapless.impl.ges.messages.ProfileNews`; a node that hears news newer than what
it holds keeps it and passes on only what was new, so the flood ends [GES: "the changes need
to be propagated to relevant nodes, that maintain profiles for different levels"]. Each
registration has a unique id (client and connection), so news delivered twice, or late,
changes nothing twice [GES: "Every profile change has a unique-id associated it, which aids
in ensuring that the reference count scheme does not fail due to delivery of the same
profile change multiple times"].

Every node keeps, beside the registrations it heard (:class:`Interest`), a profile graph
whose destinations are the *units of its own abbreviated view*
(:meth:`~gapless.impl.ges.addressing.Hierarchy.view_unit`): the nodes of its cluster, the
other clusters of its super-cluster, the other super-clusters. A client's registration adds
its profile at the unit its node appears as; a newer registration removes the older one's
(with the policy's ``unregister``: decrementing the per-edge destination reference counts)
and adds its own. So a gatekeeper into a unit knows, per edge of the profile graph, how many
predicates of that unit want the edge traversed — the paper's profile at each level — and a
node inside the unit knows the finer units.

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
retransmitted by its storage once the news has settled.

News can be lost (drop windows, failed links, a restarted node that lost its table): every
retransmission tick a node sends each live neighbour a :class:`~gapless.impl.ges.messages.
ProfileDigest` of its registrations (their number and a checksum of the unique ids); a
neighbour whose digest differs answers with its whole table, and merging is a
last-writer-wins join, so every node's table converges to the same registrations.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.filters import parse_filter
from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.profiles import ProfileGraph, path_of

__all__ = ["Interest", "News", "merge", "passes", "unit_name"]

News = tuple[str, int, str, str]
"""One registration: ``(client, connection, node, profile)``."""


@final
@attrs.frozen(kw_only=True)
class Interest:
    """What one node heard of the clients' registrations: per client its latest
    ``(connection, node, profile)``; ``graph``: their profiles at the units of this node's
    view, with per-edge reference counts; ``count`` and ``checksum``: the digest."""

    table: PMap[str, tuple[int, str, str]] = attrs.field(factory=pmap)
    graph: ProfileGraph = attrs.field(factory=ProfileGraph)
    count: int = 0
    checksum: int = 0

    def news(self) -> tuple[News, ...]:
        """Every registration held, sorted by client (the whole table, for a neighbour)."""
        return tuple((c, conn, node, p) for c, (conn, node, p) in sorted(self.table.items()))


def unit_name(h: Hierarchy, vertex: str, node: str) -> str:
    """The unit ``node`` appears as in ``vertex``'s view, as a destination name."""
    return "u" + ".".join(str(x) for x in h.view_unit(vertex, node))


def _id_sum(client: str, connection: int) -> int:
    return zlib.crc32(f"{client}\x1f{connection}".encode())


def merge(
    mine: Interest,
    entries: Iterable[News],
    h: Hierarchy,
    vertex: str,
    unregister: Callable[[ProfileGraph, str, str], ProfileGraph],
) -> tuple[Interest, tuple[News, ...]]:
    """``mine`` with every registration newer than the one it holds for that client; the
    registrations that were new (to pass on). The same object when nothing was new."""
    table, graph, count, checksum = mine.table, mine.graph, mine.count, mine.checksum
    new: list[News] = []
    for client, connection, node, profile in entries:
        old = table.get(client)
        if old is not None and old[0] >= connection:
            continue
        if old is not None:
            graph = unregister(graph, old[2], unit_name(h, vertex, old[1]))
            checksum -= _id_sum(client, old[0])
        else:
            count += 1
        graph = graph.add(profile, unit_name(h, vertex, node))
        checksum += _id_sum(client, connection)
        table = table.set(client, (connection, node, profile))
        new.append((client, connection, node, profile))
    if not new:
        return mine, ()
    return Interest(table=table, graph=graph, count=count, checksum=checksum), tuple(new)


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
