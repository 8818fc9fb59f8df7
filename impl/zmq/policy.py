"""Socket options and forwarding policy: the rules a node follows, as values.

:class:`XpubOptions` are libzmq's XPUB options: ``verbose`` (``ZMQ_XPUB_VERBOSE``: pass every
subscription, not only a prefix's first, to the application), ``verboser``
(``ZMQ_XPUB_VERBOSER``: every subscription *and* unsubscription), ``manual``
(``ZMQ_XPUB_MANUAL``: the application decides what is installed, see ``Install``) and
``welcome`` (``ZMQ_XPUB_WELCOME_MSG``: a message sent to each peer as it connects).

:class:`ZmqPolicy` holds the forwarding rules [ZMQ "Subscription Aggregation", "Disconnections
and Reconnections", "Message routing & filtering"]. :data:`PAPER_POLICY` is the paper's (and
libzmq's) behaviour; ``subsumption`` and ``fallback_limit`` are the paper's proposed
aggregations, off by default because libzmq does neither; the remaining knobs exist so that a
planted bug (``gapless.impl.zmq.variants``) is a policy value, never a test of a name.
"""

from __future__ import annotations

from typing import Final, final

import attrs

from gapless.impl.errors import ProtocolMisuse

__all__ = ["DEFAULT_OPTIONS", "FALLBACK_LIMIT", "PAPER_POLICY", "XpubOptions", "ZmqPolicy"]

FALLBACK_LIMIT: Final = 32
"""The paper's N: above this many subscriptions, subscribe to everything [ZMQ "Issues"]."""


@final
@attrs.frozen(kw_only=True)
class XpubOptions:
    """libzmq's XPUB options (see module doc)."""

    verbose: bool = False
    verboser: bool = False
    manual: bool = False
    welcome: bytes | None = None

    @property
    def verbose_subs(self) -> bool:
        """Every subscription reaches the application (verbose or verboser)."""
        return self.verbose or self.verboser


DEFAULT_OPTIONS: Final = XpubOptions()


@final
@attrs.frozen(kw_only=True)
class ZmqPolicy:
    """The forwarding rules; every field's default is the paper's (see module doc).

    * ``refcount`` — only a prefix's first subscription and last unsubscription travel
      upstream [ZMQ "Subscription Aggregation"];
    * ``unsubscribe_on_disconnect`` — a gone peer's subscriptions are removed as if it had
      unsubscribed [ZMQ "Disconnections and Reconnections"];
    * ``resubscribe_on_reconnect`` — a SUB/XSUB resends every live subscription to an
      upstream peer that (re)connects [same];
    * ``filter_at_sub`` — a SUB drops data no subscription of its own matches [ZMQ "Message
      routing & filtering"];
    * ``xsub_filter_first_peer_only`` — a device's XSUB filters data by the subscriptions of
      its first downstream peer alone (a bug: the paper filters at SUB, not XSUB);
    * ``unsubscribe_removes_prefix`` — an unsubscription removes the prefix for every peer (a
      bug: it must remove only the sender's hold);
    * ``subsumption`` — a device forwards only prefixes not covered by a shorter one it
      holds, and on removing ``A`` subscribes ``AB`` before unsubscribing ``A``;
    * ``fallback_limit`` — with more than this many prefixes a device subscribes upstream
      to everything (``b""``) instead [ZMQ "Issues"]; None: off.
    """

    refcount: bool = True
    unsubscribe_on_disconnect: bool = True
    resubscribe_on_reconnect: bool = True
    filter_at_sub: bool = True
    xsub_filter_first_peer_only: bool = False
    unsubscribe_removes_prefix: bool = False
    subsumption: bool = False
    fallback_limit: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.fallback_limit is not None and self.fallback_limit < 1:
            raise ProtocolMisuse(
                f"ZmqPolicy: fallback_limit {self.fallback_limit!r} must be None or >= 1"
            )

    @property
    def aggregates(self) -> bool:
        """A device forwards the diff of an aggregated set instead of libzmq's rules."""
        return self.subsumption or self.fallback_limit is not None


PAPER_POLICY: Final = ZmqPolicy()
