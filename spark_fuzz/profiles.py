"""The ``rules`` fault profile: swarm faults shaped to reach the protocol's rules (issue 18 §2).

Theory of operation
-------------------
A blind swarm [swarm testing: each schedule enables a random subset of fault kinds] rarely
exercises the rules that need a *particular* fault: routing around one failed member of a
link bundle while the others stay up, consolidating nacks when a cell of intermediate brokers
loses one broker, AckExpected at a pubend's restart, nack repetition across a partition that
heals while the nacks are being repeated [GD §3.1-3.2, §4.2]. :func:`rules_profile` keeps the
swarm and shapes it (:class:`gapless.models.faults.FaultProfile`):

* **focus** (``focus_bias`` 1/2): link failures and stalls pick a *bundle member* — a link
  from a broker to a cell of several brokers (the bundle keeps its other members);
  crashes and broker stalls pick a broker that hosts a pubend or belongs to such a cell;
* **long faults** (``long_fraction`` 1/5): a lasting fault lasts ``[AET, 3/2 AET]`` (the
  protocol's AckExpected threshold, from its configuration's defaults [GD §3.2]) — in runs
  that long, ticks stay unacked past AET; in shorter runs the fault simply lasts to the end
  of the run (the world heals everything then), so recovery runs through the drain;
* **partitions heal mid-nack**: a partition lasts ``[NRT, 3 NRT]`` (the nack repetition
  threshold), so it heals while the nacks it caused are being repeated;
* **weights**: a swarm schedule enables crashes, link failures and partitions with
  probability 0.6 (the kinds the focused rules need), the others 1/2;
* **from the first tick** (``warmup_us`` 0, :data:`RULES_WARMUP_US`): faults may start at
  time 0, before the first message is logged, acked or released — a pubend host crashing
  in the first second, a bundle member failing before the first silence — so the rules'
  boundaries at tick 0 and the first message are reached too (the world's default waits
  one second).

A protocol whose configuration has no AET or NRT gets only the focus and the weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import networkx as nx

from gapless.models.faults import FaultProfile
from gapless.models.topology import link_name

__all__ = ["RULES_WARMUP_US", "RULES_WEIGHTS", "focus_targets", "rules_profile"]

RULES_WEIGHTS: Final = (("crash", 0.6), ("link_fail", 0.6), ("partition", 0.6))
"""Swarm weights of the ``rules`` profile (kinds not named: 1/2)."""
RULES_WARMUP_US: Final = 0
"""The ``rules`` profile's faults may start at the first tick (see the module doc)."""


def focus_targets(g: nx.Graph) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Per fault kind, the targets that exercise its rules on topology ``g``: bundle members
    for link failures and stalls, pubend hosts and brokers of multi-broker cells for crashes
    and broker stalls [GD §3.1]."""
    cell = {n: d.get("cell", n) for n, d in g.nodes(data=True)}
    size: dict[str, int] = {}
    for c in cell.values():
        size[c] = size.get(c, 0) + 1
    bundles = tuple(
        sorted(
            link_name(a, b)
            for a, b in g.edges
            if cell[a] != cell[b] and (size[cell[a]] > 1 or size[cell[b]] > 1)
        )
    )
    hosts = {h for _p, h in g.graph.get("pubends", ())}
    brokers = tuple(sorted(n for n in g.nodes if n in hosts or size[cell[n]] > 1))
    focus: list[tuple[str, tuple[str, ...]]] = []
    if bundles:
        focus += [("link_fail", bundles), ("stall_link", bundles)]
    if brokers:
        focus += [("crash", brokers), ("stall_broker", brokers)]
    return tuple(sorted(focus))


def rules_profile(rates: Mapping[str, float], g: nx.Graph, config: Any) -> FaultProfile:
    """The ``rules`` profile over ``rates`` for topology ``g``; ``config`` is the protocol's
    default configuration (its ``aet_us`` and ``nrt_us``, if it has them)."""
    aet = getattr(config, "aet_us", None)
    nrt = getattr(config, "nrt_us", None)
    return FaultProfile(
        rates=tuple(sorted(rates.items())),
        swarm=True,
        focus=focus_targets(g),
        focus_bias=0.5,
        long_fraction=0.2 if aet else 0.0,
        long_duration_us=int(aet or 0),
        partition_us=(int(nrt), 3 * int(nrt)) if nrt else None,
        swarm_weights=tuple(w for w in RULES_WEIGHTS if w[0] in rates),
        warmup_us=RULES_WARMUP_US,
    )
