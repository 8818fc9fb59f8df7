"""Curiosity values N, C, A [GD §2.1.1], their combination [GD §2.4, §3.1] and the
F <=> A linkage.

Theory of operation
-------------------
A tick's curiosity says how urgently the stream needs the tick's knowledge:

* ``N`` — neutral, the default [GD §2.1.1];
* ``C`` — curious: some downstream subscriber needs K_t (a nack is due);
* ``A`` — anti-curious/ack: nobody downstream needs K_t any more.

At one stream, curiosity moves along the chain ``N < C < A`` (a gap becomes curious, a
delivered or silent tick becomes acked, A is final because it is linked to F) — that chain
is :meth:`Curiosity.leq` and :meth:`Curiosity.join`. The only lowering is forgetting C back
to N (an istream forgets C after the minimum repetition interval [GD §3.1]).

Combining several downstream streams upstream [GD §2.4]: "A tick becomes anti-curious only
if *all* downstream streams propagate A to it"; any C propagates C. The paper's rule as one
function of N/C/A — any C gives C, all A gives A, else N — is **not** monotone in the chain
(``(N, C) -> C`` but ``(N, A) -> N``; ``gapless prove`` records this as a fact with the
witness). It *is* monotone once split into its two independent components
(:class:`Demand`): an **ack** bit combined by AND and a **curious** bit combined by OR, each
over the two-point order False < True. :func:`upstream` computes the paper's rule through
that decomposition.

The linkage [GD §2.1.1]: "a tick whose knowledge state becomes F is assigned a curiosity of A
and vice-versa". :func:`link` is the closure operator that enforces it on a (knowledge,
curiosity) pair: knowledge at or above F makes the curiosity A, and curiosity A joins F into
the knowledge. L coexists with A: the pubend's release protocol lowers an acknowledged
prefix to L [DUR §3] *by forgetting*, which is not subject to the closure, so a released
``(L, A)`` tick stays as it is until something accumulates into it again.

>>> upstream([A, A]) is A, upstream([A, C]) is C, upstream([A, N]) is N
(True, True, True)
>>> from gapless.impl.knowledge import D, DSTAR, F, Q
>>> link(Q, A) == (F, A), link(D("x"), A) == (DSTAR("x"), A), link(F, N) == (F, A)
(True, True, True)
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any, Final, final

from gapless.impl.errors import LatticeMismatch
from gapless.impl.knowledge import F, Kind, Knowledge

__all__ = [
    "CURIOSITY",
    "A",
    "C",
    "Curiosity",
    "CuriosityLattice",
    "Demand",
    "N",
    "combine",
    "decompose",
    "forget_curiosity",
    "link",
    "recompose",
    "upstream",
]


class _CKind(IntEnum):
    N = 0
    C = 1
    A = 2


@final
class Curiosity:
    """One curiosity value; use the singletons :data:`N`, :data:`C`, :data:`A`."""

    __slots__ = ("kind",)

    kind: _CKind

    def __init__(self, kind: _CKind) -> None:
        object.__setattr__(self, "kind", kind)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Curiosity values are immutable (tried to set {name!r})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_by_name, (self.kind.name,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Curiosity):
            return NotImplemented
        return self.kind == other.kind

    def __hash__(self) -> int:
        return hash(("curiosity", int(self.kind)))

    def __repr__(self) -> str:
        return self.kind.name

    @property
    def symbol(self) -> str:
        return self.kind.name

    def leq(self, other: Curiosity, /) -> bool:
        """The accumulation chain N < C < A."""
        if not isinstance(other, Curiosity):
            raise _mismatch("leq", other)
        return self.kind <= other.kind

    def join(self, other: Curiosity, /) -> Curiosity:
        if not isinstance(other, Curiosity):
            raise _mismatch("join", other)
        return self if self.kind >= other.kind else other

    def meet(self, other: Curiosity, /) -> Curiosity:
        if not isinstance(other, Curiosity):
            raise _mismatch("meet", other)
        return self if self.kind <= other.kind else other


def _mismatch(op: str, other: object) -> LatticeMismatch:
    return LatticeMismatch(f"Curiosity.{op}: {other!r} is not a curiosity value; allowed: N, C, A")


N: Final = Curiosity(_CKind.N)
C: Final = Curiosity(_CKind.C)
A: Final = Curiosity(_CKind.A)
_BY_NAME: Final = {"N": N, "C": C, "A": A}


def _by_name(name: str) -> Curiosity:
    return _BY_NAME[name]


@final
class CuriosityLattice:
    """The chain N < C < A as operations."""

    bottom: Final = N
    top: Final = A

    @staticmethod
    def join(a: Curiosity, b: Curiosity, /) -> Curiosity:
        return a.join(b)

    @staticmethod
    def meet(a: Curiosity, b: Curiosity, /) -> Curiosity:
        return a.meet(b)

    @staticmethod
    def leq(a: Curiosity, b: Curiosity, /) -> bool:
        return a.leq(b)


CURIOSITY: Final = CuriosityLattice()


def forget_curiosity(value: Curiosity) -> Curiosity:
    """Forgetting lowers C to N [GD §3.1]; N and A are kept (A is linked to F)."""
    if not isinstance(value, Curiosity):
        raise _mismatch("forget", value)
    return N if value is C else value


# -- combination of downstream curiosity [GD §2.4, §3.1] -------------------------------


@final
class Demand:
    """The two monotone components of combined curiosity.

    ``acked``: every downstream stream has acked (combined by AND);
    ``curious``: some downstream stream is curious (combined by OR).
    """

    __slots__ = ("acked", "curious")

    acked: bool
    curious: bool

    def __init__(self, *, acked: bool, curious: bool) -> None:
        object.__setattr__(self, "acked", acked)
        object.__setattr__(self, "curious", curious)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Demand is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Demand):
            return NotImplemented
        return self.acked == other.acked and self.curious == other.curious

    def __hash__(self) -> int:
        return hash((self.acked, self.curious))

    def __repr__(self) -> str:
        return f"Demand(acked={self.acked}, curious={self.curious})"

    def combine(self, other: Demand) -> Demand:
        """Component-wise AND of ``acked``, OR of ``curious``."""
        return Demand(acked=self.acked and other.acked, curious=self.curious or other.curious)


def decompose(value: Curiosity) -> Demand:
    """N -> (no ack, not curious); C -> (no ack, curious); A -> (ack, not curious)."""
    if not isinstance(value, Curiosity):
        raise _mismatch("decompose", value)
    return Demand(acked=value is A, curious=value is C)


def recompose(demand: Demand) -> Curiosity:
    """Back to one value: any curiosity wins (a nack is due), else all-acked gives A."""
    if demand.curious:
        return C
    if demand.acked:
        return A
    return N


def combine(values: Iterable[Curiosity]) -> Demand:
    """Combine the curiosity of several downstream streams; the identity is
    ``Demand(acked=True, curious=False)`` (no downstream stream needs anything)."""
    acked, curious = True, False
    for v in values:
        if not isinstance(v, Curiosity):
            raise _mismatch("combine", v)
        acked = acked and v is A
        curious = curious or v is C
    return Demand(acked=acked, curious=curious)


def upstream(values: Iterable[Curiosity]) -> Curiosity:
    """The curiosity an upstream stream takes from its downstream streams [GD §2.4]:
    C if any is C, A if all are A, otherwise N.

    At least one downstream stream is required (:class:`LatticeMismatch` otherwise). The
    combination's identity, ``combine([])``, is "acked, not curious", which would recompose to
    a vacuous A: an ack for ticks no downstream stream ever saw. No role relies on it — an IB
    stream with no ostream is not A unless its knowledge is F (``_a_end`` in
    ``impl/gd/roles.py``) — and :func:`gapless.impl.streams.upstream_curiosity` refuses an
    empty input the same way; the spec's laws equate this rule with the paper's for 1, 2 and 3
    downstream streams (``spec/lattices.md``, "demand").
    """
    items = list(values)
    if not items:
        raise LatticeMismatch(
            "upstream: needs at least one downstream curiosity value; got none (allowed: a "
            "non-empty iterable of N, C, A)"
        )
    return recompose(combine(items))


# -- the F <=> A linkage [GD §2.1.1] --------------------------------------------------

_AT_OR_ABOVE_F: Final = frozenset({Kind.F, Kind.DSTAR, Kind.S, Kind.E})


def link(knowledge: Knowledge, curiosity: Curiosity) -> tuple[Knowledge, Curiosity]:
    """Close a (knowledge, curiosity) pair under the linkage: K >= F gives A; A gives K ⊔ F.

    This is a closure operator on the product order (knowledge lattice x chain N < C < A):
    extensive, monotone and idempotent (proved by ``gapless prove``).
    """
    if not isinstance(knowledge, Knowledge):
        raise LatticeMismatch(f"link: {knowledge!r} is not a knowledge value")
    if not isinstance(curiosity, Curiosity):
        raise _mismatch("link", curiosity)
    if knowledge.kind in _AT_OR_ABOVE_F:
        return knowledge, A
    if curiosity is A:
        return knowledge.join(F), A
    return knowledge, curiosity
