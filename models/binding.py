"""What the world needs from a protocol: the :class:`Binding` protocol.

Theory of operation
-------------------
The world (:mod:`gapless.models.world`) is protocol-neutral. A binding adapts one protocol's
pure roles to it: the initial role states per physical broker, the ``handle`` and ``crash``
functions of the sans-IO contract (DESIGN.md), how a published workload message becomes a
``Publish`` input, and three *decoders* the invariants use to read observable effects without
looking at role state: :meth:`Binding.wire` (what a message on the wire says),
:meth:`Binding.logged` (which pubend tick and attributes a ``Persist`` writes) and
:meth:`Binding.payload_attributes` (the attributes of a delivered payload). It also carries
the period of world-generated link status (0 when the roles exchange status messages
themselves) and the minimum nack repetition interval the conformance invariants need. The
network's own timing (link delay and jitter) belongs to the world, set by the run's spec
(``RunSpec.link_delay_us``, ``RunSpec.link_jitter_us``), not to any protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from gapless.impl.effects import Effect, Persist
from gapless.impl.inputs import Input, Publish
from gapless.impl.trace import Wire
from gapless.models.workload import PublishEvent

__all__ = ["Binding"]


class Binding(Protocol):
    """A protocol as the world drives it (see module doc). Every node gets ``Restart()`` at
    time 0 (boot)."""

    status_period_us: int
    min_repetition_us: int

    def initial_states(self) -> dict[str, Any]:
        """The initial role state of every physical broker."""
        ...

    def handle(self, state: Any, inp: Input, now: int) -> tuple[Any, tuple[Effect, ...]]:
        """One step of the broker's role."""
        ...

    def crash(self, state: Any) -> Any:
        """The state after a crash: soft state lost, stable storage kept."""
        ...

    def publish_input(self, event: PublishEvent) -> Publish:
        """The ``Publish`` input of a workload message."""
        ...

    def wire(self, msg: Any) -> Wire | Any:
        """The summary of a message on the wire: GD's :class:`~gapless.impl.trace.Wire`, or
        the protocol's own frozen summary class (its registry entry's ``wire_schema``)."""
        ...

    def logged(self, persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        """``(pubend, tick, attributes)`` when ``persist`` logs a published message."""
        ...

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        """The attributes of a delivered payload (None when it carries none)."""
        ...

    # Optional (looked up with getattr):
    # * ``coverage(before, after, input) -> Iterable[str]`` labels a state change;
    #   ``effect_labels(effect) -> tuple[str, ...] | None`` labels a protocol-specific effect
    #   (e.g. GD's ``Observe``). The world counts both beside the trace, never in it.
    # * ``resume_token(subscriber, consumed) -> Any``: the token a (re)connecting subscriber
    #   presents in ``Connect.resume``, from ``consumed`` (pubend -> highest tick delivered to
    #   it so far) — durable subscriptions' checkpoint token CT(s) [DUR §2].
    # * ``may_disconnect(subscriber, state) -> bool``: whether the subscriber may leave now,
    #   given the role state of the broker it is attached to; a ``disconnect`` fault of one
    #   that may not is held until a step of that broker lets it (a client that waits for a
    #   notification before it disconnects, e.g. GES's epoch notification).
    # * ``durable(persist) -> str | None``: what a ``Persist`` makes durable once it completes
    #   (e.g. ``"log"``, ``"checkpoint"``, ``"release"``), None for a write the invariants need
    #   not know. Every ``Persist`` completes ``delay`` µs later unless its node crashes
    #   first: a crash loses exactly the writes that had not completed; ``crash(state)``
    #   keeps exactly what completed writes made durable.
