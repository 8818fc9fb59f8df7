"""Reproduction of the open hole beyond δ (found by the dft4 join machine, seed 3, 200
examples): a re-acceptance whose partition-recovery notifier *widens* the exclusion of a
source whose flow is already owed [DFT §VIII-A]. Kept as a regression test."""

from __future__ import annotations

import pytest
from test_dft_stateful import DFTMachine


@pytest.mark.xfail(strict=True, reason="reproduction: the open hole beyond δ")
def test_reacceptance_never_opens_a_hole_in_an_owed_flow() -> None:
    """Reproduction (δ = 1, complete tree of 13): link B1-B6 fails; S0 subscribes at B4,
    accepted with (B1, 1, <B6>), which does not exclude B7; B2, B0, B1 crash (three on
    P(B7, B4): out of budget); S1 subscribes at B10; then the machine's teardown heals
    everything, publishes, restarts B0, B1, B2 and publishes again. Every invariant, the
    gapless one included, must hold on the trace."""
    m = DFTMachine()
    m.fail_link(link=("B6", "B1"))
    m.subscribe(broker="B4", flt="true")
    m.crash(broker="B2")
    m.subscribe(broker="B10", flt="x == 1")
    m.crash(broker="B0")
    m.crash(broker="B1")
    m.teardown()
