"""Unsubscribe at the durable SHB [DUR §3, "a subscriber joining or leaving"]: the subscriber
leaves the release computation (so ``released(p)`` may rise and the PFS chop), its rows leave
the tables, no new PFS record names it, and its CT is refused afterwards. The Hypothesis
machine of ``test_dur_shb.py`` runs the same step (rule ``unsubscribe``) among all the others,
judged by the durable invariants."""

from __future__ import annotations

from typing import Any

import pytest

from gapless.impl.durable import shb_move as shb_mod
from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.shb import (
    Ack,
    Emit,
    ShbConfig,
    Subscribe,
    Unsubscribe,
    on_ack,
    on_connect,
    on_knowledge,
    on_subscribe,
    on_unsubscribe,
    shb_recover,
    shb_start,
)
from gapless.impl.durable.storage import DropSubscriber, PfsChop, StorageOrderError
from gapless.impl.effects import Rejected
from gapless.impl.gd.messages import Data, Knowledge
from gapless.impl.inputs import Connect
from gapless.models.durable_store import MemoryStore


class Run:
    """One SHB on pubend ``p``, its effects carried out by a :class:`MemoryStore`."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.shb = shb_start(ShbConfig(shb="b", upstream="phb", pubends=("p",)))
        self.effects: list[Any] = []

    def __call__(self, handler: Any, inp: Any) -> tuple[Any, ...]:
        self.shb, fx = handler(self.shb, inp, 0)
        for e in fx:
            if not isinstance(e, Emit | Rejected) and type(e).__module__.endswith("storage"):
                self.store.apply([e])
        self.effects.extend(fx)
        return fx

    def publish(self, tick: int, k: str = "a") -> tuple[Any, ...]:
        data = Data(pubend="p", tick=tick, attributes={"k": k})
        return self(on_knowledge, Knowledge(pubend="p", data=data))


def _scenario() -> tuple[Run, tuple[Any, ...]]:
    """``fast`` acknowledges everything, ``slow`` nothing: released(p) is held at -1 by
    ``slow`` until it unsubscribes."""
    run = Run()
    run(on_subscribe, Subscribe(subscriber="fast", filter="*"))
    run(on_subscribe, Subscribe(subscriber="slow", filter='k == "a"'))
    for t in range(4):
        run.publish(t, "a")
    run(on_ack, Ack(subscriber="fast", ct=CheckpointToken.of({"p": 3})))
    assert run.shb.views["p"].released() == -1
    return run, run(on_unsubscribe, Unsubscribe(subscriber="slow"))


def test_unsubscribe_leaves_the_release_computation() -> None:
    run, fx = _scenario()
    view = run.shb.views["p"]
    assert "slow" not in view.release.records
    assert view.released() == 3  # fast's ack now decides
    kinds = [type(e).__name__ if not isinstance(e, Emit) else e.kind for e in fx]
    assert kinds.index("DropSubscriber") < kinds.index("Flush") < kinds.index("PfsChop")
    assert "dur_leave" in kinds
    assert any(isinstance(e, PfsChop) and e.released == 3 for e in fx)
    assert all(k[0] != 1 for k in run.store.order.tables.released)  # slow was number 1


def test_no_new_record_names_it_and_its_ct_is_refused() -> None:
    run, _ = _scenario()
    run.publish(4, "a")
    pfs = run.shb.views["p"].pfs
    last = pfs.record(pfs.next_index - 1)
    assert last.timestamp == 4
    assert [s for s, _prev in last.entries] == [0]  # fast only
    fx = run(on_ack, Ack(subscriber="slow", ct=CheckpointToken.of({"p": 4})))
    assert len(fx) == 1
    assert isinstance(fx[0], Rejected)
    assert "not hosted here" in fx[0].reason
    fx = run(on_connect, Connect(subscriber="slow", filter="*", resume=None))
    assert isinstance(fx[0], Rejected)
    again = run(on_unsubscribe, Unsubscribe(subscriber="slow"))
    assert isinstance(again[0], Rejected)


def test_planted_bug_keeping_the_rows_is_refused_by_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Non-vacuity: if the SHB forgot to drop the leaving subscriber's rows, the durable
    released(p) would stay at its old ack and the store refuses the chop (the durability
    order of ``spec/durable_storage.md`` rule 4)."""

    def no_drop(subscriber: int) -> Any:
        return Emit(kind="noop", detail=subscriber)

    monkeypatch.setattr(shb_mod, "DropSubscriber", no_drop)
    with pytest.raises(StorageOrderError, match="durable released"):
        _scenario()
    assert DropSubscriber(subscriber=1) != no_drop(1)


def test_recovery_never_reuses_a_number_a_live_record_names() -> None:
    """After an unsubscribe and a crash, a new subscriber must not get the number of the one
    that left while a live PFS record still names it (it would inherit its records)."""
    run = Run()
    run(on_subscribe, Subscribe(subscriber="keep", filter='k == "b"'))
    run(on_subscribe, Subscribe(subscriber="gone", filter='k == "a"'))
    run.publish(0, "a")  # a record naming "gone" (number 1); "keep" acks nothing
    run(on_unsubscribe, Unsubscribe(subscriber="gone"))
    _store, got = run.store.restart()
    config = run.shb.config
    shb = shb_recover(
        config,
        [("keep", 0, 'k == "b"')],
        latest=got.tables.latest,
        released=got.tables.released,
        pfs=got.pfs,
    )
    assert [s for s, _prev in shb.views["p"].pfs.record(0).entries] == [1]
    assert shb.next_number == 2
