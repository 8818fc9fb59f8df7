"""Regression for the hole beyond δ found by the dft4 join machine (seed 3, 200 examples):
a re-acceptance whose partition-recovery notifier *widened* the exclusion of a source whose
flow was already owed [DFT §VIII-A]. The fix: a notifier replaces a pid only by pids that
exclude nothing it did not exclude (``healing._narrower``; ``spec/dft.md``, "Recovery")."""

from __future__ import annotations

from test_dft_stateful import TREE, DFTMachine

from gapless.impl.dft.messages import Pid


def _reproduction() -> DFTMachine:
    """The reproduction, δ = 1, complete tree of 13: link B1-B6 fails; S0 subscribes at B4,
    accepted with (B1, 1, <B6>), which does not exclude B7; B2, B0, B1 crash (three on
    P(B7, B4): out of budget); S1 subscribes at B10; then the machine's teardown heals every
    link, publishes, restarts B0, B1, B2 and publishes again, judging every invariant (the
    gapless one found S0's flow from B7 starting at 2, (B7, 1) excluded by the widened
    re-acceptance)."""
    m = DFTMachine()
    m.fail_link(link=("B6", "B1"))
    m.subscribe(broker="B4", flt="true")
    m.crash(broker="B2")
    m.subscribe(broker="B10", flt="x == 1")
    m.crash(broker="B0")
    m.crash(broker="B1")
    m.teardown()
    return m


def test_reacceptance_never_opens_a_hole_in_an_owed_flow() -> None:
    """The replay passes every invariant, and S0's flow from B7 is whole: (B7, 1) and
    (B7, 2) delivered, in order."""
    m = _reproduction()
    from_b7 = [tick for src, tick in m.net.delivered("S0") if src == "B7"]
    assert from_b7 == [1, 2], from_b7


def test_no_acceptance_of_s0_ever_excludes_b7() -> None:
    """The cause, judged directly: every acceptance of S0 written at B4 (the first and
    every re-acceptance) excludes none of B7's publications (before the fix the
    re-acceptance at B1's recovery wrote (B0, 1, <B2>) and (B0, 3, <B2>))."""
    m = _reproduction()
    written = [
        r.detail.value
        for r in m.net.records
        if r.kind == "persist" and r.node == "B4" and r.detail.key == ("accepted", "S0/0")
    ]
    assert len(written) >= 2, written  # the acceptance and at least one re-acceptance
    for tags in written:
        pids: list[Pid] = list(tags)
        assert not [p for p in pids if TREE.on_or_beyond(p.detector, p.pnodes, "B7")], tags
