"""Group commit at the pubend (``GDConfig.group_commit``, issue 17) [GD §2.2, §4.1]: one log
write per batch, the same messages published in the same order as per-message writes, and
the invariants' ``logged`` decoding of a batch."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from gapless.impl.effects import Persist, Send, deliveries
from gapless.impl.gd import (
    GDConfig,
    Knowledge,
    LogBatch,
    LogRecord,
    NodeState,
    crash,
    handle,
    initial_states,
    logged,
    logged_batch,
    two_broker,
)
from gapless.impl.inputs import Persisted, Publish, Restart
from gapless.invariants.tracefile import check_trace_file, write_trace
from gapless.models.faults import FaultSchedule
from gapless.models.gd_binding import check_context
from gapless.models.gd_protocol import ENTRY as GD_ENTRY
from gapless.models.run import run_context, simulate
from gapless.models.runner import RunSpec
from gapless.models.workload import WorkloadSpec
from gapless.spark_fuzz.backend import load_backend
from gapless.spark_fuzz.config import load_config
from gapless.spec.filters import reference_matcher

GC = GDConfig(group_commit=True)
_S = 1_000_000
ROOT = Path(__file__).resolve().parents[2]


def boot(config: GDConfig = GC) -> NodeState:
    st, _ = handle(initial_states(two_broker({"a": "*"}), config)["phb"], Restart(), 0)
    return st


def persists(eff: tuple[Any, ...]) -> list[Persist]:
    return [e for e in eff if isinstance(e, Persist)]


def published(eff: tuple[Any, ...]) -> list[int]:
    return [e.msg.data.tick for e in eff if isinstance(e, Send) and isinstance(e.msg, Knowledge)]


def test_messages_wait_for_the_write_in_flight_and_go_out_in_one_batch() -> None:
    st = boot()
    st, eff = handle(st, Publish(pubend="P0", attributes={"x": 1}), 1_000)
    (first,) = persists(eff)
    assert isinstance(first.value, LogBatch)
    assert len(first.value.records) == 1
    t0 = first.value.records[0].data.tick
    assert first.key == ("gd-log", "P0", t0, t0)
    # two more while the first write is in flight: no write of their own
    st, eff = handle(st, Publish(pubend="P0", attributes={"x": 2}), 2_000)
    assert persists(eff) == []
    st, eff = handle(st, Publish(pubend="P0", attributes={"x": 3}), 3_000)
    assert persists(eff) == []
    before = st
    snapshot = attrs.asdict(before, recurse=False)
    st, eff = handle(st, Persisted(key=first.key), 101_000)
    # the first message is published; the two waiting ones are written together
    assert published(eff) == [t0]
    (second,) = persists(eff)
    assert isinstance(second.value, LogBatch)
    ticks = [r.data.tick for r in second.value.records]
    assert len(ticks) == 2
    assert ticks == sorted(ticks)
    assert ticks[0] > t0
    assert second.key == ("gd-log", "P0", ticks[0], ticks[1])
    assert [t for _p, t, _a in logged_batch(second)] == ticks
    assert logged(second) is None  # a batch is not one message
    # the old state never changed
    assert attrs.asdict(before, recurse=False) == snapshot
    st, eff = handle(st, Persisted(key=second.key), 201_000)
    assert published(eff) == ticks
    assert persists(eff) == []
    assert [t for t, _d in st.log["P0"].entries] == [t0, *ticks]
    assert not st.pending
    assert not st.writing
    # a repeated completion changes nothing: the same object, no effects
    again, eff = handle(st, Persisted(key=second.key), 202_000)
    assert again is st
    assert eff == ()


def test_a_batch_completing_after_a_crash_is_ignored() -> None:
    st = boot()
    st, eff = handle(st, Publish(pubend="P0", attributes={"x": 1}), 1_000)
    (write,) = persists(eff)
    st, _ = handle(crash(st), Restart(), 50_000)
    assert not st.writing
    assert not st.pending
    st2, eff = handle(st, Persisted(key=write.key), 101_000)
    assert st2 is st
    assert eff == ()


def test_a_per_message_write_is_not_taken_for_a_batch() -> None:
    st = boot(GDConfig())
    st, eff = handle(st, Publish(pubend="P0", attributes={"x": 1}), 1_000)
    (write,) = persists(eff)
    assert isinstance(write.value, LogRecord)
    assert len(write.key) == 3
    t = write.value.data.tick
    assert logged_batch(write) == (logged(write),)
    # a batch key at a pubend without group commit is not a write it issued
    st2, eff = handle(st, Persisted(key=("gd-log", "P0", t, t)), 101_000)
    assert st2 is st
    assert eff == ()


def _run(group_commit: bool, seed: int, entry: Any = None) -> tuple[Any, dict[Any, list[int]], int]:
    spec = RunSpec(
        topology="fig3",
        workload=WorkloadSpec(rate_per_pubend=25.0, size=100, subscribers_per_shb=2),
        duration_us=4 * _S,
        drain_us=2 * _S,
        online=True,
        config=(("group_commit", group_commit),),
    )
    out = simulate(spec, FaultSchedule(seed=seed), seed, record_trace=True, entry=entry)
    got: dict[Any, list[int]] = {}
    for r in out.trace or ():
        if r.kind == "deliver":
            for d in deliveries(r.detail):
                got.setdefault((d.subscriber, d.pubend), []).append(d.tick)
    writes = sum(1 for r in out.trace or () if r.kind == "persist")
    return out, got, writes


@pytest.mark.parametrize("seed", [1, 2])
def test_group_commit_delivers_what_per_message_writes_deliver(seed: int) -> None:
    """Differential, without faults: the same messages reach the same subscribers in the
    same order, with fewer log writes, and every invariant holds on both."""
    out_one, got_one, writes_one = _run(False, seed)
    out_gc, got_gc, writes_gc = _run(True, seed)
    assert out_one.verdict == out_gc.verdict == "pass"
    assert got_gc == got_one
    assert sum(map(len, got_one.values())) > 100
    assert writes_gc < writes_one


def test_group_commit_under_the_demo_campaigns_faults() -> None:
    """Crashes, stalls, lost and duplicated messages: every invariant holds with group
    commit on, over the demo campaign's first schedules."""
    config = load_config(ROOT / "campaigns" / "demo.toml", {"duration_s": 3.0})
    backend = load_backend(config.protocol, config.backend)
    spec = backend.make_spec(config)
    spec = attrs.evolve(spec, config=(*spec.config, ("group_commit", True)))
    faults = 0
    for seed in list(config.seeds())[:4]:
        schedule = backend.generate_schedule(spec, seed)
        faults += len(schedule.events)
        out = simulate(spec, schedule, seed)
        assert out.verdict == "pass", (seed, out.invariant, out.explanation)
    assert faults > 0


def test_the_checker_needs_the_batch_decoding() -> None:
    """Non-vacuity of the ``logged`` batch decoding: a checker that reads only per-message
    writes does not see a batch's messages as logged, and the invariants flag the first
    one sent (``no_e``: data the pubend never logged [GD §2.1])."""

    def per_message_only(*args: Any, **kw: Any) -> Any:
        return attrs.evolve(check_context(*args, **kw), logged_batch=None)

    blind = attrs.evolve(GD_ENTRY, context=per_message_only)
    out, _got, _writes = _run(True, 1, entry=blind)
    assert out.verdict == "violation"
    assert out.invariant == "no_e", out.explanation
    out_ok, _g, _w = _run(True, 1, entry=GD_ENTRY)
    assert out_ok.verdict == "pass"


def test_a_group_commit_trace_file_is_judged_as_the_run_was(tmp_path: Path) -> None:
    """A group-commit run's trace file carries each batch (``detail.batch``), so ``gapless
    check`` judges it as the online checker did; with the batches stripped from the file the
    invariants flag the first message sent (``no_e``), so the field is what makes it pass."""
    spec = RunSpec(
        topology="fig3",
        workload=WorkloadSpec(rate_per_pubend=25.0, size=100, subscribers_per_shb=2),
        duration_us=2 * _S,
        drain_us=2 * _S,
        config=(("group_commit", True),),
    )
    out = simulate(spec, FaultSchedule(seed=1), 1, record_trace=True)
    assert out.verdict == "pass"
    path = tmp_path / "gc.jsonl"
    write_trace(path, run_context(spec, 1), out.trace or (), live_end=True)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    batches = [x for x in lines if x.get("kind") == "persist" and "batch" in x.get("detail", {})]
    assert batches, "the run wrote at least one batch of several messages"
    _tf, violation = check_trace_file(path, matches=reference_matcher())
    assert violation is None
    stripped = tmp_path / "stripped.jsonl"
    text = path.read_text(encoding="utf-8").replace('"batch":', '"unread_batch":')
    body = text.splitlines()[:-1]
    digest = hashlib.sha256("".join(x + "\n" for x in body).encode("utf-8")).hexdigest()
    end = json.dumps({"end": {"records": len(body) - 1, "sha256": digest}})
    stripped.write_text("".join(x + "\n" for x in [*body, end]), encoding="utf-8")
    _tf, violation = check_trace_file(stripped, matches=reference_matcher())
    assert violation is not None
    assert violation.invariant == "no_e"
