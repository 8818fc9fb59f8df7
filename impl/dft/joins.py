"""Joins during a run: the newcomer's state, and a broker learning of arrivals [DFT §I-IV].

Theory of operation
-------------------
Brokers join one at a time, each by a primary link to a broker already in the system
[DFT §II]; a join adds a *leaf*, so no primary path between earlier brokers changes, and
no active session of an earlier broker changes either (the newcomer lies on no path but
those ending at it).

*The newcomer* J (:func:`new_joiner`) obtains the primary tree with itself attached — its
Δ-neighbourhood included [DFT §I] — from its attach point (in the paper, or "a network
management service", §VIII-B). It starts with no session established and, like a restarted
broker, *not restored* [DFT §VIII-B]: its failure detector's reports establish its
sessions; each broker it activates a session to, and each that activates one to it, runs a
partial recovery with it [DFT §VIII-A] — the sync-point transfers every subscription J is
downstream of, which is how the existing subscriptions reach J, as a subscription
propagation to a new downstream broker would. J holds its own publications, and any that
arrive, until every active session's sync-point has sent its transfer
(:func:`gapless.impl.dft.recovery.check_restored`): they meet a complete SRT. Its own
subscriptions propagate as any other (Figure 5). At its start it notifies its
Δ-neighbourhood (:func:`gapless.impl.dft.arrivals.announce`).

*A broker B learning of arrivals* (:func:`on_arrival`) extends its tree with the joins it
did not know (in order), recomputes its Δ-neighbourhood, remembers them (``arrivals``: to
pass on) and tells its other established sessions — the routing layer's update travels
like partition information [DFT §IV]; a broker also repeats what it knows on every newly
established session and ahead of every partial recovery it starts
(:func:`gapless.impl.dft.arrivals.tell`), so every message naming J reaches a broker after
the news did. A notification from J itself proves J
reachable: B establishes its session to J, as a failure-detector report would
(:func:`gapless.impl.dft.sessions.on_link_changed`) — when J is B's primary neighbour, the
session is active and B becomes J's sync-point. A report about J that came before B knew
of J was ignored (J was outside the neighbourhood); the notification replaces it.

*A broker that has not joined yet* (:class:`Unjoined`) is how the world runs a join: the
broker is in the world's graph from the start, absent until its ``join`` fault; there the
binding's ``join`` seam (:func:`gapless.impl.dft.role.join`) makes it
:func:`new_joiner`'s state, and the world starts it as it restarts a broker — at that
``Restart`` it announces itself. Before, it ignores every input.

Our additions (``spec/dft.md``, "Joins during a run"): the flood of the news beyond the
Δ-neighbourhood (our roles read every path from the tree), and the repetition at syncs.
"""

from __future__ import annotations

from typing import final

import attrs
from pyrsistent import pvector

from gapless.impl.dft.arrivals import Arrival
from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.sessions import on_link_changed
from gapless.impl.dft.state import BrokerState, new_broker
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Effect, Send
from gapless.impl.inputs import LinkChanged

__all__ = ["Unjoined", "new_joiner", "on_arrival"]

Step = tuple[BrokerState, tuple[Effect, ...]]


def new_joiner(
    me: str,
    attach_to: str,
    tree: PrimaryTree,
    arrivals: tuple[tuple[str, str], ...] = (),
    config: DFTConfig | None = None,
    policy: DFTPolicy = PAPER_POLICY,
) -> BrokerState:
    """Broker ``me`` joining ``tree`` by a primary link to ``attach_to`` during a run
    [DFT §II]; ``arrivals`` are the joins of the run before it (``tree`` includes them).
    Raises :class:`~gapless.impl.errors.ProtocolMisuse` for a name already in the tree
    or an unknown attach point."""
    grown = tree.join(me, attach_to)
    state = new_broker(me, grown, config, policy, reachable=False)
    return attrs.evolve(
        state,
        arrivals=pvector([*arrivals, (me, attach_to)]),
        restored=not policy.sync_on_activation,
    )


@final
@attrs.frozen(kw_only=True)
class Unjoined:
    """Broker ``me``, to join ``tree`` by a primary link to ``attach_to``, not there yet
    (see the module doc)."""

    me: str
    attach_to: str
    tree: PrimaryTree
    config: DFTConfig
    policy: DFTPolicy

    def joined(self) -> BrokerState:
        """The newcomer's state at its join."""
        return new_joiner(self.me, self.attach_to, self.tree, (), self.config, self.policy)


def on_arrival(state: BrokerState, sender: str, msg: Arrival) -> Step:
    """Learn the joins of ``msg`` this broker did not know; pass them on; a notification
    from the newcomer itself establishes the session to it."""
    tree, new = state.tree, []
    for broker, attach in msg.joins:
        if broker not in tree and attach in tree:
            tree = tree.join(broker, attach)
            new.append((broker, attach))
    effects: list[Effect] = []
    if new:
        arrivals = state.arrivals.extend(new)
        hood = tree.neighbourhood(state.me, state.config.big_delta)
        state = attrs.evolve(state, tree=tree, hood=hood, arrivals=arrivals)
        news = Arrival(joins=tuple(arrivals))
        effects += [Send(to=x, msg=news) for x in sorted(state.established) if x != sender]
    newcomer = any(b == sender for b, _ in state.arrivals)
    if newcomer and sender in state.hood and sender not in state.established:
        state, more = on_link_changed(state, LinkChanged(neighbour=sender, up=True))
        effects += more
    return state, tuple(effects)
