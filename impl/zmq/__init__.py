"""ZeroMQ PUB/SUB subscription forwarding [ZMQ] as pure, sans-IO roles.

The API
-------
* Roles (each a frozen state value and a pure ``handle(state, input, now) -> (state,
  effects)``): :class:`PubState` (PUB, or XPUB with ``notify_app``), :class:`SubState` (SUB,
  or XSUB with ``filter=False``), :class:`DeviceState` (XSUB upstream joined to XPUB
  downstream). :func:`handle` dispatches on the state's type.
* Inputs: ``gapless.impl.inputs.LinkChanged(neighbour, up)`` (a peer connected or went
  away), ``Receive(sender, msg)``, and the application's :class:`Subscribe`,
  :class:`Unsubscribe`, :class:`Post`, :class:`Install`.
* Effects: ``Send(to, msg)`` with a :class:`Subscription` or :class:`Data`; ``Deliver``
  (``pubend`` = origin, ``tick`` = sequence number, ``connection`` = link lifetime);
  :class:`Notify`; ``Rejected``.
* Wire summary: :func:`wire` gives a :class:`ZmqWire`.
* Rules: :class:`ZmqPolicy` (:data:`PAPER_POLICY`), options :class:`XpubOptions`; the bug zoo
  is ``gapless.impl.zmq.variants.VARIANTS``; the verified type is
  :class:`~gapless.impl.zmq.trie.PrefixTrie` (over the persistent hash map
  :mod:`gapless.impl.zmq.hamt`).
"""

from __future__ import annotations

from gapless.impl.zmq import device, pub, sub
from gapless.impl.zmq.device import DeviceState
from gapless.impl.zmq.messages import (
    Data,
    Install,
    Notify,
    Post,
    Subscribe,
    Subscription,
    Unsubscribe,
    ZmqEffect,
    ZmqWire,
    wire,
)
from gapless.impl.zmq.policy import PAPER_POLICY, XpubOptions, ZmqPolicy
from gapless.impl.zmq.pub import PubState
from gapless.impl.zmq.sub import SubState
from gapless.impl.zmq.trie import PrefixTrie

__all__ = [
    "PAPER_POLICY",
    "Data",
    "DeviceState",
    "Install",
    "NodeState",
    "Notify",
    "Post",
    "PrefixTrie",
    "PubState",
    "SubState",
    "Subscribe",
    "Subscription",
    "Unsubscribe",
    "XpubOptions",
    "ZmqEffect",
    "ZmqPolicy",
    "ZmqWire",
    "handle",
    "wire",
]

NodeState = PubState | SubState | DeviceState


def handle(state: NodeState, inp: object, now: int) -> tuple[NodeState, tuple[ZmqEffect, ...]]:
    """One step of whichever role ``state`` is."""
    if isinstance(state, PubState):
        return pub.handle(state, inp, now)
    if isinstance(state, SubState):
        return sub.handle(state, inp, now)
    return device.handle(state, inp, now)
