"""Reconnect-anywhere in the simulator and the fault kinds that drive it [DUR §1 item 5, §2]:
``move`` (reconnect at another SHB) and ``older_ct`` (present an older acknowledged CT) as
schedule events, the binding drawing them, a move's state written by the SHB (``PutMove``)
so that a move pending at an SHB crash is recovered pending, and the recovery that forgot it
(the binding before this change) caught by ``durable_exactly_once``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_durbind_protocol import _spec

from gapless.impl.durable.shb import ShbState, shb_recover
from gapless.impl.durable.storage import DropSubscriber, Flush, PutMove, PutReleased
from gapless.impl.errors import ProtocolMisuse
from gapless.invariants.durable.online import durable_record
from gapless.models.durable_protocol import FAULT_KINDS
from gapless.models.durable_store import LogStore, MemoryStore
from gapless.models.faults import (
    FaultEvent,
    FaultProfile,
    FaultSchedule,
    Targets,
    from_json,
    generate,
    to_json,
)
from gapless.models.run import build, simulate

_S = 1_000_000


def _move_then_crash(end: int) -> FaultSchedule:
    """``shb1.u0`` moves to ``shb2`` at ``end``; ``shb2`` crashes 1 ms later, before the
    subscriber's first acknowledgement there could activate its record."""
    return FaultSchedule(
        seed=0,
        events=(
            FaultEvent(kind="move", target="shb1.u0", at_us=_S, duration_us=end - _S, stream=0),
            FaultEvent(
                kind="crash", target="shb2", at_us=end + 1_000, duration_us=_S // 2, stream=1
            ),
        ),
    )


def test_the_new_kinds_are_drawn_for_subscribers_and_round_trip() -> None:
    assert {"move", "older_ct", "disconnect", "crash"} <= set(FAULT_KINDS)
    s = generate(
        FaultProfile(rates=(("move", 2.0), ("older_ct", 2.0))),
        Targets(brokers=("shb1",), links=(), subscribers=("a", "b")),
        duration_us=5 * _S,
        seed=3,
    )
    kinds = {e.kind for e in s.events}
    assert kinds == {"move", "older_ct"}
    assert {e.target for e in s.events} <= {"a", "b"}
    assert from_json(to_json(s)) == s


def test_the_world_refuses_a_move_of_an_unknown_subscriber() -> None:
    bad = FaultSchedule(
        seed=0,
        events=(FaultEvent(kind="move", target="nobody", at_us=_S, duration_us=1, stream=0),),
    )
    with pytest.raises(ProtocolMisuse, match="fault move targets unknown subscriber"):
        simulate(_spec(), bad, 1)


def _connects(trace: Any, sub: str) -> list[tuple[int, str, dict[str, int]]]:
    out = []
    for r in trace:
        d = durable_record(r)
        if d is not None and d.kind == "dur_connect" and d.detail.subscriber == sub:
            out.append((r.time, d.detail.shb, d.detail.ct.as_dict()))
    return out


def _acks(trace: Any, sub: str) -> list[tuple[int, dict[str, int]]]:
    out = []
    for r in trace:
        d = durable_record(r)
        if d is not None and d.kind == "dur_ack" and d.detail.subscriber == sub:
            out.append((r.time, d.detail.ct.as_dict()))
    return out


MOVES = FaultSchedule(
    seed=0,
    events=(
        FaultEvent(kind="move", target="shb1.u0", at_us=_S, duration_us=_S // 2, stream=0),
        FaultEvent(kind="older_ct", target="shb2.u1", at_us=2 * _S, duration_us=_S // 2, stream=1),
        FaultEvent(kind="move", target="shb1.u0", at_us=3 * _S, duration_us=_S // 4, stream=2),
    ),
)


def test_moves_and_older_cts_in_subscriber_mode() -> None:
    spec = _spec()
    _e, _g, _w, binding = build(spec, 1)
    out = simulate(spec, MOVES, 1, binding=binding, record_trace=True)
    assert out.verdict == "pass", out.explanation
    hops = [(t, shb) for t, shb, _ct in _connects(out.trace, "shb1.u0")]
    assert hops == [(1_500_000, "shb2"), (3_250_000, "shb1")]  # there and back again
    assert binding.records["shb1.u0"] == {"shb1"}  # both moves completed (Unregister)
    assert binding.generation["shb1.u0"] == 2
    # a move presents the CT last acknowledged; older_ct the one before it
    t_move, _shb, ct_move = _connects(out.trace, "shb1.u0")[0]
    assert ct_move == [ct for t, ct in _acks(out.trace, "shb1.u0") if t < t_move][-1]
    t_old, _shb, ct_old = _connects(out.trace, "shb2.u1")[0]
    acked = [ct for t, ct in _acks(out.trace, "shb2.u1") if t < t_old]
    assert ct_old == acked[-2]
    assert ct_old != acked[-1]


def _forgetful_recovery(binding: Any) -> None:
    """The binding's recovery before moves were written: every subscriber the SHB hosted,
    recovered as if it had subscribed there."""

    def recover(state: ShbState) -> ShbState:
        name = state.config.shb
        store, got = binding.stores[name].restart()
        binding.stores[name] = store
        subs = [(s.name, s.number, binding.filters[s.name]) for s in state.subs.values()]
        t = got.tables
        return shb_recover(state.config, subs, latest=t.latest, released=t.released, pfs=got.pfs)

    binding._recover = recover


@pytest.mark.parametrize("end", [1_150_000, 1_450_000])
def test_a_move_pending_at_a_crash_is_recovered_pending(end: int) -> None:
    spec = _spec()
    _e, _g, _w, binding = build(spec, 1)
    seen: list[ShbState] = []
    recover = binding._recover

    def spy(state: ShbState) -> ShbState:
        new = recover(state)
        seen.append(new)
        return new

    binding._recover = spy
    out = simulate(spec, _move_then_crash(end), 1, binding=binding)
    assert out.verdict == "pass", out.explanation
    (after,) = seen
    assert all("shb1.u0" in v.release.pending for v in after.views.values())
    assert after.subs["shb1.u0"].previous == "shb1"
    assert after.subs["shb1.u0"].refilter_upto  # its catchup still refilters
    assert binding.records["shb1.u0"] == {"shb2"}  # then it activated and shb1 dropped it
    # non-vacuity: the recovery that forgot the move loses matching events
    _e, _g, _w, forgetful = build(spec, 1)
    _forgetful_recovery(forgetful)
    bad = simulate(spec, _move_then_crash(end), 1, binding=forgetful)
    assert bad.invariant == "durable_exactly_once", bad.explanation
    assert "left out by SilenceMessage" in bad.explanation


def _move(previous: str | None = "shb1") -> PutMove:
    return PutMove(
        subscriber=7,
        name="s",
        filter="k == 1",
        previous=previous,
        generation=2,
        start=(("p0", 5), ("p1", -1)),
        refilter_upto=(("p0", 9), ("p1", 9)),
    )


def test_stores_keep_a_move_until_its_subscriber_is_dropped(tmp_path: Path) -> None:
    real, _rec = LogStore.open(str(tmp_path / "real"))
    for store in (MemoryStore(), real):
        store.apply([_move(), Flush()])
        store, got = store.restart()
        assert got.tables.moves == {7: _move()}
        store.apply([_move(None), PutReleased(subscriber=7, pubend="p0", timestamp=5), Flush()])
        store, got = store.restart()
        assert got.tables.moves == {7: _move(None)}
        store.apply([DropSubscriber(subscriber=7), Flush()])
        store, got = store.restart()
        assert got.tables.moves == {}
        store.close()
