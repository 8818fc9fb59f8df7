"""What the kit needs of a protocol, in one value: :class:`ProtocolEntry` (DESIGN.md, "Layers").

Theory of operation
-------------------
A protocol is registered once, as one :class:`ProtocolEntry`, and every command finds it
there by name (``gapless fuzz --protocol NAME``, ``gapless zoo --protocol NAME``,
``gapless simulate --scenario NAME``, ``gapless check`` through a trace file's header,
``gapless protocols``). The entry holds:

* ``make_binding(spec, graph, workload)`` — the :class:`~gapless.models.binding.Binding` that
  adapts the protocol's pure roles to the world, with the run's variant and config overrides;
* ``config_type`` and ``correct_policy`` — the protocol's configuration class and its paper
  policy; ``variants`` — its planted bugs, declared beside its rules
  (:class:`~gapless.impl.variants.Variant`, in ``gapless.impl.<protocol>.variants``);
* ``topologies`` (name -> graph builder) and ``default_topology``;
* ``scenarios`` — the paper's experiments (:class:`Scenario`); names are unique across
  protocols, so a scenario name alone picks its protocol;
* ``fault_kinds`` the world may inject for it, and an optional *fault budget*
  (``within_budget(graph, active_faults) -> bool``): a run whose schedule leaves the budget
  at any moment is judged on ``safety_invariants`` alone and otherwise gets the verdict
  ``out_of_budget`` — never a false violation (δ-fault-tolerance promises delivery only
  while at most δ failures stand on a primary sub-path [DFT §II]);
* ``invariants`` — the names of the invariants that judge it; ``context(graph, workload,
  binding, matches)`` — what they know besides the trace; ``checker(context, names)`` — the
  online checker (``observe(record) -> bool``, ``finish(end)``, ``violation``,
  ``publish_time(pubend, tick)``, ``restrict(names)``); ``state_checked`` — those of them
  that judge ``malformed`` records, which the world writes only while one of them is judged,
  after each step that changed a role's state (the binding's ``malformed(before, after)``: a
  per-step look at the state, paid only when asked for);
* ``wire_schema`` — the protocol's own frozen summary class of a message on the wire
  (``binding.wire(msg)`` returns one; trace files carry it under this schema) and
  ``trace_check(path, names, *, matches, live_end)`` — its trace-file reader and judge (the
  decoders of its records), which ``gapless check`` calls for a file whose header names the
  protocol (``None``: the protocol has no trace-file format yet), and ``write_trace(path,
  scenario, outcome, context)`` — its writer of a scenario run's trace file (``gapless
  simulate --trace``), given the run's checker context; the two come together or not at all;
* each :class:`Scenario` names its drawing (``plot``: a kind the command layer draws, since
  plotting sits above the models), so no command picks a writer or a plot by protocol name.

The table of registered protocols is :mod:`gapless.models.protocols`; this module holds only
the types, so a protocol's own modules can build their entry without importing the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, final

import attrs
import networkx as nx

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.variants import Variant, resolve
from gapless.models.faults import FaultEvent, FaultSchedule

__all__ = ["ProtocolEntry", "Scenario"]


@final
@attrs.frozen(kw_only=True)
class Scenario:
    """A named experiment of one protocol: a run spec (``spec``, the protocol's
    :class:`~gapless.models.runspec.RunSpec`), its fault events, the broker it crashes, and
    how to read it: ``figures(scenario, outcome, brokers) -> dict`` computes the JSON figures
    from the recorded trace, ``pass_marks(name, figures) -> {claim: holds}`` applies the
    paper's claims to them. ``fold`` (optional) makes an object that computes the figures
    online instead: :func:`~gapless.models.runner.run_scenario` feeds it every record as the
    run emits it (``add(record)``) and asks it for ``figures(scenario, outcome, brokers)``,
    and for the few records a plot reads (``kept()``), so the run need not hold its trace."""

    name: str
    protocol: str
    description: str
    spec: Any
    events: tuple[FaultEvent, ...]
    figures: Callable[[Scenario, Any, tuple[str, ...]], dict[str, Any]]
    pass_marks: Callable[[str, dict[str, Any]], dict[str, bool]]
    crashed: str | None = None
    plot: str = "timeline"
    fold: Callable[[], Any] | None = None

    @property
    def schedule(self) -> FaultSchedule:
        """The scenario's fault events as a schedule (seed 0)."""
        return FaultSchedule(seed=0, events=self.events)


@final
@attrs.frozen(kw_only=True)
class ProtocolEntry:
    """Everything the kit needs of one protocol (see module doc)."""

    name: str
    summary: str
    paper: str
    make_binding: Callable[[Any, nx.Graph, Any], Any]
    config_type: type
    correct_policy: Any
    variants: Mapping[str, Variant]
    topologies: Mapping[str, Callable[[], nx.Graph]]
    default_topology: str
    scenarios: tuple[Scenario, ...]
    fault_kinds: tuple[str, ...]
    invariants: tuple[str, ...]
    safety_invariants: tuple[str, ...]
    context: Callable[[nx.Graph, Any, Any, Callable[[str, Any], bool]], Any]
    checker: Callable[[Any, tuple[str, ...]], Any]
    wire_schema: type
    trace_check: Callable[..., Any] | None = None
    write_trace: Callable[[Any, Scenario, Any, Any], Any] | None = None
    within_budget: Callable[[nx.Graph, tuple[FaultEvent, ...]], bool] | None = None
    state_checked: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.default_topology not in self.topologies:
            raise ProtocolMisuse(
                f"ProtocolEntry {self.name!r}: default topology {self.default_topology!r} "
                f"is not one of its topologies ({', '.join(sorted(self.topologies))})"
            )
        if (self.trace_check is None) != (self.write_trace is None):
            raise ProtocolMisuse(
                f"ProtocolEntry {self.name!r}: a trace-file format needs both trace_check and "
                "write_trace (or neither)"
            )
        unknown_checked = [n for n in self.state_checked if n not in self.invariants]
        if unknown_checked:
            raise ProtocolMisuse(
                f"ProtocolEntry {self.name!r}: state_checked names invariants "
                f"{unknown_checked!r} the protocol does not have; allowed: "
                f"{', '.join(self.invariants)}"
            )
        for v in self.variants.values():
            unknown = [n for n in v.caught_by if n not in self.invariants]
            if unknown:
                raise ProtocolMisuse(
                    f"ProtocolEntry {self.name!r}: variant {v.name!r} names invariants "
                    f"{unknown!r} the protocol does not have; allowed: "
                    f"{', '.join(self.invariants)}"
                )
        for s in self.scenarios:
            if s.protocol != self.name:
                raise ProtocolMisuse(
                    f"ProtocolEntry {self.name!r}: scenario {s.name!r} belongs to {s.protocol!r}"
                )

    def policy(self, variant: str) -> Any:
        """The policy of ``variant`` (``"none"``, ``"correct"``, ``"paper"``: the paper's)."""
        return resolve(self.name, variant, self.correct_policy, self.variants)

    def variant_names(self) -> tuple[str, ...]:
        """``"none"`` then every planted bug's name, sorted."""
        return ("none", *sorted(self.variants))

    def topology(self, name: str) -> nx.Graph:
        """A fresh graph of the topology called ``name``."""
        build = self.topologies.get(name)
        if build is None:
            raise ProtocolMisuse(
                f"protocol {self.name!r}: topology {name!r} is unknown; allowed: "
                f"{', '.join(sorted(self.topologies))}"
            )
        return build()

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (what ``gapless protocols --json`` prints)."""
        return {
            "name": self.name,
            "summary": self.summary,
            "paper": self.paper,
            "variants": [
                {
                    "name": v.name,
                    "caught_by": list(v.caught_by),
                    "needs": list(v.needs),
                    "topology": v.topology,
                    "summary": v.summary,
                }
                for v in (self.variants[n] for n in sorted(self.variants))
            ],
            "scenarios": [s.name for s in self.scenarios],
            "invariants": list(self.invariants),
            "safety_invariants": list(self.safety_invariants),
            "topologies": sorted(self.topologies),
            "fault_kinds": list(self.fault_kinds),
            "fault_budget": self.within_budget is not None,
            "trace_files": self.trace_check is not None,
            "wire_schema": {
                "name": self.wire_schema.__name__,
                "fields": [a.name for a in attrs.fields(self.wire_schema)],
            },
        }
