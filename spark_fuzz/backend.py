"""The simulator interface a campaign drives, and how a protocol name finds its simulator.

Theory of operation
-------------------
A campaign never touches the network model directly: it talks to a *backend*, a small object
that turns a validated campaign configuration into a run specification, a seed into a fault
schedule (a pure function of seed and specification), and a schedule into an outcome
[GD §4.2 is the kind of experiment this automates]. Guaranteed delivery's backend
(:mod:`gapless.spark_fuzz.gd_backend`) wraps ``gapless.models.runner``; the later protocols
(durable subscriptions, delta-fault-tolerance, ZeroMQ forwarding, GES) plug in by adding a
line to :data:`BACKENDS`, and anyone can point a campaign at their own simulator with the
``backend = "package.module:factory"`` configuration key.

Backends are resolved *by name* in every process (driver, Spark executors, subprocesses):
nothing but the configuration's canonical JSON crosses a process boundary, so a campaign is
exactly as deterministic as its backend.

A backend's schedule must be plain data: ``schedule_events`` lists its fault events,
``with_events`` rebuilds a schedule from a subset of them (shrinking removes events; each
event carries its own random stream, so removing one leaves the others unchanged), and
``schedule_to_data`` / ``schedule_from_data`` convert it to and from JSON-able data
(counterexample files; never pickle).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, final, runtime_checkable

import attrs

from gapless.impl.errors import GaplessError

__all__ = [
    "BACKENDS",
    "VERDICTS",
    "Backend",
    "BackendError",
    "Outcome",
    "load_backend",
]

VERDICTS: tuple[str, ...] = ("pass", "violation", "error", "timeout")
"""Every verdict a row can carry, in report order."""

BACKENDS: dict[str, str] = {
    "gd": "gapless.spark_fuzz.gd_backend:GDBackend",
}
"""Protocol name -> ``module:factory`` of its backend (the factory takes no arguments)."""


class BackendError(GaplessError, ValueError):
    """A protocol or backend reference that cannot be resolved."""


@final
@attrs.frozen(kw_only=True)
class Outcome:
    """What one run produced, in the campaign's own terms (a backend converts to this).

    ``verdict`` is one of :data:`VERDICTS`; ``invariant`` names the violated invariant (empty
    when none); ``coverage`` maps lattice-transition labels (e.g. ``"K:Q->D"``) to counts;
    ``timeline`` is the annotated event list of a recorded run (``record_trace=True``),
    each entry ``{"time", "node", "event", "detail"}``; ``violation_time`` is the virtual
    time (µs) of the violation, if known.
    """

    verdict: str
    invariant: str = ""
    explanation: str = ""
    published: int = 0
    delivered: int = 0
    nacks: int = 0
    nack_range: int = 0
    retransmissions: int = 0
    latency_p50: float = 0.0
    latency_p99: float = 0.0
    latency_max: float = 0.0
    trace_digest: str = ""
    coverage: Mapping[str, int] = attrs.field(factory=dict)
    timeline: tuple[Mapping[str, Any], ...] = ()
    violation_time: int | None = None


@runtime_checkable
class Backend(Protocol):
    """What a campaign needs from a protocol's simulator. All methods are pure functions of
    their arguments (same input, same output, in any process and any ``PYTHONHASHSEED``)."""

    def topologies(self) -> Sequence[str]:
        """Topology names this backend knows."""

    def variants(self) -> Sequence[str]:
        """Protocol variant names (``"none"`` is the correct protocol)."""

    def fault_kinds(self) -> Sequence[str]:
        """Fault kinds a fault profile may name."""

    def invariants(self) -> Sequence[str]:
        """Invariant names a campaign may select."""

    def workload_keys(self) -> Mapping[str, str]:
        """Allowed ``[workload]`` keys -> a short description of the allowed values."""

    def make_spec(self, config: Any) -> Any:
        """The backend's run specification for a validated campaign configuration. Raises
        ``ValueError`` naming the key, value and what is allowed for a workload it rejects."""

    def generate_schedule(self, spec: Any, seed: int) -> Any:
        """The fault schedule of ``seed``: a pure function of ``(spec, seed)``."""

    def run(self, spec: Any, schedule: Any, seed: int, *, record_trace: bool = False) -> Outcome:
        """Simulate one schedule and judge it."""

    def schedule_events(self, schedule: Any) -> Sequence[Any]:
        """The schedule's fault events, in order."""

    def with_events(self, schedule: Any, events: Sequence[Any]) -> Any:
        """The same schedule holding only ``events`` (a subsequence of its events)."""

    def event_kind(self, event: Any) -> str:
        """The fault kind of one event (one of :meth:`fault_kinds`)."""

    def shorten(self, spec: Any, *, duration_s: float | None, workload_scale: float | None) -> Any:
        """A spec with a shorter simulated duration and/or a workload scaled down (``None``
        keeps it), used by shrinking after the fault events are minimal."""

    def spec_to_data(self, spec: Any) -> Any:
        """JSON-able data for ``spec``."""

    def spec_from_data(self, data: Any) -> Any:
        """Inverse of :meth:`spec_to_data`; raises ``ValueError`` on malformed data."""

    def schedule_to_data(self, schedule: Any) -> Any:
        """JSON-able data for ``schedule``."""

    def schedule_from_data(self, data: Any) -> Any:
        """Inverse of :meth:`schedule_to_data`; raises ``ValueError`` on malformed data."""


_CACHE: dict[str, Backend] = {}


def load_backend(protocol: str, ref: str | None = None) -> Backend:
    """The backend of ``protocol``, or the one named by ``ref`` (``"module:factory"``).

    Cached per process. Raises :class:`BackendError` naming the protocol or reference and
    what is allowed.
    """
    if ref is None:
        if protocol not in BACKENDS:
            raise BackendError(
                f"load_backend: unknown protocol {protocol!r}; allowed: {sorted(BACKENDS)}"
            )
        ref = BACKENDS[protocol]
    cached = _CACHE.get(ref)
    if cached is not None:
        return cached
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise BackendError(
            f"load_backend: backend reference {ref!r} is malformed; "
            "expected 'package.module:factory'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendError(
            f"load_backend: cannot import backend module {module_name!r} of {ref!r}: {exc}"
        ) from exc
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise BackendError(f"load_backend: {module_name!r} has no callable {attr!r} (from {ref!r})")
    backend = factory()
    if not isinstance(backend, Backend):
        raise BackendError(
            f"load_backend: {ref!r} did not produce a Backend (missing methods of "
            "gapless.spark_fuzz.backend.Backend)"
        )
    _CACHE[ref] = backend
    return backend
