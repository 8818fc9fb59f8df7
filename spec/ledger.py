"""Reference semantics of curiosity ledgers: per tick, per cell, per broker, plain sets and dicts.

The slow, obviously-correct oracle that ``gapless.impl.ledger`` is differentially tested
against (STYLE.md, "Oracles"). Every value is rebuilt, never changed in place.

What the ledger records [GD §2.1.1, §3.1]
-----------------------------------------
*Upstream C and its time.* A broker that cannot satisfy a nack from its own stream makes
the unsatisfied ticks C in its ``istream`` [GD §3.1]. ``since[t]`` is the time tick ``t``
became C:

* it is **set** when a nack makes ``t`` C and ``t`` was not C (:func:`nack`); those ticks are
  the ones *newly* C, and only they go upstream — nack consolidation, "a nack message is
  propagated upstream only if some C tick accumulated in istream was not already C";
* a **repeated nack** for a tick that is still C does **not** refresh ``since[t]`` (the tick
  is not newly C, no nack goes upstream); it refreshes it only once the C has been
  forgotten, because then the nack makes the tick newly C again at the nack's time;
* C is **forgotten** (C -> N) in two ways: after the minimum repetition interval — every
  tick with ``since[t] <= limit`` (:func:`forget`), "the C ticks in an istream are forgotten
  after the minimum repetition interval so that nacks appear fresh" — and when the tick's
  knowledge is no longer needed: it became known (:func:`settle`: the F prefix or a D or F
  tick above it) or A (:func:`release`: the istream's A prefix passed it).

*Per downstream cell* (``ostream[P, c]``): ``acked`` — the cell acked ``0..acked``, A there;
``filtered`` — ticks above ``acked`` whose D the cell's edge filter turned into F, so F and A
for that one cell only [GD §2.1.1: "a tick whose knowledge state becomes F is assigned a
curiosity of A"]; ``curious[x]`` — the ticks broker ``x`` of the cell nacked that were not
satisfied, C for ``x`` (retransmissions go only to them [GD §3.1]); never at or below
``acked`` (A is above C); ``sent_upto`` — the highest tick sent to the cell first-time. An ack
drops the cell's F and C at or below it; the istream's A prefix (:func:`release`) drops them
too, and a broker sent ticks (:func:`serve`) is no longer curious for them.

>>> led = nack(fresh(1), {5, 6}, now=10)
>>> led = nack(led, {6, 7}, now=20)
>>> sorted(led.since.items())
[(5, 10), (6, 10), (7, 20)]
>>> sorted(forget(led, 10).since.items())
[(7, 20)]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

__all__ = [
    "Cell",
    "Ledger",
    "a_end",
    "ack",
    "filter_ticks",
    "forget",
    "fresh",
    "nack",
    "newly_curious",
    "release",
    "release_cell",
    "sent",
    "serve",
    "settle",
    "want",
]


@dataclass(frozen=True)
class Cell:
    """One downstream cell's curiosity (see module doc)."""

    acked: int = -1
    filtered: frozenset[int] = frozenset()
    curious: dict[str, frozenset[int]] = field(default_factory=dict)
    sent_upto: int = -1


@dataclass(frozen=True)
class Ledger:
    """A stream's curiosity: its cells and the upstream C ticks with their times."""

    cells: tuple[Cell, ...] = ()
    since: dict[int, int] = field(default_factory=dict)


def fresh(n_cells: int) -> Ledger:
    """No C anywhere, nothing acked, ``n_cells`` cells."""
    return Ledger(cells=tuple(Cell() for _ in range(n_cells)))


def _drop_upto(curious: dict[str, frozenset[int]], upto: int) -> dict[str, frozenset[int]]:
    """Each broker's C without the ticks ``<= upto``; brokers left with none are gone."""
    out: dict[str, frozenset[int]] = {}
    for x, ticks in curious.items():
        kept = frozenset(t for t in ticks if t > upto)
        if kept:
            out[x] = kept
    return out


def ack(c: Cell, upto: int) -> Cell:
    """The cell acked ``0..upto``."""
    if upto <= c.acked:
        return c
    return replace(
        c,
        acked=upto,
        filtered=frozenset(t for t in c.filtered if t > upto),
        curious=_drop_upto(c.curious, upto),
    )


def filter_ticks(c: Cell, ticks: set[int]) -> Cell:
    """``ticks`` are F (and A) for this cell only; those already acked stay just acked."""
    return replace(c, filtered=c.filtered | {t for t in ticks if t > c.acked})


def want(c: Cell, broker: str, ticks: set[int]) -> Cell:
    """``broker`` is C for ``ticks`` (except those the cell acked)."""
    add = {t for t in ticks if t > c.acked}
    if not add:
        return c
    curious = dict(c.curious)
    curious[broker] = curious.get(broker, frozenset()) | add
    return replace(c, curious=curious)


def serve(c: Cell, broker: str, ticks: set[int]) -> Cell:
    """``broker`` was sent ``ticks``: it is no longer C for them."""
    curious = dict(c.curious)
    left = curious.get(broker, frozenset()) - ticks
    if left:
        curious[broker] = left
    else:
        curious.pop(broker, None)
    return replace(c, curious=curious)


def sent(c: Cell, t: int) -> Cell:
    """Tick ``t`` went to the cell first-time."""
    return replace(c, sent_upto=max(c.sent_upto, t))


def release_cell(c: Cell, prefix: int) -> Cell:
    """The istream's A prefix reached ``prefix``: no F or C at or below it in the cell."""
    return replace(
        c,
        filtered=frozenset(t for t in c.filtered if t > prefix),
        curious=_drop_upto(c.curious, prefix),
    )


def a_end(c: Cell, t: int) -> int | None:
    """The last tick of the consecutive run of ticks A for the cell holding ``t``."""
    if t <= c.acked:
        t = c.acked
    elif t not in c.filtered:
        return None
    while t + 1 in c.filtered:
        t += 1
    return t


def newly_curious(led: Ledger, ticks: set[int]) -> set[int]:
    """The ``ticks`` not C upstream yet."""
    return {t for t in ticks if t not in led.since}


def nack(led: Ledger, ticks: set[int], now: int) -> Ledger:
    """Unsatisfied ``ticks`` become C upstream; only those not C already get ``now`` as the
    time they became C."""
    since = dict(led.since)
    for t in newly_curious(led, ticks):
        since[t] = now
    return replace(led, since=since)


def forget(led: Ledger, limit: int) -> Ledger:
    """Every upstream C tick that became C at or before ``limit`` is forgotten."""
    return replace(led, since={t: w for t, w in led.since.items() if w > limit})


def settle(led: Ledger, fin: int, known: set[int]) -> Ledger:
    """The ticks ``0..fin`` and ``known`` are known: no upstream C for them."""
    return replace(led, since={t: w for t, w in led.since.items() if t > fin and t not in known})


def release(led: Ledger, prefix: int) -> Ledger:
    """The istream's A prefix reached ``prefix``: no C or per-cell F at or below it."""
    return Ledger(
        cells=tuple(release_cell(c, prefix) for c in led.cells),
        since={t: w for t, w in led.since.items() if t > prefix},
    )
