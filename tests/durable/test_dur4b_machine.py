"""The two-SHB reconnect-anywhere machine (``test_durshb2_move.py``) with SHB crashes recovered
from the store alone [DUR §1 item 5, §4.1]: the moves an SHB hosted come back from its
``PutMove`` rows — a move still pending at the crash comes back pending, at the CT the
subscriber presented, with its ``refilter_upto`` — instead of from the machine's bookkeeping
(which forgot pending moves and sent the subscriber back where it came from). Every invariant
of the base machine holds after every step and at the end (every move completes, each
subscriber's last connection gets exactly the matching events after its CT minus gaps)."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from test_durshb2_move import FILTERS, SHBS, MoveMachine, P

from gapless.impl.durable.records import DurCrash
from gapless.impl.durable.shb import shb_recover


class StoreRecoveryMachine(MoveMachine):
    """:class:`MoveMachine` whose crashes recover moves from the store (module doc)."""

    crashes_mid_move = 0

    @precondition(lambda self: self.seq - self.last_crash >= 25)  # rarer than the rest
    @rule(b=st.sampled_from(SHBS))
    def crash(self, b: str) -> None:
        self.record(b, "dur_crash", DurCrash(shb=b))
        self.last_crash = self.seq
        self.down[b].clear()
        before = self.shb[b]
        if any(v.release.pending for v in before.views.values()):
            StoreRecoveryMachine.crashes_mid_move += 1
        for s in self.subs.values():
            if s.home == b:
                s.connected = False
                if s.fetching_from is not None:  # ack mode SHB: its CT was being fetched
                    s.home, s.fetching_from = s.fetching_from, None
        self.store[b], got = self.store[b].restart()
        t = got.tables
        moves = {m.name: m for m in t.moves.values()}
        subs = [
            (n, s.number, FILTERS[n])
            for n, s in before.subs.items()
            if s.generation == 0 and n not in moves
        ]
        subs += [(m.name, m.subscriber, m.filter) for m in moves.values()]
        active = {s for s, _p in t.released}
        self.shb[b] = shb_recover(
            before.config,
            subs,
            latest=t.latest,
            released=t.released,
            pfs=got.pfs,
            moved={
                m.name: (m.previous, dict(m.refilter_upto), m.generation) for m in moves.values()
            },
            pending={m.name: dict(m.start) for m in moves.values() if m.subscriber not in active},
        )
        for name in self.subs:
            assert (name in self.shb[b].subs) == (name in before.subs), name
            if name in before.subs and before.subs[name].generation:
                assert self.shb[b].subs[name].refilter_upto == before.subs[name].refilter_upto


TestStoreRecovery = StoreRecoveryMachine.TestCase
TestStoreRecovery.settings = settings(max_examples=60, stateful_step_count=50, deadline=None)


def test_a_crash_mid_move_recovers_the_pending_record() -> None:
    """Scripted: s0 moves b0 -> b1; b1 crashes before the record is active; it comes back
    pending at b1, and the move completes after the drain."""
    m = StoreRecoveryMachine()
    m.configure(None)
    m.subscribe("b0")
    m.time_passes(3)
    m.disconnect(0)
    m.time_passes(2)
    m.move(0, 0)
    assert m.registered("s0") == ["b0", "b1"]
    assert not m.shb["b1"].views[P].release.records["s0"].active
    m.seq += 25  # the crash rule's spacing
    m.crash("b1")
    rec = m.shb["b1"].views[P].release
    assert "s0" in rec.pending
    assert m.shb["b1"].subs["s0"].previous == "b0"
    assert m.registered("s0") == ["b0", "b1"]
    m.teardown()
    assert m.registered("s0") == ["b1"]
