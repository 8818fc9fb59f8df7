"""Run-length-encoded knowledge and curiosity streams keyed by tick [GD §2.1, DUR §3-4.1].

Theory of operation
-------------------
A stream maps every tick ``t >= 0`` to a value [GD §2.1]. One tick is one microsecond of
virtual time: fine enough that no two events share a tick [DUR §2, footnote 3] and that one
pubend can carry 10^6 messages per second. A stream is infinite: beyond its last run every
tick holds the bottom (``Q`` for knowledge, ``N`` for curiosity).

Representation. A stream is three immutable fields:

* ``final_prefix`` ``p`` -- ticks ``[0, p)`` all hold the stream's *final* value (``F`` for
  knowledge, ``A`` for curiosity). In a healthy stream "an ever-growing prefix of all streams
  will become both F and A" [GD §2.1.1]; that prefix is one int, never a run list.
* ``starts`` -- a tuple of strictly increasing run starts, the first equal to ``p``;
* ``values`` -- a tuple of the runs' values; run ``i`` covers ``[starts[i], starts[i+1])`` and
  the last run, whose value is always the bottom, covers ``[starts[-1], infinity)``.

The form is canonical: adjacent runs differ and the first run is never the final value (it
would belong to the prefix). So two streams are equal exactly when their fields are, and
``==``/``hash`` are cheap.

Cost. Every operation locates its range by bisection (``O(log n)``), visits only the runs
the range overlaps, and splices the result into new tuples. The number of ticks a range covers
never matters: a silence over 10^9 ticks costs what one tick costs. The splice copies the two
run tuples (a C-level ``memcpy``, a few nanoseconds per run), so edits to very long streams
pay that copy; a healthy stream keeps few runs because its acknowledged prefix collapses into
``final_prefix``. Appending in the bottom tail -- the common case, a pubend's next message --
has a fast path that touches no run at all.

Accumulation and forgetting [GD §2.1]. ``accumulate`` joins a value into every tick of an
inclusive range ``[start, end]``; forgetting lowers: ``forget`` (to ``Q``/``N``: soft state
lost), ``finalize`` (S and D* to F, [GD §2.1]), ``release`` (to L, [DUR §3]) and, for
curiosity, ``forget_curious`` (C to N, [GD §3.1]). A no-op returns the very same object.

The paired view :class:`PairedStream` holds a knowledge and a curiosity stream and closes
every tick an accumulation touches under the F <=> A linkage (:func:`gapless.impl.curiosity.link`,
[GD §2.1.1]). Lowerings are not accumulation and are not closed: a released ``(L, A)`` tick
stays as it is [DUR §3].

Doubt horizons. [GD §2.3]: the latest ``t_D`` such that every tick ``t < t_D`` whose curiosity
is not A has knowledge D (:meth:`PairedStream.doubt_horizon_gd`). [DUR §4.1]: given
``latestDelivered``, the highest timestamp such that every tick between latestDelivered and
it is not Q (:meth:`KnowledgeStream.doubt_horizon_dur`). They relate as follows: GD's is a
tick *count* (ticks ``< t_D`` are settled: acked or D) over a stream with curiosity; DUR's is
the last settled *tick* after a delivery point and counts any non-Q value (D, F, S, L...) as
settled. Under the linkage every tick at or above F is acked, so on a paired stream whose ticks
``<= ld`` are all settled, ``doubt_horizon_gd() <= doubt_horizon_dur(ld) + 1``, with equality
unless some tick in ``(ld, doubt_horizon_dur(ld)]`` is an unacknowledged L (DUR's gap, which
GD's horizon does not pass). The differential tests check this relation.

The GD roles [GD §3.1] keep one :class:`KnowledgeStream` per pubend (``Stream.knowledge`` in
``gapless.impl.gd.state``), D ticks carrying their message, and use only its methods:
``fin`` / ``highest``, ``payload_at``, ``data`` (the data runs of a window, in order),
``has_data``, ``finals`` / ``known`` / ``gaps`` (a window's F, non-Q and Q ticks as a
``gapless.impl.ticksets`` tick set), ``final_run_end``, ``accumulate`` (with two shortcuts: an
append in the bottom tail, also public as :meth:`KnowledgeStream.append`, and a join into
exactly one bottom run, a pubend's pending tick between silences), ``fill`` (the pubend's
in-order publish: its logged message lands on its pending tick when that tick is still Q, else
the stream itself, so the caller falls back to the general rules) and ``acknowledge`` (the
acknowledged prefix grows: ``finalize(F ⊔ x)`` on every tick it covers, its runs dropped).
Each is differentially tested against ``gapless.spec.reference_stream``.

Transfer [GD §2.4]: :meth:`KnowledgeStream.filtered` and :func:`merge` apply
:func:`~gapless.impl.transfer.filter_value` and :func:`~gapless.impl.transfer.merge_values`
run by run; :func:`upstream_curiosity` combines downstream curiosity streams by
:func:`~gapless.impl.curiosity.upstream`.

>>> from gapless.impl.knowledge import D, F, Q
>>> s = KnowledgeStream().accumulate(0, 39_999, F).accumulate(40_000, 40_000, D("m1"))
>>> s.final_prefix, s.value_at(40_000), s.value_at(10**12)
(40000, D('m1'), Q)
>>> list(s.runs())
[Run(start=0, end=39999, value=F), Run(start=40000, end=40000, value=D('m1'))]
>>> s.accumulate(5, 7, F) is s
True
"""

from __future__ import annotations

from gapless.impl.streams.paired import PairedStream
from gapless.impl.streams.runs import Run
from gapless.impl.streams.typed import CuriosityStream, KnowledgeStream, merge, upstream_curiosity

__all__ = [
    "CuriosityStream",
    "KnowledgeStream",
    "PairedStream",
    "Run",
    "merge",
    "upstream_curiosity",
]
