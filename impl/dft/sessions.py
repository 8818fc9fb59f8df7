"""Failure-detector input and sessions: established, active, and what a change sets off
[DFT §II, §IV, Figure 3].

Theory of operation
-------------------
Each broker has a local failure detector reporting which brokers of its Δ-neighbourhood are
reachable [DFT §II]; the world feeds it as :class:`~gapless.impl.inputs.LinkChanged`
(``neighbour`` reachable or not). While reachable, B has an *established* session to it;
S(B, X) is *active* when established and no other established session goes to a broker on
P(B, X) [DFT §II] (:func:`~gapless.impl.dft.routing.active_sessions`). Unreachability covers a
crashed neighbour and a failed link alike: B cannot tell them apart [DFT §II].

When the active set changes, in this order [DFT §IV-VI]:

1. every active session lost to unreachability makes B the detector of a new partition,
   announced within DPT (:func:`~gapless.impl.dft.partitions.detect`);
2. unconfirmed subscriptions update Out_s (Figure 5 OnSessionActivated,
   :func:`~gapless.impl.dft.subscriptions.reroute`);
3. every newly active session starts a partial recovery, this broker its sync-point
   (:func:`~gapless.impl.dft.recovery.start`, [DFT §VIII-A]); until it is over, publications
   do not use that session (``fwd``);
4. queued publications update Out_p over ``fwd`` (Figure 8 OnSessionActivated,
   :func:`~gapless.impl.dft.publications.reroute`);
5. a restarted broker checks whether its full recovery is over
   (:func:`~gapless.impl.dft.recovery.check_restored`, [DFT §VIII-B]);
6. a newly established session is told first of the joins this broker knows of
   (:func:`~gapless.impl.dft.arrivals.tell`, [DFT §I]; nothing when there were none).

A report that changes nothing, or concerns a broker outside the neighbourhood (the world may
report every overlay link it has), returns the same state and no effects.
"""

from __future__ import annotations

import attrs

from gapless.impl.dft import arrivals, partitions, publications, recovery, subscriptions
from gapless.impl.dft.routing import active_sessions
from gapless.impl.dft.state import BrokerState
from gapless.impl.effects import Effect
from gapless.impl.inputs import LinkChanged

__all__ = ["on_link_changed"]


def on_link_changed(state: BrokerState, inp: LinkChanged) -> tuple[BrokerState, tuple[Effect, ...]]:
    """The failure detector reports ``inp.neighbour`` reachable (``up``) or not."""
    x = inp.neighbour
    if x not in state.hood or (x in state.established) == inp.up:
        return state, ()
    est = state.established | {x} if inp.up else state.established - {x}
    before, before_fwd = state.active, state.fwd
    act = active_sessions(state.tree, state.me, est)
    state = attrs.evolve(state, established=est, active=act)
    lost = before - act
    gained = act - before
    state, e1 = partitions.detect(state, lost)
    state, e0 = recovery.start(state, gained)
    state = recovery.with_fwd(state)
    state, e2 = subscriptions.reroute(state, gained)
    state, e3 = publications.reroute(state, before_fwd)
    state, e4 = recovery.check_restored(state)
    # a newly established session first hears of the joins this broker knows of: partition
    # information and healing travel over established sessions that are not active, and
    # may name a newcomer (gapless.impl.dft.joins)
    told = arrivals.tell(state, x) if inp.up else ()
    return state, (*told, *e1, *e0, *e2, *e3, *e4)
