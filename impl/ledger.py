"""Curiosity ledgers: what a stream's downstream wants and has settled [GD §2.1.1, §3.1].

Theory of operation
-------------------
A guaranteed-delivery broker keeps, beside the knowledge of each pubend's stream, its
*curiosity* [GD §2.1.1]: per tick, N (nothing asked), C (a nack is outstanding) or A (nobody
downstream needs the tick any more). One :class:`CuriosityLedger` per stream holds all of it:

* **upstream C** — the ticks this broker has nacked upstream (``istream`` C [GD §3.1]), each
  with the time it became C (:meth:`CuriosityLedger.nack`). A nack for ticks already C is
  consolidated: only the ticks *newly* C go upstream, and their time is not refreshed; C
  older than the minimum repetition interval is forgotten (:meth:`CuriosityLedger.forget`),
  so a repeated nack from the same subend looks fresh again [GD §3.1]. Knowledge answering a
  C tick ends its curiosity (:meth:`CuriosityLedger.settle`).
* **one** :class:`CellLedger` **per downstream cell** (``ostream[P, c]`` [GD §3.1]): the
  cell's A prefix ``acked`` (from its acks), ``filtered`` — D ticks this cell's edge filter
  turned into F, so F (hence A [GD §2.1.1]) for this one cell only — the C ticks per
  requesting downstream broker (``curious``; a retransmission goes only to them [GD §3.1]),
  and ``sent_upto``, the highest tick sent to the cell first-time.

The reference semantics, per tick and per broker with plain sets and dicts, is
``gapless.spec.ledger``; ``tests/laws/test_ledger.py`` runs random operation sequences on
both and checks that old values never change. Every value is immutable (frozen attrs, tick
sets of :mod:`gapless.impl.ticksets`, :class:`~gapless.impl.fmap.FMap`), and an operation that
changes nothing returns its receiver itself, so a caller tells a no-op by identity. A caller's
mistake (a negative tick, a non-canonical tick set, a cell that does not exist) raises a typed
error of :mod:`gapless.impl.errors`.

>>> cell = CellLedger().want("b1", ((5, 9),)).ack(6)
>>> cell.acked, cell.curious["b1"]
(6, ((7, 9),))
>>> led, newly = CuriosityLedger.fresh(1).nack(((5, 9),), now=100)
>>> led, again = led.nack(((3, 12),), now=150)
>>> newly, again, led.since(5), led.since(3)
(((5, 9),), ((3, 4), (10, 12)), 100, 150)
>>> led.forget(100).ledger.curious_ticks()
((3, 4), (10, 12))
"""

from __future__ import annotations

from typing import Final, TypeVar, final

import attrs

from gapless.impl import ticksets as R
from gapless.impl.errors import InvalidRange, InvalidTick, ProtocolMisuse
from gapless.impl.fmap import FMap

__all__ = ["CellLedger", "CuriosityLedger", "Forgotten"]

#: Above every tick (a clip to ``[lo, _NO_END]`` keeps everything from ``lo``).
_NO_END: Final = 1 << 62
_L = TypeVar("_L")


def _copy(inst: _L, **changes: object) -> _L:
    """A changed copy of a ledger value (both classes keep their fields in ``__dict__``):
    what ``attrs.evolve`` returns for these validator-free classes, without its per-call
    field walk — the roles copy a cell ledger on most steps."""
    new = object.__new__(type(inst))
    d = new.__dict__
    d.update(inst.__dict__)
    d.update(changes)
    return new


def _ticks(op: str, ticks: R.TickSet) -> R.TickSet:
    """``ticks`` itself when it is a canonical tick set, else a typed error naming ``op``."""
    if not R.is_canonical(ticks):
        raise InvalidRange(
            f"{op}: {ticks!r} is not a tick set; allowed: ascending, disjoint, non-adjacent "
            "(lo, hi) int pairs with 0 <= lo <= hi"
        )
    return ticks


def _prefix(op: str, upto: int) -> int:
    """``upto`` itself when it is a prefix end (an int >= -1, -1 for the empty prefix)."""
    if type(upto) is not int or upto < -1:
        raise InvalidTick(f"{op}: {upto!r} is not a prefix end; allowed: an int >= -1")
    return upto


@final
@attrs.frozen(kw_only=True, slots=False)
class CellLedger:
    """``ostream[P, c]`` [GD §3.1]: curiosity of one downstream cell ``c``.

    ``0..acked`` is A (the cell acked it); ``filtered`` holds ticks above ``acked`` that are
    F, hence A, for this cell only (its edge filter removed the D [GD §2.4, §3.1]);
    ``curious`` maps each downstream broker of the cell that nacked to its C ticks (never at
    or below ``acked``); ``sent_upto`` is the highest tick sent to the cell first-time."""

    acked: int = -1
    filtered: R.TickSet = ()
    curious: FMap[str, R.TickSet] = attrs.field(factory=FMap)
    sent_upto: int = -1

    def ack(self, upto: int) -> CellLedger:
        """The cell acked ``0..upto`` [GD §3.1]: that prefix is A, and the cell's F and every
        broker's C at or below it are dropped (``self`` when ``upto`` is no news)."""
        if upto <= self.acked:
            if upto < -1:
                _prefix("CellLedger.ack", upto)
            return self
        _prefix("CellLedger.ack", upto)
        return _copy(
            self,
            acked=upto,
            filtered=R.clip(self.filtered, upto + 1, _NO_END) if self.filtered else (),
            curious=_clip_brokers(self.curious, upto),
        )

    def filter(self, ticks: R.TickSet) -> CellLedger:
        """``ticks`` are F for this cell only, A at once [GD §2.1.1, §3.1] (those at or below
        the A prefix are A already)."""
        if not ticks:
            return self
        _ticks("CellLedger.filter", ticks)
        if ticks[0][0] <= self.acked:
            ticks = R.clip(ticks, self.acked + 1, _NO_END)
            if not ticks:
                return self
        filtered = R.union(self.filtered, ticks)
        if filtered is self.filtered:
            return self
        return _copy(self, filtered=filtered)

    def filter_tick(self, t: int) -> CellLedger:
        """:meth:`filter` of the one tick ``t`` (the edge filter removed one D)."""
        if t <= self.acked:
            if t < 0:
                raise InvalidTick(f"CellLedger.filter_tick: {t!r}; allowed: an int >= 0")
            return self
        filtered = self.filtered
        if not filtered or filtered[-1][1] < t - 1:
            # in order, past every filtered tick: a new run at the end, no search
            return _copy(self, filtered=filtered + ((t, t),))  # noqa: RUF005 (one copy)
        if R.contains(filtered, t):
            return self
        return _copy(self, filtered=R.add(filtered, t, t))

    def want(self, broker: str, ticks: R.TickSet) -> CellLedger:
        """``broker`` of this cell nacked ``ticks`` that could not be satisfied: they are C for
        it [GD §3.1] (ticks the cell has acked are A, above C, and stay A)."""
        _ticks("CellLedger.want", ticks)
        if ticks and ticks[0][0] <= self.acked:
            ticks = R.clip(ticks, self.acked + 1, _NO_END)
        if not ticks:
            return self
        old = self.curious.get(broker, ())
        new = R.union(old, ticks)
        if new is old:
            return self
        return _copy(self, curious=self.curious.set(broker, new))

    def serve(self, broker: str, ticks: R.TickSet) -> CellLedger:
        """``broker`` was sent ``ticks``: its C there is satisfied [GD §3.1]."""
        old = self.curious.get(broker)
        if old is None or not ticks:
            return self
        new = R.subtract(old, ticks)
        if new is old:
            return self
        return _copy(
            self, curious=self.curious.set(broker, new) if new else self.curious.remove(broker)
        )

    def sent(self, t: int) -> CellLedger:
        """Tick ``t`` went to the cell first-time."""
        if t <= self.sent_upto:
            return self
        return _copy(self, sent_upto=t)

    def release(self, prefix: int) -> CellLedger:
        """The istream's A prefix reached ``prefix`` [GD §2.1.1, §3.1]: the cell's F and every
        broker's C at or below it are dropped (the stream no longer holds those ticks)."""
        filtered = self.filtered
        if filtered and filtered[0][0] <= prefix:
            filtered = R.clip(filtered, prefix + 1, _NO_END)
        curious = _clip_brokers(self.curious, prefix) if self.curious else self.curious
        if filtered is self.filtered and curious is self.curious:
            return self
        return _copy(self, filtered=filtered, curious=curious)

    def a_end(self, t: int) -> int | None:
        """The last tick of the run of ticks A for this cell that holds ``t``, None when ``t``
        is not A here (neither acked nor filtered)."""
        acked = self.acked
        if t <= acked:
            filtered = self.filtered
            if filtered and filtered[0][0] == acked + 1:
                return filtered[0][1]
            return acked
        return R.run_end(self.filtered, t)


def _clip_brokers(curious: FMap[str, R.TickSet], upto: int) -> FMap[str, R.TickSet]:
    """Per-broker C without the ticks ``0..upto``; a broker left with none is dropped."""
    out = curious
    for x in sorted(curious):
        old = curious[x]
        if old[0][0] > upto:
            continue
        r = R.clip(old, upto + 1, _NO_END)
        out = out.set(x, r) if r else out.remove(x)
    return out


@final
@attrs.frozen(kw_only=True)
class Forgotten:
    """What :meth:`CuriosityLedger.forget` did: the new ledger, whether some C was forgotten,
    and the earliest time a remaining C became C (None when none remains)."""

    ledger: CuriosityLedger
    forgot: bool
    earliest: int | None


#: One upstream C run: ``(lo, hi, since)``.
Entry = tuple[int, int, int]


@final
@attrs.frozen(kw_only=True, slots=False)
class CuriosityLedger:
    """A stream's curiosity (see module doc): ``cells`` — one :class:`CellLedger` per
    downstream cell, in the order of the broker's children of the pubend — and ``upstream``,
    the ticks nacked upstream with the time each became C, as ascending disjoint
    ``(lo, hi, since)`` runs."""

    cells: tuple[CellLedger, ...] = ()
    upstream: tuple[Entry, ...] = ()

    @staticmethod
    def fresh(n_cells: int) -> CuriosityLedger:
        """A ledger with ``n_cells`` empty cell ledgers and no C."""
        if type(n_cells) is not int or n_cells < 0:
            raise ProtocolMisuse(f"CuriosityLedger.fresh: {n_cells!r} cells; allowed: an int >= 0")
        return CuriosityLedger(cells=(_EMPTY_CELL,) * n_cells)

    def cell(self, i: int) -> CellLedger:
        """The ledger of downstream cell number ``i``."""
        if not 0 <= i < len(self.cells):
            raise ProtocolMisuse(
                f"CuriosityLedger.cell: no cell {i!r}; allowed: 0..{len(self.cells) - 1}"
            )
        return self.cells[i]

    def with_cell(self, i: int, cell: CellLedger) -> CuriosityLedger:
        """This ledger with ``cell`` as the ledger of cell number ``i``."""
        cells = self.cells
        if not 0 <= i < len(cells):
            raise ProtocolMisuse(
                f"CuriosityLedger.with_cell: no cell {i!r}; allowed: 0..{len(cells) - 1}"
            )
        if cells[i] is cell:
            return self
        return _copy(self, cells=(*cells[:i], cell, *cells[i + 1 :]))

    def with_cells(self, cells: tuple[CellLedger, ...]) -> CuriosityLedger:
        """This ledger with every cell ledger replaced (the same number of cells)."""
        if cells is self.cells:
            return self
        if len(cells) != len(self.cells):
            raise ProtocolMisuse(
                f"CuriosityLedger.with_cells: {len(cells)} cells; allowed: {len(self.cells)}"
            )
        return _copy(self, cells=cells)

    def any_broker_curious(self) -> bool:
        """Whether some downstream broker has a C tick in some cell."""
        # a loop, not any() over a generator: this is asked on every in-order publish
        for c in self.cells:  # noqa: SIM110
            if c.curious:
                return True
        return False

    def curious_ticks(self) -> R.TickSet:
        """The upstream C ticks."""
        return R.normalize((lo, hi) for lo, hi, _ in self.upstream)

    def since(self, t: int) -> int | None:
        """When tick ``t`` became C upstream, None when it is not C."""
        for lo, hi, since in self.upstream:
            if lo <= t <= hi:
                return since
        return None

    def nack(self, ticks: R.TickSet, now: int) -> tuple[CuriosityLedger, R.TickSet]:
        """Downstream needs ``ticks`` that this broker could not satisfy: they are C upstream
        [GD §3.1]. Returns the ledger and the ticks *newly* C (since ``now``); ticks already C
        keep the time they became C (nack consolidation: only newly C ticks go upstream)."""
        _ticks("CuriosityLedger.nack", ticks)
        if type(now) is not int or now < 0:
            raise InvalidTick(f"CuriosityLedger.nack: now={now!r}; allowed: an int >= 0")
        newly = R.subtract(ticks, self.curious_ticks()) if self.upstream else ticks
        if not newly:
            return self, ()
        upstream = tuple(sorted((*self.upstream, *((lo, hi, now) for lo, hi in newly))))
        return _copy(self, upstream=upstream), newly

    def forget(self, limit: int) -> Forgotten:
        """Upstream C that became C at or before ``limit`` is forgotten (C -> N), so a
        repeated nack for it looks fresh and goes upstream again [GD §3.1]."""
        upstream = self.upstream
        keep = tuple(e for e in upstream if e[2] > limit)
        earliest = min(e[2] for e in keep) if keep else None
        if len(keep) == len(upstream):
            return Forgotten(ledger=self, forgot=False, earliest=earliest)
        return Forgotten(ledger=_copy(self, upstream=keep), forgot=True, earliest=earliest)

    def settle(self, fin: int, known: R.TickSet) -> CuriosityLedger:
        """Knowledge arrived: upstream C ends at the ticks now known — the F prefix
        ``0..fin`` and the ``known`` ticks above it [GD §3.1]."""
        upstream = self.upstream
        if not upstream:
            return self
        kept: list[Entry] = []
        for lo, hi, since in upstream:
            lo = max(lo, fin + 1)
            if lo > hi:
                continue
            for a, b in R.subtract(((lo, hi),), known):
                kept.append((a, b, since))
        out = tuple(kept)
        if out == upstream:
            return self
        return _copy(self, upstream=out)

    def release(self, prefix: int) -> CuriosityLedger:
        """The istream's A prefix reached ``prefix`` [GD §2.1.1, §3.1]: no C at or below it,
        upstream or in any cell, and no per-cell F there."""
        if prefix < -1:
            _prefix("CuriosityLedger.release", prefix)
        upstream = self.upstream
        if upstream and upstream[0][0] <= prefix:
            upstream = tuple((max(lo, prefix + 1), hi, w) for lo, hi, w in upstream if hi > prefix)
        cells = self.cells
        for i, c in enumerate(self.cells):
            # most cells hold nothing at or below the prefix: skip the call
            f = c.filtered
            if (f and f[0][0] <= prefix) or c.curious:
                c2 = c.release(prefix)
                if c2 is not c:
                    cells = (*cells[:i], c2, *cells[i + 1 :])
        if upstream is self.upstream and cells is self.cells:
            return self
        return _copy(self, upstream=upstream, cells=cells)


_EMPTY_CELL: Final = CellLedger()
