"""Knowledge values: the lattice Q, L, D(a), D*(a), F, S, E of [GD §2.1] and [DUR §3].

Theory of operation
-------------------
Each tick of a stream holds one knowledge value. Knowledge *accumulates* by join (least
upper bound, [GD §2.1]) when a message arrives, and is *forgotten* by separate lowering
operations (:func:`forget`, :func:`finalize`, :func:`release`), never by join.

The order (Hasse diagram in ``spec/lattices.md``)::

            E
          /   \\
       D*(a)   S
       /   \\  /
    D(a)    F
       \\   /
         L
         |
         Q

* ``Q`` — nothing known [GD §2.1]; the bottom.
* ``L`` — lost: the pubend discarded whether the tick was S or D [DUR §3]. It sits above Q
  (it *is* knowledge: a gap message can be delivered for it) and below both D and F, so
  that real data or a real silence refines it by join.
* ``D(a)`` — data ``a`` was published at this tick [GD §2.1]. The payload is part of the
  value, so ``D(a) ⊔ D(b) = E`` when ``a != b`` ([GD §2.2]: no two pubends put different
  data on one tick).
* ``F`` — final, "don't care": the greatest lower bound of D* and S [GD §2.1].
* ``D*(a)`` — data delivered everywhere it was needed; ``D(a) ⊔ F = D*(a)``.
* ``S`` — silence.
* ``E`` — error, the top; never reached by a correct protocol.

Values are interned singletons for the payload-free kinds; ``D``/``D*`` are small frozen
objects. All are hashable, immutable and ``@final``.

>>> D("a").join(F) == DSTAR("a")
True
>>> D("a").join(D("b")) is E
True
>>> D("a").meet(S) is L
True
>>> Q.leq(L) and L.leq(F) and not F.leq(D("a"))
True
"""

from __future__ import annotations

from collections.abc import Hashable
from enum import IntEnum
from typing import Any, Final, final

from gapless.impl.errors import LatticeMismatch

__all__ = [
    "DSTAR",
    "KNOWLEDGE",
    "D",
    "E",
    "F",
    "Kind",
    "Knowledge",
    "KnowledgeLattice",
    "L",
    "Q",
    "S",
    "finalize",
    "forget",
    "release",
]


class Kind(IntEnum):
    """The seven kinds of knowledge value. ``D`` and ``DSTAR`` carry a payload."""

    Q = 0
    L = 1
    D = 2
    F = 3
    DSTAR = 4
    S = 5
    E = 6


_SYMBOL: Final = {
    Kind.Q: "Q",
    Kind.L: "L",
    Kind.D: "D",
    Kind.F: "F",
    Kind.DSTAR: "D*",
    Kind.S: "S",
    Kind.E: "E",
}

# Which payload-free kinds lie strictly above L (besides E): used by leq.
_ABOVE_L: Final = frozenset({Kind.D, Kind.F, Kind.DSTAR, Kind.S})


@final
class Knowledge:
    """One knowledge value. Build them with :data:`Q`, :data:`L`, :func:`D`, :func:`DSTAR`,
    :data:`F`, :data:`S`, :data:`E`; never call the constructor with a payload for a
    payload-free kind."""

    __slots__ = ("_hash", "kind", "payload")

    kind: Kind
    payload: Hashable | None
    _hash: int

    def __init__(self, kind: Kind, payload: Hashable | None = None) -> None:
        has_payload = kind in (Kind.D, Kind.DSTAR)
        if has_payload and payload is None:
            raise LatticeMismatch(
                f"Knowledge({_SYMBOL[kind]}): a {_SYMBOL[kind]} value needs a payload; "
                "allowed: any hashable, non-None payload"
            )
        if not has_payload and payload is not None:
            raise LatticeMismatch(
                f"Knowledge({_SYMBOL[kind]}): payload {payload!r} given to a payload-free "
                "kind; only D and D* carry a payload"
            )
        try:
            h = hash((int(kind), payload))
        except TypeError:
            raise LatticeMismatch(
                f"Knowledge({_SYMBOL[kind]}): payload {payload!r} is not hashable; allowed: any "
                "hashable, non-None payload (str, int, bytes, tuple, frozenset, a frozen value)"
            ) from None
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "_hash", h)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Knowledge values are immutable (tried to set {name!r})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Knowledge, (self.kind, self.payload))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Knowledge):
            return NotImplemented
        return self.kind == other.kind and self.payload == other.payload

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.payload is None:
            return _SYMBOL[self.kind]
        return f"{_SYMBOL[self.kind]}({self.payload!r})"

    @property
    def symbol(self) -> str:
        """The paper's symbol for this value's kind (``Q``, ``L``, ``D``, ``D*``, ...)."""
        return _SYMBOL[self.kind]

    @property
    def is_data(self) -> bool:
        """True for D and D* (the values that carry a message)."""
        return self.kind is Kind.D or self.kind is Kind.DSTAR

    # -- the lattice ------------------------------------------------------------------

    def leq(self, other: Knowledge, /) -> bool:
        """The order of [GD Figure 2] extended with L [DUR §3]."""
        if not isinstance(other, Knowledge):
            raise _mismatch("leq", other)
        if self is other:
            return True
        a, b = self.kind, other.kind
        if a is Kind.Q or b is Kind.E:
            return True
        if a is Kind.L:
            return b in _ABOVE_L or b is Kind.L
        if a is Kind.D:
            return b in (Kind.D, Kind.DSTAR) and self.payload == other.payload
        if a is Kind.F:
            return b in (Kind.F, Kind.DSTAR, Kind.S)
        if a is Kind.DSTAR:
            return b is Kind.DSTAR and self.payload == other.payload
        # S and E: only equal or E above
        return a == b

    def join(self, other: Knowledge, /) -> Knowledge:
        """Least upper bound: knowledge accumulation [GD §2.1]."""
        if not isinstance(other, Knowledge):
            raise _mismatch("join", other)
        if self.leq(other):
            return other
        if other.leq(self):
            return self
        # Incomparable pairs: only D(a) ⊔ F has an upper bound below E.
        if self.kind is Kind.D and other.kind is Kind.F:
            return Knowledge(Kind.DSTAR, self.payload)
        if self.kind is Kind.F and other.kind is Kind.D:
            return Knowledge(Kind.DSTAR, other.payload)
        return E

    def meet(self, other: Knowledge, /) -> Knowledge:
        """Greatest lower bound."""
        if not isinstance(other, Knowledge):
            raise _mismatch("meet", other)
        if self.leq(other):
            return self
        if other.leq(self):
            return other
        # Incomparable pairs among {D*, S}: F is their greatest lower bound [GD §2.1].
        if self.kind in (Kind.DSTAR, Kind.S) and other.kind in (Kind.DSTAR, Kind.S):
            return F
        return L


def _mismatch(op: str, other: object) -> LatticeMismatch:
    return LatticeMismatch(
        f"Knowledge.{op}: {other!r} is not a knowledge value; allowed: Q, L, D(a), D*(a), F, S, E"
    )


Q: Final = Knowledge(Kind.Q)
L: Final = Knowledge(Kind.L)
F: Final = Knowledge(Kind.F)
S: Final = Knowledge(Kind.S)
E: Final = Knowledge(Kind.E)


def D(payload: Hashable) -> Knowledge:
    """Data ``payload`` published at this tick [GD §2.1]."""
    return Knowledge(Kind.D, payload)


def DSTAR(payload: Hashable) -> Knowledge:
    """Data ``payload``, delivered everywhere it was needed [GD §2.1]."""
    return Knowledge(Kind.DSTAR, payload)


# -- forgetting: separate from accumulation, always lowers [GD §2.1, DUR §3] -------------


def forget(value: Knowledge) -> Knowledge:
    """Any stream but the pubend may drop a tick to Q (soft state lost) [GD §2.1]."""
    if not isinstance(value, Knowledge):
        raise _mismatch("forget", value)
    return Q


def finalize(value: Knowledge) -> Knowledge:
    """S and D* are lowered to F automatically [GD §2.1]; other values are kept."""
    if not isinstance(value, Knowledge):
        raise _mismatch("finalize", value)
    if value.kind is Kind.S or value.kind is Kind.DSTAR:
        return F
    return value


def release(value: Knowledge) -> Knowledge:
    """The pubend's release lowers a tick to L [DUR §3]; Q (below L) stays Q."""
    if not isinstance(value, Knowledge):
        raise _mismatch("release", value)
    if value.kind is Kind.Q:
        return value
    return L


@final
class KnowledgeLattice:
    """The knowledge lattice as operations (a :class:`~gapless.impl.lattice.LatticeOps`)."""

    bottom: Final = Q
    top: Final = E

    @staticmethod
    def join(a: Knowledge, b: Knowledge, /) -> Knowledge:
        return a.join(b)

    @staticmethod
    def meet(a: Knowledge, b: Knowledge, /) -> Knowledge:
        return a.meet(b)

    @staticmethod
    def leq(a: Knowledge, b: Knowledge, /) -> bool:
        return a.leq(b)


KNOWLEDGE: Final = KnowledgeLattice()
