"""GES's planted bugs, declared beside the rules they change [GES] (DESIGN.md, "sans-IO").

Theory of operation
-------------------
Each entry of :data:`VARIANTS` is a :class:`~gapless.impl.variants.Variant`: a
:class:`~gapless.impl.ges.policy.GESPolicy` built with ``attrs.evolve(PAPER_POLICY, ...)``, the
trace-only invariants (``gapless.invariants.ges``) expected to catch it, the fault kinds it
needs and what goes wrong. The rule functions are module-level (they pickle by reference).
Each is a mistake an implementer of the paper could make.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
from pyrsistent import pmap

from gapless.impl.filters import parse_filter
from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.connectivity import link_key, next_hop
from gapless.impl.ges.policy import PAPER_POLICY
from gapless.impl.ges.profiles import ProfileGraph, path_of
from gapless.impl.variants import Variant

__all__ = ["VARIANTS"]


def epoch_at_reconnect(presented: int | None, start: int, cut: int) -> int:
    """Bug: the recovery starts at the storage's epoch when the client reconnects, not at
    the epoch the client presents."""
    return cut


def decrement_twice(remaining: int) -> int:
    """Bug: one confirmation decrements the predicate count twice."""
    return remaining - 2


def units_uncounted(units: int) -> int:
    """Bug: the cluster storages an event is destined to add nothing to its predicate count."""
    return 0


def write_past_gap(seq: int, expect: int) -> str:
    """Bug: a system storage writes any newer sequence number, skipping the ones it lacks
    (no negative acknowledgement): the skipped events are taken for held."""
    if seq >= expect:
        return "write"
    return "old"


def write_again(seq: int, expect: int) -> str:
    """Bug: a system storage writes a number it already holds again (a retransmission is not
    recognised as one)."""
    return "write" if seq <= expect else "gap"


def replica_never_needed(pending: frozenset[str]) -> bool:
    """Bug: a replica is taken as no longer needed as soon as its cluster storage holds it."""
    return False


def route_through_suspected(
    h: Hierarchy,
    vertex: str,
    dest: str,
    suspected: frozenset[tuple[str, str]],
    visited: frozenset[str],
) -> str | None:
    """Bug: route as if no link were suspected."""
    return next_hop(h, vertex, dest, frozenset(), visited)


def no_alternate_route(
    h: Hierarchy,
    vertex: str,
    dest: str,
    suspected: frozenset[tuple[str, str]],
    visited: frozenset[str],
) -> str | None:
    """Bug: no alternate links — the cheapest path is computed as if nothing had failed, and
    when its first link is suspected the message is dropped (the sender retransmits) instead
    of going the other way."""
    hop = next_hop(h, vertex, dest, frozenset(), visited)
    if hop is None or link_key(vertex, hop) in suspected:
        return None
    return hop


def unregister_uncounted(graph: ProfileGraph, profile: str, dest: str) -> ProfileGraph:
    """Bug: no reference count on the edges — removing a profile removes its destination
    from every edge of its path, whatever other profiles of that destination share them."""
    path = path_of(profile)
    edges, ends = graph.edges, graph.ends
    for key in path:
        counts = edges.get(key, pmap()).discard(dest)
        edges = edges.set(key, counts) if counts else edges.discard(key)
    end = path[-1] if path else ()
    counts = ends.get(end, pmap()).discard(dest)
    ends = ends.set(end, counts) if counts else ends.discard(end)
    return ProfileGraph(edges=edges, ends=ends)


def deliver_any_newer(prev: int, last: int) -> bool:
    """Bug: deliver any event newer than the last one, whether its predecessor came or not."""
    return True


def keep_matching_new_profile(profile: str, attributes: Mapping[str, Any]) -> bool:
    """Bug: the recovery queue is built from the profile the client presents now, not the
    one in force when each event was published: a stored event that matched the old profile
    but not the new one is dropped (confirmed for the client) at the handoff."""
    return parse_filter(profile).matches(attributes)


def flood(
    graph: ProfileGraph, attributes: Mapping[str, Any], brokers: tuple[str, ...]
) -> tuple[str, ...]:
    """Bug (the flooding baseline): route every event toward every node with clients."""
    return brokers


def losses_only(live: int, last: int | None, links: int) -> bool:
    """Bug: a gatekeeper states a unit pair's count only when it fell (a connection loss),
    not when links came back (an addition)."""
    return live < (links if last is None else last)


def _bug(
    name: str, caught_by: tuple[str, ...], needs: tuple[str, ...], summary: str, **rules: Any
) -> Variant:
    return Variant(
        name=name,
        policy=attrs.evolve(PAPER_POLICY, name=name, **rules),
        caught_by=caught_by,
        needs=needs,
        summary=summary,
    )


VARIANTS: Final[dict[str, Variant]] = {
    v.name: v
    for v in (
        _bug(
            "epoch-at-reconnect",
            ("roam_complete", "release_after_confirm"),
            ("disconnect",),
            "The recovery queue starts at the epoch the storage has when the client "
            'reconnects, not at the one the client presents [GES "Recovering clients", '
            "item (b)]: the events it missed while away are never delivered.",
            effective_epoch=epoch_at_reconnect,
        ),
        _bug(
            "double-decrement",
            ("release_after_confirm", "reference_counts"),
            (),
            "A confirmation decrements the event's predicate count twice [GES \"Stable "
            'storages"]: the storage releases an event before every destination confirmed.',
            decrement=decrement_twice,
        ),
        _bug(
            "release-before-units",
            ("release_after_confirm",),
            ("crash",),
            'With the finer tier (run config granularity = "cluster"), the system storage '
            "counts only the clients an event is destined to, not the cluster storages [GES "
            '"Stable storages": the predicate count is decremented as finer-grained storages '
            "confirm receipt]: it releases an event before every cluster storage holds it.",
            unit_count=units_uncounted,
        ),
        _bug(
            "replica-released-early",
            ("release_after_confirm",),
            ("disconnect",),
            'With the finer tier (run config granularity = "cluster"), the system storage '
            "tells a cluster storage to release its replica of an event as soon as it holds it, "
            'not once every client the event was destined to confirmed it [GES "Stable '
            'storages"]: a client that roams away recovers from a storage that no longer has '
            "the event.",
            replica_needed=replica_never_needed,
        ),
        _bug(
            "sys-skip-gap",
            ("system_sequence", "release_after_confirm"),
            ("drop",),
            "With the system-level links (run config system_links = true), a system storage "
            "writes an event of another unit's storage whose sequence number is past a gap "
            'instead of asking for the missing one [GES "Stable storages": negative '
            "acknowledgements]: its cumulative acknowledgement then covers an event it never "
            "held, and the origin releases it.",
            sys_verdict=write_past_gap,
        ),
        _bug(
            "sys-write-again",
            ("system_sequence",),
            ("drop",),
            "With the system-level links, a system storage writes again an event of another "
            "unit's storage it already holds when the origin retransmits it (after a lost "
            'acknowledgement or the origin\'s restart) [GES "Stable storages": sequence '
            "numbers tell a system storage which events it has]: a duplicate.",
            sys_verdict=write_again,
        ),
        _bug(
            "release-before-peers",
            ("release_after_confirm",),
            (),
            "With the system-level links, the system storages of the other units an event is "
            "destined into add nothing to its predicate count: the origin releases it before "
            "they hold it.",
            peer_count=units_uncounted,
        ),
        _bug(
            "aggregate-losses-only",
            ("route_while_path", "roam_complete"),
            ("link_fail",),
            "A gatekeeper rewriting connection news into aggregated entries (live links per pair "
            "of units) states a pair's count when it falls, not when links come back [GES "
            '"The connectivity graph": "connection losses (or additions)"]: the nodes that see '
            "the pair as one edge keep it down, and once every link of it was down they find "
            "no route across it.",
            restates=losses_only,
        ),
        _bug(
            "route-through-suspected",
            ("avoid_suspected",),
            ("link_fail",),
            'Routing ignores suspected links [GES "Routing events": only nodes and links '
            "that have not been failure suspected can be part of the shortest path].",
            route=route_through_suspected,
        ),
        _bug(
            "no-alternate-route",
            ("route_while_path", "roam_complete"),
            ("link_fail",),
            "Routing drops a message whose cheapest link has failed instead of taking the "
            'alternate [GES "Conclusion": "Links could fail, and the routing to the affected '
            'units is performed using the alternate links"]; it gets through once the link '
            "heals (so only the instantaneous judgement sees it), or never when the cheapest "
            "neighbour failed for good.",
            route=no_alternate_route,
        ),
        _bug(
            "no-edge-refcount",
            ("reference_counts", "roam_complete"),
            ("disconnect",),
            "The profile graph keeps no reference count per destination on its edges [GES "
            '"Profiles and the profile graph"]: when one client leaves a node, the node '
            "loses the edge for every other client with the same constraints.",
            unregister=unregister_uncounted,
            unregister_unit=unregister_uncounted,
        ),
        _bug(
            "gatekeeper-no-edge-refcount",
            ("roam_complete",),
            ("disconnect",),
            "The gatekeepers' profile graphs (built from the propagated registrations) keep "
            'no reference count per unit on their edges [GES "Profiles and the profile '
            'graph"]: when one client leaves a unit, the gatekeepers stop routing toward it '
            "the events every other client there with the same constraints wants.",
            unregister_unit=unregister_uncounted,
        ),
        _bug(
            "flooding",
            ("selective_routing",),
            (),
            "Events are routed toward every node with clients, interested or not (the "
            'flooding baseline of [GES "The problem of event delivery"]).',
            destinations=flood,
        ),
        _bug(
            "skip-chain",
            ("roam_exactly_once", "roam_order", "roam_complete", "release_after_confirm"),
            ("link_fail",),
            "A node delivers any event newer than the last delivered without waiting for its "
            "predecessor: an event overtaken on another route is delivered out of order, and "
            "the one it overtook is then taken for a duplicate: confirmed, never delivered.",
            in_sequence=deliver_any_newer,
        ),
        _bug(
            "recovery-from-new-profile",
            ("roam_complete", "release_after_confirm"),
            ("disconnect",),
            "The recovery queue of a client that changed its profile is built from the new "
            "profile instead of the one in force when each event was published [GES "
            '"Epochs"]: an event it missed that matched its old profile only is never '
            "delivered (the storage releases it as if the client had it).",
            keeps=keep_matching_new_profile,
        ),
    )
}
