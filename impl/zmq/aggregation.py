"""The paper's proposed subscription aggregations, as pure set functions.

[ZMQ "Subscription Aggregation"]: with ``A`` held, ``AB`` need not travel upstream, but
removing ``A`` must then send ``subscribe(AB)`` before ``unsubscribe(A)``. [ZMQ "Issues"]:
limit the subscriptions one consumer passes upstream to N (32) and subscribe to the full
feed beyond that. Both are policy choices (``ZmqPolicy.subsumption``,
``ZmqPolicy.fallback_limit``), off by default because libzmq does neither; the paper notes
every node may aggregate as it likes and the tree still works.

A device that aggregates keeps the set it has told upstream and sends the difference to the
aggregated set of what its peers hold: subscriptions first, then unsubscriptions, so the
upstream set never lacks anything a peer needs while it changes.

>>> P = "prefix"
>>> sorted(aggregate({(P, b"A"), (P, b"AB"), (P, b"B")}, subsumption=True, limit=None))
[('prefix', b'A'), ('prefix', b'B')]
>>> aggregate({(P, b"A"), (P, b"B")}, subsumption=False, limit=1)
frozenset({('prefix', b'')})
>>> [(m.subscribe, m.topic) for m in diff({(P, b"A")}, {(P, b"AB")})]
[(True, b'AB'), (False, b'A')]
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from gapless.impl.zmq.messages import PREFIX, Subscription

__all__ = ["aggregate", "diff", "minimal_cover"]

Key = tuple[str, bytes]


def minimal_cover(prefixes: Iterable[bytes]) -> frozenset[bytes]:
    """The prefixes not covered by a shorter one of the set (sorted, a covering prefix comes
    right before everything it covers that is kept)."""
    kept: list[bytes] = []
    for p in sorted(set(prefixes)):
        if kept and p.startswith(kept[-1]):
            continue
        kept.append(p)
    return frozenset(kept)


def aggregate(keys: Set[Key], *, subsumption: bool, limit: int | None) -> frozenset[Key]:
    """What to hold upstream for ``keys`` (``(kind, topic)``): everything (``b""``) beyond
    ``limit`` subscriptions; otherwise, with ``subsumption``, the prefixes no shorter held
    prefix covers (an unknown kind's ``b""`` hold covers every prefix, but the unknown-kind
    subscription itself still travels so that upstream nodes know it)."""
    if limit is not None and len(keys) > limit:
        return frozenset({(PREFIX, b"")})
    if not subsumption:
        return frozenset(keys)
    prefixes = minimal_cover(t for k, t in keys if k == PREFIX)
    return frozenset({(PREFIX, p) for p in prefixes} | {k for k in keys if k[0] != PREFIX})


def diff(told: Set[Key], wanted: Set[Key]) -> tuple[Subscription, ...]:
    """The messages that turn ``told`` into ``wanted``: new subscriptions first (in trie
    order), then the unsubscriptions."""

    def order(k: Key) -> tuple[bytes, str]:
        return (k[1], k[0])

    told, wanted = frozenset(told), frozenset(wanted)
    subs = [
        Subscription(subscribe=True, topic=t, kind=k) for k, t in sorted(wanted - told, key=order)
    ]
    unsubs = [
        Subscription(subscribe=False, topic=t, kind=k) for k, t in sorted(told - wanted, key=order)
    ]
    return (*subs, *unsubs)
