"""Streams at a broker: knowledge accumulated by join, the A prefix, the stream accessors
[GD §2.1, §2.1.1, §3.1].

Theory of operation
-------------------
A guaranteed-delivery broker keeps, per pubend ``P`` whose knowledge tree passes through its
cell, one stream — ``istream[P]`` at a PHB or IB, the consolidated subend stream at an SHB
[GD §3.1, §4.1] — and per downstream cell ``c`` one ``ostream[P, c]``
(:class:`~gapless.impl.gd.state.Stream`; the curiosity of the istream and its ostreams is the
stream's :class:`~gapless.impl.ledger.CuriosityLedger`). Ticks
``0..fin`` are F (and, by the linkage F ⇔ A, acknowledged [GD §2.1.1]); above ``fin`` the
F ticks are ``silent``, the D ticks ``data``, every other tick Q.

:func:`accumulate` joins a knowledge message into a stream [GD §2.1]: its final prefix and
silence become F (except where a D is known), its D becomes D unless the tick is already F;
a different D at a known tick is E and is rejected. F ranges that now touch ``fin`` are
absorbed into it (:func:`absorb`), and curiosity for ticks that became known is dropped.
:func:`raise_fin` makes a prefix A, hence F (D* -> F) in the istream and every ostream.

This module assumes nothing about the role: the pubend, the intermediate broker and the
subscriber end all keep their knowledge this way.
"""

from __future__ import annotations

from typing import Any, TypeVar

from gapless.impl import ticksets as R
from gapless.impl.gd.messages import Data, Knowledge
from gapless.impl.gd.routing import on_link_changed as _links_changed
from gapless.impl.gd.state import (
    IBState,
    NodeCtx,
    PHBState,
    SHBState,
    Stream,
    data_above,
    data_get,
    data_put,
    evolve,
)
from gapless.impl.gd.step import NO_END, Step
from gapless.impl.inputs import LinkChanged
from gapless.impl.ledger import CellLedger, CuriosityLedger

__all__ = [
    "absorb",
    "accumulate",
    "fresh",
    "highest",
    "known",
    "on_link_changed",
    "ostream",
    "put",
    "raise_fin",
    "stream",
    "with_ostream",
]

#: A broker with streams; helpers that change one return the same role's state.
G = TypeVar("G", PHBState, IBState, SHBState)


def stream(st: PHBState | IBState | SHBState, p: str) -> Stream:
    """The node's stream of pubend ``p`` [GD §3.1]."""
    return st.streams[st.ctx.index[p]]


def put(st: G, p: str, s: Stream, **changes: Any) -> G:
    """``st`` with ``s`` as its stream of ``p`` and the other ``changes`` (``st`` itself when
    nothing changes)."""
    i: int = st.ctx.index[p]
    if s is not st.streams[i]:
        changes["streams"] = (*st.streams[:i], s, *st.streams[i + 1 :])
    if not changes:
        return st
    return evolve(st, **changes)


def ostream(ctx: NodeCtx, s: Stream, p: str, c: str) -> CellLedger:
    """``ostream[p, c]`` [GD §3.1]: the curiosity ledger of downstream cell ``c``."""
    return s.ledger.cells[ctx.child_index[(p, c)]]


def with_ostream(ctx: NodeCtx, s: Stream, p: str, c: str, o: CellLedger) -> Stream:
    """``s`` with ``o`` as ``ostream[p, c]`` (``s`` itself when it already is)."""
    led = s.ledger.with_cell(ctx.child_index[(p, c)], o)
    return s if led is s.ledger else evolve(s, ledger=led)


def fresh(ctx: NodeCtx, p: str, **fields: Any) -> Stream:
    """A new stream of ``p`` with one empty cell ledger per downstream cell."""
    return Stream(ledger=CuriosityLedger.fresh(len(ctx.children.get(p, ()))), **fields)


def data_ranges(s: Stream) -> R.TickSet:
    """The stream's D ticks as ranges."""
    return tuple((t, t) for t, _ in s.data)


def known(s: Stream) -> R.TickSet:
    """D-or-F ticks above ``fin``."""
    if not s.data:
        return s.silent
    return R.union(s.silent, data_ranges(s))


def highest(s: Stream) -> int:
    """The highest tick the stream knows (D or F)."""
    hi = s.fin
    if s.silent:
        hi = max(hi, s.silent[-1][1])
    if s.data:
        hi = max(hi, s.data[-1][0])
    return hi


def absorb(fin: int, silent: R.TickSet) -> tuple[int, R.TickSet]:
    """Move the F ranges that start at or below ``fin + 1`` into the final prefix [GD §2.1]:
    ``(fin, silent)`` with no silent range touching ``fin`` (``silent`` itself if none did)."""
    while silent and silent[0][0] <= fin + 1:
        fin = max(fin, silent[0][1])
        silent = silent[1:]
    return fin, silent


def accumulate(s: Stream, msg: Knowledge, step: Step) -> tuple[Stream, list[Data], bool]:
    """Join ``msg`` into ``s`` [GD §2.1]. Returns the new stream, the D ticks new to it, and
    whether any knowledge changed. A conflicting D (E) is rejected."""
    labels = step.labels
    fin, silent, data = s.fin, s.silent, s.data
    changed = False
    new_data: list[Data] = []
    if msg.prefix > fin:
        add = ((fin + 1, msg.prefix),)
        if R.subtract(add, R.union(silent, data_ranges(s))):
            labels.append("K:Q->F")
        keep = data_above(data, msg.prefix)
        if keep is not data:
            labels.append("K:D->F")
        data = keep
        fin = msg.prefix
        silent = R.clip(silent, fin + 1, NO_END)
        changed = True
    for lo, hi in msg.silence:
        lo = max(lo, fin + 1)
        if lo > hi or R.contains_range(silent, lo, hi):
            continue
        piece: R.TickSet = ((lo, hi),)
        if data:
            piece = R.subtract(piece, tuple((t, t) for t, _ in data if lo <= t <= hi))
        if piece:
            silent = R.union(silent, piece)
            labels.append("K:Q->F")
            changed = True
    d = msg.data
    if d is not None and d.tick > fin and not R.contains(silent, d.tick):
        old = data_get(data, d.tick)
        if old is None:
            data = data_put(data, d)
            new_data.append(d)
            labels.append("K:Q->D")
            changed = True
        elif old != d:
            labels.append("K:D->E")
            step.reject(f"conflicting data at tick {d.tick} [GD §2.2]")
    fin, absorbed = absorb(fin, silent)
    if absorbed is not silent:
        silent = absorbed
        changed = True
    if not changed:
        return s, new_data, False
    data = data_above(data, fin)
    return (
        evolve(s, fin=fin, silent=silent, data=data, ledger=_settled(s, fin, silent, data)),
        new_data,
        True,
    )


def _settled(
    s: Stream, fin: int, silent: R.TickSet, data: tuple[tuple[int, Data], ...]
) -> CuriosityLedger:
    """The stream's ledger without istream C for the ticks now known [GD §3.1]."""
    led = s.ledger
    if not led.upstream:
        return led
    return led.settle(fin, R.union(silent, tuple((t, t) for t, _ in data)))


def raise_fin(s: Stream, prefix: int, step: Step) -> Stream:
    """Ticks ``0..prefix`` become A, hence F (D* -> F) [GD §2.1.1, §3.1]."""
    labels = step.labels
    labels.append("C:N->A")
    data = data_above(s.data, prefix)
    if data is not s.data:
        labels.append("K:D->F")
    silent = R.clip(s.silent, prefix + 1, NO_END)
    return evolve(s, fin=prefix, data=data, silent=silent, ledger=s.ledger.release(prefix))


def on_link_changed(state: G, inp: LinkChanged, step: Step) -> G:
    """A link went down or came back [GD §3.1]: the link facts change; a neighbour whose link
    is down is no longer the last sender of any stream (acks and nacks go to its cell)."""
    st = _links_changed(state, inp, step)
    if st is state or inp.up:
        return st
    n = inp.neighbour
    if any(s.last_sender == n for s in st.streams):
        streams = tuple(
            evolve(s, last_sender=None) if s.last_sender == n else s for s in st.streams
        )
        st = evolve(st, streams=streams)
    return st
