"""Process crash, for real [issue 13 §4]: the SHB's storage runs in a child process under load
and is killed with SIGKILL at random moments; after each kill recovery reads a consistent
state and nothing the child had seen acknowledged as durable is lost.

``make test`` kills it a handful of times (``GAPLESS_CRASH_KILLS``, default 4);
``make test-long`` and ``gapless bench durable`` kill it 100 times."""

from __future__ import annotations

import os

from gapless.benchmarks.durable import CRASH_SUBS, PUBENDS, _check, crash_campaign, matches
from gapless.impl.durable.pfs import PfsStream
from gapless.models.durable_store import Recovered, Tables


def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path) -> None:
    kills = int(os.environ.get("GAPLESS_CRASH_KILLS", "4"))
    result = crash_campaign(kills, seed=7, root=str(tmp_path))
    print(result)  # what each kill interrupted, for the record (pytest -s)
    assert result["crash_kills"] == kills
    assert sum(result["crash_interrupted"].values()) == kills
    assert result["crash_acknowledged_lost"] == 0
    assert result["crash_inconsistent"] == 0
    # not vacuous: the children got far enough to acknowledge sync points before dying
    assert result["crash_sync_points_acknowledged"] >= 1


def _recovered(latest: int, drop: int | None = None) -> Recovered:
    pfs = PfsStream.empty("P0")
    for t in range(1, latest + 1):
        pfs, _ = pfs.write(t, () if t == drop else matches("P0", t))
    pfs, _ = pfs.sync()
    tables = Tables(latest={"P0": latest}, released={(s, "P0"): 0 for s in range(CRASH_SUBS)})
    return Recovered(tables=tables, pfs={"P0": pfs}, notes=())


def test_the_crash_check_catches_loss_and_inconsistency() -> None:
    """Non-vacuity of the parent's check: a lower latestDelivered than acknowledged, a
    released(s, p) gone back, or a PFS missing one matching timestamp are all reported."""
    assert PUBENDS[0] == "P0"
    good = _recovered(40)
    assert _check(good, {"latest": {"P0": 40}, "released": {"3,P0": 0}}) == (0, 0)
    assert _check(good, {"latest": {"P0": 41}})[0] == 1
    assert _check(good, {"released": {"3,P0": 5}})[0] == 1
    hole = next(t for t in range(1, 41) if matches("P0", t))
    assert _check(_recovered(40, drop=hole), {})[1] >= 1
