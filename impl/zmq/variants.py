"""The ZeroMQ forwarding bug zoo: planted bugs declared as policy values.

Each :class:`~gapless.impl.variants.Variant` replaces one rule of :data:`PAPER_POLICY` and
names the invariants (``gapless.invariants.zmq``) expected to catch it and the fault kinds
it needs ("disconnect": a subscriber goes away and comes back); the two reference-counting
bugs name the topology their zoo campaign runs on (:data:`SHARED_PREFIXES`).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from gapless.impl.variants import Variant, resolve
from gapless.impl.zmq.policy import PAPER_POLICY, ZmqPolicy

__all__ = ["SHARED_PREFIXES", "VARIANTS", "policy_named"]


SHARED_PREFIXES: Final = "zmq-fan"
"""The topology the reference-counting bugs need: they show only when two peers of one
device hold the same prefix and one of them lets go, which the default topology's two
single-subscriber branches rarely arrange (``gapless.models.zmq_binding.zmq_fan``)."""


def _bug(**changes: Any) -> ZmqPolicy:
    return attrs.evolve(PAPER_POLICY, **changes)


VARIANTS: Final[dict[str, Variant]] = {
    v.name: v
    for v in (
        Variant(
            name="forward-every-subscription",
            policy=_bug(refcount=False),
            caught_by=("subscription_consistency", "completeness"),
            topology=SHARED_PREFIXES,
            summary="A device forwards every (un)subscription without reference counts, so "
            "one peer's unsubscription removes a prefix another still holds upstream "
            '[ZMQ "Subscription Aggregation"].',
        ),
        Variant(
            name="no-unsubscribe-on-disconnect",
            policy=_bug(unsubscribe_on_disconnect=False),
            caught_by=("subscription_consistency", "minimal_traffic"),
            needs=("disconnect",),
            summary="A gone peer's subscriptions are not turned into unsubscriptions: stale "
            'subscriptions survive upstream [ZMQ "Disconnections and Reconnections"].',
        ),
        Variant(
            name="no-resubscribe-on-reconnect",
            policy=_bug(resubscribe_on_reconnect=False),
            caught_by=("subscription_consistency", "completeness"),
            needs=("disconnect",),
            summary="A reconnecting SUB/XSUB does not resend its subscriptions, so the "
            'upstream routing table is never renewed [ZMQ "Disconnections and Reconnections"].',
        ),
        Variant(
            name="xsub-filters-for-first-peer",
            policy=_bug(xsub_filter_first_peer_only=True),
            caught_by=("completeness",),
            summary="A device filters at its XSUB by its first peer's subscriptions, dropping "
            'messages another peer needs [ZMQ "Message routing & filtering"].',
        ),
        Variant(
            name="unsubscribe-removes-shared-prefix",
            policy=_bug(unsubscribe_removes_prefix=True),
            caught_by=("completeness", "subscription_consistency"),
            topology=SHARED_PREFIXES,
            summary="One peer's unsubscription removes the prefix for every peer holding it "
            '[ZMQ "Subscription Aggregation"].',
        ),
        Variant(
            name="sub-does-not-filter",
            policy=_bug(filter_at_sub=False),
            caught_by=("no_unsubscribed_delivery",),
            summary="A SUB hands over whatever arrives, including messages in flight across "
            'its unsubscription [ZMQ "Message routing & filtering"].',
        ),
    )
}


def policy_named(name: str) -> ZmqPolicy:
    """The policy of variant ``name`` (``"none"``: the paper's)."""
    got = resolve("zmq", name, PAPER_POLICY, VARIANTS)
    assert isinstance(got, ZmqPolicy)
    return got
