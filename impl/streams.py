"""Run-length-encoded knowledge and curiosity streams keyed by tick [GD §2.1, DUR §3-4.1].

Theory of operation
-------------------
A stream maps every tick ``t >= 0`` to a value [GD §2.1]. One tick is one microsecond of
virtual time: fine enough that no two events share a tick [DUR §2, footnote 3] and that one
pubend can carry 10^6 messages per second. A stream is infinite: beyond its last run every
tick holds the bottom (``Q`` for knowledge, ``N`` for curiosity).

Representation. A stream is three immutable fields:

* ``final_prefix`` ``p`` -- ticks ``[0, p)`` all hold the stream's *final* value (``F`` for
  knowledge, ``A`` for curiosity). In a healthy stream "an ever-growing prefix of all streams
  will become both F and A" [GD §2.1.1]; that prefix is one int, never a run list.
* ``starts`` -- a tuple of strictly increasing run starts, the first equal to ``p``;
* ``values`` -- a tuple of the runs' values; run ``i`` covers ``[starts[i], starts[i+1])`` and
  the last run, whose value is always the bottom, covers ``[starts[-1], infinity)``.

The form is canonical: adjacent runs differ and the first run is never the final value (it
would belong to the prefix). So two streams are equal exactly when their fields are, and
``==``/``hash`` are cheap.

Cost. Every operation locates its range by bisection (``O(log n)``), visits only the runs
the range overlaps, and splices the result into new tuples. The number of ticks a range covers
never matters: a silence over 10^9 ticks costs what one tick costs. The splice copies the two
run tuples (a C-level ``memcpy``, a few nanoseconds per run), so edits to very long streams
pay that copy; a healthy stream keeps few runs because its acknowledged prefix collapses into
``final_prefix``. Appending in the bottom tail -- the common case, a pubend's next message --
has a fast path that touches no run at all.

Accumulation and forgetting [GD §2.1]. ``accumulate`` joins a value into every tick of an
inclusive range ``[start, end]``; forgetting lowers: ``forget`` (to ``Q``/``N``: soft state
lost), ``finalize`` (S and D* to F, [GD §2.1]), ``release`` (to L, [DUR §3]) and, for
curiosity, ``forget_curious`` (C to N, [GD §3.1]). A no-op returns the very same object.

The paired view :class:`PairedStream` holds a knowledge and a curiosity stream and closes
every tick an accumulation touches under the F <=> A linkage (:func:`gapless.impl.curiosity.link`,
[GD §2.1.1]). Lowerings are not accumulation and are not closed: a released ``(L, A)`` tick
stays as it is [DUR §3].

Doubt horizons. [GD §2.3]: the latest ``t_D`` such that every tick ``t < t_D`` whose curiosity
is not A has knowledge D (:meth:`PairedStream.doubt_horizon_gd`). [DUR §4.1]: given
``latestDelivered``, the highest timestamp such that every tick between latestDelivered and
it is not Q (:meth:`KnowledgeStream.doubt_horizon_dur`). They relate as follows: GD's is a
tick *count* (ticks ``< t_D`` are settled: acked or D) over a stream with curiosity; DUR's is
the last settled *tick* after a delivery point and counts any non-Q value (D, F, S, L...) as
settled. Under the linkage every tick at or above F is acked, so on a paired stream whose ticks
``<= ld`` are all settled, ``doubt_horizon_gd() <= doubt_horizon_dur(ld) + 1``, with equality
unless some tick in ``(ld, doubt_horizon_dur(ld)]`` is an unacknowledged L (DUR's gap, which
GD's horizon does not pass). The differential tests check this relation.

Transfer [GD §2.4]: :meth:`KnowledgeStream.filtered` and :func:`merge` apply
:func:`~gapless.impl.transfer.filter_value` and :func:`~gapless.impl.transfer.merge_values`
run by run; :func:`upstream_curiosity` combines downstream curiosity streams by
:func:`~gapless.impl.curiosity.upstream`.

>>> from gapless.impl.knowledge import D, F, Q
>>> s = KnowledgeStream().accumulate(0, 39_999, F).accumulate(40_000, 40_000, D("m1"))
>>> s.final_prefix, s.value_at(40_000), s.value_at(10**12)
(40000, D('m1'), Q)
>>> list(s.runs())
[Run(start=0, end=39999, value=F), Run(start=40000, end=40000, value=D('m1'))]
>>> s.accumulate(5, 7, F) is s
True
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import is_
from typing import Any, ClassVar, Final, Generic, NamedTuple, TypeVar, cast, final

from gapless.impl.curiosity import A, Curiosity, N, link, upstream
from gapless.impl.curiosity import forget_curiosity as _forget_c
from gapless.impl.errors import InvalidRange, InvalidTick, LatticeMismatch
from gapless.impl.knowledge import F, Kind, Knowledge, Q
from gapless.impl.knowledge import finalize as _finalize_k
from gapless.impl.knowledge import release as _release_k
from gapless.impl.transfer import Predicate, filter_value, merge_values

__all__ = [
    "CuriosityStream",
    "KnowledgeStream",
    "PairedStream",
    "Run",
    "merge",
    "upstream_curiosity",
]

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
        return self._p == other._p and self._s == other._s and self._v == other._v

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
            if value is bottom or value == bottom:
                return self
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
            return self._make(self._p, s[:-1] + (a, b1), v[:-1] + (value, bottom))  # noqa: RUF005
        r = _edit(self._p, s, self._v, self._FINAL, a, b1, _joiner(value, self._BOTTOM))
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


@final
class KnowledgeStream(_RunStream[Knowledge]):
    """An immutable, run-length-encoded knowledge stream [GD §2.1]; ``Q`` beyond its runs.

    >>> from gapless.impl.knowledge import D, E, F, L, Q, S
    >>> k = KnowledgeStream()
    >>> k.value_at(0), k.final_prefix, list(k.runs())
    (Q, 0, [])
    >>> k = k.accumulate(0, 9, S).accumulate(5, 5, D("x"))
    >>> [(r.start, r.end, r.value) for r in k.runs()]
    [(0, 4, S), (5, 5, E), (6, 9, S)]
    >>> k.forget(0, 10**9).value_at(5)
    Q
    >>> k.finalize(0, 4).final_prefix
    5
    >>> k.release(0, 2).value_at(1), k.next_gap(3)
    (L, (10, None))
    """

    __slots__ = ()

    _FINAL: ClassVar[Knowledge] = F
    _BOTTOM: ClassVar[Knowledge] = Q
    _TYPE: ClassVar[Any] = Knowledge
    _NAME: ClassVar[str] = "KnowledgeStream"
    _LATTICE: ClassVar[str] = "knowledge"
    _ALLOWED: ClassVar[str] = "Q, L, D(a), D*(a), F, S, E"

    def accumulate(self, start: int, end: int, value: Knowledge) -> KnowledgeStream:
        """Join ``value`` into every tick of ``[start, end]`` (knowledge accumulation,
        [GD §2.1]). In the bottom tail this is an append and touches no run."""
        return self._accumulate("KnowledgeStream.accumulate", start, end, value)

    def finalize(self, start: int, end: int) -> KnowledgeStream:
        """Lower S and D* to F in ``[start, end]`` ("any S or D* tick is automatically
        lowered to F", [GD §2.1])."""
        return self._lower("KnowledgeStream.finalize", start, end, _finalize_k)

    def release(self, start: int, end: int) -> KnowledgeStream:
        """Lower every non-Q tick of ``[start, end]`` to L (the pubend's release, [DUR §3])."""
        return self._lower("KnowledgeStream.release", start, end, _release_k)

    def next_gap(self, tick: int) -> tuple[int, int | None]:
        """The first run of Q ticks at or after ``tick``: ``(first, last)`` inclusive, ``last``
        None when the gap is the infinite tail. A nack covers such a range [GD §3.1]."""
        t = _tick("KnowledgeStream.next_gap", "tick", tick)
        s, v = self._s, self._v
        t = max(t, self._p)
        i = bisect_right(s, t) - 1
        n = len(s) - 1
        while i < n:
            if v[i].kind is Kind.Q:
                return max(t, s[i]), s[i + 1] - 1
            i += 1
        return max(t, s[n]), None

    def doubt_horizon_dur(self, latest_delivered: int) -> int:
        """The doubt horizon of [DUR §4.1]: the highest timestamp ``h >= latest_delivered``
        such that every tick in ``(latest_delivered, h]`` is not Q. ``latest_delivered = -1``
        means nothing is delivered yet (tick 0 is then the first tick in doubt).

        >>> from gapless.impl.knowledge import D, F
        >>> k = KnowledgeStream().accumulate(0, 103, F).accumulate(104, 104, D(1))
        >>> k = k.accumulate(105, 105, F).accumulate(106, 106, D(3))
        >>> k.doubt_horizon_dur(104), k.accumulate(108, 108, F).doubt_horizon_dur(104)
        (106, 106)
        """
        ld = latest_delivered
        if type(ld) is not int or ld < -1:
            raise InvalidTick(
                f"KnowledgeStream.doubt_horizon_dur: latest_delivered={ld!r} is not a "
                "timestamp; allowed: an int >= -1 (-1: nothing delivered yet)"
            )
        return self.next_gap(ld + 1)[0] - 1

    def filtered(self, matches: Predicate) -> KnowledgeStream:
        """The filter edge's output for this whole stream [GD §2.4], run by run: D(a) and
        D*(a) pass when ``matches(a)``, else become F; other values pass unchanged."""
        if not callable(matches):
            raise LatticeMismatch(
                f"KnowledgeStream.filtered: {matches!r} is not a predicate; allowed: a "
                "callable taking a payload and returning a bool"
            )
        v = self._v
        out = [filter_value(x, matches) for x in v]
        if all(map(is_, out, v)):
            return self
        starts = [0, *self._s] if self._p else list(self._s)
        values = [F, *out] if self._p else out
        return self._make(*_canonical(starts, values, F))


# -- curiosity ----------------------------------------------------------------------------


@final
class CuriosityStream(_RunStream[Curiosity]):
    """An immutable, run-length-encoded curiosity stream [GD §2.1.1]; ``N`` beyond its runs.

    >>> from gapless.impl.curiosity import A, C, N
    >>> c = CuriosityStream().accumulate(0, 99, A).accumulate(200, 209, C)
    >>> c.final_prefix, c.value_at(150), c.value_at(205)
    (100, N, C)
    >>> c.forget_curious(0, 10**6).value_at(205), c.forget(0, 10).final_prefix
    (N, 0)
    """

    __slots__ = ()

    _FINAL: ClassVar[Curiosity] = A
    _BOTTOM: ClassVar[Curiosity] = N
    _TYPE: ClassVar[Any] = Curiosity
    _NAME: ClassVar[str] = "CuriosityStream"
    _LATTICE: ClassVar[str] = "curiosity"
    _ALLOWED: ClassVar[str] = "N, C, A"

    def accumulate(self, start: int, end: int, value: Curiosity) -> CuriosityStream:
        """Join ``value`` (chain N < C < A) into every tick of ``[start, end]``."""
        return self._accumulate("CuriosityStream.accumulate", start, end, value)

    def forget_curious(self, start: int, end: int) -> CuriosityStream:
        """Lower C to N in ``[start, end]`` so repeated nacks appear fresh [GD §3.1]."""
        return self._lower("CuriosityStream.forget_curious", start, end, _forget_c)


# -- transfer of whole streams [GD §2.4] ---------------------------------------------------


def _sweep(
    streams: Sequence[_RunStream[V]], fn: Callable[[list[V]], V]
) -> tuple[list[int], list[V]]:
    """Apply ``fn`` to the values of all streams on every segment where none of them changes."""
    cursors: list[tuple[list[int], list[Any]]] = []
    st: _RunStream[V]
    for st in streams:
        if st._p:
            cursors.append(([0, *st._s], [st._FINAL, *st._v]))
        else:
            cursors.append((list(st._s), list(st._v)))
    bounds = sorted({b for starts, _ in cursors for b in starts})
    idx = [0] * len(cursors)
    out_s: list[int] = []
    out_v: list[V] = []
    for b in bounds:
        vals: list[V] = []
        for k, (starts, values) in enumerate(cursors):
            i = idx[k]
            while i + 1 < len(starts) and starts[i + 1] <= b:
                i += 1
            idx[k] = i
            vals.append(values[i])
        out_s.append(b)
        out_v.append(fn(vals))
    return out_s, out_v


def merge(streams: Iterable[KnowledgeStream]) -> KnowledgeStream:
    """The merge hyperedge's output for whole streams [GD §2.4]: per tick,
    :func:`~gapless.impl.transfer.merge_values`, computed once per segment on which no input
    changes. Cost: the inputs' runs, not their ticks.

    >>> from gapless.impl.knowledge import D, F
    >>> a = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 10, D("a"))
    >>> b = KnowledgeStream().accumulate(0, 19, F)
    >>> list(merge([a, b]).runs())
    [Run(start=0, end=9, value=F), Run(start=10, end=10, value=D('a'))]
    """
    items = list(streams)
    if not items:
        raise LatticeMismatch("merge: a merge needs at least one input stream; got none")
    for x in items:
        if type(x) is not KnowledgeStream:
            raise LatticeMismatch(
                f"merge: {x!r} is not a KnowledgeStream; allowed: KnowledgeStream inputs"
            )
    if len(items) == 1:
        return items[0]
    starts, values = _sweep(items, merge_values)
    return KnowledgeStream._make(*_canonical(starts, values, F))


def upstream_curiosity(streams: Iterable[CuriosityStream]) -> CuriosityStream:
    """The curiosity an upstream stream takes from its downstream streams [GD §2.4], per tick
    :func:`~gapless.impl.curiosity.upstream` (any C gives C, all A gives A, else N).

    >>> from gapless.impl.curiosity import A, C
    >>> x = CuriosityStream().accumulate(0, 9, A)
    >>> y = CuriosityStream().accumulate(0, 4, A).accumulate(5, 5, C)
    >>> list(upstream_curiosity([x, y]).runs())
    [Run(start=0, end=4, value=A), Run(start=5, end=5, value=C)]
    """
    items = list(streams)
    if not items:
        raise LatticeMismatch("upstream_curiosity: needs at least one downstream stream; got none")
    for x in items:
        if type(x) is not CuriosityStream:
            raise LatticeMismatch(
                f"upstream_curiosity: {x!r} is not a CuriosityStream; "
                "allowed: CuriosityStream inputs"
            )
    if len(items) == 1:
        return items[0]
    starts, values = _sweep(items, upstream)
    return CuriosityStream._make(*_canonical(starts, values, A))


# -- the paired view: knowledge + curiosity under the F <=> A linkage -----------------------


@final
class PairedStream:
    """A knowledge stream and a curiosity stream kept under the F <=> A linkage [GD §2.1.1].

    Every tick an accumulation touches is closed by :func:`~gapless.impl.curiosity.link`:
    knowledge at or above F makes the curiosity A, and A joins F into the knowledge. The
    lowerings (``forget``, ``forget_curious``, ``finalize``, ``release``) keep the pair
    consistent without closing it (a released tick is ``(L, A)``, [DUR §3]).

    >>> from gapless.impl.curiosity import A, C, N
    >>> from gapless.impl.knowledge import D, DSTAR, F, Q
    >>> p = PairedStream().accumulate_knowledge(0, 99, F).accumulate_knowledge(100, 100, D("a"))
    >>> p.value_at(50), p.value_at(100), p.final_prefix
    ((F, A), (D('a'), N), 100)
    >>> p.doubt_horizon_gd()
    101
    >>> q = p.accumulate_curiosity(0, 100, A)
    >>> q.value_at(100), q.finalize(0, 100).final_prefix
    ((D*('a'), A), 101)
    """

    __slots__ = ("_c", "_k")

    _k: KnowledgeStream
    _c: CuriosityStream

    def __init__(
        self,
        knowledge: KnowledgeStream | None = None,
        curiosity: CuriosityStream | None = None,
    ) -> None:
        """An empty pair, or the closure of the given pair under the linkage."""
        k = KnowledgeStream() if knowledge is None else knowledge
        c = CuriosityStream() if curiosity is None else curiosity
        if type(k) is not KnowledgeStream:
            raise LatticeMismatch(
                f"PairedStream: knowledge={k!r} is not a KnowledgeStream; allowed: a "
                "KnowledgeStream or None"
            )
        if type(c) is not CuriosityStream:
            raise LatticeMismatch(
                f"PairedStream: curiosity={c!r} is not a CuriosityStream; allowed: a "
                "CuriosityStream or None"
            )
        k, c = _link_window(k, c, 0, max(k.extent, c.extent))
        object.__setattr__(self, "_k", k)
        object.__setattr__(self, "_c", c)

    @classmethod
    def _make(cls, k: KnowledgeStream, c: CuriosityStream) -> PairedStream:
        o = object.__new__(cls)
        _set(o, "_k", k)
        _set(o, "_c", c)
        return o

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"PairedStream is immutable (tried to set {name!r})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (PairedStream._make, (self._k, self._c))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PairedStream):
            return NotImplemented
        return self._k == other._k and self._c == other._c

    def __hash__(self) -> int:
        return hash((self._k, self._c))

    def __repr__(self) -> str:
        return f"PairedStream({self._k!r}, {self._c!r})"

    @property
    def knowledge(self) -> KnowledgeStream:
        return self._k

    @property
    def curiosity(self) -> CuriosityStream:
        return self._c

    @property
    def final_prefix(self) -> int:
        """``p`` such that ticks ``[0, p)`` are all ``(F, A)`` and tick ``p`` is not."""
        return min(self._k._p, self._c._p)

    @property
    def extent(self) -> int:
        """Every tick ``>= extent`` is ``(Q, N)``."""
        return max(self._k.extent, self._c.extent)

    def value_at(self, tick: int) -> tuple[Knowledge, Curiosity]:
        """``(K_t, C_t)`` of one tick."""
        _tick("PairedStream.value_at", "tick", tick)
        return self._k.value_at(tick), self._c.value_at(tick)

    def _with(self, k: KnowledgeStream, c: CuriosityStream) -> PairedStream:
        if k is self._k and c is self._c:
            return self
        return PairedStream._make(k, c)

    def accumulate_knowledge(self, start: int, end: int, value: Knowledge) -> PairedStream:
        """Join knowledge ``value`` into ``[start, end]``; every tick whose knowledge changes
        is closed under the linkage (F or above makes it A) [GD §2.1.1]."""
        k = self._k.accumulate(start, end, value)
        if k is self._k:
            return self
        if value.kind in _ABOVE_F:
            # Every tick of the range is now >= F: all become A (those already >= F were A).
            return self._with(k, self._c.accumulate(start, end, A))
        return self._pair_apply(start, end + 1, _join_k(value))

    def accumulate_curiosity(self, start: int, end: int, value: Curiosity) -> PairedStream:
        """Join curiosity ``value`` into ``[start, end]``; every tick whose curiosity changes
        is closed under the linkage (becoming A joins F into its knowledge).
        ``accumulate_curiosity(0, T, A)`` is GD's ack message with timestamp T [GD §3.1]."""
        c = self._c.accumulate(start, end, value)
        if c is self._c:
            return self
        return self._pair_apply(start, end + 1, _join_c(value))

    def _pair_apply(
        self,
        a: int,
        b1: int,
        fn: Callable[[Knowledge, Curiosity], tuple[Knowledge, Curiosity]],
    ) -> PairedStream:
        k, c = _pair_window(self._k, self._c, a, b1, fn)
        return self._with(k, c)

    def forget(self, start: int, end: int) -> PairedStream:
        """Soft state lost: ``[start, end]`` becomes ``(Q, N)`` [GD §2.1]."""
        _range("PairedStream.forget", start, end)
        return self._with(self._k.forget(start, end), self._c.forget(start, end))

    def forget_curious(self, start: int, end: int) -> PairedStream:
        """C ticks of ``[start, end]`` drop to N [GD §3.1]; knowledge is kept."""
        return self._with(self._k, self._c.forget_curious(start, end))

    def finalize(self, start: int, end: int) -> PairedStream:
        """S and D* ticks of ``[start, end]`` are lowered to F [GD §2.1]; they stay A."""
        return self._with(self._k.finalize(start, end), self._c)

    def release(self, start: int, end: int) -> PairedStream:
        """Non-Q knowledge of ``[start, end]`` is lowered to L [DUR §3]; curiosity is kept."""
        return self._with(self._k.release(start, end), self._c)

    def next_gap(self, tick: int) -> tuple[int, int | None]:
        """The first Q run of the knowledge at or after ``tick`` (see
        :meth:`KnowledgeStream.next_gap`)."""
        return self._k.next_gap(tick)

    def doubt_horizon_dur(self, latest_delivered: int) -> int:
        """[DUR §4.1]'s doubt horizon of the knowledge (see
        :meth:`KnowledgeStream.doubt_horizon_dur`)."""
        return self._k.doubt_horizon_dur(latest_delivered)

    def doubt_horizon_gd(self) -> int:
        """The doubt horizon of [GD §2.3]: the latest ``t_D`` such that every tick
        ``t < t_D`` whose curiosity is not A has knowledge D. Ticks ``< t_D`` can be delivered
        in order; tick ``t_D`` is the first one in doubt."""
        k, c = self._k, self._c
        t = min(k._p, c._p)
        ks, kv, cs, cv = k._s, k._v, c._s, c._v
        nk, nc = len(ks), len(cs)
        # Cursors: the run of each stream holding tick t (or the collapsed prefix, -1).
        i = bisect_right(ks, t) - 1
        j = bisect_right(cs, t) - 1
        # Walk the two run lists together; the bottom tails (Q, N) are in doubt, so the walk
        # always stops.
        while (A if j < 0 else cv[j]) is A or (F if i < 0 else kv[i]).kind is Kind.D:
            next_k: float = ks[i + 1] if i + 1 < nk else _NEVER
            next_c: float = cs[j + 1] if j + 1 < nc else _NEVER
            t = cast(int, min(next_k, next_c))
            if next_k == t:
                i += 1
            if next_c == t:
                j += 1
        return t


def _join_k(value: Knowledge) -> Callable[[Knowledge, Curiosity], tuple[Knowledge, Curiosity]]:
    def fn(x: Knowledge, y: Curiosity) -> tuple[Knowledge, Curiosity]:
        x2 = value.join(x)
        if x2 is x or x2 == x:
            return x, y
        return link(x2, y)

    return fn


def _join_c(value: Curiosity) -> Callable[[Knowledge, Curiosity], tuple[Knowledge, Curiosity]]:
    def fn(x: Knowledge, y: Curiosity) -> tuple[Knowledge, Curiosity]:
        y2 = value.join(y)
        if y2 is y:
            return x, y
        return link(x, y2)

    return fn


def _link_window(
    k: KnowledgeStream, c: CuriosityStream, a: int, b1: int
) -> tuple[KnowledgeStream, CuriosityStream]:
    """Close every tick of ``[a, b1)`` under :func:`link`."""
    return _pair_window(k, c, a, b1, link)


def _pair_window(
    k: KnowledgeStream,
    c: CuriosityStream,
    a: int,
    b1: int,
    fn: Callable[[Knowledge, Curiosity], tuple[Knowledge, Curiosity]],
) -> tuple[KnowledgeStream, CuriosityStream]:
    """Apply ``fn`` to the pair of every tick of ``[a, b1)``, segment by segment."""
    ks, kv = _segments(k._p, k._s, k._v, F, a, b1)
    cs, cv = _segments(c._p, c._s, c._v, A, a, b1)
    bounds = sorted({*ks, *cs})
    nkv: list[Knowledge] = []
    ncv: list[Curiosity] = []
    changed_k = changed_c = False
    i = j = 0
    nk, nc = len(ks), len(cs)
    for b in bounds:
        while i + 1 < nk and ks[i + 1] <= b:
            i += 1
        while j + 1 < nc and cs[j + 1] <= b:
            j += 1
        x, y = kv[i], cv[j]
        x2, y2 = fn(x, y)
        if x2 is not x and x2 != x:
            changed_k = True
        if y2 is not y:
            changed_c = True
        nkv.append(x2)
        ncv.append(y2)
    if changed_k:
        k = KnowledgeStream._make(*_assign(k._p, k._s, k._v, F, a, b1, bounds, nkv))
    if changed_c:
        c = CuriosityStream._make(*_assign(c._p, c._s, c._v, A, a, b1, list(bounds), ncv))
    return k, c
