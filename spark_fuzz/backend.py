"""The simulator interface a campaign drives, and how a protocol name finds its simulator.

Theory of operation
-------------------
A campaign never touches the network model directly: it talks to a *backend*, a small object
that turns a validated campaign configuration into a run specification, a seed into a fault
schedule (a pure function of seed and specification), and a schedule into an outcome
[GD §4.2 is the kind of experiment this automates]. Guaranteed delivery's backend
(:class:`gapless.spark_fuzz.runner_backend.RunnerBackend`) wraps ``gapless.models.runner``
for every protocol of the registry (:mod:`gapless.models.protocols`): a protocol registered
there is fuzzable with no line added here. Anyone can point a campaign at their own
simulator with the ``backend = "package.module:factory"`` configuration key.

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

from gapless.models.protocols import PROTOCOLS
from gapless.spark_fuzz.outcome import VERDICTS, Backend, BackendError, Outcome
from gapless.spark_fuzz.runner_backend import RunnerBackend

__all__ = [
    "BACKENDS",
    "VERDICTS",
    "Backend",
    "BackendError",
    "Outcome",
    "load_backend",
]

BACKENDS: tuple[str, ...] = tuple(sorted(PROTOCOLS))
"""The protocols a campaign can name without a ``backend`` reference (the registry's)."""


_CACHE: dict[str, Backend] = {}


def load_backend(protocol: str, ref: str | None = None) -> Backend:
    """The backend of ``protocol``, or the one named by ``ref`` (``"module:factory"``).

    Cached per process. Raises :class:`BackendError` naming the protocol or reference and
    what is allowed.
    """
    if ref is None:
        if protocol not in PROTOCOLS:
            raise BackendError(
                f"load_backend: unknown protocol {protocol!r}; allowed: {sorted(PROTOCOLS)}"
            )
        got = _CACHE.get(protocol)
        if got is None:
            got = _CACHE[protocol] = RunnerBackend(protocol)
        return got
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
