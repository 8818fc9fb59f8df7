"""Streams at a broker: knowledge accumulated by join, the A prefix, the stream accessors
[GD §2.1, §2.1.1, §3.1].

Theory of operation
-------------------
A guaranteed-delivery broker keeps, per pubend ``P`` whose knowledge tree passes through its
cell, one stream — ``istream[P]`` at a PHB or IB, the consolidated subend stream at an SHB
[GD §3.1, §4.1] — and per downstream cell ``c`` one ``ostream[P, c]``
(:class:`~gapless.impl.gd.state.Stream`, :class:`~gapless.impl.gd.state.Ostream`). Its
knowledge is a verified :class:`~gapless.impl.streams.KnowledgeStream`: ticks ``0..fin`` are
F (and, by the linkage F ⇔ A, acknowledged [GD §2.1.1]); above ``fin`` it holds F (silence),
D(a) or D*(a) (a message, its payload the :class:`Data`; D* when silence was joined into a D
[GD §2.1]) and Q.

:func:`accumulate` joins a knowledge message into a stream [GD §2.1]: its final prefix is
acknowledged (F joined, D* lowered to F), its silence joined as F, its D joined unless the
tick is already F; a different D at a known tick is E and is rejected. F that now touches
the prefix joins it (the stream's canonical form), and curiosity for ticks that became known
is dropped. :func:`raise_fin` makes a prefix A, hence F (D* -> F) in the istream and every
ostream.

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
    evolve,
)
from gapless.impl.gd.step import NO_END, Step
from gapless.impl.inputs import LinkChanged
from gapless.impl.knowledge import D, F
from gapless.impl.streams import KnowledgeStream

__all__ = [
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


def known(s: Stream) -> R.TickSet:
    """D-or-F ticks above ``fin``."""
    k = s.knowledge
    return k.known(k.final_prefix)


def highest(s: Stream) -> int:
    """The highest tick the stream knows (D or F)."""
    return s.knowledge.highest


def accumulate(s: Stream, msg: Knowledge, step: Step) -> tuple[Stream, list[Data], bool]:
    """Join ``msg`` into ``s`` [GD §2.1]. Returns the new stream, the D ticks new to it, and
    whether any knowledge changed. A conflicting D (E) is rejected."""
    labels = step.labels
    k = s.knowledge
    fin = k.fin
    changed = False
    new_data: list[Data] = []
    if msg.prefix > fin:
        if k.gaps(fin + 1, msg.prefix):
            labels.append("K:Q->F")
        if k.has_data(fin + 1, msg.prefix):
            labels.append("K:D->F")
        k = k.acknowledge(msg.prefix)
        fin = msg.prefix
        changed = True
    for lo, hi in msg.silence:
        lo = max(lo, fin + 1)
        if lo > hi:
            continue
        finals = k.finals(lo, hi)
        if finals == ((lo, hi),):
            continue
        if finals or k.gaps(lo, hi):  # a tick that is not D: the join adds F there
            k = k.accumulate(lo, hi, F)
            labels.append("K:Q->F")
            changed = True
    d = msg.data
    if d is not None and d.tick > fin and k.final_run_end(d.tick) is None:
        old = k.payload_at(d.tick)
        if old is None:
            k = k.accumulate(d.tick, d.tick, D(d))
            new_data.append(d)
            labels.append("K:Q->D")
            changed = True
        elif old != d:
            labels.append("K:D->E")
            step.reject(f"conflicting data at tick {d.tick} [GD §2.2]")
    if not changed:
        return s, new_data, False
    return evolve(s, knowledge=k, curious=_still_curious(s, k)), new_data, True


def _still_curious(s: Stream, k: KnowledgeStream) -> tuple[tuple[int, int, int], ...]:
    """The istream's C ranges without the ticks now known [GD §3.1]."""
    curious = s.curious
    if not curious:
        return curious
    fin = k.fin
    now_known = k.known(fin + 1)
    kept = []
    for lo, hi, since in curious:
        for a, b in R.subtract(((max(lo, fin + 1), hi),), now_known):
            kept.append((a, b, since))
    return tuple(kept)


def raise_fin(s: Stream, prefix: int, step: Step) -> Stream:
    """Ticks ``0..prefix`` become A, hence F (D* -> F) [GD §2.1.1, §3.1]."""
    labels = step.labels
    labels.append("C:N->A")
    k = s.knowledge
    if k.has_data(k.final_prefix, prefix):
        labels.append("K:D->F")
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
    return evolve(s, knowledge=k.acknowledge(prefix), curious=curious, ostreams=ostreams)


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
