"""The run-length-encoded stream core: runs, splicing, the shared stream class [GD §2.1].

Theory of operation
-------------------
A stream is three immutable fields (see :mod:`gapless.impl.streams`): the final prefix ``p``,
the run starts ``s`` and the run values ``v``. This module holds what every stream kind
shares: checking ticks and ranges, cutting the runs a range overlaps (:func:`_segments`),
splicing new runs in (:func:`_assign`, :func:`_edit`), restoring the canonical form
(:func:`_canonical`: adjacent runs differ, the first run is never the final value), and the
generic immutable :class:`_RunStream` with accumulation (join into every tick of a range
[GD §2.1]) and lowering (forgetting). Every operation costs by the runs it touches, never by
the ticks a range covers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Final, Generic, NamedTuple, TypeVar

from gapless.impl.errors import InvalidRange, InvalidTick, LatticeMismatch
from gapless.impl.knowledge import F, Kind, Knowledge, Q

V = TypeVar("V")
S_ = TypeVar("S_", bound="_RunStream[Any]")

_ABOVE_F: Final = frozenset({Kind.F, Kind.DSTAR, Kind.S, Kind.E})


class Run(NamedTuple, Generic[V]):
    """One maximal run: every tick in ``[start, end]`` (inclusive) holds ``value``."""

    start: int
    end: int
    value: V


# -- validation ---------------------------------------------------------------------------


def _tick(op: str, name: str, t: object) -> int:
    if type(t) is not int or t < 0:
        raise InvalidTick(f"{op}: {name}={t!r} is not a tick; allowed: an int >= 0 (1 tick = 1 µs)")
    return t


def _range(op: str, start: object, end: object) -> tuple[int, int]:
    """Validate an inclusive range; return it as ``(start, end + 1)``."""
    if type(start) is int and type(end) is int and 0 <= start <= end:
        return start, end + 1
    _tick(op, "start", start)
    _tick(op, "end", end)
    raise InvalidRange(
        f"{op}: range [{start}, {end}] is empty or inverted; allowed: start <= end (inclusive)"
    )


# -- the run-list core (private, shared by both stream kinds) ----------------------------


def _segments(
    p: int, s: tuple[int, ...], v: tuple[V, ...], fin: V, a: int, b1: int
) -> tuple[list[int], list[V]]:
    """The runs of the window ``[a, b1)`` as parallel lists, the first start being ``a``."""
    ss: list[int] = []
    vs: list[V] = []
    if a < p:
        ss.append(a)
        vs.append(fin)
        if b1 <= p:
            return ss, vs
        a = p
    i = bisect_right(s, a) - 1
    n = len(s)
    ss.append(a)
    vs.append(v[i])
    i += 1
    while i < n and s[i] < b1:
        ss.append(s[i])
        vs.append(v[i])
        i += 1
    return ss, vs


def _assign(
    p: int,
    s: tuple[int, ...],
    v: tuple[V, ...],
    fin: V,
    a: int,
    b1: int,
    ns: list[int],
    nv: list[V],
) -> tuple[int, tuple[int, ...], tuple[V, ...]]:
    """Replace the window ``[a, b1)`` by the runs ``ns``/``nv`` (``ns[0] == a``); canonical.

    A run is its start: a new run equal to the one before it is simply not started, which
    extends the run before (or, at the front, the collapsed prefix).
    """
    if a < p:
        # Split the collapsed prefix: [0, a) stays collapsed, [a, p) becomes a real run (the
        # prefix is recomputed below, as the window then starts at run 0).
        s = (a, *s)
        v = (fin, *v)
    n = len(s)
    i = bisect_right(s, a) - 1  # the run holding tick a
    j = bisect_left(s, b1, i + 1)  # the first run starting at or after b1
    ms: list[int] = []
    mv: list[V] = []
    if s[i] < a:  # the head of run i stays
        ms.append(s[i])
        mv.append(v[i])
        last = v[i]
    else:  # the run before, or the collapsed prefix
        last = v[i - 1] if i else fin
    for k in range(len(ns)):
        x = nv[k]
        if x != last:
            ms.append(ns[k])
            mv.append(x)
            last = x
    if j == n or s[j] != b1:  # the tail of run j - 1 stays
        x = v[j - 1]
        if x != last:
            ms.append(b1)
            mv.append(x)
            last = x
    hi = j
    if j < n:  # run j may now continue the window's last run
        if v[j] != last:
            ms.append(s[j])
            mv.append(v[j])
        hi = j + 1
    if not i:  # what equals the final value at the front joined the collapsed prefix
        p = ms[0] if ms else s[hi]
    return p, s[:i] + tuple(ms) + s[hi:], v[:i] + tuple(mv) + v[hi:]


_NEVER: Final = float("inf")  # a run start beyond every tick


def _join_f(x: Knowledge) -> Knowledge:
    """``F ⊔ x``: the one join the in-order path performs on every message. The acknowledged
    prefix F lands on the previous D(a), giving D*(a) [GD §2.1]; the differential tests check
    this shortcut against :meth:`Knowledge.join`."""
    if x is F or x is Q:
        return F
    if x.kind is Kind.D:
        return Knowledge(Kind.DSTAR, x.payload)
    return F.join(x)


def _joiner(value: Any, bottom: Any) -> Callable[[Any], Any]:
    """``x -> value ⊔ x``, answering the bottom and equal cases without calling join."""
    if value is F:
        return _join_f
    vjoin = value.join

    def join(x: Any) -> Any:
        if x is value or x is bottom:
            return value
        return vjoin(x)

    return join


def _edit(
    p: int,
    s: tuple[int, ...],
    v: tuple[V, ...],
    fin: V,
    a: int,
    b1: int,
    fn: Callable[[V], V],
) -> tuple[int, tuple[int, ...], tuple[V, ...]] | None:
    """Map ``fn`` over every tick of ``[a, b1)`` in one pass; None when nothing changes.

    The same result as ``_segments`` + map + ``_assign``, fused because it is the hot path.
    Values are compared by identity first, then by kind, then by ``==`` (cheapest first).
    """
    if a < p:
        f0 = fn(fin)
        if f0 is fin or f0 == fin:
            a = p  # the collapsed prefix is unaffected
            if a >= b1:
                return None
        else:
            # Split the collapsed prefix as in _assign; the loop below sees the change.
            s = (a, *s)
            v = (fin, *v)
    changed = False
    n = len(s)
    i = bisect_right(s, a) - 1  # the run holding tick a
    j = bisect_left(s, b1, i + 1)  # the first run starting at or after b1
    ms: list[int] = []
    mv: list[V] = []
    last: Any
    if s[i] < a:  # the head of run i stays
        ms.append(s[i])
        mv.append(v[i])
        last = v[i]
    else:  # the run before, or the collapsed prefix
        last = v[i - 1] if i else fin
    st = a
    for k in range(i, j):
        x: Any = v[k]
        y: Any = fn(x)
        if y is not x:
            if y.kind is x.kind and y == x:
                y = x
            else:
                changed = True
        if not (y is last or (y.kind is last.kind and y == last)):
            ms.append(st)
            mv.append(y)
            last = y
        if k + 1 < n:
            st = s[k + 1]
    if not changed:
        return None
    if j == n or s[j] != b1:  # the tail of run j - 1 stays
        x = v[j - 1]
        if not (x is last or (x.kind is last.kind and x == last)):
            ms.append(b1)
            mv.append(x)
            last = x
    hi = j
    if j < n:  # run j may now continue the window's last run
        x = v[j]
        if not (x is last or (x.kind is last.kind and x == last)):
            ms.append(s[j])
            mv.append(x)
        hi = j + 1
    if not i:  # what equals the final value at the front joined the collapsed prefix
        p = ms[0] if ms else s[hi]
    return p, s[:i] + tuple(ms) + s[hi:], v[:i] + tuple(mv) + v[hi:]


def _canonical(
    starts: Sequence[int], values: Sequence[V], fin: V
) -> tuple[int, tuple[int, ...], tuple[V, ...]]:
    """Canonical fields from a full segment list starting at tick 0 and ending in bottom."""
    ms: list[int] = []
    mv: list[V] = []
    for k in range(len(starts)):
        x = values[k]
        if mv and x == mv[-1]:
            continue
        ms.append(starts[k])
        mv.append(x)
    p = 0
    if mv[0] == fin:
        p = ms[1]
        del ms[0], mv[0]
    return p, tuple(ms), tuple(mv)


class _RunStream(Generic[V]):
    """Private shared machinery; the public classes are :class:`KnowledgeStream` and
    :class:`CuriosityStream`."""

    __slots__ = ("_p", "_s", "_v")

    _p: int
    _s: tuple[int, ...]
    _v: tuple[V, ...]

    _FINAL: ClassVar[Any]
    _BOTTOM: ClassVar[Any]
    _TYPE: ClassVar[Any]
    _NAME: ClassVar[str]
    _LATTICE: ClassVar[str]
    _ALLOWED: ClassVar[str]

    def __init__(self) -> None:
        object.__setattr__(self, "_p", 0)
        object.__setattr__(self, "_s", (0,))
        object.__setattr__(self, "_v", (self._BOTTOM,))

    @classmethod
    def _make(cls: type[S_], p: int, s: tuple[int, ...], v: tuple[Any, ...]) -> S_:
        o = _new(cls)
        _SET_P(o, p)
        _SET_S(o, s)
        _SET_V(o, v)
        return o

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{self._NAME} is immutable (tried to set {name!r})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._p, self._s, self._v))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _RunStream)
        # identity first: an edit often keeps one of the two tuples (the roles compare a
        # step's new state with the old one to tell an idle step)
        s, v = self._s, self._v
        o_s, o_v = other._s, other._v
        return self._p == other._p and (s is o_s or s == o_s) and (v is o_v or v == o_v)

    def __hash__(self) -> int:
        return hash((self._NAME, self._p, self._s, self._v))

    def __repr__(self) -> str:
        parts = [f"[0..{self._p - 1}]={self._FINAL!r}"] if self._p else []
        s, v = self._s, self._v
        parts.extend(f"[{s[i]}..{s[i + 1] - 1}]={v[i]!r}" for i in range(len(s) - 1))
        parts.append(f"[{s[-1]}..]={v[-1]!r}")
        return f"{self._NAME}({', '.join(parts)})"

    # -- queries --------------------------------------------------------------------------

    @property
    def final_prefix(self) -> int:
        """``p`` such that ticks ``[0, p)`` all hold the final value (F / A) and tick ``p``
        does not: the acknowledged prefix [GD §2.1.1], one int."""
        return self._p

    @property
    def extent(self) -> int:
        """The first tick of the infinite bottom tail: every tick ``>= extent`` is Q / N."""
        return self._s[-1]

    @property
    def stored(self) -> tuple[int, tuple[int, ...], tuple[V, ...]]:
        """The stored form itself, ``(p, starts, values)``: ticks ``[0, p)`` hold the final
        value, value ``i`` holds from ``starts[i]`` to the next start (the last, the bottom,
        for ever). For a judge of the representation (``canonical_state``); read-only."""
        return self._p, self._s, self._v

    @property
    def run_count(self) -> int:
        """The number of runs stored after the collapsed prefix (the tail excluded)."""
        return len(self._s) - 1

    def value_at(self, tick: int) -> V:
        """The value of one tick."""
        t = _tick(f"{self._NAME}.value_at", "tick", tick)
        if t < self._p:
            return self._FINAL  # type: ignore[no-any-return]
        return self._v[bisect_right(self._s, t) - 1]

    def runs(self) -> Iterator[Run[V]]:
        """The maximal runs covering ``[0, extent)`` in tick order (the collapsed prefix first,
        if any); the infinite bottom tail is not listed."""
        if self._p:
            yield Run(0, self._p - 1, self._FINAL)
        s, v = self._s, self._v
        for i in range(len(s) - 1):
            yield Run(s[i], s[i + 1] - 1, v[i])

    # -- the generic edit -----------------------------------------------------------------

    def _accumulate(self: S_, op: str, start: int, end: int, value: Any) -> S_:
        a, b1 = _range(op, start, end)
        if type(value) is not self._TYPE:
            raise LatticeMismatch(
                f"{op}: {value!r} is not a {self._LATTICE} value; allowed: {self._ALLOWED}"
            )
        s: tuple[int, ...] = self._s
        tail = s[-1]
        if a >= tail:
            # Fast path: the range lies in the bottom tail, where join(bottom, x) = x.
            bottom = self._BOTTOM
            if value is bottom or value.kind is bottom.kind:
                return self  # the bottom is the only value of its kind
            v: tuple[Any, ...] = self._v
            if a > tail:
                # Tuple concatenation copies once; (*s, a) would copy three times.
                return self._make(self._p, s + (a, b1), v + (value, bottom))  # noqa: RUF005
            if len(s) > 1:
                prev = v[-2]
                if prev is value or (prev.kind is value.kind and prev == value):
                    return self._make(self._p, s[:-1] + (b1,), v)  # noqa: RUF005
            elif value is self._FINAL or value == self._FINAL:
                return self._make(b1, (b1,), v)
            # s[-1] == a: the new run keeps that start, and the tail now starts at b1
            return self._make(self._p, s + (b1,), v[:-1] + (value, bottom))  # noqa: RUF005
        v = self._v
        i = bisect_right(s, a) - 1
        if s[i] == a and s[i + 1] == b1:
            # Fast path: the range is exactly one bottom run between two others (a pubend's
            # pending tick between silences): join(bottom, x) = x replaces that run's value,
            # the run starts stay the same tuple.
            x = v[i]
            bottom = self._BOTTOM
            if (x is bottom or x == bottom) and not (value is bottom or value == bottom):
                before = v[i - 1] if i else self._FINAL
                after = v[i + 1]
                if not (
                    before is value
                    or after is value
                    or (before.kind is value.kind and before == value)
                    or (after.kind is value.kind and after == value)
                ):
                    vs = list(v)
                    vs[i] = value
                    return self._make(self._p, s, tuple(vs))
        r = _edit(self._p, s, v, self._FINAL, a, b1, _joiner(value, self._BOTTOM))
        return self if r is None else self._make(*r)

    def _lower(self: S_, op: str, start: int, end: int, fn: Callable[[Any], Any]) -> S_:
        a, b1 = _range(op, start, end)
        r = _edit(self._p, self._s, self._v, self._FINAL, a, b1, fn)
        return self if r is None else self._make(*r)

    def forget(self: S_, start: int, end: int) -> S_:
        """Forget ``[start, end]``: every tick drops to the bottom (soft state lost, [GD §2.1])."""
        bottom = self._BOTTOM
        return self._lower(f"{self._NAME}.forget", start, end, lambda _x: bottom)


def _set(o: object, name: str, value: object) -> None:
    object.__setattr__(o, name, value)


# Slot setters that bypass the raising __setattr__: the cheapest way to build a new value.
_new: Final = object.__new__
_SLOTS: Final[dict[str, Any]] = dict(vars(_RunStream))
_SET_P: Final[Callable[[object, int], None]] = _SLOTS["_p"].__set__
_SET_S: Final[Callable[[object, tuple[int, ...]], None]] = _SLOTS["_s"].__set__
_SET_V: Final[Callable[[object, tuple[Any, ...]], None]] = _SLOTS["_v"].__set__


def _rebuild(cls: type[S_], p: int, s: tuple[int, ...], v: tuple[Any, ...]) -> S_:
    return cls._make(p, s, v)


# -- knowledge ----------------------------------------------------------------------------
