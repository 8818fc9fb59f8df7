"""GESPolicy: the GES roles' rules as one frozen record of functions; PAPER_POLICY is the paper.

Theory of operation
-------------------
Each place where an implementer of GES takes a decision the paper (or our design of what it
defers, ``spec/ges.md``) specifies is a field of :class:`GESPolicy`; the roles call the field
and never test a policy's name. Planted bugs (:mod:`gapless.impl.ges.variants`) are other
values of it. Every function is module-level, so a policy pickles by reference.

* ``effective_epoch(presented, start, cut)`` [GES "Epochs"]: the epoch a reconnecting client's
  recovery queue starts after — the one it presents (its last received event's), or the epoch
  it registered at when it has received nothing from that storage.
* ``decrement(remaining)`` [GES "Stable storages"]: the predicate count left after one
  destination confirms receipt.
* ``unit_count(units)`` [GES "Stable storages"]: what the cluster storages an event is
  destined to add to its predicate count at the system storage — one each (the finer tier).
* ``peer_count(peers)`` [GES "Stable storages"]: what the system storages of the other
  top-level units an event is destined into add to its predicate count — one each (the
  system-level links, :mod:`gapless.impl.ges.syslink`).
* ``sys_verdict(seq, expect)`` [GES "Stable storages": sequence numbers let a system storage
  "conjecture the events that they should have received from any other system storage"]:
  what a system storage does with the ``seq``-th event of a link whose next expected number
  is ``expect`` — ``"write"`` it (the next one), take it for ``"old"`` (held or being
  written: acknowledge), or see a ``"gap"`` (negative acknowledgement).
* ``replica_needed(pending)`` [GES "Stable storages"]: whether a cluster storage that holds
  an event must keep its replica while ``pending`` (the clients the event was destined to
  that have not confirmed it) remain — while any does (a client that roamed away recovers
  from the storage of the cluster it left).
* ``route`` [GES "Routing events"]: the next hop toward a destination
  (:func:`gapless.impl.ges.connectivity.next_hop`: cheapest path avoiding suspected links).
* ``unregister(graph, profile, dest)`` [GES "Profiles and the profile graph"]: the profile
  graph without one profile of ``dest`` (decrementing the per-edge reference counts).
* ``unregister_unit(graph, profile, unit)`` [GES "Profiles and the profile graph"]: the same
  for a node's gatekeeping graph, whose destinations are the units of its view
  (:mod:`gapless.impl.ges.propagation`).
* ``in_sequence(prev, last)``: an event whose predecessor for this client is ``prev`` may be
  delivered after ``last`` (the per-client chain of ``spec/ges.md``).
* ``keeps(profile, attributes)`` [GES "Epochs"]: whether a reconnecting client that now
  presents ``profile`` still gets a stored event destined to it — always, in the paper's
  design: an event's targets are fixed by the profile in force when it was published, and a
  profile change takes effect only for the events stored after its epoch (the handoff's cut).
* ``news_scope(hierarchy, link, node)`` [GES "The connectivity graph": connection information
  is disseminated by level, a super-cluster link's only within its super-super-cluster]:
  whether news of ``link`` is passed to ``node`` — only inside the unit the link lies in (the
  smallest unit holding both its ends), the only nodes whose abbreviated view shows it
  (:mod:`gapless.impl.ges.linkstate`).
* ``news_key(hierarchy, node, link)`` [GES "The connectivity graph": connection information is
  rewritten at the gatekeepers as it enters a unit]: the unit pair ``node`` is told of
  ``link`` as, in one aggregated entry (live link count) per pair, or None for an entry per
  link (:mod:`gapless.impl.ges.aggregate`; ``per_link`` is the news before the rewriting).
* ``restates(live, last, links)`` [GES "The connectivity graph"]: whether a gatekeeper states
  a unit pair's live link count again — whenever it changed from its last statement (or,
  never stated, from all ``links`` live).
* ``destinations(graph, attributes, brokers)`` [GES "The problem of event delivery"]: the
  brokers an event is routed toward — those with an interested client, never all of them.

>>> PAPER_POLICY.effective_epoch(None, 3, 9), PAPER_POLICY.effective_epoch(7, 3, 9)
(3, 7)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, final

import attrs

from gapless.impl.ges.addressing import Address, Hierarchy
from gapless.impl.ges.aggregate import count_changed, unit_pair
from gapless.impl.ges.connectivity import RouteRule, next_hop
from gapless.impl.ges.linkstate import within_unit
from gapless.impl.ges.profiles import ProfileGraph

__all__ = ["PAPER_POLICY", "GESPolicy"]


def presented_epoch(presented: int | None, start: int, cut: int) -> int:
    """The paper's rule: the epoch the client presents, else its registration epoch."""
    return start if presented is None else presented


def decrement_once(remaining: int) -> int:
    """One confirmation decrements the predicate count by one."""
    return remaining - 1


def one_per_unit(units: int) -> int:
    """Every cluster storage the event is destined to must confirm it."""
    return units


def next_in_sequence(seq: int, expect: int) -> str:
    """Write only the next sequence number; an older one is held, a newer one is a gap."""
    if seq == expect:
        return "write"
    return "old" if seq < expect else "gap"


def while_any_pending(pending: frozenset[str]) -> bool:
    """A replica is needed while a client the event was destined to has not confirmed it."""
    return bool(pending)


def unregister_counted(graph: ProfileGraph, profile: str, dest: str) -> ProfileGraph:
    """Decrement the reference counts along the profile's edges."""
    return graph.remove(profile, dest)


def keep_every(profile: str, attributes: Mapping[str, Any]) -> bool:
    """A stored event destined to the client stays destined to it, whatever its new profile."""
    return True


def chained(prev: int, last: int) -> bool:
    """Deliver only the event whose predecessor is the last one delivered."""
    return prev == last


def interested(
    graph: ProfileGraph, attributes: Mapping[str, Any], brokers: tuple[str, ...]
) -> tuple[str, ...]:
    """The destinations the profile graph computes for the event."""
    return graph.destinations(attributes)


@final
@attrs.frozen(kw_only=True)
class GESPolicy:
    """The rules (see module doc)."""

    name: str
    effective_epoch: Callable[[int | None, int, int], int] = presented_epoch
    decrement: Callable[[int], int] = decrement_once
    unit_count: Callable[[int], int] = one_per_unit
    peer_count: Callable[[int], int] = one_per_unit
    sys_verdict: Callable[[int, int], str] = next_in_sequence
    replica_needed: Callable[[frozenset[str]], bool] = while_any_pending
    route: RouteRule = next_hop
    unregister: Callable[[ProfileGraph, str, str], ProfileGraph] = unregister_counted
    unregister_unit: Callable[[ProfileGraph, str, str], ProfileGraph] = unregister_counted
    in_sequence: Callable[[int, int], bool] = chained
    keeps: Callable[[str, Mapping[str, Any]], bool] = keep_every
    destinations: Callable[[ProfileGraph, Mapping[str, Any], tuple[str, ...]], tuple[str, ...]] = (
        interested
    )
    news_scope: Callable[[Hierarchy, tuple[str, str], str], bool] = within_unit
    news_key: Callable[[Hierarchy, str, tuple[str, str]], tuple[Address, Address] | None] = (
        unit_pair
    )
    restates: Callable[[int, int | None, int], bool] = count_changed


PAPER_POLICY: Final = GESPolicy(name="paper")
"""The paper's rules."""
