"""One step of a catchup stream of the subscriber hosting broker [DUR §4.1, §4.2], pure.

Theory of operation
-------------------
A subscriber that reconnects presenting ``CT(s, p)`` below ``latestDelivered(p)`` gets its own
*catchup stream* for pubend ``p``, whose doubt horizon starts at ``CT(s, p)`` [DUR §4.1]. The
stream moves its position (the ``t`` of the last message it delivered) towards
``latestDelivered(p)`` by reading what is known of each tick:

* **from the PFS** [DUR §4.2]: a batch read of the subscriber's ticks after its position
  (at most ``window`` Q ticks, the read buffer) says which ticks matched (Q: the event must be
  delivered) and that every other one up to ``known_upto`` is S. A matched tick whose data the
  SHB holds (D in its knowledge stream) becomes an event message; one that is L there becomes
  a gap over that tick; one the SHB does not hold (Q) is *nacked* upstream and the stream
  waits for the answer;
* **by refiltering** [DUR §1 item 5]: ticks the PFS has chopped (at or below the durable
  ``released(p)``; a subscriber presenting an older CT needs them) carry no matching
  information any more, nor do ticks written before a subscriber that moved here from another
  SHB was registered (``refilter_upto``); the SHB nacks them and filters what the upstream
  answers (D: event if it matches, else silence; S: silence; L: a gap).

Nacks are flow-controlled: a stream asks for at most ``window`` ticks at a time, and never
again for a tick it already asked about (``asked``) until the SHB's retry timer resets it.

**The read buffer.** Back-pointers lead backwards [DUR §4.2], so a batch read after the
position walks the subscriber's chain from its newest record down to the position, however
small the batch: with a backlog of ``n`` records, each read costs ``n``, and a stream that
steps once per answer would pay ``n`` per answer (the 240 s ``dur-shb-crash`` did not finish
for this). As the paper's catchup streams did ("a read buffer that can hold 5000 Q
ticks ... A new read does not occur until the catchup stream has nacked all the Q ticks in the
current buffer" [DUR §5.3]), a stream therefore keeps what one walk found (``buffer``, the
subscriber's Q ticks above the walk's start, ascending; not capped, since a walk costs the
whole chain anyway) and serves the next batches from it while it holds more than a batch
beyond the position; only then does it walk again. The PFS is append-only above and chopped
only below the position, so a batch served from the buffer is exactly the batch a
walk would return (:func:`_read`).

:func:`catchup_step` returns where the stream got to, the messages, and the nack ranges; it
never changes anything itself. The SHB (:mod:`gapless.impl.durable.shb`) switches the stream
over to the constream when its position reaches ``latestDelivered(p)``, never before.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import final

import attrs

from gapless.impl.durable.messages import (
    EventMessage,
    GapMessage,
    SilenceMessage,
    SubscriberMessage,
)
from gapless.impl.durable.pfs import PfsRead, PfsStream
from gapless.impl.filters import Filter
from gapless.impl.gd.messages import Data
from gapless.impl.knowledge import Kind
from gapless.impl.streams import KnowledgeStream

__all__ = ["CatchupStep", "catchup_step"]


@final
@attrs.frozen(kw_only=True)
class CatchupStep:
    """What one step did: the new ``position``, the ``messages`` delivered in order, the
    inclusive tick ranges to ``nack`` upstream, the new ``asked`` (highest tick nacked) and
    the read ``buffer`` to keep (module doc)."""

    position: int
    messages: tuple[SubscriberMessage, ...]
    nacks: tuple[tuple[int, int], ...]
    asked: int
    buffer: tuple[int, ...] = ()


class _Out:
    """Messages under construction: a pending silence or gap is extended while ticks of its
    kind follow, and flushed when another kind comes."""

    def __init__(self, pubend: str, position: int) -> None:
        self.pubend = pubend
        self.position = position  # t of the last message emitted
        self.pending: str | None = None  # "silence" or "gap"
        self.upto = position
        self.messages: list[SubscriberMessage] = []

    def _flush(self) -> None:
        if self.pending is not None and self.upto > self.position:
            cls = SilenceMessage if self.pending == "silence" else GapMessage
            self.messages.append(cls(pubend=self.pubend, t0=self.position, t=self.upto))
            self.position = self.upto
        self.pending = None

    def extend(self, kind: str, upto: int) -> None:
        if self.pending != kind:
            self._flush()
            self.pending = kind
        self.upto = upto

    def event(self, tick: int, data: Data) -> None:
        # an event message guarantees nothing matching in (t0, t): a pending silence is
        # absorbed, a pending gap must be delivered first
        if self.pending == "gap":
            self._flush()
        self.pending = None
        self.messages.append(
            EventMessage(
                pubend=self.pubend,
                t0=self.position,
                t=tick,
                payload=data,
                attributes=data.attributes,
            )
        )
        self.position = self.upto = tick

    def done(self) -> int:
        self._flush()
        return self.position


def _ask(lo: int, hi: int, asked: int, window: int) -> tuple[tuple[tuple[int, int], ...], int]:
    """The nack for ``[lo, hi]``: at most ``window`` ticks, none at or below ``asked``."""
    lo = max(lo, asked + 1)
    hi = min(hi, lo + window - 1)
    if hi < lo:
        return (), asked
    return ((lo, hi),), hi


def _refilter(
    k: KnowledgeStream, flt: Filter, out: _Out, hi: int, asked: int, window: int
) -> tuple[bool, tuple[tuple[int, int], ...], int]:
    """Deliver ticks ``(out.position, hi]`` from the SHB's knowledge, filtering its data;
    stop at the first tick not held (Q) and nack it. Returns (blocked, nacks, asked)."""
    t = out.position + 1
    for run in k.runs():
        if run.end < t:
            continue
        if run.start > t or t > hi:
            break
        end = min(run.end, hi)
        v = run.value
        if v.kind is Kind.Q:
            break
        if v.kind is Kind.L:
            out.extend("gap", end)
        elif v.kind in (Kind.D, Kind.DSTAR) and isinstance(v.payload, Data):
            if flt.matches(v.payload.attributes):
                out.event(t, v.payload)  # a published message is one tick
            out.extend("silence", end)
        else:
            out.extend("silence", end)
        t = end + 1
    if t > hi:
        return False, (), asked
    first, last = k.next_gap(t)
    nacks, asked = _ask(first, min(hi, first + window - 1 if last is None else last), asked, window)
    return True, nacks, asked


def _from_pfs(
    k: KnowledgeStream, out: _Out, q: tuple[int, ...], known_upto: int, asked: int, window: int
) -> tuple[bool, tuple[tuple[int, int], ...], int]:
    """Deliver the matched ticks ``q`` (the PFS says: S everywhere else up to
    ``known_upto``); stop at the first matched tick whose data is not held and nack every
    missing one of ``q``. Returns (blocked, nacks, asked)."""
    for i, t in enumerate(q):
        v = k.value_at(t)
        if v.kind in (Kind.D, Kind.DSTAR) and isinstance(v.payload, Data):
            out.event(t, v.payload)
        elif v.kind is Kind.L:
            out.extend("silence", t - 1)
            out.extend("gap", t)
        elif v.kind is Kind.Q:
            out.extend("silence", t - 1)
            missing = [u for u in q[i:] if u > asked and k.value_at(u).kind is Kind.Q]
            nacks: list[tuple[int, int]] = []
            for u in missing[:window]:
                if nacks and nacks[-1][1] + 1 == u:
                    nacks[-1] = (nacks[-1][0], u)
                else:
                    nacks.append((u, u))
            return True, tuple(nacks), max([asked, *missing[:window]])
        else:  # S or F there: nothing was published at t after all
            out.extend("silence", t)
    out.extend("silence", known_upto)
    return False, (), asked


def _read(
    pfs: PfsStream, subscriber: int, after: int, upto: int, window: int, buffer: tuple[int, ...]
) -> tuple[PfsRead, tuple[int, ...]]:
    """``pfs.read(subscriber, after=after, upto=upto, limit=window)``, served from ``buffer``
    when it holds more than ``window`` ticks above ``after`` and nothing above ``after`` is
    chopped; otherwise one walk, whose whole result becomes the new buffer (module doc). The
    buffer holds every Q tick of the subscriber from some ``after' <= after`` up to its
    last entry, and records are appended only above, so the two reads agree."""
    if buffer and pfs.chopped_through <= after:
        i = bisect_right(buffer, after)
        if len(buffer) - i > window:
            q = buffer[i : i + window]
            return PfsRead(lost_upto=after, q=q, known_upto=buffer[i + window] - 1), buffer
    r = pfs.read(subscriber, after=after, upto=upto)
    kept = r.q if r.lost_upto == after else ()
    if len(r.q) > window:
        r = PfsRead(lost_upto=r.lost_upto, q=r.q[:window], known_upto=r.q[window] - 1)
    return r, kept


def catchup_step(
    *,
    pubend: str,
    subscriber: int,
    flt: Filter,
    position: int,
    latest_delivered: int,
    asked: int,
    knowledge: KnowledgeStream,
    pfs: PfsStream,
    window: int,
    refilter_upto: int = -1,
    buffer: tuple[int, ...] = (),
) -> CatchupStep:
    """Advance a catchup stream from ``position`` towards ``latest_delivered`` as far as
    what the SHB holds allows (module doc). Ticks at or below ``refilter_upto`` are refiltered
    whatever the PFS says: the subscriber was not hosted here when they were written (it
    moved here from another SHB [DUR §1 item 5], ``spec/durable.md``). ``buffer`` is what the
    stream's previous walk of the PFS found (module doc)."""
    out = _Out(pubend, position)
    nacks: tuple[tuple[int, int], ...] = ()
    while out.done() < latest_delivered:
        pos = out.position
        r, buffer = _read(pfs, subscriber, pos, latest_delivered, window, buffer)
        lost = max(r.lost_upto, min(refilter_upto, latest_delivered))
        if lost > pos:
            blocked, nacks, asked = _refilter(knowledge, flt, out, lost, asked, window)
        else:
            blocked, nacks, asked = _from_pfs(knowledge, out, r.q, r.known_upto, asked, window)
        if blocked or out.done() == pos:
            break
    return CatchupStep(
        position=out.done(), messages=tuple(out.messages), nacks=nacks, asked=asked, buffer=buffer
    )
