"""The lattice interface every gapless value type implements.

A lattice is a set with a partial order ``leq`` in which every two elements have a least
upper bound ``join`` (accumulation, [GD §2.1]) and a greatest lower bound ``meet``, plus a
``bottom`` and a ``top``. The laws, which :func:`gapless.invariants.laws.check_lattice`
checks for any implementation over sample values, and which ``gapless prove`` proves for ours:

* ``leq`` is a partial order: reflexive, antisymmetric, transitive;
* ``join(a, b)`` is an upper bound of ``a`` and ``b`` and below every other upper bound;
  ``meet(a, b)`` is a lower bound and above every other lower bound;
* join and meet are associative, commutative and idempotent, and absorb each other:
  ``join(a, meet(a, b)) == a == meet(a, join(a, b))``;
* ``bottom`` is below and ``top`` above every value;
* consistency: ``leq(a, b)`` iff ``join(a, b) == b`` iff ``meet(a, b) == a``.

Distributivity is *not* a law: the knowledge lattice with payloads is not distributive
(see ``spec/lattices.md`` and ``gapless prove``).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["Lattice", "LatticeOps"]

T = TypeVar("T")


class Lattice(Protocol):
    """A value that knows how to join, meet and compare itself with values of its lattice."""

    def join(self: T, other: T, /) -> T:
        """Least upper bound (accumulation)."""
        ...

    def meet(self: T, other: T, /) -> T:
        """Greatest lower bound."""
        ...

    def leq(self: T, other: T, /) -> bool:
        """The lattice order: ``self`` is at or below ``other``."""
        ...


class LatticeOps(Protocol[T]):
    """A lattice given as operations, for values that are not objects of our own.

    Users check a lattice of their own by passing one of these (or any object with the
    same five members) to :func:`gapless.invariants.laws.check_lattice`.
    """

    @property
    def bottom(self) -> T: ...

    @property
    def top(self) -> T: ...

    def join(self, a: T, b: T, /) -> T: ...

    def meet(self, a: T, b: T, /) -> T: ...

    def leq(self, a: T, b: T, /) -> bool: ...
