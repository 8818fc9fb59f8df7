"""Sync points every n events at the durable SHB [DUR §5.1.2: "sync every 200 events"]: the
constream holds a range free of doubt back until it has ``sync_every`` events (or the timer
fires), then appends their PFS records, syncs once, flushes latestDelivered and only then
delivers (``spec/durable_storage.md`` rule 3; ``spec/durable.md`` "Sync points"). The
Hypothesis machine of ``test_dur_shb.py`` runs the whole SHB this way too
(``SyncEveryMachine``)."""

from __future__ import annotations

from typing import Any

import pytest

from gapless.impl.durable import pfs as pfs_mod
from gapless.impl.durable.shb import (
    Emit,
    ShbConfig,
    Subscribe,
    Tick,
    on_knowledge,
    on_subscribe,
    on_tick,
    shb_start,
)
from gapless.impl.durable.storage import (
    Flush,
    PfsAppend,
    PfsSync,
    PutLatestDelivered,
    StorageOrderError,
)
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd.messages import Data, Knowledge
from gapless.models.durable_store import MemoryStore

STORAGE = (PfsAppend, PfsSync, PutLatestDelivered, Flush)


class Run:
    def __init__(self, sync_every: int | None) -> None:
        config = ShbConfig(shb="b", upstream="phb", pubends=("p",), sync_every=sync_every)
        self.shb = shb_start(config)
        self.store = MemoryStore()
        self(on_subscribe, Subscribe(subscriber="s", filter="*"))

    def __call__(self, handler: Any, inp: Any) -> list[Any]:
        self.shb, fx = handler(self.shb, inp, 0)
        for e in fx:
            if not isinstance(e, Emit) and type(e).__module__.endswith("storage"):
                self.store.apply([e])
        return list(fx)

    def publish(self, tick: int) -> list[Any]:
        data = Data(pubend="p", tick=tick, attributes={"k": "a"})
        return self(on_knowledge, Knowledge(pubend="p", data=data))


def _kinds(fx: list[Any]) -> list[str]:
    return [e.kind if isinstance(e, Emit) else type(e).__name__ for e in fx]


def test_one_sync_per_n_events() -> None:
    run = Run(sync_every=3)
    assert run.publish(0) == []
    assert run.publish(1) == []
    assert run.shb.latest_delivered("p") == -1
    fx = run.publish(2)
    kinds = _kinds(fx)
    assert kinds.count("PfsAppend") == 3
    assert kinds.count("PfsSync") == 1
    assert kinds.index("PfsSync") < kinds.index("PutLatestDelivered") < kinds.index("Flush")
    assert kinds.index("Flush") < kinds.index("dur_message")
    assert kinds.count("dur_message") == 3
    assert run.shb.latest_delivered("p") == 2
    assert run.store.order.tables.latest["p"] == 2


def test_the_timer_is_a_sync_point() -> None:
    run = Run(sync_every=200)
    for t in range(5):
        assert run.publish(t) == []
    fx = run(on_tick, Tick())
    kinds = _kinds(fx)
    assert kinds.count("PfsSync") == 1
    assert kinds.count("dur_message") == 5
    assert run.shb.latest_delivered("p") == 4
    assert run(on_tick, Tick()).count(PfsSync(pubend="p", upto_index=4)) == 0


def test_without_sync_every_each_batch_syncs() -> None:
    run = Run(sync_every=None)
    assert _kinds(run.publish(0)).count("PfsSync") == 1
    assert _kinds(run.publish(1)).count("PfsSync") == 1


def test_sync_every_must_be_positive() -> None:
    with pytest.raises(ProtocolMisuse, match="sync_every"):
        ShbConfig(shb="b", upstream="u", pubends=("p",), sync_every=0)


def test_planted_bug_a_sync_point_without_fsync_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Non-vacuity: a sync point that forgets the PFS fsync would let latestDelivered pass
    unsynced records; the store refuses the flush [DUR §4.1]."""
    original = pfs_mod.PfsStream.sync

    def no_fsync(self: pfs_mod.PfsStream) -> Any:
        new, fx = original(self)
        return new, tuple(e for e in fx if not isinstance(e, PfsSync))

    monkeypatch.setattr(pfs_mod.PfsStream, "sync", no_fsync)
    run = Run(sync_every=2)
    run.publish(0)
    with pytest.raises(StorageOrderError, match="not synced"):
        run.publish(1)
