"""The DFT role as the world sees it: a broker state per policy, one ``handle``, ``crash``.

Theory of operation
-------------------
:func:`new_role` builds the broker of ``policy``: the δ-fault-tolerant broker
(:mod:`gapless.impl.dft.broker`, Figures 5 and 8) or, for ``forwarding="naive"``, the §I
baseline (:mod:`gapless.impl.dft.naive`). :func:`handle` and :func:`crash` dispatch on the
state's type, so a binding, a test loop or a campaign selects the baseline like any other
variant, by its policy [DFT §I].
"""

from __future__ import annotations

from gapless.impl.dft import broker, naive
from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy
from gapless.impl.dft.naive import NaiveState
from gapless.impl.dft.state import BrokerState, new_broker
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.effects import Effect
from gapless.impl.inputs import Input

__all__ = ["Role", "crash", "handle", "new_role"]

Role = BrokerState | NaiveState


def new_role(
    me: str, tree: PrimaryTree, config: DFTConfig | None = None, policy: DFTPolicy = PAPER_POLICY
) -> Role:
    """The broker ``me`` of ``tree`` under ``policy`` (all links up)."""
    if policy.forwarding == "naive":
        return naive.new_naive(me, tree)
    return new_broker(me, tree, config, policy)


def handle(state: Role, inp: Input, now: int) -> tuple[Role, tuple[Effect, ...]]:
    """One step of either broker kind."""
    if isinstance(state, NaiveState):
        return naive.handle(state, inp, now)
    return broker.handle(state, inp, now)


def crash(state: Role) -> Role:
    """The state after a crash."""
    if isinstance(state, NaiveState):
        return naive.new_naive(state.me, state.tree, reachable=False)
    return broker.crash(state)
