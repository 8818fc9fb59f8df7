"""The XPUB half: what a node facing its downstream peers keeps and decides.

Theory of operation
-------------------
An XPUB socket (the publishing end of a PUB/XPUB endpoint, the downstream side of a device)
records, in a :class:`~gapless.impl.zmq.trie.PrefixTrie`, which peer holds each prefix
[ZMQ "Subscription Aggregation"], routes each message once to every peer holding a prefix of
it [ZMQ "Message routing & filtering"], and tells its application (a publisher, or the
device's forwarding loop) of subscription changes:

* default: a prefix's first subscription and its last unsubscription (libzmq also passes on
  an unsubscription of a prefix the peer did not hold: ``mtrie_t::rm`` says ``not_found``,
  and libzmq notifies on anything but ``values_remain``);
* ``verbose``: every subscription; ``verboser``: every subscription and unsubscription;
* ``manual``: every (un)subscription, and nothing is installed until the application says
  so (:func:`install`);
* a peer that goes away loses all its subscriptions, and the application is told of each
  prefix that lost its last holder (of each the peer held, under ``verboser`` or
  ``manual``) [ZMQ "Disconnections and Reconnections"];
* a peer on a uni-directional (multicast) segment never sends subscriptions: it is attached
  holding ``b""``, everything [ZMQ "Subscription Forwarding and Uni-directional Transports"];
* a subscription of a matching kind this node does not know is held as ``b""`` too, "send
  me everything" [ZMQ "Different Matching Algorithms"]; its holder is ``(peer, kind, topic)``.

Every function is pure; an input that changes nothing returns the same half.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import final

import attrs
from pyrsistent import PSet, pset

from gapless.impl.zmq.messages import PREFIX, Data, Subscription
from gapless.impl.zmq.policy import DEFAULT_OPTIONS, XpubOptions, ZmqPolicy
from gapless.impl.zmq.trie import LAST, NOT_FOUND, REMAIN, PrefixTrie

__all__ = [
    "XpubHalf",
    "held_keys",
    "holds",
    "install",
    "on_peer_down",
    "on_peer_up",
    "on_subscription",
    "route",
]


@final
@attrs.frozen(kw_only=True)
class XpubHalf:
    """An XPUB's state: ``trie`` (what is installed: peer -> prefixes), ``manual`` (what
    peers asked for, kept in manual mode to unsubscribe a gone peer), the live ``peers``,
    the ``options``, the ``multicast`` peers and the matching kinds it ``known``s."""

    trie: PrefixTrie = attrs.field(factory=PrefixTrie.empty)
    manual: PrefixTrie = attrs.field(factory=PrefixTrie.empty)
    peers: PSet[str] = attrs.field(factory=pset)
    options: XpubOptions = DEFAULT_OPTIONS
    multicast: frozenset[str] = frozenset()
    known: frozenset[str] = frozenset({PREFIX})


def _slot(half: XpubHalf, peer: str, sub: Subscription) -> tuple[bytes, Hashable]:
    """Where ``sub`` from ``peer`` is held: its prefix and the peer, or ``b""`` and
    ``(peer, kind, topic)`` for a kind this node does not know."""
    if sub.kind in half.known:
        return sub.topic, peer
    return b"", (peer, sub.kind, sub.topic)


def _others_hold(trie: PrefixTrie, key: bytes, holder: Hashable) -> bool:
    """Someone besides ``holder`` holds the same subscription (for an unknown kind: the
    same ``(kind, topic)``)."""
    holders = trie.holders(key)
    if isinstance(holder, tuple):
        return any(isinstance(h, tuple) and h[1:] == holder[1:] and h != holder for h in holders)
    return any(h != holder for h in holders if isinstance(h, str))


def _add(trie: PrefixTrie, key: bytes, holder: Hashable) -> tuple[PrefixTrie, bool]:
    first = not _others_hold(trie, key, holder) and holder not in trie.holders(key)
    new, _ = trie.add(key, holder)
    return new, first


def _remove(
    trie: PrefixTrie, key: bytes, holder: Hashable, policy: ZmqPolicy
) -> tuple[PrefixTrie, str]:
    """Remove ``holder`` from ``key``; NOT_FOUND, LAST (nobody holds that subscription any
    more) or REMAIN."""
    if policy.unsubscribe_removes_prefix and holder in trie.holders(key):
        for h in sorted(trie.holders(key), key=repr):  # the planted bug: every holder goes
            trie, _ = trie.remove(key, h)
        return trie, LAST
    if holder not in trie.holders(key):
        return trie, NOT_FOUND
    new, _ = trie.remove(key, holder)
    return new, (REMAIN if _others_hold(new, key, holder) else LAST)


def on_subscription(
    half: XpubHalf, peer: str, sub: Subscription, policy: ZmqPolicy
) -> tuple[XpubHalf, tuple[Subscription, ...]]:
    """``peer`` sent ``sub``: the new half and what the application is told."""
    key, holder = _slot(half, peer, sub)
    opts = half.options
    if opts.manual:
        if sub.subscribe:
            manual, _ = half.manual.add(key, holder)
        else:
            manual, _ = half.manual.remove(key, holder)
        return attrs.evolve(half, manual=manual), (sub,)
    if sub.subscribe:
        trie, first = _add(half.trie, key, holder)
        notify = first or opts.verbose_subs or not policy.refcount
    else:
        trie, result = _remove(half.trie, key, holder, policy)
        notify = result != REMAIN or opts.verboser or not policy.refcount
    new = half if trie is half.trie else attrs.evolve(half, trie=trie)
    return new, ((sub,) if notify else ())


def install(half: XpubHalf, peer: str, topic: bytes, subscribe: bool) -> XpubHalf:
    """A manual-mode application installs (or removes) ``topic`` for ``peer``; a peer that
    is gone is ignored (as libzmq ignores a subscription with no last pipe)."""
    if peer not in half.peers:
        return half
    if subscribe:
        trie, _ = half.trie.add(topic, peer)
    else:
        trie, _ = half.trie.remove(topic, peer)
    return half if trie is half.trie else attrs.evolve(half, trie=trie)


def on_peer_up(half: XpubHalf, peer: str) -> XpubHalf:
    """``peer`` connected; a multicast peer holds everything from the start."""
    if peer in half.peers:
        return half
    trie = half.trie
    if peer in half.multicast:
        trie, _ = trie.add(b"", peer)
    return attrs.evolve(half, peers=half.peers.add(peer), trie=trie)


def _strip_unknown(trie: PrefixTrie, peer: str) -> tuple[PrefixTrie, list[tuple[Hashable, bool]]]:
    out: list[tuple[Hashable, bool]] = []
    for h in sorted(trie.holders(b""), key=repr):
        if isinstance(h, tuple) and h[0] == peer:
            trie, _ = trie.remove(b"", h)
            out.append((h, not _others_hold(trie, b"", h)))
    return trie, out


def _gone_notes(trie: PrefixTrie, peer: str, every: bool) -> tuple[PrefixTrie, list[Subscription]]:
    trie, unknown = _strip_unknown(trie, peer)
    trie, removed = trie.remove_holder(peer)
    # a prefix is gone when no peer holds it as a prefix (an unknown kind's holder at b""
    # is another subscription)
    notes = [
        Subscription(subscribe=False, topic=p)
        for p, _ in removed
        if every or not any(isinstance(h, str) for h in trie.holders(p))
    ]
    for h, emptied in unknown:
        assert isinstance(h, tuple)
        if emptied or every:
            notes.append(Subscription(subscribe=False, topic=h[2], kind=h[1]))
    return trie, notes


def on_peer_down(
    half: XpubHalf, peer: str, policy: ZmqPolicy
) -> tuple[XpubHalf, tuple[Subscription, ...]]:
    """``peer`` went away: its subscriptions go, and the application is told."""
    if peer not in half.peers:
        return half, ()
    peers = half.peers.remove(peer)
    if not policy.unsubscribe_on_disconnect:
        return attrs.evolve(half, peers=peers), ()
    if half.options.manual:
        manual, notes = _gone_notes(half.manual, peer, every=True)
        trie, _ = _gone_notes(half.trie, peer, every=True)
        return attrs.evolve(half, peers=peers, manual=manual, trie=trie), tuple(notes)
    trie, notes = _gone_notes(half.trie, peer, every=half.options.verboser)
    return attrs.evolve(half, peers=peers, trie=trie), tuple(notes)


def _peer_of(holder: Hashable) -> str:
    """The peer a trie holder stands for (a peer, or ``(peer, kind, topic)``)."""
    return str(holder[0]) if isinstance(holder, tuple) else str(holder)


def route(half: XpubHalf, msg: Data) -> tuple[str, ...]:
    """The live peers ``msg`` goes to, each once, sorted."""
    found = {_peer_of(h) for h in half.trie.match(msg.payload)}
    return tuple(sorted(p for p in found if p in half.peers))


def holds(half: XpubHalf, peer: str, payload: bytes) -> bool:
    """``peer`` holds a subscription matching ``payload``."""
    return any(_peer_of(h) == peer for h in half.trie.match(payload))


def held_keys(half: XpubHalf) -> frozenset[tuple[str, bytes]]:
    """Every subscription some peer holds, as ``(kind, topic)``."""
    keys: set[tuple[str, bytes]] = set()
    for prefix, holders in half.trie.items():
        for h in holders:
            keys.add((str(h[1]), bytes(h[2])) if isinstance(h, tuple) else (PREFIX, prefix))
    return frozenset(keys)
