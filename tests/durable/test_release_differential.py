"""The release protocol's core (``impl/durable/release.py``) against the slow reference
(``spec/durable_release.py``), step by step, with the protocol's safety checked after every
step [DUR §3, §4.1]: Tr <= Td, the L rule, and no L tick a subscriber still needs."""

from __future__ import annotations

import attrs
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from gapless.impl.durable import release as rl
from gapless.impl.effects import Rejected
from gapless.impl.knowledge import Kind
from gapless.spec.durable_release import RefWorld

SHBS = ("b0", "b1")
SUBS = ("s0", "s1", "s2")
NODE = "n"


class ReleaseMachine(RuleBasedStateMachine):
    """Two SHBs under one node under one pubend; subscribers join, ack, move, leave."""

    def __init__(self) -> None:
        super().__init__()
        self.max_retain: int | None = None
        self.shb = {b: rl.ShbRelease(shb=b, pubend="p") for b in SHBS}
        self.node = rl.NodeRelease.over(NODE, "p", SHBS)
        self.pub = rl.PubendRelease(pubend="p")
        self.ref = RefWorld.make(list(SHBS), None)
        self.home: dict[str, str] = {}  # a subscriber's current SHB
        self.records: dict[str, set[str]] = {}  # where it has records
        self.acked: dict[str, int] = {}  # the latest CT it acknowledged (or started at)

    @initialize(mr=st.sampled_from([None, 0, 3, 10]))
    def configure(self, mr: int | None) -> None:
        self.max_retain = mr
        self.pub = rl.PubendRelease(pubend="p", max_retain=mr)
        self.ref = RefWorld.make(list(SHBS), mr)

    @rule(b=st.sampled_from(SHBS), s=st.sampled_from(SUBS))
    def join(self, b: str, s: str) -> None:
        if s in self.home:
            return
        self.shb[b], ct = rl.shb_join(self.shb[b], s)
        assert ct == self.ref.join(b, s)
        self.home[s], self.records[s], self.acked[s] = b, {b}, ct

    @rule(s=st.sampled_from(SUBS), up=st.integers(-2, 6))
    def ack(self, s: str, up: int) -> None:
        if s not in self.home:
            b = SHBS[0]
            new, eff = rl.shb_acknowledge(self.shb[b], s, 3)
            assert new is self.shb[b]
            assert len(eff) == 1
            assert isinstance(eff[0], Rejected)
            return
        b = self.home[s]
        ct = max(-1, self.shb[b].latest_delivered - up)  # never beyond what was delivered
        self.shb[b], eff = rl.shb_acknowledge(self.shb[b], s, ct)
        assert eff == ()
        self.ref.ack(b, s, ct)
        self.acked[s] = max(self.acked[s], ct)

    @rule(b=st.sampled_from(SHBS), back=st.integers(0, 4))
    def delivered(self, b: str, back: int) -> None:
        tick = max(-1, self.pub.clock - back)
        self.shb[b] = rl.shb_delivered(self.shb[b], tick)
        self.ref.delivered(b, tick)

    @rule(b=st.sampled_from(SHBS))
    def report(self, b: str) -> None:
        self.shb[b], rep = rl.shb_send_report(self.shb[b])
        assert (rep.released, rep.delivered) == self.ref.report(b)
        self.node, eff = rl.node_on_report(self.node, rep)
        assert eff == ()

    @rule()
    def propagate(self) -> None:
        self.pub, eff = rl.pubend_on_report(self.pub, self.node.report(), (NODE,))
        assert eff == ()
        self.ref.propagate()

    @rule(dt=st.integers(1, 8), publish=st.booleans())
    def clock(self, dt: int, publish: bool) -> None:
        t = self.pub.clock + dt
        if publish:
            self.pub = rl.pubend_publish(self.pub, t, f"m{t}")
        else:
            self.pub = rl.pubend_clock(self.pub, t)
        self.ref.clock(t)

    @rule()
    def release_step(self) -> None:
        self.pub = rl.pubend_release_step(self.pub)
        self.ref.release_step()

    @rule(b=st.sampled_from(SHBS))
    def crash(self, b: str) -> None:
        self.shb[b] = rl.shb_crash(self.shb[b])
        self.ref.crash(b)

    @rule(s=st.sampled_from(SUBS))
    def unsubscribe(self, s: str) -> None:
        if s not in self.home:
            return
        for b in sorted(self.records.pop(s)):
            self.shb[b] = rl.shb_leave(self.shb[b], s)
            self.ref.leave(b, s)
        del self.home[s], self.acked[s]

    @rule(s=st.sampled_from(SUBS), older=st.integers(0, 5))
    def move(self, s: str, older: int) -> None:
        """Reconnect-anywhere to the other SHB, presenting a CT up to ``older`` ticks old."""
        if s not in self.home or len(self.records[s]) > 1:
            return
        to = SHBS[1 - SHBS.index(self.home[s])]
        ct = max(-1, self.acked[s] - older)
        self.shb[to] = rl.shb_register_moved(self.shb[to], s, ct)
        self.ref.register_moved(to, s, ct)
        self.home[s] = to
        self.records[s].add(to)

    @rule(s=st.sampled_from(SUBS))
    def finish_move(self, s: str) -> None:
        """The old SHB unregisters a moved subscriber once the new record is active."""
        if s not in self.home or len(self.records[s]) < 2:
            return
        new = self.home[s]
        if not self.shb[new].records[s].active:
            return
        (old,) = self.records[s] - {new}
        self.shb[old] = rl.shb_leave(self.shb[old], s)
        self.ref.leave(old, s)
        self.records[s] = {new}

    # ------------------------------------------------------------------ checks

    @invariant()
    def agrees_with_reference(self) -> None:
        for b in SHBS:
            mine, ref = self.shb[b], self.ref.shbs[b]
            assert mine.latest_delivered == ref.latest_delivered()
            assert mine.released() == ref.released()
            assert {s: r.released for s, r in mine.records.items()} == {
                s: ref.released_of(s) for s in ref.acks
            }
            assert {s: r.active for s, r in mine.records.items()} == ref.active
        assert (self.node.released(), self.node.delivered()) == self.ref.node.pair()
        assert (self.pub.tr, self.pub.td) == (self.ref.pubend.tr(), self.ref.pubend.td())
        lost = set(range(self.pub.released_through + 1))
        assert lost == self.ref.pubend.lost
        k = self.pub.knowledge
        for t in range(self.pub.clock + 2):
            assert (k.value_at(t).kind is Kind.L) == (t in lost), t

    @invariant()
    def release_is_safe(self) -> None:
        p = self.pub
        assert p.tr <= p.td
        assert p.released_through <= p.td
        assert p.released_through <= min(b.latest_delivered for b in self.shb.values())
        if p.released_through > p.tr:  # only early release may pass Tr
            assert p.max_retain is not None
            assert p.clock - p.released_through > p.max_retain
        for s, acked in self.acked.items():
            if p.released_through > acked:
                assert p.max_retain is not None, (s, acked, p.released_through)


TestRelease = ReleaseMachine.TestCase
TestRelease.settings = settings(TestRelease.settings, stateful_step_count=40)


def test_ignored_inputs_return_the_same_state() -> None:
    b = rl.ShbRelease(shb="b", pubend="p")
    b, _ = rl.shb_join(b, "s")
    b = rl.shb_delivered(b, 5)
    assert rl.shb_delivered(b, 3) is b
    assert rl.shb_acknowledge(b, "s", -1) == (b, ())
    assert rl.shb_activate(b) is b
    node = rl.NodeRelease.over("n", "p", ("b",))
    rep = rl.ReleaseReport(node="b", pubend="p", released=-1, delivered=-1)
    assert rl.node_on_report(node, rep) == (node, ())
    stranger = attrs.evolve(rep, node="zz")
    got, eff = rl.node_on_report(node, stranger)
    assert got is node
    assert "not a child" in eff[0].reason  # type: ignore[union-attr]
    bad = rl.ReleaseReport(node="b", pubend="p", released=4, delivered=2)
    assert "malformed" in rl.node_on_report(node, bad)[1][0].reason  # type: ignore[union-attr]
    pub = rl.PubendRelease(pubend="p")
    assert rl.pubend_release_step(pub) is pub
    assert rl.pubend_clock(pub, -1) is pub


def test_l_bound_is_the_rule() -> None:
    # Tr = 4, Td = 9, T = 20: early release with maxRetain 12 allows t <= min(9, 7) = 7
    assert rl.l_bound(4, 9, 20, 12) == 7
    assert rl.l_bound(4, 9, 20, None) == 4
    assert rl.l_bound(4, 9, 20, 0) == 9
    assert rl.l_bound(4, 9, 10, 50) == 4
    for t in range(25):
        rule = t <= 4 or (t <= 9 and 20 - t > 12)
        assert (t <= rl.l_bound(4, 9, 20, 12)) == rule


def test_moved_subscriber_holds_release_until_active() -> None:
    """Reconnect-anywhere: the old record holds released(p) down until the new one is active."""
    b0 = rl.ShbRelease(shb="b0", pubend="p")
    b1 = rl.ShbRelease(shb="b1", pubend="p")
    b0, _ = rl.shb_join(b0, "s")
    b0 = rl.shb_delivered(b0, 10)
    b1 = rl.shb_delivered(b1, 10)
    b0, _ = rl.shb_acknowledge(b0, "s", 4)
    b1, rep1 = rl.shb_send_report(b1)  # b1 reported released(p) = 10
    assert rep1.released == 10
    b1 = rl.shb_register_moved(b1, "s", 4)
    b1, rep1 = rl.shb_send_report(b1)
    assert not b1.records["s"].active  # 4 < 10 reported: pending
    assert rep1.released == 10
    assert b0.released() == 4  # the old record still holds the minimum
    b1, _ = rl.shb_acknowledge(b1, "s", 10)
    b1, rep1 = rl.shb_send_report(b1)
    assert b1.records["s"].active
    assert rep1.released == 10
    b0 = rl.shb_leave(b0, "s")
    assert b0.released() == 10


def test_misuse_raises_typed_errors() -> None:
    import pytest

    from gapless.impl.errors import InvalidTick, ProtocolMisuse

    b = rl.ShbRelease(shb="b", pubend="p")
    b, _ = rl.shb_join(b, "s")
    with pytest.raises(ProtocolMisuse, match="already registered"):
        rl.shb_join(b, "s")
    with pytest.raises(ProtocolMisuse, match="not registered"):
        rl.shb_leave(b, "x")
    with pytest.raises(InvalidTick, match="allowed"):
        rl.shb_delivered(b, -5)
    with pytest.raises(ProtocolMisuse, match="no downstream"):
        rl.NodeRelease.over("n", "p", ())
    pub = rl.pubend_publish(rl.PubendRelease(pubend="p"), 3, "m")
    with pytest.raises(ProtocolMisuse, match="not after"):
        rl.pubend_publish(pub, 3, "m")


def _l_bound_above_td(tr: int, td: int, clock: int, max_retain: int | None) -> int:
    """A planted bug: early release not capped at Td ("L placed above Td")."""
    if max_retain is None:
        return tr
    return max(tr, clock - max_retain - 1)


def test_machine_catches_l_above_td(monkeypatch: object) -> None:
    """Non-vacuity: with the L rule's ``t <= Td`` dropped, the machine fails."""
    import pytest
    from hypothesis.stateful import run_state_machine_as_test

    mp: pytest.MonkeyPatch = monkeypatch  # type: ignore[assignment]
    mp.setattr(rl, "l_bound", _l_bound_above_td)
    with pytest.raises(AssertionError):
        run_state_machine_as_test(
            ReleaseMachine,
            settings=settings(
                max_examples=100,
                stateful_step_count=40,
                database=None,
                phases=[Phase.explicit, Phase.generate],  # the first failure will do
            ),
        )
