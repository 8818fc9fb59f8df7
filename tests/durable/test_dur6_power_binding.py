"""Power loss in the running network [issue 13 §4]: with ``power_loss`` (topology
``dur-two-power``, ``campaigns/durable-power.toml``) each SHB's storage effects run on the real
store's code (checksummed segment files, ``LogStore``) over a simulated disk, and an SHB crash
is a power loss. The correct protocol stays clean (every durable invariant, no loss at the end);
the planted store bug "acknowledge before fsync" ends a run with recovery refusing, naming the
segment file and offset; the same seed gives the same trace; and the in-memory store, the log
store over the simulated disk and the log store on real files with SQLite give the same
observable trace (a differential test)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from gapless.models.durable_binding import DurableBinding
from gapless.models.durable_store import LogStore, Recovered
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import build, simulate
from gapless.models.runner import run
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec
from gapless.spark_fuzz.config import load_config
from gapless.spark_fuzz.runner_backend import RunnerBackend

_S = 1_000_000
CAMPAIGN = Path(__file__).resolve().parents[2] / "campaigns" / "durable-power.toml"


def _spec(**config: object) -> RunSpec:
    return RunSpec(
        protocol="durable",
        topology="dur-two-power",
        workload=WorkloadSpec(rate_per_pubend=40.0, subscribers_per_shb=3, filters="keys", keys=4),
        duration_us=5 * _S,
        drain_us=3 * _S,
        config=tuple(sorted(config.items())),
    )


def _crashes(every_us: int) -> FaultSchedule:
    """Both SHBs crash in turn, down 200 ms each time; a subscriber is away meanwhile."""
    events = [
        FaultEvent(kind="disconnect", target="shb1.u0", at_us=_S, duration_us=_S, stream=0),
    ]
    at, k = 600_000, 1
    while at < 4_500_000:
        shb = ("shb1", "shb2")[k % 2]
        events.append(FaultEvent(kind="crash", target=shb, at_us=at, duration_us=200_000, stream=k))
        at, k = at + every_us, k + 1
    return FaultSchedule(seed=0, events=tuple(events))


def test_the_topology_puts_the_shbs_on_a_simulated_disk() -> None:
    _entry, _graph, _workload, binding = build(_spec(), 0)
    binding.initial_states()  # type: ignore[attr-defined]
    stores = binding.stores  # type: ignore[attr-defined]
    assert set(stores) == {"shb1", "shb2"}
    assert all(isinstance(s, LogStore) for s in stores.values())


def test_power_losses_leave_the_protocol_clean_and_deterministic() -> None:
    sched = _crashes(700_000)
    out = simulate(_spec(), sched, 3, record_trace=True)
    assert out.verdict == "pass", out.explanation
    crashes = [
        r
        for r in out.trace
        if r.kind == "fault" and (r.detail.kind, r.detail.phase) == ("crash", "start")
    ]
    assert len(crashes) >= 5
    again = simulate(_spec(), sched, 3, record_trace=True)
    assert again.trace_digest == out.trace_digest
    other = simulate(_spec(power_seed=7), sched, 3)
    assert other.verdict == "pass", other.explanation


def test_acknowledge_before_fsync_is_caught_in_the_network() -> None:
    """Non-vacuity: the same schedule with the store acknowledging each PFS sync before its
    fsync; some power loss drops a record the tables say was synced, and recovery refuses."""
    sched = _crashes(700_000)
    verdicts = []
    for power_seed in range(4):
        out = run(_spec(store_ack_before_fsync=True, power_seed=power_seed), sched, 3)
        verdicts.append(out.verdict)
        if out.verdict == "error":
            assert "CorruptLog" in out.explanation, out.explanation
            assert "synced are missing" in out.explanation, out.explanation
    assert "error" in verdicts, verdicts


def test_the_power_campaign_passes_its_first_schedules() -> None:
    """``campaigns/durable-power.toml`` through the fuzz backend: its first two schedules
    (crashes among their faults) pass."""
    cfg = load_config(CAMPAIGN, check_backend=False)
    backend = RunnerBackend("durable")
    spec = backend.make_spec(cfg)
    assert spec.topology == "dur-two-power"
    crashed = 0
    for seed in (1, 2):
        sched = backend.generate_schedule(spec, seed)
        crashed += sum(e.kind == "crash" for e in sched.events)
        out = backend.run(spec, sched, seed)
        assert out.verdict == "pass", (seed, out.explanation)
    assert crashed > 0


def test_the_stores_give_the_same_observable_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential [issue 13 §4]: the same run, SHB crashes included, with the SHBs' storage
    effects carried out by the in-memory store, by the log store over a simulated disk whose
    crashes are power losses, and by the log store on real files and SQLite (restarted from
    disk at each crash): the same trace digest."""
    sched = _crashes(700_000)
    memory = simulate(attrs.evolve(_spec(), topology="dur-two-early"), sched, 3)
    sim = simulate(_spec(), sched, 3)

    def real_store(self: DurableBinding, n: str) -> LogStore:
        store, _got = LogStore.open(str(tmp_path / n), segment_records=256)
        return store

    def real_restart(self: DurableBinding, n: str) -> tuple[LogStore, Recovered]:
        old = self.stores[n]
        assert isinstance(old, LogStore)
        return old.restart()

    monkeypatch.setattr(DurableBinding, "_new_store", real_store)
    monkeypatch.setattr(DurableBinding, "_restart_store", real_restart)
    real = simulate(_spec(), sched, 3)
    assert memory.verdict == sim.verdict == real.verdict == "pass"
    assert memory.trace_digest == sim.trace_digest == real.trace_digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shb1", "shb2"]
    assert any((tmp_path / "shb1" / "pfs").iterdir())  # segment files were written
