"""One seed in, one row out: the unit of work of every campaign executor.

Theory of operation
-------------------
``seed -> fault schedule (a pure function of seed and configuration) -> simulate -> check
invariants -> one row`` [GD §4.2 by the thousand]. The same function runs in a Spark task,
in a ``multiprocessing`` worker and in a plain loop, so the three agree row for row (except
``wall_s``). Only the configuration's canonical JSON and integers cross process boundaries;
each process resolves the backend by name and caches the spec.

A run that raises is recorded as verdict ``error`` (the explanation names the exception);
a run that exceeds ``timeout_s`` of wall-clock time is stopped with ``SIGALRM`` (where the
task runs on the main thread, as Spark's Python workers do) and recorded as ``timeout``.
"""

from __future__ import annotations

import hashlib
import json
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, Final, final

import attrs

from gapless.spark_fuzz.backend import VERDICTS, Backend, Outcome, load_backend
from gapless.spark_fuzz.config import (
    CampaignConfig,
    canonical_json,
    config_for_seed,
    config_from_json,
)

__all__ = [
    "COLUMNS",
    "SeedResult",
    "prepare",
    "prepare_seed",
    "run_chunk",
    "run_seed",
    "schedule_digest",
]

COLUMNS: Final = (
    "campaign_id",
    "seed",
    "schedule_digest",
    "verdict",
    "invariant",
    "explanation",
    "published",
    "delivered",
    "nacks",
    "nack_range",
    "retransmissions",
    "latency_p50",
    "latency_p99",
    "latency_max",
    "trace_digest",
    "coverage",
    "wall_s",
)
"""The columns of a result row, in order (issue 4 §1)."""


@final
@attrs.frozen(kw_only=True)
class SeedResult:
    """A row (``COLUMNS`` -> value) plus what the summary needs about the schedule."""

    row: dict[str, Any]
    fault_kinds: tuple[str, ...]
    fault_events: int


class _RunTimeout(Exception):
    pass


_PREPARED: dict[str, tuple[CampaignConfig, Backend, Any]] = {}
_PREPARED_MAX: Final = 8
"""Configurations kept per process: a campaign's own and those of its ``mix`` setups."""


def prepare(config_json: str) -> tuple[CampaignConfig, Backend, Any]:
    """``(config, backend, spec)`` for a configuration's canonical JSON, cached per process."""
    hit = _PREPARED.get(config_json)
    if hit is None:
        config = config_from_json(config_json)
        backend = load_backend(config.protocol, config.backend)
        hit = (config, backend, backend.make_spec(config))
        if len(_PREPARED) >= _PREPARED_MAX:
            _PREPARED.clear()
        _PREPARED[config_json] = hit
    return hit


def prepare_seed(config_json: str, seed: int) -> tuple[CampaignConfig, Backend, Any]:
    """:func:`prepare` of the configuration seed ``seed`` runs under: the campaign's own or,
    in a campaign with a ``mix``, the setup the seed draws (:func:`config_for_seed`)."""
    got = prepare(config_json)
    if not got[0].mix:
        return got
    return prepare(canonical_json(config_for_seed(got[0], seed).to_data()))


def schedule_digest(backend: Backend, schedule: Any) -> str:
    """sha256 of the schedule's canonical JSON."""
    return hashlib.sha256(canonical_json(backend.schedule_to_data(schedule)).encode()).hexdigest()


def _alarm(_signum: int, _frame: Any) -> None:
    raise _RunTimeout


def _outcome_row(
    campaign_id: str, seed: int, sdigest: str, outcome: Outcome, wall_s: float
) -> dict[str, Any]:
    verdict = outcome.verdict if outcome.verdict in VERDICTS else "error"
    explanation = outcome.explanation
    if verdict != outcome.verdict:
        explanation = f"backend returned unknown verdict {outcome.verdict!r}: {explanation}"
    return {
        "campaign_id": campaign_id,
        "seed": seed,
        "schedule_digest": sdigest,
        "verdict": verdict,
        "invariant": outcome.invariant,
        "explanation": explanation,
        "published": int(outcome.published),
        "delivered": int(outcome.delivered),
        "nacks": int(outcome.nacks),
        "nack_range": int(outcome.nack_range),
        "retransmissions": int(outcome.retransmissions),
        "latency_p50": float(outcome.latency_p50),
        "latency_p99": float(outcome.latency_p99),
        "latency_max": float(outcome.latency_max),
        "trace_digest": outcome.trace_digest,
        "coverage": json.dumps(dict(sorted(outcome.coverage.items())), separators=(",", ":")),
        "wall_s": wall_s,
    }


def run_seed(config_json: str, seed: int, schedule_data: Any = None) -> SeedResult:
    """Run one seed of the campaign described by ``config_json``; never raises for a failing
    simulation (verdict ``error`` or ``timeout`` instead). ``schedule_data`` (the backend's
    data of a schedule) replaces the one the seed generates (a guided campaign's plan)."""
    config, backend, spec = prepare_seed(config_json, seed)
    started = time.perf_counter()
    kinds: tuple[str, ...] = ()
    n_events = 0
    sdigest = ""
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(
        signal, "setitimer"
    )
    previous: Any = None
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, config.timeout_s)
    try:
        if schedule_data is None:
            schedule = backend.generate_schedule(spec, seed)
        else:
            schedule = backend.schedule_from_data(schedule_data)
        events = backend.schedule_events(schedule)
        n_events = len(events)
        kinds = tuple(sorted({backend.event_kind(e) for e in events}))
        sdigest = schedule_digest(backend, schedule)
        outcome = backend.run(spec, schedule, seed)
    except _RunTimeout:
        outcome = Outcome(
            verdict="timeout",
            explanation=f"the run exceeded timeout_s = {config.timeout_s:g} s of wall-clock time",
        )
    except Exception as exc:  # a crashing simulation is a finding, not a campaign failure
        outcome = Outcome(verdict="error", explanation=f"{type(exc).__name__}: {exc}")
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    wall = time.perf_counter() - started
    if outcome.verdict != "timeout" and wall > config.timeout_s:
        outcome = attrs.evolve(
            outcome,
            verdict="timeout",
            explanation=f"the run took {wall:.3f} s > timeout_s = {config.timeout_s:g} s",
        )
    row = _outcome_row(config.campaign_id, seed, sdigest, outcome, round(wall, 6))
    return SeedResult(row=row, fault_kinds=kinds, fault_events=n_events)


def run_chunk(config_json: str, first: int, last: int) -> list[SeedResult]:
    """Every seed of ``[first, last]`` in order."""
    return [run_seed(config_json, seed) for seed in range(first, last + 1)]


def run_chunks(config_json: str, chunks: Iterable[tuple[int, int]]) -> Iterator[list[SeedResult]]:
    """What a Spark task does with its partition of chunks."""
    for first, last in chunks:
        yield run_chunk(config_json, first, last)
