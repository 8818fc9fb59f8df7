"""The DFT role as the world sees it: a broker state per policy, one ``handle``, ``crash``.

Theory of operation
-------------------
:func:`new_role` builds the broker of ``policy``: the δ-fault-tolerant broker
(:mod:`gapless.impl.dft.broker`, Figures 5 and 8) or, for ``forwarding="naive"``, the §I
baseline (:mod:`gapless.impl.dft.naive`). :func:`handle` and :func:`crash` dispatch on the
state's type, so a binding, a test loop or a campaign selects the baseline like any other
variant, by its policy [DFT §I].

Joins during a run [DFT §I, §II] (:mod:`gapless.impl.dft.joins`): :func:`new_joiner` is the
newcomer's state; :func:`join` turns a broker that has not joined yet
(:class:`~gapless.impl.dft.joins.Unjoined`) into it at its join; :func:`handle` routes an
:class:`~gapless.impl.dft.arrivals.Arrival` to :func:`gapless.impl.dft.joins.on_arrival` and
has a newcomer announce itself at its start (``Restart``). A message naming a broker this
broker does not know (news of a join not yet arrived) is a ``Rejected`` effect, never an
exception. The naive baseline does not model joins.
"""

from __future__ import annotations

import attrs

from gapless.impl.dft import broker, joins, naive
from gapless.impl.dft.arrivals import Arrival, announce
from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.joins import Unjoined
from gapless.impl.dft.messages import PartitionHealed, PartitionInfo, PubMsg, SubMsg
from gapless.impl.dft.naive import NaiveState
from gapless.impl.dft.state import BrokerState, new_broker
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Effect, Rejected
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Input, Receive, Restart

__all__ = [
    "Role",
    "Unjoined",
    "crash",
    "handle",
    "join",
    "new_joiner",
    "new_role",
    "unjoined",
]

Role = BrokerState | NaiveState | Unjoined


def new_role(
    me: str, tree: PrimaryTree, config: DFTConfig | None = None, policy: DFTPolicy = PAPER_POLICY
) -> Role:
    """The broker ``me`` of ``tree`` under ``policy`` (all links up)."""
    if policy.forwarding == "naive":
        return naive.new_naive(me, tree)
    return new_broker(me, tree, config, policy)


def new_joiner(
    me: str,
    attach_to: str,
    tree: PrimaryTree,
    arrivals: tuple[tuple[str, str], ...] = (),
    config: DFTConfig | None = None,
    policy: DFTPolicy = PAPER_POLICY,
) -> Role:
    """Broker ``me`` joining ``tree`` by a primary link to ``attach_to`` during a run
    (:func:`gapless.impl.dft.joins.new_joiner`); not for the naive baseline."""
    if policy.forwarding == "naive":
        raise ProtocolMisuse(
            f"new_joiner: {me!r} under forwarding='naive'; allowed: forwarding='dft' "
            "(the naive baseline does not model joins during a run)"
        )
    return joins.new_joiner(me, attach_to, tree, arrivals, config, policy)


def unjoined(
    me: str,
    attach_to: str,
    tree: PrimaryTree,
    config: DFTConfig | None = None,
    policy: DFTPolicy = PAPER_POLICY,
) -> Role:
    """Broker ``me``, to join ``tree`` under ``attach_to`` at its :func:`join`
    (:class:`~gapless.impl.dft.joins.Unjoined`); checked now."""
    new_joiner(me, attach_to, tree, (), config, policy)
    return Unjoined(
        me=me, attach_to=attach_to, tree=tree, config=config or DFTConfig(), policy=policy
    )


def join(state: Role) -> Role:
    """The newcomer a broker that had not joined becomes at its join [DFT §I, §II]; it
    announces itself at the ``Restart`` that follows. Anything but an
    :class:`~gapless.impl.dft.joins.Unjoined` state is a caller's misuse
    (:class:`~gapless.impl.errors.ProtocolMisuse`)."""
    if not isinstance(state, Unjoined):
        raise ProtocolMisuse(
            f"join: a {type(state).__name__} is in the system already; allowed: a broker "
            "that has not joined yet (Unjoined, from unjoined())"
        )
    return state.joined()


def _unknown(state: BrokerState, inp: Receive) -> str | None:
    """The first broker ``inp`` names that this broker's tree lacks, if any."""
    tree, msg = state.tree, inp.msg
    if inp.sender not in tree:
        return inp.sender
    if isinstance(msg, SubMsg | PubMsg):
        # a join adds a leaf: a newcomer is on a message's trail only as (or after) its source
        return msg.source if msg.source not in tree else None
    if isinstance(msg, PartitionInfo | PartitionHealed):
        pid = msg.pid
        return next((b for b in (pid.detector, *pid.pnodes) if b not in tree), None)
    return None


def _handle_dft(state: BrokerState, inp: Input, now: int) -> tuple[Role, tuple[Effect, ...]]:
    if isinstance(inp, Receive):
        if isinstance(inp.msg, Arrival):
            return joins.on_arrival(state, inp.sender, inp.msg)
        who = _unknown(state, inp)
        if who is not None:
            reason = f"{state.me}: message names {who!r}, not (yet) in its primary tree"
            return state, (Rejected(reason=reason, input=inp),)
    elif isinstance(inp, Restart) and state.arrivals:
        told = announce(state)
        if told:
            state, effects = broker.handle(state, inp, now)
            return state, (*told, *effects)
    return broker.handle(state, inp, now)


def handle(state: Role, inp: Input, now: int) -> tuple[Role, tuple[Effect, ...]]:
    """One step of either broker kind."""
    if isinstance(state, NaiveState):
        return naive.handle(state, inp, now)
    if isinstance(state, Unjoined):  # not in the system yet: nothing reaches it
        return state, ()
    return _handle_dft(state, inp, now)


def crash(state: Role) -> Role:
    """The state after a crash (a broker keeps the joins it knows of with its tree)."""
    if isinstance(state, NaiveState):
        return naive.new_naive(state.me, state.tree, reachable=False)
    if isinstance(state, Unjoined):
        return state
    after = broker.crash(state)
    return attrs.evolve(after, arrivals=state.arrivals) if state.arrivals else after
