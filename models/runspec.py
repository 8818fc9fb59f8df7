"""A run's description and result: :class:`RunSpec` and :class:`RunOutcome`.

Theory of operation
-------------------
Plain, frozen, cattrs-serialisable values, below everything that runs them:

* :class:`RunSpec` — everything but the seed and the schedule that determines a run:
  ``protocol`` (a name registered in :mod:`gapless.models.protocols`), ``variant`` (``"none"``
  = the correct protocol, else a planted bug the protocol declares), ``topology`` (one of the
  protocol's topologies), ``workload``, ``faults`` (kinds with rates per simulated second, or
  ``swarm``), ``duration_us`` (publishing and faults), ``drain_us`` (after every fault is
  healed: then liveness is judged), ``invariants`` (names; empty = all of the protocol's),
  ``online`` (check while running), ``config`` (overrides of the protocol's configuration
  fields, as ``(name, value)`` pairs), ``max_events`` (a deterministic event budget:
  exceeding it gives verdict ``timeout``), ``link_delay_us`` and ``link_jitter_us`` (the
  network's one-way delay and jitter: the world's, not a protocol's). Its structure is
  checked here; its names are checked against the registry when it is run or read
  (:func:`gapless.models.run.validate_spec`).
* :class:`RunOutcome` — ``verdict`` (one of :data:`VERDICTS`), ``invariant``,
  ``explanation``, ``counters``, ``trace_digest`` (of digest version ``digest_version``),
  ``coverage`` (counted beside the trace, not in it), the violation and the trace when
  recorded.

``out_of_budget`` is the verdict of a run whose fault schedule left the protocol's fault
budget and whose safety invariants held (see :class:`~gapless.models.registry.ProtocolEntry`).
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs
import cattrs

from gapless.impl.errors import GaplessError, ProtocolMisuse
from gapless.impl.trace import DIGEST_VERSION, Counters, TraceRecord
from gapless.invariants.violation import Violation
from gapless.models.faults import FaultProfile
from gapless.models.workload import WorkloadSpec

__all__ = [
    "VERDICTS",
    "RunOutcome",
    "RunSpec",
    "RunSpecError",
    "spec_from_dict",
    "spec_to_dict",
]

VERDICTS: Final = ("pass", "violation", "out_of_budget", "error", "timeout")
"""Every verdict a run can have, in report order."""


class RunSpecError(ProtocolMisuse):
    """A run specification that is malformed or names something unknown: caller misuse,
    raised before any work starts (never turned into an ``error`` verdict)."""


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
    link_delay_us: int = 1_000
    link_jitter_us: int = 200

    def __attrs_post_init__(self) -> None:
        if self.duration_us <= 0 or self.drain_us < 0 or self.max_events <= 0:
            raise RunSpecError(
                "RunSpec: need duration_us > 0, drain_us >= 0, max_events > 0; got "
                f"{self.duration_us}, {self.drain_us}, {self.max_events}"
            )
        if self.link_delay_us < 0 or self.link_jitter_us < 0:
            raise RunSpecError(
                "RunSpec: need link_delay_us >= 0 and link_jitter_us >= 0; got "
                f"{self.link_delay_us}, {self.link_jitter_us}"
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
    digest_version: int = DIGEST_VERSION

    @property
    def latency_p50_us(self) -> int | None:
        return self.counters.latency_p50_us

    @property
    def latency_p99_us(self) -> int | None:
        return self.counters.latency_p99_us

    @property
    def latency_max_us(self) -> int | None:
        return self.counters.latency_max_us


_converter = cattrs.Converter()


def spec_to_dict(spec: RunSpec) -> dict[str, Any]:
    """Plain data for ``spec`` (JSON/TOML-ready)."""
    data: dict[str, Any] = _converter.unstructure(spec)
    return data


def spec_from_dict(data: dict[str, Any]) -> RunSpec:
    """A structurally valid :class:`RunSpec`; bad input raises :class:`RunSpecError` naming
    the problem (names are checked against the registry by ``validate_spec``)."""
    try:
        return _converter.structure(data, RunSpec)
    except GaplessError as exc:
        raise RunSpecError(str(exc)) from exc
    except cattrs.BaseValidationError as exc:
        msgs = "; ".join(cattrs.transform_error(exc))
        raise RunSpecError(f"spec_from_dict: invalid run spec: {msgs}") from exc
    except (TypeError, ValueError, KeyError) as exc:
        raise RunSpecError(f"spec_from_dict: invalid run spec: {exc}") from exc
