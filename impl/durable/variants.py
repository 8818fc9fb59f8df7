"""Durable subscriptions' planted bugs, declared beside the rules they change [DUR §2-4].

Each entry of :data:`VARIANTS` is a :class:`~gapless.impl.variants.Variant`: a
:class:`~gapless.impl.durable.policy.DurablePolicy` that differs from the paper's in one rule,
the trace-only invariants (``gapless.invariants.durable``) expected to catch it, the fault kinds
it needs to show, and what goes wrong. Each is a mistake an implementer of the paper could make.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gapless.impl.durable.ack_rule import CatchupAckRule
from gapless.impl.durable.node import NodePolicy
from gapless.impl.durable.pfs import PfsPolicy
from gapless.impl.durable.policy import ClientPolicy, DurablePolicy
from gapless.impl.durable.pubend import PubendPolicy
from gapless.impl.durable.shb import ShbPolicy
from gapless.impl.variants import Variant

__all__ = ["VARIANTS"]


def _variants(*vs: Variant) -> Mapping[str, Variant]:
    return {v.name: v for v in vs}


VARIANTS: Final[Mapping[str, Variant]] = _variants(
    Variant(
        name="l-above-td",
        policy=DurablePolicy(pubend=PubendPolicy(l_slack=50_000)),
        caught_by=("release_rule",),
        summary="The pubend's L step releases 50 ms past what the L rule allows: once "
        "Tr(p) = Td(p), ticks above Td(p) become L while SHBs may still need them [DUR §3].",
    ),
    Variant(
        name="switchover-early",
        policy=DurablePolicy(shb=ShbPolicy(switchover_lag=300_000)),
        caught_by=("durable_exactly_once", "gap_legal"),
        needs=("disconnect",),
        summary="A catchup stream switches over to the constream 300 ms (ticks) before its "
        "position reaches latestDelivered(p): the subscriber's chain has a hole [DUR §4.1].",
    ),
    Variant(
        name="gap-to-non-catchup",
        policy=DurablePolicy(shb=ShbPolicy(catchup=False)),
        caught_by=("gap_legal",),
        needs=("disconnect",),
        summary="A reconnecting subscriber is put straight on the constream with a gap up to "
        "latestDelivered(p) instead of a catchup stream: a gap to a subscriber not in "
        "catchup, over ticks that are not L [DUR §3, §4.1].",
    ),
    Variant(
        name="ct-before-consumption",
        policy=DurablePolicy(client=ClientPolicy(ack_ahead=1)),
        caught_by=("durable_exactly_once",),
        summary="The subscriber acknowledges a CT one tick past what it consumed: CT advanced "
        "before consumption [DUR §2].",
    ),
    Variant(
        name="node-max-of-children",
        policy=DurablePolicy(node=NodePolicy(maximum=True)),
        caught_by=("release_horizon", "release_rule"),
        topology="dur-two",
        summary="An intermediate broker reports the maximum of its children's pairs instead "
        "of the minimum: the pubend releases what a lagging SHB still needs [DUR §3].",
    ),
    Variant(
        name="released-from-catchup-ack",
        policy=DurablePolicy(catchup_ack=CatchupAckRule(to_latest_delivered=True)),
        caught_by=("release_rule",),
        needs=("disconnect", "link_fail"),
        summary="The SHB takes the ack of a subscriber still in catchup as if it were on the "
        "constream: released(s, p) jumps to latestDelivered(p) and the pubend makes L ticks "
        "the subscriber has not acknowledged [DUR §3, §4.1].",
    ),
    Variant(
        name="back-pointer-off-by-one",
        policy=DurablePolicy(shb=ShbPolicy(pfs=PfsPolicy(back_pointer_slip=1))),
        caught_by=("durable_exactly_once",),
        needs=("disconnect",),
        summary="The PFS writes each back-pointer one record below the subscriber's previous "
        "record: a catchup stream's batch read loses the chain and serves the subscriber's "
        "earlier matching events as silence [DUR §4.2, Figure 2].",
    ),
)
"""Variant name -> planted bug."""
