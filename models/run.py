"""One whole run: a spec and a seed built into a world, its checker and counters, then judged.

Theory of operation
-------------------
:func:`build` turns a :class:`~gapless.models.runspec.RunSpec` and a seed into the protocol's
registry entry (:mod:`gapless.models.protocols`), the topology graph, the workload and the
binding. :class:`Run` wires a :class:`~gapless.models.world.World` (the event engine) to the
protocol's checker and the run counters; :func:`simulate` drives it to the end and judges it.
:func:`run_context` rebuilds only the checker's context — what a trace file needs besides its
records (``gapless.invariants.tracefile``).

Fault budget: when the protocol declares one (``ProtocolEntry.within_budget``), the run
watches the active faults after every fault phase change. From the first moment the schedule
leaves the budget, only the protocol's safety invariants judge; a run that left it and broke
no safety invariant gets the verdict ``out_of_budget`` (never a false violation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, final

import networkx as nx

from gapless.impl.effects import Deliver
from gapless.impl.trace import CountersBuilder, TraceRecord
from gapless.models.binding import Binding
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.protocols import protocol
from gapless.models.registry import ProtocolEntry
from gapless.models.runspec import RunOutcome, RunSpec, RunSpecError
from gapless.models.workload import Workload, generate_workload
from gapless.models.world import World
from gapless.spec.filters import reference_matcher as spec_matcher

__all__ = ["Run", "build", "reference_matcher", "run_context", "simulate", "validate_spec"]


def reference_matcher() -> Callable[[str, Any], bool]:
    """The ``spec`` reference filter evaluator (``gapless.spec.filters``) as
    ``matches(filter_text, attributes)``, each filter compiled once."""
    return spec_matcher()


def validate_spec(spec: RunSpec) -> ProtocolEntry:
    """The registry entry of ``spec.protocol``, after checking every name the spec uses
    against it (protocol, variant, topology, invariants, config keys); raises
    :class:`~gapless.models.runspec.RunSpecError` naming what is wrong and what is allowed."""
    try:
        entry = protocol(spec.protocol)
    except Exception as exc:
        raise RunSpecError(f"RunSpec: {exc}") from exc
    if spec.topology not in entry.topologies:
        raise RunSpecError(
            f"RunSpec: topology {spec.topology!r} is unknown; allowed: "
            f"{', '.join(sorted(entry.topologies))}"
        )
    unknown = [n for n in spec.invariants if n not in entry.invariants]
    if unknown:
        raise RunSpecError(
            f"RunSpec: invariants {unknown!r} are unknown; allowed: {', '.join(entry.invariants)}"
        )
    try:
        entry.policy(spec.variant)
    except Exception as exc:
        raise RunSpecError(f"RunSpec: {exc}") from exc
    return entry


def build(
    spec: RunSpec, seed: int, binding: Binding | None = None, entry: ProtocolEntry | None = None
) -> tuple[ProtocolEntry, nx.Graph, Workload, Binding]:
    """The registry entry, topology, workload and binding of the run of ``spec`` with
    ``seed`` (``binding`` or ``entry`` given: used as they are, e.g. a test's toy protocol
    that is not registered)."""
    if entry is None:
        entry = validate_spec(spec)
    graph = entry.topology(spec.topology)
    workload = generate_workload(spec.workload, graph, duration_us=spec.duration_us, seed=seed)
    if binding is None:
        binding = entry.make_binding(spec, graph, workload)
    return entry, graph, workload, binding


def run_context(spec: RunSpec, seed: int, *, binding: Binding | None = None) -> Any:
    """The checker's context of the run of ``spec`` with ``seed``, rebuilt
    deterministically (topology, workload, binding)."""
    entry, graph, workload, binding = build(spec, seed, binding)
    return entry.context(graph, workload, binding, reference_matcher())


@final
class Run:
    """A world wired to its checker and counters (what :func:`simulate` drives; stateful
    tests drive it step by step)."""

    def __init__(
        self,
        spec: RunSpec,
        schedule: FaultSchedule,
        seed: int,
        *,
        record_trace: bool = False,
        binding: Binding | None = None,
        matches: Callable[[str, Any], bool] | None = None,
        entry: ProtocolEntry | None = None,
    ) -> None:
        self.spec = spec
        self.schedule = schedule
        self.record_trace = record_trace
        entry, graph, workload, binding = build(spec, seed, binding, entry)
        self.entry = entry
        self.graph = graph
        self.binding = binding
        self.out_of_budget = False
        ctx = entry.context(graph, workload, binding, matches or reference_matcher())
        self.checker = checker = entry.checker(ctx, spec.invariants)
        self.online = online = bool(spec.online)

        def publish_time(d: Deliver) -> int | None:
            got: int | None = checker.publish_time(d.pubend, d.tick)
            return got

        self.counting = counting = CountersBuilder(publish_time)

        def observe(r: TraceRecord) -> bool:
            stop: bool = checker.observe(r)
            counting.add(r)
            return stop

        self.world = World(
            graph=graph,
            workload=workload,
            schedule=schedule,
            seed=seed,
            binding=binding,
            observer=observe if online else None,
            record=record_trace or not online,
            max_events=spec.max_events,
            link_delay_us=spec.link_delay_us,
            link_jitter_us=spec.link_jitter_us,
        )
        # the per-step state check runs only while an invariant that reads its records is
        # judged (models.world, ProtocolEntry.state_checked); no invariants named: all are
        self.world.check_forms = any(
            not spec.invariants or n in spec.invariants for n in entry.state_checked
        )
        if entry.within_budget is not None:
            self.world.fault_hook = self._budget

    def _budget(self, active: tuple[FaultEvent, ...]) -> None:
        within = self.entry.within_budget
        if self.out_of_budget or within is None or within(self.graph, active):
            return
        self.out_of_budget = True
        self.checker.restrict(self.entry.safety_invariants)

    def outcome(self) -> RunOutcome:
        """Judge the run as it stands (offline checking and liveness included)."""
        world, checker, spec = self.world, self.checker, self.spec
        records = world.records
        if not self.online:  # offline: judge the recorded trace now, with the same checker
            for r in records:
                checker.observe(r)
                self.counting.add(r)
        end = TraceRecord(seq=world._rseq, time=world.now, node="-", kind="fault", detail="end")
        timed_out = world.timed_out and checker.violation is None
        violation = checker.violation
        if violation is None and not timed_out:
            violation = checker.finish(end)
        counters = self.counting.counters()
        if violation is not None:
            verdict, inv, expl = "violation", violation.invariant, violation.explain()
        elif timed_out:
            verdict, inv, expl = (
                "timeout",
                None,
                f"event budget {spec.max_events} exhausted at {world.now}µs",
            )
        elif self.out_of_budget:
            verdict, inv, expl = (
                "out_of_budget",
                None,
                "the fault schedule left the protocol's fault budget; judged on safety "
                f"({', '.join(self.entry.safety_invariants)}) alone, which held",
            )
        else:
            verdict, inv, expl = "pass", None, ""
        return RunOutcome(
            verdict=verdict,
            invariant=inv,
            explanation=expl,
            counters=counters,
            trace_digest=world.digest.hexdigest(),
            coverage=tuple(sorted(world.coverage.items())),
            violation=violation,
            trace=tuple(records) if self.record_trace else None,
            events=world.events,
            end_time_us=world.now,
            fault_kinds=tuple(sorted({e.kind for e in world.fault_events})),
        )


def simulate(
    spec: RunSpec,
    schedule: FaultSchedule,
    seed: int,
    *,
    record_trace: bool = False,
    binding: Binding | None = None,
    matches: Callable[[str, Any], bool] | None = None,
    entry: ProtocolEntry | None = None,
) -> RunOutcome:
    """Run ``spec`` and judge it. ``binding`` and ``matches`` default to the spec's protocol
    binding and the reference filter evaluator; ``entry`` to the registered protocol."""
    run = Run(
        spec,
        schedule,
        seed,
        record_trace=record_trace,
        binding=binding,
        matches=matches,
        entry=entry,
    )
    run.world.run(duration_us=spec.duration_us, drain_us=spec.drain_us)
    return run.outcome()
