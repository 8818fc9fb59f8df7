"""The runner API that fuzz campaigns call: spec + seed -> fault schedule -> run -> outcome.

Public API (stable; campaigns in ``gapless.spark_fuzz`` are built on it)
----------------------------------------------------------------------
* :class:`RunSpec` (:mod:`gapless.models.runspec`) — frozen, cattrs-serialisable description
  of a run: ``protocol`` (a name of the registry, :mod:`gapless.models.protocols`),
  ``variant`` (default ``"none"`` = the correct protocol, else a planted bug the protocol
  declares), ``topology`` (one of the protocol's), ``workload``
  (:class:`~gapless.models.workload.WorkloadSpec`),
  ``faults`` (:class:`~gapless.models.faults.FaultProfile`: kinds with rates per simulated
  second, or ``swarm``), ``duration_us`` (publishing and faults), ``drain_us`` (after every
  fault is healed: no faults, no publishing, then liveness is judged), ``invariants`` (names
  from :data:`gapless.invariants.INVARIANTS`; empty = all), ``online`` (check while running;
  off = check once at the end over the recorded trace), ``config`` (overrides of the
  protocol's configuration fields, as ``(name, value)`` pairs), ``max_events`` (a
  deterministic event budget; exceeding it gives verdict ``timeout``).
* :func:`generate_schedule` ``(spec, seed) -> FaultSchedule`` — pure.
* :func:`run` ``(spec, schedule, seed, *, record_trace=False) -> RunOutcome`` — deterministic:
  the same input gives the same ``trace_digest`` in any process under any ``PYTHONHASHSEED``.
* :class:`RunOutcome` — ``verdict`` (one of :data:`VERDICTS`: 'pass' | 'violation' |
  'out_of_budget' | 'error' | 'timeout'),
  ``invariant`` (name or None), ``explanation`` (text), ``counters``
  (:class:`~gapless.impl.trace.Counters`, with latency p50/p99/max in µs), ``trace_digest``
  (of ``digest_version``), ``coverage`` (sorted ``(label, count)`` pairs, counted beside the
  trace), ``violation``, ``trace`` (when recorded),
  ``events`` (simulator events processed), ``end_time_us``, ``fault_kinds``.
* Shrink helpers: :func:`without_event` (the schedule without event i; the other events keep
  their own random streams), :func:`with_duration` (a shorter run; the schedule is clipped by
  :func:`clip_schedule`), :func:`with_max_messages` (a shorter workload).
* Serialisation: :func:`spec_to_dict` / :func:`spec_from_dict` (validated against the
  registry, clear messages), :func:`outcome_to_dict` (JSON-ready summary without the trace).
* :func:`run_scenario` — a registered scenario, run with its trace recorded and read, or its
  figures folded online (``Scenario.fold``) without holding the trace.

Caller misuse (a spec naming something unknown) raises
:class:`~gapless.models.runspec.RunSpecError` before any work; anything a role raises
becomes the verdict ``error``.
"""

from __future__ import annotations

import traceback
from typing import Any

import attrs

from gapless.impl.errors import GaplessError
from gapless.impl.trace import Counters, TraceRecord
from gapless.models.faults import (
    FaultSchedule,
    Targets,
    generate,
    without_event,
)
from gapless.models.protocols import PROTOCOLS, protocol, scenario
from gapless.models.registry import Scenario
from gapless.models.run import Run, simulate, validate_spec
from gapless.models.runspec import (
    VERDICTS,
    RunOutcome,
    RunSpec,
    RunSpecError,
    spec_to_dict,
)
from gapless.models.runspec import spec_from_dict as _structure
from gapless.models.topology import brokers, links
from gapless.models.workload import generate_workload

__all__ = [
    "PROTOCOLS",
    "VERDICTS",
    "RunOutcome",
    "RunSpec",
    "RunSpecError",
    "clip_schedule",
    "fault_targets",
    "generate_schedule",
    "outcome_to_dict",
    "resolve_policy",
    "run",
    "run_scenario",
    "spec_from_dict",
    "spec_to_dict",
    "with_duration",
    "with_max_messages",
    "without_event",
]


def resolve_policy(protocol_name: str, variant: str) -> Any:
    """The policy of ``variant`` of ``protocol_name`` (``"none"`` = the paper's)."""
    return protocol(protocol_name).policy(variant)


def _targets(spec: RunSpec) -> Targets:
    g = validate_spec(spec).topology(spec.topology)
    wl = generate_workload(spec.workload, g, duration_us=1, seed=0)
    return Targets(
        brokers=brokers(g),
        links=links(g),
        subscribers=tuple(s.name for s in wl.subscriptions),
        joiners=tuple(g.graph.get("joiners", ())),
        units=tuple(g.graph.get("units", ())),
    )


def fault_targets(spec: RunSpec) -> Targets:
    """What the faults of a run of ``spec`` can hit: brokers, links, subscribers, the
    brokers that join during the run (the topology's ``graph.graph["joiners"]``, if any) and
    the units that may fail whole (its ``graph.graph["units"]``, if any)."""
    return _targets(spec)


def generate_schedule(spec: RunSpec, seed: int) -> FaultSchedule:
    """The fault schedule for ``seed`` (a pure function of ``spec.faults``, the topology,
    the subscribers, ``spec.duration_us`` and ``seed``)."""
    return generate(spec.faults, _targets(spec), duration_us=spec.duration_us, seed=seed)


def clip_schedule(schedule: FaultSchedule, duration_us: int) -> FaultSchedule:
    """The events of ``schedule`` that start before ``duration_us`` (others unchanged)."""
    return attrs.evolve(schedule, events=tuple(e for e in schedule.events if e.at_us < duration_us))


def with_duration(spec: RunSpec, duration_us: int) -> RunSpec:
    """``spec`` with a shorter (or longer) publishing-and-faults phase."""
    return attrs.evolve(spec, duration_us=duration_us)


def with_max_messages(spec: RunSpec, max_messages: int | None) -> RunSpec:
    """``spec`` whose pubends each publish at most ``max_messages`` messages."""
    return attrs.evolve(spec, workload=attrs.evolve(spec.workload, max_messages=max_messages))


def spec_from_dict(data: dict[str, Any]) -> RunSpec:
    """A validated :class:`RunSpec` (structure, then every name against the registry); bad
    input raises :class:`~gapless.models.runspec.RunSpecError` naming the problem."""
    spec = _structure(data)
    validate_spec(spec)
    return spec


def outcome_to_dict(outcome: RunOutcome) -> dict[str, Any]:
    """A JSON-ready summary of ``outcome`` (no trace, violation as its explanation)."""
    c = outcome.counters
    return {
        "verdict": outcome.verdict,
        "invariant": outcome.invariant,
        "explanation": outcome.explanation,
        "published": c.published,
        "delivered": c.delivered,
        "nacks": c.nacks,
        "nack_range": c.nack_range_us,
        "retransmissions": c.retransmissions,
        "latency_p50": c.latency_p50_us,
        "latency_p99": c.latency_p99_us,
        "latency_max": c.latency_max_us,
        "trace_digest": outcome.trace_digest,
        "coverage": dict(outcome.coverage),
        "events": outcome.events,
        "end_time_us": outcome.end_time_us,
        "fault_kinds": list(outcome.fault_kinds),
        "digest_version": outcome.digest_version,
    }


def run(
    spec: RunSpec, schedule: FaultSchedule, seed: int, *, record_trace: bool = False
) -> RunOutcome:
    """Simulate ``spec`` under ``schedule`` with ``seed`` and judge it (see module doc).

    A spec naming something unknown raises :class:`RunSpecError` (caller misuse); an
    exception inside a role gives verdict ``error`` with the traceback's last lines."""
    validate_spec(spec)
    try:
        return simulate(spec, schedule, seed, record_trace=record_trace)
    except RunSpecError:
        raise
    except GaplessError as exc:
        return _error_outcome(exc)
    except Exception as exc:
        return _error_outcome(exc)


def run_scenario(
    name: str, *, keep_trace: bool = True
) -> tuple[Scenario, RunOutcome, dict[str, Any]]:
    """Run the registered scenario ``name``; returns it, the outcome and its figures (with
    ``pass_marks`` and ``pass``). A scenario with a ``fold`` has its figures computed online
    (the fold sees every record as the run emits it); then without ``keep_trace`` the run
    holds no trace, and the outcome's ``trace`` is only what the fold kept for a plot
    (``fold.kept()``). Otherwise the whole trace is recorded and read."""
    sc = scenario(name)
    graph = protocol(sc.protocol).topology(sc.spec.topology)
    if sc.fold is None:
        outcome = simulate(sc.spec, sc.schedule, 0, record_trace=True)
        m = sc.figures(sc, outcome, brokers(graph))
    else:
        fold = sc.fold()
        run = Run(sc.spec, sc.schedule, 0, record_trace=keep_trace)
        judge = run.world.observer
        if judge is not None:  # online: the fold reads each record beside the checker

            def observe(r: TraceRecord) -> bool:
                fold.add(r)
                stop: bool = judge(r)
                return stop

            run.world.observer = observe
        run.world.run(duration_us=sc.spec.duration_us, drain_us=sc.spec.drain_us)
        outcome = run.outcome()
        if judge is None:  # offline: the world recorded every record
            for r in run.world.records:
                fold.add(r)
        m = fold.figures(sc, outcome, brokers(graph))
        if not keep_trace:
            outcome = attrs.evolve(outcome, trace=fold.kept())
    m["pass_marks"] = sc.pass_marks(name, m)
    m["pass"] = all(m["pass_marks"].values())
    return sc, outcome, m


def _error_outcome(exc: BaseException) -> RunOutcome:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return RunOutcome(
        verdict="error",
        invariant=None,
        explanation=f"{type(exc).__name__}: {exc}\n{tb}",
        counters=Counters(),
        trace_digest="",
        coverage=(),
    )
