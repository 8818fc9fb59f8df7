"""Streams at a broker: knowledge accumulated by join, the A prefix, the stream accessors
[GD §2.1, §2.1.1, §3.1].

Theory of operation
-------------------
A guaranteed-delivery broker keeps, per pubend ``P`` whose knowledge tree passes through its
cell, one stream — ``istream[P]`` at a PHB or IB, the consolidated subend stream at an SHB
[GD §3.1, §4.1] — and per downstream cell ``c`` one ``ostream[P, c]``
(:class:`~gapless.impl.gd.state.Stream`; the curiosity of the istream and its ostreams is the
stream's verified :class:`~gapless.impl.ledger.CuriosityLedger`). Its knowledge is a verified
:class:`~gapless.impl.streams.KnowledgeStream`: ticks ``0..fin`` are F (and, by the linkage
F ⇔ A, acknowledged [GD §2.1.1]); above ``fin`` it holds F (silence), D(a) or D*(a) (a
message, its payload the :class:`Data`; D* when silence was joined into a D [GD §2.1]) and Q.

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
    evolve,
)
from gapless.impl.gd.step import Step
from gapless.impl.inputs import LinkChanged
from gapless.impl.knowledge import D, F
from gapless.impl.ledger import CellLedger, CuriosityLedger
from gapless.impl.streams import KnowledgeStream

__all__ = [
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
    return evolve(s, knowledge=k, ledger=_settled(s, k)), new_data, True


def _settled(s: Stream, k: KnowledgeStream) -> CuriosityLedger:
    """The stream's ledger without istream C for the ticks now known [GD §3.1]."""
    led = s.ledger
    if not led.upstream:
        return led
    return led.settle(k.fin, k.known(k.final_prefix))


def raise_fin(s: Stream, prefix: int, step: Step) -> Stream:
    """Ticks ``0..prefix`` become A, hence F (D* -> F) [GD §2.1.1, §3.1]."""
    labels = step.labels
    labels.append("C:N->A")
    k = s.knowledge
    if k.has_data(k.final_prefix, prefix):
        labels.append("K:D->F")
    return evolve(s, knowledge=k.acknowledge(prefix), ledger=s.ledger.release(prefix))


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
