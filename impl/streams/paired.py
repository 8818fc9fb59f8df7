"""The paired view: a knowledge and a curiosity stream under the F <=> A linkage [GD §2.1.1, §2.3].

Theory of operation
-------------------
:class:`PairedStream` holds a knowledge and a curiosity stream and closes every tick an
accumulation touches under the F <=> A linkage (:func:`gapless.impl.curiosity.link`,
[GD §2.1.1]); lowerings are not closed [DUR §3]. It answers GD's doubt horizon [GD §2.3] and
DUR's [DUR §4.1] (see :mod:`gapless.impl.streams`, "Doubt horizons").
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any, cast, final

from gapless.impl.curiosity import A, Curiosity, link
from gapless.impl.errors import LatticeMismatch
from gapless.impl.knowledge import F, Kind, Knowledge
from gapless.impl.streams.runs import _ABOVE_F, _NEVER, _assign, _range, _segments, _set, _tick
from gapless.impl.streams.typed import CuriosityStream, KnowledgeStream


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
