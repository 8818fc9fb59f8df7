"""A publication released after a recovery is matched only for what was accepted before it
was processed (dft7; spec/dft.md "Releases after recovery") [DFT §VI (ii), §VIII].

The run (``campaigns/dft-demo.toml`` with joins, seed 1238, shrunk): B9 crashes at 2.16 s;
J14's join under it waits for it; at the heal (2.875 s) B9 restarts, J14 joins and
subscribes. Publications of B5 that matched B9's old subscriber waited at B2 for B9
(Figure 8 l. 46-48). Released to B9 after its recovery, they used to be matched there against
J14's new subscription and forwarded to it, while B5's publications that had not matched
B9's subscriber never waited: J14's flow from B5 began with holes. B2's confirmation of J14's
subscription now carries B2's stamp counter at its acceptance; B9 sees that B2 stamped the
released publications below it and does not match them for J14."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

import gapless.models.dft_binding as dft_binding
from gapless.impl.dft.config import PAPER_POLICY
from gapless.impl.dft.messages import PubMsg, SubConfirm, SubMsg
from gapless.impl.dft.publications import on_pub
from gapless.impl.dft.state import new_broker
from gapless.impl.dft.subscriptions import on_sub, on_sub_confirm
from gapless.impl.dft.tree import complete_tree
from gapless.impl.effects import Deliver, Send
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import simulate
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.runner_backend import RunnerBackend

_DEMO = Path(__file__).resolve().parents[2] / "campaigns" / "dft-demo.toml"


def _replay() -> Any:
    spec = attrs.evolve(
        RunnerBackend("dft").make_spec(load_config(_DEMO, {})), duration_us=2_875_000
    )
    crash = FaultEvent(
        kind="crash",
        at_us=2_158_499,
        duration_us=2_810_301,
        target="B9",
        stream=2269827087582524292,
    )
    join_ = FaultEvent(
        kind="join", at_us=2_214_113, duration_us=0, target="J14", stream=4960960345604847163
    )
    return simulate(spec, FaultSchedule(seed=1238, events=(crash, join_)), 1238, record_trace=True)


def test_the_release_after_recovery_no_longer_gives_a_newcomer_a_flow_with_holes() -> None:
    out = _replay()
    assert out.verdict != "violation", out.explanation
    trace = out.trace or ()
    accepted = min(
        r.time
        for r in trace
        if r.kind == "persist" and r.node == "J14" and r.detail.key == ("accepted", "J14.u0/0")
    )
    published = {(r.node, r.detail.index + 1): r.time for r in trace if r.kind == "publish"}
    got = [r.detail for r in trace if r.kind == "deliver" and r.detail.subscriber == "J14.u0"]
    # nothing published before the acceptance reaches J14's subscriber
    assert all(published[(d.pubend, d.tick)] > accepted for d in got)


def test_without_the_acceptance_stamps_the_hole_is_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-vacuity: the pre-dft7 rule (``match_after_acceptance=False``) gives new
    subscriptions B5's released publications, older than their acceptance. ``safety`` now
    judges them by the paper's condition (ii) [DFT §VI] (dft8): the first such delivery
    (to B9's subscriber, reconnected after B9's restart, a new subscription) is a
    ``safety`` violation, before any hole shows (before dft8 only ``gapless`` saw it, at
    J14's flow with holes)."""
    old = attrs.evolve(PAPER_POLICY, match_after_acceptance=False)
    monkeypatch.setattr(dft_binding, "PAPER_POLICY", old)
    out = _replay()
    assert (out.verdict, out.invariant) == ("violation", "safety"), out.explanation
    assert "before B9.u0/1 was accepted" in out.explanation
    assert "condition (ii)" in out.explanation


def test_a_late_copy_is_not_matched_for_a_subscription_its_sender_accepted_after_it() -> None:
    """The roles alone, a chain of three, δ = 1: the middle broker C1 stamps (C0, 1)
    (n = 1) and only then accepts S of C2 (C0 confirms it; C1's confirmation says stamp 1).
    A copy of (C0, 1) arriving at C2 from C1 afterwards (released late) is not delivered
    to S; (C0, 2), stamped 2 by C1 after the acceptance, is delivered."""
    tree = complete_tree(3, 1)
    names = tree.order
    c1, c2 = names[1], names[2]
    b1 = new_broker(c1, tree)
    late = PubMsg(source=names[0], number=1, trail=(names[0],), seqvec=())
    b1, _ = on_pub(b1, names[0], late)
    assert b1.stamp == 1
    sub = SubMsg(sid="S", source=c2, filter="true")
    b1, _ = on_sub(b1, c2, attrs.evolve(sub, trail=(c2,)))
    b1, effects = on_sub_confirm(b1, names[0], SubConfirm(sid="S"))
    confirms = [e.msg for e in effects if isinstance(e, Send) and isinstance(e.msg, SubConfirm)]
    assert [c.stamp for c in confirms] == [1]

    b2 = new_broker(c2, tree)
    b2 = attrs.evolve(b2, local=b2.local.set("S", ("S", 0)))
    b2, _ = on_sub(b2, None, sub)
    b2, _ = on_sub_confirm(b2, c1, confirms[0])
    assert b2.srt["S"].after == {c1: 1}
    first = PubMsg(source=names[0], number=1, trail=(names[0], c1), seqvec=((c1, 1, 1),))
    b2, effects = on_pub(b2, c1, first)
    assert not [e for e in effects if isinstance(e, Deliver)]
    second = PubMsg(source=names[0], number=2, trail=(names[0], c1), seqvec=((c1, 2, 2),))
    b2, effects = on_pub(b2, c1, second)
    assert [e.tick for e in effects if isinstance(e, Deliver)] == [2]
