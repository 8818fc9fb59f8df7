"""Knowledge and curiosity streams, and the transfer of whole streams [GD §2.1, §2.4, DUR §4.1].

Theory of operation
-------------------
:class:`KnowledgeStream` (``Q`` beyond its runs) and :class:`CuriosityStream` (``N`` beyond
its runs) are the two kinds of :class:`~gapless.impl.streams.runs._RunStream`: accumulation by
join and the lowerings each lattice allows — ``finalize`` and ``release`` for knowledge
[GD §2.1, DUR §3], ``forget_curious`` for curiosity [GD §3.1] — plus knowledge's gap search and
DUR's doubt horizon [DUR §4.1]. :func:`merge` and :func:`upstream_curiosity` combine several
streams run by run with one sweep over their run starts, and
:meth:`KnowledgeStream.filtered` applies a filter [GD §2.4].
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Sequence
from operator import is_
from typing import Any, ClassVar, Final, TypeVar, final

from gapless.impl.curiosity import A, Curiosity, N, upstream
from gapless.impl.curiosity import forget_curiosity as _forget_c
from gapless.impl.errors import InvalidRange, InvalidTick, LatticeMismatch
from gapless.impl.knowledge import F, Kind, Knowledge, Q
from gapless.impl.knowledge import finalize as _finalize_k
from gapless.impl.knowledge import release as _release_k
from gapless.impl.streams.runs import _NEVER, _canonical, _edit, _range, _RunStream, _tick
from gapless.impl.ticksets import TickSet
from gapless.impl.transfer import Predicate, filter_value, merge_values

V = TypeVar("V")

# The kinds as module constants: reading an enum member off its class costs a lookup per use.
_KQ: Final = Kind.Q
_KD: Final = Kind.D
_KDSTAR: Final = Kind.DSTAR
_KF: Final = Kind.F
_KE: Final = Kind.E


def _acknowledged(x: Knowledge) -> Knowledge:
    """``finalize(F ⊔ x)``: a tick of the acknowledged prefix [GD §2.1, §2.1.1]."""
    return _finalize_k(F.join(x))


def _is_f(x: Knowledge) -> bool:
    return x.kind is _KF


def _is_q(x: Knowledge) -> bool:
    return x.kind is _KQ


def _not_q(x: Knowledge) -> bool:
    return x.kind is not _KQ


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
            if v[i].kind is _KQ:
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

    # -- what the GD roles read and do [GD §2.1, §2.3, §3.1] -------------------------------

    @property
    def fin(self) -> int:
        """The last tick of the acknowledged prefix (``final_prefix - 1``; -1 when tick 0 is
        not F): ticks ``0..fin`` are F and, by the linkage, A [GD §2.1.1]."""
        return self._p - 1

    @property
    def highest(self) -> int:
        """The highest tick that is not Q (``extent - 1``; -1 for the empty stream)."""
        return self._s[-1] - 1

    def payload_at(self, tick: int) -> Hashable | None:
        """The message at ``tick`` when it holds D(a) or D*(a), else None [GD §2.1]."""
        t = _tick("KnowledgeStream.payload_at", "tick", tick)
        if t < self._p:
            return None
        x = self._v[bisect_right(self._s, t) - 1]
        k = x.kind
        if k is _KD or k is _KDSTAR:
            return x.payload
        return None

    def data(self, lo: int = 0, hi: int | None = None) -> tuple[tuple[int, int, Any], ...]:
        """The data of ``[lo, hi]`` (``hi`` None: no bound) in tick order: ``(first, last, a)``
        for each run of ticks holding D(a) or D*(a), clipped to the window — the messages a
        window holds [GD §2.3, §3.1] (a published message is one tick, so one run). Cost: the
        runs of the window."""
        a, b1 = self._window("KnowledgeStream.data", lo, hi)
        s, v = self._s, self._v
        a = max(a, self._p)
        e1: int = s[-1] if b1 >= s[-1] else int(b1)
        if a >= e1:
            return ()
        out: list[tuple[int, int, Any]] = []
        i = bisect_right(s, a) - 1
        while s[i] < e1:
            x = v[i]
            k = x.kind
            if k is _KD or k is _KDSTAR:
                out.append((max(s[i], a), min(s[i + 1], e1) - 1, x.payload))
            i += 1
        return tuple(out)

    def has_data(self, lo: int, hi: int | None = None) -> bool:
        """Whether some tick of ``[lo, hi]`` (``hi`` None: no bound) holds D(a) or D*(a):
        ``bool(data(lo, hi))``, stopping at the first data run."""
        a, b1 = self._window("KnowledgeStream.has_data", lo, hi)
        s, v = self._s, self._v
        a = max(a, self._p)
        if a >= b1:
            return False
        i = bisect_right(s, a) - 1
        n = len(s) - 1  # the bottom tail holds no data
        while i < n and s[i] < b1:
            k = v[i].kind
            if k is _KD or k is _KDSTAR:
                return True
            i += 1
        return False

    def finals(self, lo: int, hi: int | None = None) -> TickSet:
        """The F ticks of ``[lo, hi]`` as a tick set (``hi`` None: no bound) [GD §2.1]."""
        a, b1 = self._window("KnowledgeStream.finals", lo, hi)
        p = self._p
        if a < p:
            return self._where(a, b1, _is_f)
        # The common case (a window above the prefix, on every first-time message), inlined.
        s, v = self._s, self._v
        n = len(s) - 1  # the bottom tail holds no F
        i = bisect_right(s, a) - 1
        out: list[tuple[int, int]] = []
        while i < n and s[i] < b1:
            if v[i].kind is _KF:
                e = s[i + 1]
                out.append((max(s[i], a), (e if e < b1 else int(b1)) - 1))
            i += 1
        return tuple(out)

    def known(self, lo: int, hi: int | None = None) -> TickSet:
        """The ticks of ``[lo, hi]`` that are not Q, as a tick set (``hi`` None: no bound):
        what a doubt horizon may pass [GD §2.3]."""
        a, b1 = self._window("KnowledgeStream.known", lo, hi)
        return self._where(a, b1, _not_q)

    def gaps(self, lo: int, hi: int) -> TickSet:
        """The Q ticks of ``[lo, hi]`` as a tick set: what a nack asks for [GD §3.1, §3.2]."""
        a, b1 = self._window("KnowledgeStream.gaps", lo, hi, bounded=True)
        return self._where(a, b1, _is_q)

    def final_run_end(self, tick: int) -> int | None:
        """The last tick of the run of F ticks holding ``tick``; None when ``tick`` is not F."""
        if type(tick) is not int or tick < 0:  # checked inline: asked on every publish
            _tick("KnowledgeStream.final_run_end", "tick", tick)
        t = tick
        if t < self._p:
            return self._p - 1
        s = self._s
        i = bisect_right(s, t) - 1
        if self._v[i].kind is _KF:
            return s[i + 1] - 1
        return None

    def append(self, start: int, end: int, value: Knowledge) -> KnowledgeStream:
        """Accumulate ``value`` into ``[start, end]`` in the bottom tail (``start >= extent``,
        where ``Q ⊔ x = x``): an in-order append, a pubend's next message [GD §2.2]. It
        touches no run; a range below ``extent`` is a misuse (use :meth:`accumulate`)."""
        if type(start) is int and start < self._s[-1]:
            raise InvalidRange(
                f"KnowledgeStream.append: start={start} is below extent={self._s[-1]}; "
                "allowed: start >= extent (use accumulate for knowledge below it)"
            )
        return self._accumulate("KnowledgeStream.append", start, end, value)

    def fill(self, tick: int, value: Knowledge) -> KnowledgeStream:
        """Join ``value`` into the one tick ``tick`` when it holds Q, where ``Q ⊔ x = x``;
        ``self`` when it does not (a tick of the acknowledged prefix, or one already known):
        a pubend's logged message landing on its pending tick [GD §2.2], which the caller
        tells apart from "already known" by identity. A Q tick alone between two runs (the
        pending tick between silences) keeps the run starts; elsewhere it is
        :meth:`accumulate`."""
        if type(tick) is not int or tick < 0:
            _tick("KnowledgeStream.fill", "tick", tick)
        if type(value) is not Knowledge:
            raise LatticeMismatch(
                f"KnowledgeStream.fill: {value!r} is not a knowledge value; "
                f"allowed: {self._ALLOWED}"
            )
        if tick < self._p or value.kind is _KQ:
            return self
        s, v = self._s, self._v
        i = bisect_right(s, tick) - 1
        if v[i].kind is not _KQ:
            return self
        n = len(s) - 1
        if i < n and s[i] == tick and s[i + 1] == tick + 1:
            before = v[i - 1] if i else F
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
        return self._accumulate("KnowledgeStream.fill", tick, tick, value)

    def acknowledge(self, upto: int) -> KnowledgeStream:
        """Ticks ``0..upto`` are acknowledged [GD §2.1.1]: F is joined into each and the
        automatic lowering applied (``finalize(F ⊔ x)``: Q, L, F, D(a), D*(a), S all become
        F; only E stays E) [GD §2.1]. The prefix advances and the runs it covers are
        dropped; cost: those runs."""
        t = _tick("KnowledgeStream.acknowledge", "upto", upto)
        b1 = t + 1
        p = self._p
        if b1 <= p:
            return self
        s, v = self._s, self._v
        if len(s) == 1:  # only the bottom tail: the prefix moves (an SHB delivering in order)
            return self._make(b1, (b1,), v)
        j = bisect_right(s, t) - 1  # the run holding upto
        for k in range(j + 1):
            if v[k].kind is _KE:
                r = _edit(p, s, v, F, p, b1, _acknowledged)
                return self if r is None else self._make(*r)
        n = len(s)
        if j == n - 1:  # upto lies in the bottom tail
            return self._make(b1, (b1,), v[j:])
        if b1 < s[j + 1]:  # run j continues past upto
            if v[j].kind is _KF:
                return self._make(s[j + 1], s[j + 1 :], v[j + 1 :])
            return self._make(b1, (b1, *s[j + 1 :]), v[j:])
        if v[j + 1].kind is _KF:  # the next run joins the prefix
            return self._make(s[j + 2], s[j + 2 :], v[j + 2 :])
        return self._make(b1, s[j + 1 :], v[j + 1 :])

    # -- private helpers of the queries above ------------------------------------------------

    def _window(
        self, op: str, lo: object, hi: object, *, bounded: bool = False
    ) -> tuple[int, float]:
        if hi is None and not bounded:
            return _tick(op, "lo", lo), _NEVER
        a, b1 = _range(op, lo, hi)
        return a, b1

    def _where(self, a: int, b1: float, pred: Callable[[Knowledge], bool]) -> TickSet:
        """The ticks of ``[a, b1)`` whose value satisfies ``pred``, canonical."""
        out: list[list[Any]] = []
        p = self._p
        if a < p:
            if pred(F):
                out.append([a, min(b1, p) - 1])
            a = p
            if a >= b1:
                return tuple((x, y) for x, y in out)
        s, v = self._s, self._v
        n = len(s)
        i = bisect_right(s, a) - 1
        while i < n and s[i] < b1:
            if pred(v[i]):
                lo = max(s[i], a)
                hi = (min(s[i + 1], b1) if i + 1 < n else b1) - 1
                if out and out[-1][1] + 1 == lo:
                    out[-1][1] = hi
                else:
                    out.append([lo, hi])
            i += 1
        return tuple((x, y) for x, y in out)


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
