"""The runner API that fuzz campaigns call: spec + seed -> fault schedule -> run -> outcome.

Public API (stable; campaigns in ``gapless.spark_fuzz`` are built on it)
----------------------------------------------------------------------
* :class:`RunSpec` — frozen, cattrs-serialisable description of a run: ``protocol`` ("gd"),
  ``variant`` (a protocol-variant name, default ``"none"`` = the correct protocol; resolved
  with ``gapless.spark_fuzz.zoo.policy_by_name`` when that module exists), ``topology``
  ("fig3", "total-order", "two-broker"), ``workload``
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
* :class:`RunOutcome` — ``verdict`` ('pass' | 'violation' | 'error' | 'timeout'),
  ``invariant`` (name or None), ``explanation`` (text), ``counters``
  (:class:`~gapless.impl.trace.Counters`, with latency p50/p99/max in µs), ``trace_digest``,
  ``coverage`` (sorted ``(label, count)`` pairs), ``violation``, ``trace`` (when recorded),
  ``events`` (simulator events processed), ``end_time_us``, ``fault_kinds``.
* Shrink helpers: :func:`without_event` (the schedule without event i; the other events keep
  their own random streams), :func:`with_duration` (a shorter run; the schedule is clipped by
  :func:`clip_schedule`), :func:`with_max_messages` (a shorter workload).
* Serialisation: :func:`spec_to_dict` / :func:`spec_from_dict` (validated, clear messages),
  :func:`outcome_to_dict` (JSON-ready summary without the trace).
"""

from __future__ import annotations

import importlib
import traceback
from typing import Any, Final, final

import attrs
import cattrs

from gapless.impl.errors import GaplessError, ProtocolMisuse
from gapless.impl.trace import Counters, TraceRecord
from gapless.invariants.violation import Violation
from gapless.models.faults import (
    FaultProfile,
    FaultSchedule,
    Targets,
    generate,
    without_event,
)
from gapless.models.topology import TOPOLOGIES, brokers, links, topology
from gapless.models.workload import WorkloadSpec, generate_workload

__all__ = [
    "PROTOCOLS",
    "VERDICTS",
    "RunOutcome",
    "RunSpec",
    "clip_schedule",
    "fault_targets",
    "generate_schedule",
    "outcome_to_dict",
    "resolve_policy",
    "run",
    "spec_from_dict",
    "spec_to_dict",
    "with_duration",
    "with_max_messages",
    "without_event",
]

PROTOCOLS: Final = ("gd",)
VERDICTS: Final = ("pass", "violation", "error", "timeout")


@final
@attrs.frozen(kw_only=True)
class RunSpec:
    """Everything but the seed and the schedule that determines a run (see module doc)."""

    protocol: str = "gd"
    variant: str = "none"
    topology: str = "fig3"
    workload: WorkloadSpec = attrs.field(factory=WorkloadSpec)
    faults: FaultProfile = attrs.field(factory=FaultProfile)
    duration_us: int = 20_000_000
    drain_us: int = 15_000_000
    invariants: tuple[str, ...] = ()
    online: bool = True
    config: tuple[tuple[str, Any], ...] = ()
    max_events: int = 5_000_000

    def __attrs_post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ProtocolMisuse(
                f"RunSpec: protocol {self.protocol!r} is unknown; allowed: {', '.join(PROTOCOLS)}"
            )
        if self.topology not in TOPOLOGIES:
            raise ProtocolMisuse(
                f"RunSpec: topology {self.topology!r} is unknown; allowed: "
                f"{', '.join(sorted(TOPOLOGIES))}"
            )
        if self.duration_us <= 0 or self.drain_us < 0 or self.max_events <= 0:
            raise ProtocolMisuse(
                "RunSpec: need duration_us > 0, drain_us >= 0, max_events > 0; got "
                f"{self.duration_us}, {self.drain_us}, {self.max_events}"
            )
        from gapless.invariants import INVARIANTS

        unknown = [n for n in self.invariants if n not in INVARIANTS]
        if unknown:
            raise ProtocolMisuse(
                f"RunSpec: invariants {unknown!r} are unknown; allowed: {', '.join(INVARIANTS)}"
            )


@final
@attrs.frozen(kw_only=True)
class RunOutcome:
    """The result of one run (see module doc)."""

    verdict: str
    invariant: str | None
    explanation: str
    counters: Counters
    trace_digest: str
    coverage: tuple[tuple[str, int], ...]
    violation: Violation | None = None
    trace: tuple[TraceRecord, ...] | None = None
    events: int = 0
    end_time_us: int = 0
    fault_kinds: tuple[str, ...] = ()

    @property
    def latency_p50_us(self) -> int | None:
        return self.counters.latency_p50_us

    @property
    def latency_p99_us(self) -> int | None:
        return self.counters.latency_p99_us

    @property
    def latency_max_us(self) -> int | None:
        return self.counters.latency_max_us


def resolve_policy(protocol: str, variant: str) -> Any:
    """The protocol policy value of ``variant`` ("none" = the paper's)."""
    if protocol != "gd":
        raise ProtocolMisuse(f"resolve_policy: protocol {protocol!r} unknown; allowed: gd")
    gd = importlib.import_module("gapless.impl.gd")
    if variant == "none":
        return gd.PAPER_POLICY
    try:
        zoo = importlib.import_module("gapless.spark_fuzz.zoo")
    except ModuleNotFoundError as exc:
        raise ProtocolMisuse(
            f"resolve_policy: variant {variant!r} needs gapless.spark_fuzz.zoo ({exc})"
        ) from exc
    return zoo.policy_by_name(variant)


def _targets(spec: RunSpec) -> Targets:
    g = topology(spec.topology)
    wl = generate_workload(spec.workload, g, duration_us=1, seed=0)
    return Targets(
        brokers=brokers(g),
        links=links(g),
        subscribers=tuple(s.name for s in wl.subscriptions),
    )


def fault_targets(spec: RunSpec) -> Targets:
    """What the faults of a run of ``spec`` can hit: brokers, links, subscribers."""
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


_converter = cattrs.Converter()


def spec_to_dict(spec: RunSpec) -> dict[str, Any]:
    """Plain data for ``spec`` (JSON/TOML-ready)."""
    data: dict[str, Any] = _converter.unstructure(spec)
    return data


def spec_from_dict(data: dict[str, Any]) -> RunSpec:
    """A validated :class:`RunSpec`; bad input raises ``ProtocolMisuse`` naming the problem."""
    try:
        return _converter.structure(data, RunSpec)
    except GaplessError:
        raise
    except cattrs.BaseValidationError as exc:
        msgs = "; ".join(cattrs.transform_error(exc))
        raise ProtocolMisuse(f"spec_from_dict: invalid run spec: {msgs}") from exc
    except (TypeError, ValueError, KeyError) as exc:
        raise ProtocolMisuse(f"spec_from_dict: invalid run spec: {exc}") from exc


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
    }


def run(
    spec: RunSpec, schedule: FaultSchedule, seed: int, *, record_trace: bool = False
) -> RunOutcome:
    """Simulate ``spec`` under ``schedule`` with ``seed`` and judge it (see module doc).

    Never raises for a protocol bug: an exception inside a role gives verdict ``error`` with
    the traceback's last lines as explanation."""
    from gapless.models.world import simulate

    try:
        outcome: RunOutcome = simulate(spec, schedule, seed, record_trace=record_trace)
        return outcome
    except GaplessError as exc:
        if isinstance(exc, ProtocolMisuse) and str(exc).startswith("RunSpec"):
            raise
        return _error_outcome(exc)
    except Exception as exc:
        return _error_outcome(exc)


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
