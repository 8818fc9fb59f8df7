"""Law checkers for lattices and the functions between them, shipped for users' own lattices.

Theory of operation
-------------------
In the manner of hydro's ``lattices::test::check_all``: every law is checked over every
combination of the sample values a caller gives (include the edge values: bottom, top, E,
values with different payloads), and every failure is a :class:`LawViolation` that names the
law and the counterexample. The laws are those stated by
:class:`gapless.impl.lattice.LatticeOps` and proved for our own lattices by ``gapless prove``
[GD §2.1]:

* ``leq`` is a partial order (reflexive, antisymmetric, transitive);
* ``join`` is the least upper bound and ``meet`` the greatest lower bound *among the samples*;
* join and meet are associative, commutative, idempotent and absorb each other;
* ``bottom`` is below, ``top`` above every sample;
* ``leq(a, b)`` iff ``join(a, b) == b`` iff ``meet(a, b) == a``.

The cost is cubic in the number of samples (associativity and transitivity look at every
triple): 20 samples take ~8,000 triples, well under a second.

A user checks a lattice of their own with one call; here sets under union and intersection:

>>> import itertools
>>> class Subsets:
...     bottom = frozenset()
...     top = frozenset("ab")
...     @staticmethod
...     def join(x, y): return x | y
...     @staticmethod
...     def meet(x, y): return x & y
...     @staticmethod
...     def leq(x, y): return x <= y
>>> samples = [frozenset(s) for n in range(3) for s in itertools.combinations("ab", n)]
>>> check_lattice(Subsets(), samples)
[]

A broken join is caught, with the law and the counterexample named:

>>> class Broken:
...     bottom, top = Subsets.bottom, Subsets.top
...     join = staticmethod(lambda x, y: x)  # forgets y
...     meet, leq = staticmethod(Subsets.meet), staticmethod(Subsets.leq)
>>> print(check_lattice(Broken(), samples)[0])
join_upper_bound: x=frozenset(), y=frozenset({'a'}): join(x, y)=frozenset() is not above y
>>> assert_lattice(Broken(), samples)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
gapless.invariants.laws.LawError: 3 lattice law(s) fail; first: join_upper_bound: x=frozenset()...
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar, final

import attrs

__all__ = [
    "LawError",
    "LawViolation",
    "assert_lattice",
    "assert_laws",
    "check_closure",
    "check_lattice",
    "check_lowers",
    "check_monotone",
    "product_leq",
]

T = TypeVar("T")
U = TypeVar("U")


class _Ops(Protocol[T]):
    """What :func:`check_lattice` needs (structurally a ``gapless.impl.lattice.LatticeOps``)."""

    @property
    def bottom(self) -> T: ...

    @property
    def top(self) -> T: ...

    def join(self, a: T, b: T, /) -> T: ...

    def meet(self, a: T, b: T, /) -> T: ...

    def leq(self, a: T, b: T, /) -> bool: ...


@final
@attrs.frozen(kw_only=True)
class LawViolation:
    """One law that fails, with the values that make it fail and what went wrong."""

    law: str
    values: tuple[tuple[str, Any], ...]
    detail: str

    def __str__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.values)
        return f"{self.law}: {shown}: {self.detail}"


class LawError(AssertionError):
    """Raised by the ``assert_*`` checkers; the message names the law and counterexample."""

    def __init__(self, what: str, violations: Sequence[LawViolation]) -> None:
        self.violations = tuple(violations)
        super().__init__(f"{len(violations)} {what} law(s) fail; first: {violations[0]}")


class _Collector:
    """Keeps at most ``per_law`` violations of each law, in the order found."""

    def __init__(self, per_law: int) -> None:
        self.per_law = per_law
        self.found: list[LawViolation] = []
        self.count: dict[str, int] = {}

    def wants(self, law: str) -> bool:
        return self.count.get(law, 0) < self.per_law

    def add(self, law: str, values: Iterable[tuple[str, Any]], detail: str) -> None:
        if self.wants(law):
            self.count[law] = self.count.get(law, 0) + 1
            self.found.append(LawViolation(law=law, values=tuple(values), detail=detail))


def check_lattice(
    ops: _Ops[T],
    samples: Iterable[T],
    *,
    eq: Callable[[T, T], bool] | None = None,
    per_law: int = 1,
) -> list[LawViolation]:
    """Check every lattice law over all combinations of ``samples``; [] when all hold.

    ``ops`` has ``bottom``, ``top``, ``join``, ``meet`` and ``leq`` (a
    :class:`gapless.impl.lattice.LatticeOps`); ``eq`` defaults to ``==``. At most
    ``per_law`` violations of each law are reported.
    """
    xs = list(samples)
    same: Callable[[T, T], bool] = eq if eq is not None else (lambda a, b: bool(a == b))
    out = _Collector(per_law)
    join, meet, leq = ops.join, ops.meet, ops.leq

    for x in xs:
        if not leq(x, x):
            out.add("leq_reflexive", [("x", x)], "x is not below itself")
        if not same(join(x, x), x):
            out.add("join_idempotent", [("x", x)], f"join(x, x)={join(x, x)!r}")
        if not same(meet(x, x), x):
            out.add("meet_idempotent", [("x", x)], f"meet(x, x)={meet(x, x)!r}")
        if not leq(ops.bottom, x):
            out.add("bottom", [("x", x)], f"bottom={ops.bottom!r} is not below x")
        if not leq(x, ops.top):
            out.add("top", [("x", x)], f"top={ops.top!r} is not above x")

    for x, y in itertools.product(xs, repeat=2):
        j, m = join(x, y), meet(x, y)
        xy = [("x", x), ("y", y)]
        if leq(x, y) and leq(y, x) and not same(x, y):
            out.add("leq_antisymmetric", xy, "x <= y and y <= x but x != y")
        if not (leq(x, j) and leq(y, j)):
            side = "x" if not leq(x, j) else "y"
            out.add("join_upper_bound", xy, f"join(x, y)={j!r} is not above {side}")
        if not (leq(m, x) and leq(m, y)):
            side = "x" if not leq(m, x) else "y"
            out.add("meet_lower_bound", xy, f"meet(x, y)={m!r} is not below {side}")
        if not same(j, join(y, x)):
            out.add("join_commutative", xy, f"join(x, y)={j!r} but join(y, x)={join(y, x)!r}")
        if not same(m, meet(y, x)):
            out.add("meet_commutative", xy, f"meet(x, y)={m!r} but meet(y, x)={meet(y, x)!r}")
        if not same(join(x, m), x):
            out.add("absorption_join_meet", xy, f"join(x, meet(x, y))={join(x, m)!r}")
        if not same(meet(x, j), x):
            out.add("absorption_meet_join", xy, f"meet(x, join(x, y))={meet(x, j)!r}")
        if leq(x, y) != same(j, y):
            out.add("leq_iff_join", xy, f"leq(x, y)={leq(x, y)} but join(x, y)={j!r}")
        if leq(x, y) != same(m, x):
            out.add("leq_iff_meet", xy, f"leq(x, y)={leq(x, y)} but meet(x, y)={m!r}")

    for x, y, z in itertools.product(xs, repeat=3):
        xyz = [("x", x), ("y", y), ("z", z)]
        if leq(x, y) and leq(y, z) and not leq(x, z):
            out.add("leq_transitive", xyz, "x <= y <= z but not x <= z")
        if leq(x, z) and leq(y, z) and not leq(join(x, y), z):
            out.add("join_least", xyz, f"z is an upper bound below join(x, y)={join(x, y)!r}")
        if leq(z, x) and leq(z, y) and not leq(z, meet(x, y)):
            out.add("meet_greatest", xyz, f"z is a lower bound above meet(x, y)={meet(x, y)!r}")
        if out.wants("join_associative"):
            left, right = join(join(x, y), z), join(x, join(y, z))
            if not same(left, right):
                out.add("join_associative", xyz, f"(x⊔y)⊔z={left!r} but x⊔(y⊔z)={right!r}")
        if out.wants("meet_associative"):
            left, right = meet(meet(x, y), z), meet(x, meet(y, z))
            if not same(left, right):
                out.add("meet_associative", xyz, f"(x⊓y)⊓z={left!r} but x⊓(y⊓z)={right!r}")
    return out.found


def check_monotone(
    fn: Callable[[T], U],
    samples: Iterable[T],
    leq: Callable[[T, T], bool],
    *,
    out_leq: Callable[[U, U], bool] | None = None,
    name: str = "fn",
    per_law: int = 1,
) -> list[LawViolation]:
    """``x <= y`` implies ``fn(x) <= fn(y)`` for all sample pairs.

    ``out_leq`` orders the results (default: ``leq``). For a function of several arguments
    pass tuples as samples, a tuple-taking ``fn`` and :func:`product_leq` as ``leq``.
    """
    xs = list(samples)
    after: Callable[[Any, Any], bool] = out_leq if out_leq is not None else leq
    out = _Collector(per_law)
    for x, y in itertools.product(xs, repeat=2):
        if leq(x, y) and not after(fn(x), fn(y)):
            out.add(
                f"{name}_monotone",
                [("x", x), ("y", y)],
                f"x <= y but {name}(x)={fn(x)!r} is not below {name}(y)={fn(y)!r}",
            )
    return out.found


def check_lowers(
    fn: Callable[[T], T],
    samples: Iterable[T],
    leq: Callable[[T, T], bool],
    *,
    name: str = "fn",
    per_law: int = 1,
) -> list[LawViolation]:
    """A forgetting operation only lowers: ``fn(x) <= x`` [GD §2.1]."""
    out = _Collector(per_law)
    for x in samples:
        if not leq(fn(x), x):
            out.add(f"{name}_lowers", [("x", x)], f"{name}(x)={fn(x)!r} is not below x")
    return out.found


def check_closure(
    fn: Callable[[T], T],
    samples: Iterable[T],
    leq: Callable[[T, T], bool],
    *,
    eq: Callable[[T, T], bool] | None = None,
    name: str = "fn",
    per_law: int = 1,
) -> list[LawViolation]:
    """``fn`` is a closure operator: extensive, monotone and idempotent (e.g. the
    F <=> A linkage on (knowledge, curiosity) pairs [GD §2.1.1])."""
    xs = list(samples)
    same: Callable[[T, T], bool] = eq if eq is not None else (lambda a, b: bool(a == b))
    out = _Collector(per_law)
    for x in xs:
        fx = fn(x)
        if not leq(x, fx):
            out.add(f"{name}_extensive", [("x", x)], f"{name}(x)={fx!r} is not above x")
        if not same(fn(fx), fx):
            out.add(f"{name}_idempotent", [("x", x)], f"{name}({fx!r})={fn(fx)!r} != {fx!r}")
    out.found += check_monotone(fn, xs, leq, name=name, per_law=per_law)
    return out.found


def product_leq(
    *leqs: Callable[[Any, Any], bool],
) -> Callable[[Sequence[Any], Sequence[Any]], bool]:
    """The componentwise order on tuples, one ``leq`` per component."""

    def leq(a: Sequence[Any], b: Sequence[Any]) -> bool:
        return len(a) == len(b) == len(leqs) and all(
            f(u, v) for f, u, v in zip(leqs, a, b, strict=True)
        )

    return leq


def assert_laws(violations: Sequence[LawViolation], what: str = "") -> None:
    """Raise :class:`LawError` if ``violations`` is not empty."""
    if violations:
        raise LawError(what or "", violations)


def assert_lattice(ops: _Ops[T], samples: Iterable[T], **kwargs: Any) -> None:
    """:func:`check_lattice`, raising :class:`LawError` on the first failing law."""
    assert_laws(check_lattice(ops, samples, **kwargs), "lattice")
