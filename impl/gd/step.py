"""One step of a GD broker as a value: the time, the input, the effects and coverage labels
being built [GD §2.1, §3.1].

Theory of operation
-------------------
A handler of :mod:`gapless.impl.gd.node`'s dispatch table gets the node's state, what the
input carries (a message, the input itself, or a timer's pubend) and one :class:`Step`: the
virtual time ``now``, the ``input`` being handled, the list ``out`` of effects it emits, in
order, and the list ``labels`` of lattice transitions it made (coverage, e.g. ``"K:Q->D"``
for knowledge accumulated by join [GD §2.1], ``"C:N->C"`` for a tick made curious
[GD §2.1.1]). Helpers take the step instead of four separate arguments. When the handler
returns, :func:`finish` appends the :class:`Observe` effect (only with ``config.coverage``)
and turns a step that changed nothing into the same state object and ``()``.

The names for the protocol's constants live here too: :data:`NO_END`, the tick above every
tick a run reaches (a clip to ``[lo, NO_END]`` keeps everything from ``lo``), the timer
namespace :data:`TIMER` and the log key :data:`LOG_KEY`.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar, final

import attrs

from gapless.impl.effects import Rejected
from gapless.impl.inputs import Input

__all__ = [
    "FILTERED",
    "LOG_KEY",
    "NO_END",
    "TIMER",
    "Observe",
    "Step",
    "finish",
    "timer_key",
    "unchanged",
]

#: A tick above every tick a run reaches (2^62 µs is 146,000 years of virtual time).
NO_END: Final = 1 << 62
#: The first element of every GD timer key ``("gd", epoch, kind, ...)``.
TIMER: Final = "gd"
#: The first element of a pubend's log keys ``("gd-log", pubend, tick)`` [GD §2.2].
LOG_KEY: Final = "gd-log"
#: The coverage label of a D turned into F by an edge filter [GD §2.4].
FILTERED: Final = "K:D->F(filter)"


@final
@attrs.frozen(kw_only=True)
class Observe:
    """Coverage effect (only with ``config.coverage``): the lattice transitions one step made,
    e.g. ``"K:Q->D"``, ``"K:Q->F"``, ``"K:D->F"``, ``"C:N->C"``, ``"C:C->N"``, ``"C:N->A"``.
    It changes nothing; the world records it (trace kind ``coverage``)."""

    labels: tuple[str, ...]


@final
@attrs.frozen(kw_only=True)
class Step:
    """The context of one step: ``now``, the ``input`` being handled, the effects ``out`` built
    so far (in emission order) and the coverage ``labels`` (see the module doc). The value is
    frozen; its two lists grow while the handler runs."""

    now: int
    input: Input | None = None
    out: list[Any] = attrs.field(factory=list)
    labels: list[str] = attrs.field(factory=list)

    def reject(self, reason: str) -> None:
        """Record a malformed or unexpected network input (never raised)."""
        self.out.append(Rejected(reason=reason, input=self.input))


_S = TypeVar("_S")


def finish(old: _S, new: _S, step: Step, coverage: bool) -> tuple[_S, tuple[Any, ...]]:
    """The step's result: ``(new, effects)`` with an :class:`Observe` of the labels when
    ``coverage``; the same ``old`` object and ``()`` when nothing changed."""
    out = step.out
    labels = step.labels
    if labels and coverage:
        out.append(Observe(labels=tuple(sorted(set(labels)))))
    if not out and unchanged(old, new):
        return old, ()
    return new, tuple(out)


def unchanged(old: Any, new: Any) -> bool:
    """Whether ``new`` equals ``old`` as the states' generated ``__eq__`` says, field by field
    with each field's identity tried first: a handler that changed nothing mostly hands back
    the very objects it was given, and comparing those by value (a stream's runs, the set of
    links down) is the cost of an idle step. ``ctx`` is left out, as the states' equality
    leaves it out. Values without an instance ``__dict__`` are compared with ``==``.

    The fields are tried last to first: the answer does not depend on the order, and a
    role's own fields (a pubend's ``pending`` and ``assigned``, an SHB's connections) come
    after ``streams``, whose value comparison walks a stream's runs — a step that changed
    a small field as well (a message waiting for the next group-commit write) is told
    apart without it."""
    if new is old:
        return True
    if type(new) is not type(old):
        return False
    a = getattr(old, "__dict__", None)
    b = getattr(new, "__dict__", None)
    if a is None or b is None or a.keys() != b.keys():
        return bool(new == old)
    for name in reversed(a):
        v = a[name]
        w = b[name]
        if v is not w and name != "ctx" and v != w:
            return False
    return True


def timer_key(epoch: int, *key: Any) -> tuple[Any, ...]:
    """The key of a timer of incarnation ``epoch``: ``("gd", epoch, kind, ...)``."""
    return (TIMER, epoch, *key)
