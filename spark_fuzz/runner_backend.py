"""The backend of every registered protocol: campaigns over ``gapless.models.runner``.

:class:`RunnerBackend` (``RunnerBackend("gd")`` for guaranteed delivery [GD §2–4]) reads what
it offers from the protocol's registry entry (:mod:`gapless.models.protocols`): topologies,
variants, fault kinds, invariants. It maps a campaign configuration to a
:class:`~gapless.models.runspec.RunSpec`:

* ``topology`` -> ``RunSpec.topology`` (one of the protocol's topologies; for GD: Figure 3,
  the total-order merge graph of Figure 1, the two-broker graph of §4.1);
* ``variant`` -> ``RunSpec.variant`` (``"none"`` or a planted bug the protocol declares);
* ``[workload]`` -> :class:`~gapless.models.workload.WorkloadSpec` fields, plus the run
  parameters ``drain_s`` (quiet time after the faults before liveness is judged),
  ``max_events`` (a deterministic event budget: exceeding it is verdict ``timeout``) and
  ``online`` (check invariants while running);
* ``[faults]`` -> :class:`~gapless.models.faults.FaultProfile` (``rates`` per simulated
  second; an empty ``rates`` table means the world's ``DEFAULT_RATES``; ``swarm`` enables a
  random subset of kinds per schedule);
* ``duration_s`` -> ``RunSpec.duration_us``; ``invariants`` -> ``RunSpec.invariants``.

Latencies in rows are milliseconds of virtual time; ``nack_range`` is in µs (ticks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, final

import attrs

from gapless.impl.errors import GaplessError
from gapless.invariants.tracefile import write_trace
from gapless.models.faults import DEFAULT_RATES, FaultProfile, from_json, unstructure
from gapless.models.protocols import protocol
from gapless.models.registry import Scenario
from gapless.models.run import build, run_context, validate_spec
from gapless.models.runner import (
    RunSpec,
    clip_schedule,
    generate_schedule,
    run,
    spec_from_dict,
    spec_to_dict,
    with_duration,
    with_max_messages,
)
from gapless.models.workload import WorkloadSpec
from gapless.spark_fuzz.outcome import Outcome
from gapless.spark_fuzz.profiles import rules_profile

__all__ = ["RunnerBackend"]

_RUN_KEYS: Final = {
    "drain_s": "simulated seconds of quiet after the faults: a number >= 0 (default 15)",
    "max_events": "simulator event budget per run: an integer >= 1 (default 5000000)",
    "online": "check invariants while running: true or false (default true)",
}
_WORKLOAD_KEYS: Final = {
    "rate_per_pubend": "messages per simulated second per pubend: a number > 0 (default 25)",
    "size": "message size in bytes: an integer >= 0 (default 100)",
    "subscribers_per_shb": "an integer >= 0 (default 1)",
    "filters": "'all', 'mixed', 'keys' or 'rich' (default 'all')",
    "keys": "distinct values of attribute k: an integer >= 1 (default 10)",
    "jitter_us": "per-message publish jitter: an integer >= 0 (default 1000)",
    "max_messages": "cap on messages per pubend: an integer >= 0 (default: none)",
}


def _ms(us: int | None) -> float:
    return 0.0 if us is None else us / 1000.0


def _wire(wire: Any) -> str:
    """One line for a message's wire summary in a replay timeline. GD's :class:`Wire` (and a
    summary that reads like it, such as the durable protocol's) prints its ranges; any other
    protocol's summary prints its ``kind`` and the fields that differ from their defaults."""
    if not hasattr(wire, "data_ticks"):
        return _fields_line(wire)
    parts = [wire.kind + ("(retransmitted)" if wire.retransmission else "")]
    if wire.pubend is not None:
        parts.append(f"pubend={wire.pubend}")
    if wire.data_ticks:
        parts.append("D@" + ",".join(str(t) for t in wire.data_ticks[:6]))
    if wire.final_ranges:
        parts.append("F" + ",".join(f"[{a},{b}]" for a, b in wire.final_ranges[:4]))
    if wire.nack_ranges:
        parts.append("nack" + ",".join(f"[{a},{b}]" for a, b in wire.nack_ranges[:4]))
    if wire.upto is not None:
        parts.append(f"T={wire.upto}")
    return " ".join(parts)


_SHOWN_ITEMS: Final = 6
"""How many items of a sequence or set field a timeline line shows before ``...``."""


def _short(value: Any) -> str:
    if isinstance(value, bytes):
        return repr(value[:32] + (b"..." if len(value) > 32 else b""))
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (frozenset, set)) else list(value)
        shown = ",".join(_short(v) for v in items[:_SHOWN_ITEMS])
        more = ",..." if len(items) > _SHOWN_ITEMS else ""
        return f"[{shown}{more}]"
    return str(value)


def _fields_line(wire: Any) -> str:
    """``kind field=value ...`` for an attrs wire summary: the fields that differ from their
    defaults (a field without a default is always shown), sequences cut short."""
    if not attrs.has(type(wire)):
        return repr(wire)
    kind = getattr(wire, "kind", type(wire).__name__)
    parts = [str(kind)]
    for field in attrs.fields(type(wire)):
        if field.name == "kind":
            continue
        value = getattr(wire, field.name)
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()  # type: ignore[call-arg]
        if default is not attrs.NOTHING and value == default:
            continue
        parts.append(f"{field.name}={_short(value)}")
    return " ".join(parts)


def _entry(record: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"time": record.time, "node": record.node, "event": record.kind}
    detail = record.detail
    wire = getattr(detail, "wire", None)
    if record.kind == "send" and wire is not None:
        entry["to"] = detail.to
        entry["detail"] = _wire(wire)
    elif record.kind == "receive" and wire is not None:
        entry["detail"] = f"from {detail.sender}: {_wire(wire)}"
    elif record.kind == "drop" and wire is not None:
        entry["detail"] = f"{detail.sender}->{detail.to} lost ({detail.reason}): {_wire(wire)}"
    elif record.kind == "coverage":
        entry["detail"] = str(detail)
    else:
        entry["detail"] = _detail(detail)
    return entry


def _detail(detail: Any) -> str:
    if attrs.has(type(detail)):
        fields = ", ".join(
            f"{a.name}={getattr(detail, a.name)!r}" for a in attrs.fields(type(detail))
        )
        return f"{type(detail).__name__}({fields})"
    return repr(detail)


@final
class RunnerBackend:
    """The :class:`~gapless.spark_fuzz.backend.Backend` of a registered protocol."""

    def __init__(self, protocol_name: str = "gd") -> None:
        self.entry = protocol(protocol_name)

    def topologies(self) -> Sequence[str]:
        return tuple(sorted(self.entry.topologies))

    def variants(self) -> Sequence[str]:
        return self.entry.variant_names()

    def fault_kinds(self) -> Sequence[str]:
        return self.entry.fault_kinds

    def invariants(self) -> Sequence[str]:
        return self.entry.invariants

    def workload_keys(self) -> Mapping[str, str]:
        return {**_WORKLOAD_KEYS, **_RUN_KEYS}

    def make_spec(self, config: Any) -> Any:

        wl = dict(config.workload)
        run_args: dict[str, Any] = {}
        if "drain_s" in wl:
            drain = wl.pop("drain_s")
            if isinstance(drain, bool) or not isinstance(drain, int | float) or drain < 0:
                raise ValueError(
                    f"key 'workload.drain_s' = {drain!r}; expected {_RUN_KEYS['drain_s']}"
                )
            run_args["drain_us"] = round(drain * 1_000_000)
        if "max_events" in wl:
            budget = wl.pop("max_events")
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
                raise ValueError(
                    f"key 'workload.max_events' = {budget!r}; expected {_RUN_KEYS['max_events']}"
                )
            run_args["max_events"] = budget
        if "online" in wl:
            online = wl.pop("online")
            if not isinstance(online, bool):
                raise ValueError(f"key 'workload.online' = {online!r}; expected true or false")
            run_args["online"] = online
        for key, value in wl.items():
            if isinstance(value, bool) and key != "online":
                raise ValueError(
                    f"key 'workload.{key}' = {value!r}; expected {_WORKLOAD_KEYS[key]}"
                )
        rates = dict(config.fault_rates)
        if not rates and config.fault_profile in ("rates", "rules"):
            rates = dict(DEFAULT_RATES)
        if not config.fault_rates and set(DEFAULT_RATES) - set(self.entry.fault_kinds):
            # the defaults of the kinds this protocol takes (e.g. no message duplication
            # over ZeroMQ's TCP connections), not every kind the world knows
            rates = {k: r for k, r in DEFAULT_RATES.items() if k in self.entry.fault_kinds}
        try:
            workload = WorkloadSpec(**wl)
            if config.fault_profile == "rules":
                faults = rules_profile(
                    rates,
                    self.entry.topologies[config.topology](),
                    self.entry.config_type(),
                )
            else:
                faults = FaultProfile(
                    rates=tuple(sorted(rates.items())), swarm=config.fault_profile == "swarm"
                )
            spec = RunSpec(
                protocol=config.protocol,
                variant=config.variant,
                topology=config.topology,
                workload=workload,
                faults=faults,
                duration_us=round(config.duration_s * 1_000_000),
                invariants=tuple(config.invariants),
                config=tuple(sorted(getattr(config, "run_config", {}).items())),
                **run_args,
            )
            validate_spec(spec)
            if spec.config:  # the protocol's binding judges its own run config keys
                build(spec, 0)
            return spec
        except (GaplessError, TypeError) as exc:
            raise ValueError(f"the run spec is not allowed: {exc}") from exc

    def generate_schedule(self, spec: Any, seed: int) -> Any:

        return generate_schedule(spec, seed)

    def run(self, spec: Any, schedule: Any, seed: int, *, record_trace: bool = False) -> Outcome:

        outcome = run(
            spec, clip_schedule(schedule, spec.duration_us), seed, record_trace=record_trace
        )
        c = outcome.counters
        timeline: tuple[Mapping[str, Any], ...] = ()
        if outcome.trace is not None:
            timeline = tuple(_entry(r) for r in outcome.trace)
        explanation = outcome.explanation
        violation_time = None
        if outcome.violation is not None:
            violation_time = outcome.violation.time
            explanation = outcome.violation.explain()
        return Outcome(
            verdict=outcome.verdict,
            invariant=outcome.invariant or "",
            explanation=explanation,
            published=c.published,
            delivered=c.delivered,
            nacks=c.nacks,
            nack_range=c.nack_range_us,
            retransmissions=c.retransmissions,
            latency_p50=_ms(c.latency_p50_us),
            latency_p99=_ms(c.latency_p99_us),
            latency_max=_ms(c.latency_max_us),
            trace_digest=outcome.trace_digest,
            coverage=dict(outcome.coverage),
            timeline=timeline,
            violation_time=violation_time,
        )

    def write_trace(self, spec: Any, schedule: Any, seed: int, path: str) -> int:
        """Re-run ``(spec, schedule, seed)`` and write its observable trace to ``path`` (format
        ``gapless-trace``, for ``gapless check``); returns the number of records."""

        outcome = run(spec, clip_schedule(schedule, spec.duration_us), seed, record_trace=True)
        entry = protocol(spec.protocol)
        if entry.name != "gd" and entry.write_trace is not None:
            # the protocol's own format (GD's writer knows GD's records only); its writers take
            # a scenario: this replayed run as one
            replayed = Scenario(
                name=f"replay of seed {seed} ({spec.variant})",
                protocol=entry.name,
                description="a replayed campaign run",
                spec=spec,
                events=tuple(schedule.events),
                figures=lambda _sc, _out, _brokers: {},
                pass_marks=lambda _name, _figures: {},
            )
            written: int = entry.write_trace(path, replayed, outcome, run_context(spec, seed))
            return written
        return write_trace(
            path,
            run_context(spec, seed),
            outcome.trace or (),
            live_end=outcome.verdict != "timeout",
            protocol=spec.protocol,
            meta={
                "seed": seed,
                "variant": spec.variant,
                "verdict": outcome.verdict,
                "invariant": outcome.invariant,
                "trace_digest": outcome.trace_digest,
            },
        )

    def schedule_events(self, schedule: Any) -> Sequence[Any]:
        return tuple(schedule.events)

    def with_events(self, schedule: Any, events: Sequence[Any]) -> Any:
        return attrs.evolve(schedule, events=tuple(events))

    def event_kind(self, event: Any) -> str:
        return str(event.kind)

    def shorten(self, spec: Any, *, duration_s: float | None, workload_scale: float | None) -> Any:

        if duration_s is not None:
            spec = with_duration(spec, max(1, round(duration_s * 1_000_000)))
        if workload_scale is not None:
            full = spec.workload.max_messages
            if full is None:
                full = int(spec.workload.rate_per_pubend * spec.duration_us / 1_000_000) + 1
            spec = with_max_messages(spec, max(1, int(full * workload_scale)))
        return spec

    def spec_to_data(self, spec: Any) -> Any:

        return spec_to_dict(spec)

    def spec_from_data(self, data: Any) -> Any:

        if not isinstance(data, dict):
            raise ValueError(f"spec: expected an object, got {type(data).__name__}")
        try:
            spec = spec_from_dict(data)
        except GaplessError as exc:
            raise ValueError(str(exc)) from exc
        if spec.variant not in self.variants():
            raise ValueError(
                f"spec: unknown variant {spec.variant!r}; allowed: {', '.join(self.variants())}"
            )
        return spec

    def check_schedule(self, spec: Any, schedule: Any) -> None:
        """Raise ``ValueError`` naming a fault event whose target ``spec``'s topology lacks."""
        from gapless.models.faults import check_targets
        from gapless.models.runner import fault_targets

        try:
            check_targets(schedule, fault_targets(spec))
        except GaplessError as exc:
            raise ValueError(f"schedule: {exc}") from exc

    def schedule_to_data(self, schedule: Any) -> Any:

        return unstructure(schedule)

    def schedule_from_data(self, data: Any) -> Any:
        try:
            return from_json(json.dumps(data))
        except GaplessError as exc:
            raise ValueError(str(exc)) from exc
