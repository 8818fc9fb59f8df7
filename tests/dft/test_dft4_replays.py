"""Replays of what the dft4 searches found [DFT §VIII-A], each kept as found (the stateful
machine's rules, 13-broker complete tree, δ = 1), run with the policy it was found under
and the paper's."""

from __future__ import annotations

import pytest
from _dft_net import Net
from test_dft_stateful import TREE, DFTMachine

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig, DFTPolicy

CROSSED_SYNCS = (
    ("fail_link", ("B1", "B0")),
    ("fail_link", ("B1", "B0")),
    ("crash", "B0"),
    ("fail_link", ("B1", "B0")),
    ("restart", "B0"),
    ("crash", "B1"),
    ("crash", "B1"),
    ("subscribe", ("B4", "x == 1")),
    ("fail_link", ("B1", "B0")),
    ("publish", ("B2", 0)),
    ("crash", "B1"),
    ("heal_link", ("B12", "B3")),
    ("crash", "B4"),
    ("crash", "B0"),
    ("heal_link", ("B7", "B2")),
    ("fail_link", ("B1", "B0")),
    ("subscribe", ("B2", "true")),
    ("subscribe", ("B4", "true")),
)


def _replay(policy: DFTPolicy, ops: tuple[tuple[str, object], ...]) -> None:
    m = DFTMachine()
    m.net = Net(TREE, config=DFTConfig(delta=1), policy=policy)
    for name, arg in ops:
        if name in ("fail_link", "heal_link"):
            getattr(m, name)(link=arg)
        elif name == "subscribe":
            broker, flt = arg  # type: ignore[misc]
            m.subscribe(broker=broker, flt=flt)
        elif name == "publish":
            broker, x = arg  # type: ignore[misc]
            m.publish(broker=broker, x=x)
        else:
            getattr(m, name)(broker=arg)
        m.safety_holds()
    m.teardown()


@pytest.mark.parametrize("policy", [PAPER_POLICY, DFTPolicy(dpt_factor=1)])
def test_crossed_syncs_share_a_confirmation(policy: DFTPolicy) -> None:
    """Found with ``dpt-delta`` forced (seed 42, 300 examples), a recovery race, not a table
    one: B0 and B1 sync each other at once; B0's transfer gives B1 S0/0 upstream while
    B1's gives it to B0, which propagates it; B1's confirmation of B0's transfer reached B0
    while S0/0 was pending there and was taken as the pending subscription's (B1 was not in
    its Out_s: dropped). B0's sync of B1 waited forever, so B0's pids holding B1 never
    recovered and S1 at B2 never heard from B1 again (``live_after_heal``)."""
    _replay(policy, CROSSED_SYNCS)
