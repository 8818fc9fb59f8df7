"""Reference semantics of tick streams: a plain dict from tick to value, explicit loops.

This is the slow, obviously-correct oracle that ``gapless.impl.streams`` is differentially
tested against (STYLE.md, "Oracles"). It imports nothing of ours: the lattice operations (join,
the lowerings, the linkage, the transfer functions) are passed in by the caller, so the
reference states only what a *stream* does with them, tick by tick [GD §2.1]:

* a stream maps every tick ``t >= 0`` to a value; ticks absent from the dict hold the bottom;
* ``accumulate(start, end, x)`` joins ``x`` into every tick of the inclusive range;
* a lowering (forget, finalize, release, forget-curious) maps a function over every tick of
  the range;
* the finality prefix is the number of leading ticks that hold the final value (F / A);
* the doubt horizons and the next gap are found by walking tick by tick [GD §2.3, DUR §4.1];
* filter and merge transfer apply the per-tick function to every tick [GD §2.4].

Every operation returns a new stream; the old one is never changed. Costs are proportional to
the ticks involved, so callers keep ranges small (a test maps each reference tick onto a block
of real ticks to exercise huge ranges).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar, final

__all__ = ["ReferencePair", "ReferenceStream", "reference_merge"]

V = TypeVar("V")
K = TypeVar("K")
C = TypeVar("C")


@final
class ReferenceStream(Generic[V]):
    """A stream as ``dict[tick, value]``; missing ticks hold ``bottom``.

    >>> s = ReferenceStream(bottom=0, final=9).accumulate(2, 4, 5, max)
    >>> [s.value(t) for t in range(6)], s.runs()
    ([0, 0, 5, 5, 5, 0], [(0, 1, 0), (2, 4, 5)])
    """

    __slots__ = ("_bottom", "_final", "_ticks")

    def __init__(self, *, bottom: V, final: V, ticks: Mapping[int, V] | None = None) -> None:
        self._bottom = bottom
        self._final = final
        self._ticks: dict[int, V] = {}
        if ticks:
            for t, x in ticks.items():
                if x != bottom:
                    self._ticks[t] = x

    def _new(self, ticks: Mapping[int, V]) -> ReferenceStream[V]:
        return ReferenceStream(bottom=self._bottom, final=self._final, ticks=ticks)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReferenceStream):
            return NotImplemented
        return self._ticks == other._ticks and self._bottom == other._bottom

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._ticks.items(), key=lambda kv: kv[0])))

    @property
    def bottom(self) -> V:
        return self._bottom

    def value(self, tick: int) -> V:
        """The value of one tick."""
        return self._ticks.get(tick, self._bottom)

    def extent(self) -> int:
        """One past the last tick that is not bottom (0 for the empty stream)."""
        last = -1
        for t in self._ticks:
            if t > last:
                last = t
        return last + 1

    def accumulate(
        self, start: int, end: int, x: V, join: Callable[[V, V], V]
    ) -> ReferenceStream[V]:
        """Join ``x`` into every tick of ``[start, end]``."""
        ticks = dict(self._ticks)
        for t in range(start, end + 1):
            ticks[t] = join(x, self.value(t))
        return self._new(ticks)

    def lower(self, start: int, end: int, fn: Callable[[V], V]) -> ReferenceStream[V]:
        """Replace every tick ``t`` of ``[start, end]`` by ``fn(value(t))``."""
        ticks = dict(self._ticks)
        for t in range(start, end + 1):
            ticks[t] = fn(self.value(t))
        return self._new(ticks)

    def runs(self) -> list[tuple[int, int, V]]:
        """Maximal runs ``(start, end, value)`` (inclusive) covering ``[0, extent())``."""
        out: list[tuple[int, int, V]] = []
        for t in range(self.extent()):
            x = self.value(t)
            if out and out[-1][2] == x:
                out[-1] = (out[-1][0], t, x)
            else:
                out.append((t, t, x))
        return out

    def final_prefix(self) -> int:
        """The number of leading ticks that hold the final value."""
        t = 0
        while self.value(t) == self._final:
            t += 1
        return t

    def next_gap(self, tick: int) -> tuple[int, int | None]:
        """The first maximal run of bottom ticks at or after ``tick``, clipped to start at
        ``tick``: ``(first, last)``, ``last`` None when it never ends."""
        t = tick
        while self.value(t) != self._bottom:
            t += 1
        first = t
        end = self.extent()
        while t < end and self.value(t) == self._bottom:
            t += 1
        return first, (None if t >= end else t - 1)

    def doubt_horizon_dur(self, latest_delivered: int) -> int:
        """[DUR §4.1]: the highest ``h >= latest_delivered`` such that every tick in
        ``(latest_delivered, h]`` is not bottom."""
        h = latest_delivered
        while self.value(h + 1) != self._bottom:
            h += 1
        return h

    # -- what the GD roles read and do (added with the roles' move onto the streams) --------

    def acknowledge(
        self, upto: int, join: Callable[[V, V], V], finalize: Callable[[V], V]
    ) -> ReferenceStream[V]:
        """Ticks ``0..upto`` acknowledged [GD §2.1.1]: the final value joined into each, then
        the automatic lowering ``finalize`` [GD §2.1]."""
        return self.accumulate(0, upto, self._final, join).lower(0, upto, finalize)

    def payload_at(self, tick: int, payload: Callable[[V], object | None]) -> object | None:
        """``payload(value(tick))``: the message a data tick holds, else None."""
        return payload(self.value(tick))

    def data(
        self, lo: int, hi: int, payload: Callable[[V], object | None]
    ) -> list[tuple[int, object]]:
        """``(tick, payload)`` for every tick of ``[lo, hi]`` whose payload is not None."""
        out: list[tuple[int, object]] = []
        for t in range(lo, hi + 1):
            x = payload(self.value(t))
            if x is not None:
                out.append((t, x))
        return out

    def where(self, lo: int, hi: int, pred: Callable[[V], bool]) -> set[int]:
        """The ticks of ``[lo, hi]`` whose value satisfies ``pred``."""
        return {t for t in range(lo, hi + 1) if pred(self.value(t))}

    def final_run_end(self, tick: int) -> int | None:
        """The last tick of the run of final ticks holding ``tick`` (None: it is not final)."""
        if self.value(tick) != self._final:
            return None
        t = tick
        while self.value(t + 1) == self._final:
            t += 1
        return t

    def mapped(self, fn: Callable[[V], V]) -> ReferenceStream[V]:
        """``fn`` applied to every tick (the filter edge, [GD §2.4], when ``fn`` is one)."""
        return self._new({t: fn(self.value(t)) for t in range(self.extent())})


def reference_merge(
    streams: Sequence[ReferenceStream[V]], combine: Callable[[list[V]], V]
) -> ReferenceStream[V]:
    """Per tick, ``combine`` the values of all streams (the merge edge, [GD §2.4], or the
    upstream combination of curiosity)."""
    first = streams[0]
    end = max(s.extent() for s in streams)
    ticks = {t: combine([s.value(t) for s in streams]) for t in range(end)}
    return ReferenceStream(bottom=first.bottom, final=first._final, ticks=ticks)


@final
class ReferencePair(Generic[K, C]):
    """A knowledge and a curiosity reference stream under a linkage function
    ``link(k, c) -> (k, c)`` [GD §2.1.1], applied to every tick an accumulation changes."""

    __slots__ = ("_c", "_k", "_link")

    def __init__(
        self,
        knowledge: ReferenceStream[K],
        curiosity: ReferenceStream[C],
        link: Callable[[K, C], tuple[K, C]],
        *,
        close: bool = True,
    ) -> None:
        self._link = link
        if close:
            # The closure of the given pair: every tick up to both extents is linked.
            kt: dict[int, K] = {}
            ct: dict[int, C] = {}
            end = max(knowledge.extent(), curiosity.extent())
            for t in range(end):
                kt[t], ct[t] = link(knowledge.value(t), curiosity.value(t))
            knowledge = knowledge._new(kt)
            curiosity = curiosity._new(ct)
        self._k = knowledge
        self._c = curiosity

    def _with(self, k: ReferenceStream[K], c: ReferenceStream[C]) -> ReferencePair[K, C]:
        return ReferencePair(k, c, self._link, close=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReferencePair):
            return NotImplemented
        return self._k == other._k and self._c == other._c

    def __hash__(self) -> int:
        return hash((self._k, self._c))

    @property
    def knowledge(self) -> ReferenceStream[K]:
        return self._k

    @property
    def curiosity(self) -> ReferenceStream[C]:
        return self._c

    def value(self, tick: int) -> tuple[K, C]:
        return self._k.value(tick), self._c.value(tick)

    def accumulate_knowledge(
        self, start: int, end: int, x: K, join: Callable[[K, K], K]
    ) -> ReferencePair[K, C]:
        """Join ``x`` into the knowledge of ``[start, end]``; link every tick that changed."""
        kt = dict(self._k._ticks)
        ct = dict(self._c._ticks)
        for t in range(start, end + 1):
            old = self._k.value(t)
            new = join(x, old)
            if new != old:
                kt[t], ct[t] = self._link(new, self._c.value(t))
        return self._with(self._k._new(kt), self._c._new(ct))

    def accumulate_curiosity(
        self, start: int, end: int, x: C, join: Callable[[C, C], C]
    ) -> ReferencePair[K, C]:
        """Join ``x`` into the curiosity of ``[start, end]``; link every tick that changed."""
        kt = dict(self._k._ticks)
        ct = dict(self._c._ticks)
        for t in range(start, end + 1):
            old = self._c.value(t)
            new = join(x, old)
            if new != old:
                kt[t], ct[t] = self._link(self._k.value(t), new)
        return self._with(self._k._new(kt), self._c._new(ct))

    def lower_knowledge(self, start: int, end: int, fn: Callable[[K], K]) -> ReferencePair[K, C]:
        return self._with(self._k.lower(start, end, fn), self._c)

    def lower_curiosity(self, start: int, end: int, fn: Callable[[C], C]) -> ReferencePair[K, C]:
        return self._with(self._k, self._c.lower(start, end, fn))

    def forget(self, start: int, end: int) -> ReferencePair[K, C]:
        """Both knowledge and curiosity of ``[start, end]`` drop to bottom [GD §2.1]."""
        kb, cb = self._k.bottom, self._c.bottom
        return self._with(
            self._k.lower(start, end, lambda _x: kb), self._c.lower(start, end, lambda _y: cb)
        )

    def final_prefix(self) -> int:
        """The number of leading ticks holding the final knowledge *and* final curiosity."""
        t = 0
        while self._k.value(t) == self._k._final and self._c.value(t) == self._c._final:
            t += 1
        return t

    def doubt_horizon_gd(self, settled: Callable[[K, C], bool]) -> int:
        """[GD §2.3]: the latest ``t_D`` such that every tick ``t < t_D`` is ``settled``
        (for GD: its curiosity is A or its knowledge is D)."""
        t = 0
        while settled(self._k.value(t), self._c.value(t)):
            t += 1
        return t
