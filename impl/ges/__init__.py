"""The Grid Event Service [GES]: hierarchical broker units, profile-based routing, stable
storages with epochs, and roaming clients recovered exactly once.

Modules, one concern each: :mod:`~gapless.impl.ges.addressing` (nodes, clusters,
super-clusters, gatekeepers), :mod:`~gapless.impl.ges.connectivity` (each node's
connectivity graph and cheapest-path routing), :mod:`~gapless.impl.ges.profiles` (the profile
graph), :mod:`~gapless.impl.ges.storage` (epochs, predicate counts, release, recovery
queues), :mod:`~gapless.impl.ges.tier` (the finer tier of cluster storages),
:mod:`~gapless.impl.ges.session` (a client's recovery then live delivery),
:mod:`~gapless.impl.ges.node` and :mod:`~gapless.impl.ges.roles` (the node role and its
dispatcher), :mod:`~gapless.impl.ges.messages` (the wire and its summary),
:mod:`~gapless.impl.ges.policy` (the rules) and :mod:`~gapless.impl.ges.variants` (planted
bugs). The design of what the paper defers is ``spec/ges.md``.
"""

from __future__ import annotations

from gapless.impl.ges.config import GESConfig, Network
from gapless.impl.ges.crashes import crash
from gapless.impl.ges.node import NodeState, Registration, Release, initial_state
from gapless.impl.ges.policy import PAPER_POLICY, GESPolicy
from gapless.impl.ges.roles import handle

__all__ = [
    "PAPER_POLICY",
    "GESConfig",
    "GESPolicy",
    "Network",
    "NodeState",
    "Registration",
    "Release",
    "crash",
    "handle",
    "initial_state",
]
