"""Reconnect-anywhere in the second acknowledgement mode [DUR §1 item 5, §5.2;
``spec/durable.md`` "Moves in the second acknowledgement mode"]: the SHB keeps CT(s), so a
subscriber moving to another SHB presents none; the new SHB fetches the CT the old one keeps
(``CheckpointQuery``/``CheckpointAnswer``) and registers the move at it.

The two-SHB machine of ``test_durshb2_move.py`` draws both modes; here it runs in mode SHB
alone, a scripted run shows the fetch, a planted bug (the old SHB answers with what it
delivered, not the CT it keeps) is caught by the durable invariants, the old SHB's refusals
are checked one by one, and the simulator's ``move`` fault moves a subscriber in mode SHB.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, run_state_machine_as_test
from test_dur4b_moves import MOVES, _acks, _connects
from test_durbind_protocol import _spec
from test_durshb2_move import FILTERS, MoveMachine, P

from gapless.impl.durable import release as rl
from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.shb import (
    CheckpointAnswer,
    CheckpointQuery,
    MoveIn,
    ShbConfig,
    ShbState,
    Subscribe,
    on_checkpoint_answer,
    on_checkpoint_query,
    on_disconnect,
    on_move_in,
    on_subscribe,
    shb_start,
)
from gapless.impl.effects import Rejected, Send
from gapless.impl.inputs import Disconnect
from gapless.models.run import build, simulate


class ShbModeMoves(MoveMachine):
    """The two-SHB machine in ack mode SHB only."""

    @initialize(mr=st.sampled_from([None, 3]))
    def configure(self, mr: int | None, mode: rl.AckMode = rl.AckMode.SHB) -> None:
        super().configure(mr, rl.AckMode.SHB)


TestShbModeMoves = ShbModeMoves.TestCase
TestShbModeMoves.settings = settings(max_examples=40, stateful_step_count=50, deadline=None)


class AnswerDelivered(ShbModeMoves):
    """Planted: the old SHB answers with its latestDelivered, not the CT it keeps."""

    answer_delivered = True


def test_a_move_fetches_the_ct_the_old_shb_keeps() -> None:
    """Scripted: s0 at b0 acknowledges, more is published, it moves to b1 presenting no CT;
    b1 asks b0, registers it at b0's kept CT (its last ack), serves what followed; its acks
    there activate the record and b0 drops its own."""
    m = ShbModeMoves()
    m.configure(None, rl.AckMode.SHB)
    m.subscribe("b0")
    m.time_passes(3)
    m.ack(0)
    acked = m.subs["s0"].acked[-1]
    m.time_passes(2)
    m.move(0, 0)
    assert "s0" in m.shb["b1"].fetching
    assert m.registered("s0") == ["b0"]  # nothing registered before the answer
    assert any(isinstance(e.msg, CheckpointQuery) for _b, e in m.up)
    m.time_passes(1)  # b1's timer asks, b0 answers, b1 registers the move
    assert m.subs["s0"].presented == acked  # the CT b0 kept
    assert m.registered("s0") == ["b0", "b1"]
    assert "s0" in m.shb["b1"].views[P].release.pending
    for _ in range(2):  # its acks at b1 activate the record; b0 is then told to drop its own
        m.ack(0)
        m.time_passes(1)
    assert m.registered("s0") == ["b1"]
    assert not m.shb["b1"].fetching
    m.teardown()


def test_planted_answer_with_latest_delivered_is_caught() -> None:
    runs = settings(
        max_examples=300,
        stateful_step_count=50,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
    )
    with pytest.raises(AssertionError, match="violated"):
        run_state_machine_as_test(AnswerDelivered, settings=runs)


def _two() -> tuple[ShbState, ShbState]:
    b0 = shb_start(ShbConfig(shb="b0", upstream="phb", pubends=(P,), ack_mode=rl.AckMode.SHB))
    b1 = shb_start(ShbConfig(shb="b1", upstream="phb", pubends=(P,), ack_mode=rl.AckMode.SHB))
    return b0, b1


def test_the_old_shb_answers_only_with_a_committed_ct_of_a_subscriber_gone() -> None:
    b0, _b1 = _two()
    b0, _ = on_subscribe(b0, Subscribe(subscriber="s", filter=FILTERS["s0"]), 0)
    query = CheckpointQuery(subscriber="s", by="b1", generation=1)
    assert on_checkpoint_query(b0, query, 0) == (b0, ())  # still connected there: silent
    gone, _ = on_disconnect(b0, Disconnect(subscriber="s"), 0)
    same, fx = on_checkpoint_query(gone, query, 0)
    assert same is gone
    answer = CheckpointAnswer(subscriber="s", shb="b0", ct=CheckpointToken.of({P: -1}))
    assert fx == (Send(to="b1", msg=answer),)
    stale = CheckpointQuery(subscriber="s", by="b1", generation=0)
    assert on_checkpoint_query(gone, stale, 0) == (gone, ())  # from an earlier move
    unknown, fx = on_checkpoint_query(gone, CheckpointQuery(subscriber="x", by="b1"), 0)
    assert unknown is gone
    assert isinstance(fx[0], Rejected)
    # a record pending there (it moved there itself and is not active yet): silent
    moved = MoveIn(subscriber="t", filter="*", previous="b1", ct=CheckpointToken.of({P: -1}))
    b0p, _ = on_move_in(gone, moved, 0)
    b0p, _ = on_disconnect(b0p, Disconnect(subscriber="t"), 0)
    later = CheckpointQuery(subscriber="t", by="b1", generation=2)
    assert on_checkpoint_query(b0p, later, 0) == (b0p, ())


def test_the_new_shb_waits_for_the_answer_it_asked_for() -> None:
    _b0, b1 = _two()
    move = MoveIn(subscriber="s", filter="*", previous="b0", ct=None, generation=2)
    asking, fx = on_move_in(b1, move, 0)
    assert fx == (Send(to="b0", msg=CheckpointQuery(subscriber="s", by="b1", generation=2)),)
    assert on_move_in(asking, move, 0) == (asking, ())  # asked already
    ct = CheckpointToken.of({P: -1})
    other = CheckpointAnswer(subscriber="s", shb="b0", ct=ct, generation=1)
    assert on_checkpoint_answer(asking, other, 0) == (asking, ())  # another move's answer
    done, fx = on_checkpoint_answer(asking, attrs.evolve(other, generation=2), 0)
    assert "s" in done.subs
    assert "s" in done.views[P].release.pending
    assert not done.fetching
    # in ack mode SUBSCRIBER a move without a CT is refused
    sub_mode = shb_start(ShbConfig(shb="b1", upstream="phb", pubends=(P,)))
    same, fx = on_move_in(sub_mode, move, 0)
    assert same is sub_mode
    assert isinstance(fx[0], Rejected)


def test_the_simulator_moves_a_subscriber_in_shb_mode() -> None:
    """The ``move`` fault in ack mode ``shb``: there and back again, each time resuming at the
    CT the old SHB kept — the last acknowledgement it accepted."""
    spec = _spec(ack_mode="shb")
    _e, _g, _w, binding = build(spec, 1)
    out = simulate(spec, MOVES, 1, binding=binding, record_trace=True)
    assert out.verdict == "pass", out.explanation
    hops = _connects(out.trace, "shb1.u0")
    assert [shb for _t, shb, _ct in hops] == ["shb2", "shb1"]
    assert binding.records["shb1.u0"] == {"shb1"}  # both moves completed
    for t_move, _shb, ct in hops:
        assert ct == [c for t, c in _acks(out.trace, "shb1.u0") if t < t_move][-1]
