"""Construction: every broker's static context and initial state from a topology
[GD §2, §3.1].

Theory of operation
-------------------
:func:`initial_states` reads a :class:`~gapless.impl.gd.topology.GDTopology` once and gives
each broker a :class:`~gapless.impl.gd.state.NodeCtx`: the pubends whose knowledge tree
passes through its cell (the per-pubend trees of [GD §3]), per pubend its upstream cell and
downstream cells, the compiled edge filter of each downstream cell (an explicit filter, or
the disjunction of the subscriptions below it [GD §2.4, §3.1]), the cells and neighbours it
routes by [GD §3.1], and at an SHB the total-order groups it merges [GD §2.3]. The state's
type is the broker's role — :class:`~gapless.impl.gd.state.PHBState`,
:class:`~gapless.impl.gd.state.IBState`, :class:`~gapless.impl.gd.state.SHBState`, or their
best-effort counterparts when ``config.best_effort`` [GD §4.1] — and every node starts down:
``Restart()`` at time 0 boots it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.filters import FilterIndex, parse_filter
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.policy import PAPER_POLICY, GDPolicy
from gapless.impl.gd.pubend import fast_policy
from gapless.impl.gd.state import (
    BestEffortIB,
    BestEffortPHB,
    BestEffortSHB,
    EdgeFilter,
    IBState,
    NodeCtx,
    NodeState,
    PHBState,
    SHBState,
)
from gapless.impl.gd.topology import GDTopology

__all__ = ["ROLE_STATES", "initial_states"]

#: (topology role, best effort) -> the state type of a broker with that role [GD §3, §4.1].
ROLE_STATES: Mapping[tuple[str, bool], type[NodeState]] = MappingProxyType(
    {
        ("PHB", False): PHBState,
        ("IB", False): IBState,
        ("SHB", False): SHBState,
        ("PHB", True): BestEffortPHB,
        ("IB", True): BestEffortIB,
        ("SHB", True): BestEffortSHB,
    }
)


def _ro(d: dict[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(d)


def _check(topology: GDTopology, config: GDConfig) -> None:
    if not isinstance(topology, GDTopology):
        raise ProtocolMisuse(f"initial_states: {topology!r} is not a GDTopology")
    if len(topology.pubends) > config.tick_modulus:
        raise ProtocolMisuse(
            f"initial_states: {len(topology.pubends)} pubends but tick_modulus="
            f"{config.tick_modulus}; allowed: at most tick_modulus pubends [GD §2.2]"
        )


class _Filters:
    """Edge filters compiled once per distinct (explicit filter, subscribers below)."""

    def __init__(self, topology: GDTopology) -> None:
        self.topology = topology
        self.cache: dict[tuple[str, tuple[str, ...]], EdgeFilter] = {}

    def edge(self, p: str, c: str) -> EdgeFilter:
        topology = self.topology
        explicit = topology.edge_filters.get(c)
        subs = topology.subscribers_below(p, c)
        key = (explicit or "", subs) if explicit is None else (explicit, ())
        if key not in self.cache:
            if explicit is not None:
                self.cache[key] = EdgeFilter(explicit=parse_filter(explicit), below=FilterIndex())
            else:
                self.cache[key] = EdgeFilter(
                    explicit=None,
                    below=FilterIndex.build((s, topology.subscribers[s].filter) for s in subs),
                )
        return self.cache[key]


def initial_states(
    topology: GDTopology, config: GDConfig | None = None, policy: GDPolicy | None = None
) -> dict[str, NodeState]:
    """The initial state of every broker of ``topology``, keyed by broker name (sorted). Feed each
    ``Restart()`` at time 0 to boot it (arms its periodic timers)."""
    config = GDConfig() if config is None else config
    policy = PAPER_POLICY if policy is None else policy
    _check(topology, config)
    pubend_ids = sorted(topology.pubends)
    shared = {
        "numbers": _ro({p: i for i, p in enumerate(pubend_ids)}),
        "cell_brokers": _ro({c: topology.cell_brokers(c) for c in topology.cells()}),
        "broker_cells": _ro({b: spec.cell for b, spec in sorted(topology.brokers.items())}),
    }
    filters = _Filters(topology)
    out: dict[str, NodeState] = {}
    for name in sorted(topology.brokers):
        ctx = _context(topology, config, policy, name, pubend_ids, filters, shared)
        role = ROLE_STATES[(topology.brokers[name].role, config.best_effort)]
        out[name] = role(ctx=ctx, up=False)
    return out


def _context(
    topology: GDTopology,
    config: GDConfig,
    policy: GDPolicy,
    name: str,
    pubend_ids: list[str],
    filters: _Filters,
    shared: dict[str, Mapping[Any, Any]],
) -> NodeCtx:
    """The static context of broker ``name`` (see the module doc)."""
    cell = topology.brokers[name].cell
    pubends = tuple(p for p in pubend_ids if topology.in_tree(p, cell))
    children = {p: topology.child_cells(p, cell) for p in pubends}
    neighbours = topology.neighbours(name)
    subs_here = sorted(s for s, sp in topology.subscribers.items() if sp.shb == name)
    sub_groups = {s: topology.subscribers[s].group for s in subs_here}
    groups = {
        g: topology.groups[g] for g in sorted({g for g in sub_groups.values() if g is not None})
    }
    return NodeCtx(
        name=name,
        cell=cell,
        topology=topology,
        config=config,
        policy=policy,
        pubends=pubends,
        hosted=tuple(p for p in pubend_ids if topology.pubends[p] == name),
        index=_ro({p: i for i, p in enumerate(pubends)}),
        child_index=_ro({(p, c): i for p in pubends for i, c in enumerate(children[p])}),
        numbers=shared["numbers"],
        parent=_ro({p: topology.parent_cell(p, cell) for p in pubends}),
        children=_ro(children),
        filters=_ro({(p, c): filters.edge(p, c) for p in pubends for c in children[p]}),
        cell_brokers=shared["cell_brokers"],
        neighbours=neighbours,
        cell_neighbours=tuple(n for n in neighbours if topology.cell_of(n) == cell),
        groups=_ro(groups),
        groups_of=_ro({p: tuple(g for g in sorted(groups) if p in groups[g]) for p in pubends}),
        sub_groups=_ro(sub_groups),
        grandchildren=_ro(
            {(p, c): topology.child_cells(p, c) for p in pubends for c in children[p]}
        ),
        broker_cells=shared["broker_cells"],
        fast_publish=config.fast_paths and fast_policy(config, policy),
    )
