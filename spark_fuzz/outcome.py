"""What a campaign gets back from a protocol's simulator: :class:`Outcome`, and what it needs
of one: the :class:`Backend` protocol (see :mod:`gapless.spark_fuzz.backend`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, final, runtime_checkable

import attrs

from gapless.impl.errors import GaplessError
from gapless.models.runspec import VERDICTS as RUN_VERDICTS

__all__ = ["VERDICTS", "Backend", "BackendError", "Outcome"]

VERDICTS: tuple[str, ...] = tuple(RUN_VERDICTS)
"""Every verdict a row can carry, in report order."""


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
