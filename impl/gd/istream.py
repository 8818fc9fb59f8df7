"""Streams at a broker: knowledge accumulated by join, the A prefix, the stream accessors
[GD §2.1, §2.1.1, §3.1].

Theory of operation
-------------------
A guaranteed-delivery broker keeps, per pubend ``P`` whose knowledge tree passes through its
cell, one stream — ``istream[P]`` at a PHB or IB, the consolidated subend stream at an SHB
[GD §3.1, §4.1] — and per downstream cell ``c`` one ``ostream[P, c]``
(:class:`~gapless.impl.gd.state.Stream`, :class:`~gapless.impl.gd.state.Ostream`). Ticks
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

from typing import Any, Final, TypeVar

from gapless.impl import ticksets as R
from gapless.impl.fmap import FMap
from gapless.impl.gd.messages import Data, Knowledge
from gapless.impl.gd.routing import on_link_changed as _links_changed
from gapless.impl.gd.state import (
    IBState,
    NodeCtx,
    Ostream,
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

__all__ = [
    "absorb",
    "accumulate",
    "clip_curious",
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

_NO_OSTREAM: Final = Ostream()

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


def ostream(ctx: NodeCtx, s: Stream, p: str, c: str) -> Ostream:
    """``ostream[p, c]`` [GD §3.1]."""
    return s.ostreams[ctx.child_index[(p, c)]]


def with_ostream(ctx: NodeCtx, s: Stream, p: str, c: str, o: Ostream) -> Stream:
    """``s`` with ``o`` as ``ostream[p, c]``."""
    i = ctx.child_index[(p, c)]
    return evolve(s, ostreams=(*s.ostreams[:i], o, *s.ostreams[i + 1 :]))


def fresh(ctx: NodeCtx, p: str, **fields: Any) -> Stream:
    """A new stream of ``p`` with one empty ostream per downstream cell."""
    return Stream(ostreams=(_NO_OSTREAM,) * len(ctx.children.get(p, ())), **fields)


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
        evolve(s, fin=fin, silent=silent, data=data, curious=_still_curious(s, fin, silent, data)),
        new_data,
        True,
    )


def _still_curious(
    s: Stream, fin: int, silent: R.TickSet, data: tuple[tuple[int, Data], ...]
) -> tuple[tuple[int, int, int], ...]:
    """The istream's C ranges without the ticks now known [GD §3.1]."""
    curious = s.curious
    if not curious:
        return curious
    now_known = R.union(silent, tuple((t, t) for t, _ in data))
    kept = []
    for lo, hi, since in curious:
        for a, b in R.subtract(((max(lo, fin + 1), hi),), now_known):
            kept.append((a, b, since))
    return tuple(kept)


def raise_fin(s: Stream, prefix: int, step: Step) -> Stream:
    """Ticks ``0..prefix`` become A, hence F (D* -> F) [GD §2.1.1, §3.1]."""
    labels = step.labels
    labels.append("C:N->A")
    data = data_above(s.data, prefix)
    if data is not s.data:
        labels.append("K:D->F")
    silent = R.clip(s.silent, prefix + 1, NO_END)
    curious = tuple((max(lo, prefix + 1), hi, w) for lo, hi, w in s.curious if hi > prefix)
    ostreams = s.ostreams
    for ci, o in enumerate(s.ostreams):
        if (o.filtered and o.filtered[0][0] <= prefix) or o.curious:
            o2 = evolve(
                o,
                filtered=R.clip(o.filtered, prefix + 1, NO_END),
                curious=clip_curious(o.curious, prefix),
            )
            if o2 != o:
                ostreams = (*ostreams[:ci], o2, *ostreams[ci + 1 :])
    return evolve(s, fin=prefix, data=data, silent=silent, curious=curious, ostreams=ostreams)


def clip_curious(curious: FMap[str, R.TickSet], upto: int) -> FMap[str, R.TickSet]:
    """Per-broker C ranges without the ticks ``0..upto`` [GD §3.1]."""
    out = curious
    for x in sorted(curious):
        r = R.clip(curious[x], upto + 1, NO_END)
        if r != curious[x]:
            out = out.set(x, r) if r else out.remove(x)
    return out


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
