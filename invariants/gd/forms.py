"""GD's canonical-state rule as a plug-in: every lattice value a broker holds after a step is
in the canonical form its verified operations return [GD §2.1, §3.1; DESIGN.md "Lattices and
streams"].

Theory of operation
-------------------
The roles keep their knowledge, curiosity and tick sets in the verified types of ``impl/``
(:mod:`gapless.impl.streams`, :mod:`gapless.impl.ledger`, :mod:`gapless.impl.ticksets`). Each
type has one canonical form — runs that ascend, adjacent runs that differ, tick sets whose
pairs neither overlap nor touch — and its operations, tested against the ``spec`` reference
semantics, always return it. A value that leaves the form most often still answers every
query the same way (an adjacent run not merged holds the same ticks), so no delivery or wire
rule sees it, yet the next operation that assumes the form may answer wrong, and equal states
no longer compare equal. Issue 18's power measure found such mutants (an in-order
``ticksets.add`` that appends a touching run, a pending-tick fill that looks at the wrong
neighbour): ``make test`` killed them through the law tests, the demo campaign did not.

This rule is the one GD invariant that reads role state, and it reads it only through a
record: after every step that changed a broker's state, the world asks the binding's
``malformed(before, after)`` (:func:`malformed` here, which looks only at the values the
step replaced) and writes a ``malformed`` record with the first problem it names.
``canonical_state`` fails on that record, so the verdict is the same online, offline and read
back from a trace file (the record keeps its text). The world checks only when this rule is
judged (``Run`` turns ``World.check_forms`` on), so a run that leaves it out pays nothing. A
correct run writes no such record: its trace and digest are unchanged. It costs the demo
campaign about 7% CPU (``gapless bench campaign --param without=canonical_state``).

The form checks read the values through what the types expose (a stream's ``stored`` form,
the ledgers' fields, :func:`gapless.impl.ticksets.is_canonical`). They are judges, kept out
of ``impl/`` so that the core holds only what the protocol runs: the power bench mutates
``impl/``, and a mutant of a judge is not a protocol bug.

Beside each value's own form, a stream's knowledge and curiosity ledger are tied: upstream C
lies only on ticks the knowledge does not know; the ledger keeps no per-cell F or C where the
knowledge is F; and the acknowledged prefix reaches every tick that is A in all downstream
cells (:func:`prefix_problem`). The power measure found an IB that acked one tick short
(``grow_a_prefix`` stopping at ``cur - 2``) and a cell ledger whose release kept its F
(``CellLedger.release`` answering ``self`` when only F changed): neither showed on the wire or
at a subscriber, and only the state does.

Values that never stay in a state — a tick set a step builds and sends at once — are judged
where they become observable: the F ranges of every message sent (``Wire.final_ranges``) must
be one canonical tick set too. A broken ``ticksets.add`` fast path that appends a touching run
leaves the stored state canonical (the ledgers take their in-order fast path) but sends
silence as touching ranges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import islice
from operator import eq, lt
from typing import Any, ClassVar, Final, final

from gapless.impl.curiosity import A, Curiosity, N
from gapless.impl.knowledge import F, Knowledge, Q
from gapless.impl.ledger import CellLedger, CuriosityLedger
from gapless.impl.streams import CuriosityStream, KnowledgeStream
from gapless.impl.ticksets import contains, is_canonical
from gapless.impl.trace import TraceRecord
from gapless.invariants.plugin import Plugin

__all__ = [
    "NAMES",
    "GDCanonicalState",
    "cell_problem",
    "ledger_problem",
    "malformed",
    "prefix_problem",
    "run_stream_problem",
    "stream_problem",
]

NAMES: Final = ("canonical_state",)


@final
class GDCanonicalState(Plugin):
    """``canonical_state`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"malformed", "send"})

    def judges(self) -> Mapping[str, Callable[[TraceRecord], bool]]:
        return {"malformed": self.observe, "send": self.sent}

    def sent(self, r: TraceRecord) -> bool:
        """A message's F ranges are one canonical tick set [GD §3.1]."""
        w = r.detail.wire
        ranges = w.final_ranges
        if not ranges or is_canonical(ranges):
            return False
        return self.report.fail(
            "canonical_state",
            r.node,
            f"{r.node} sent {r.detail.to} a {w.kind} message whose F ranges {ranges!r} are not "
            "one canonical tick set (ascending, disjoint, not touching): a value out of form "
            "reached the wire [GD §3.1]",
            r,
            pubend=w.pubend,
        )

    def observe(self, r: TraceRecord) -> bool:
        text = getattr(r.detail, "text", None)
        return self.report.fail(
            "canonical_state",
            r.node,
            f"{r.node} holds a value out of canonical form after a step: "
            f"{text if text is not None else r.detail!r}; the verified operations return "
            "only canonical forms, and the next one may answer wrong on this",
            r,
        )


# -- the form checks -------------------------------------------------------------------------


def run_stream_problem(x: KnowledgeStream | CuriosityStream) -> str | None:
    """What keeps a knowledge or curiosity stream from its canonical form (None: canonical):
    after the collapsed prefix of final values, runs follow on one another, each of the
    stream's lattice, none equal to the one before it (the first not final: it would belong
    to the prefix), and the tail from ``extent`` is the bottom [GD §2.1, §2.1.1; DESIGN.md
    "Lattices and streams"]. Two values of one stream holding the same ticks are then equal.
    Read from the stored form (``stored``): this runs after every step of a checked run."""
    knowledge = isinstance(x, KnowledgeStream)
    final, bottom = (F, Q) if knowledge else (A, N)
    kind: type = Knowledge if knowledge else Curiosity
    p, s, v = x.stored
    n = len(s)
    # the whole test at C speed first (every step of a checked run pays it); the loop
    # below only finds the words for what is wrong
    if (
        type(p) is int
        and n
        and n == len(v)
        and s[0] == p >= 0
        and all(map(lt, s, islice(s, 1, None)))
        and set(map(type, v)) == {kind}
        and (n == 1 or v[0] != final)
        and not any(map(eq, v, islice(v, 1, None)))
        and v[-1] == bottom
    ):
        return None
    return _stream_words(type(x).__name__, final, bottom, kind, p, s, v)


def _stream_words(
    name: str, final: Any, bottom: Any, kind: type, p: Any, s: Any, v: Any
) -> str | None:
    """What :func:`run_stream_problem` found wrong, in words."""
    n = len(s)
    if type(p) is not int or p < 0:
        return f"{name}: prefix {p!r} is not an int >= 0"
    if not n or n != len(v):
        return f"{name}: {n} run starts for {len(v)} values"
    end: Any = p - 1
    before: Any = final
    for i in range(n):
        start, value = s[i], v[i]
        if type(value) is not kind:
            return f"{name}: value {value!r} at {start!r} is not a {kind.__name__} value"
        if type(start) is not int or start != end + 1:
            return f"{name}: the run from {start!r} does not follow on from tick {end}"
        if value is before or value == before:
            if i == 0:
                return (
                    f"{name}: the run from {start} holds the final value {value!r} outside "
                    "the collapsed prefix"
                )
            return (
                f"{name}: adjacent runs from {s[i - 1]} and {start} both hold {value!r} "
                "(not merged)"
            )
        end = s[i + 1] - 1 if i + 1 < n else None
        if end is not None and end < start:
            return f"{name}: run starts {start}, {s[i + 1]!r} do not ascend"
        before = value
    if v[-1] != bottom:
        return f"{name}: the tail from {s[-1]} holds {v[-1]!r}, not {bottom!r}"
    return None


def cell_problem(c: CellLedger) -> str | None:
    """What keeps a cell ledger from the form its operations return (None: none):
    ``filtered`` and each broker's C are canonical tick sets above ``acked``, and no broker
    is listed with no C [GD §3.1]."""
    if not is_canonical(c.filtered):
        return f"CellLedger: filtered {c.filtered!r} is not a canonical tick set"
    if c.filtered and c.filtered[0][0] <= c.acked:
        return f"CellLedger: filtered {c.filtered!r} reaches the acked prefix 0..{c.acked}"
    for broker in sorted(c.curious):
        got = c.curious[broker]
        if not got:
            return f"CellLedger: broker {broker!r} is listed with no C ticks"
        if not is_canonical(got):
            return f"CellLedger: C of {broker!r} {got!r} is not a canonical tick set"
        if got[0][0] <= c.acked:
            return f"CellLedger: C of {broker!r} {got!r} reaches the acked prefix 0..{c.acked}"
    return None


def ledger_problem(led: CuriosityLedger, old: CuriosityLedger | None = None) -> str | None:
    """What keeps a curiosity ledger from the form its operations return (None: none):
    every cell ledger's (:func:`cell_problem`) and the upstream C as ascending, disjoint,
    non-empty ``(lo, hi, since)`` runs of ticks >= 0 [GD §3.1]. Parts that are the very
    objects they were in ``old`` (the ledger before a step) were judged then, and are skipped."""
    old_cells = old.cells if old is not None else ()
    for i, c in enumerate(led.cells):
        if i < len(old_cells) and old_cells[i] is c:
            continue
        got = cell_problem(c)
        if got is not None:
            return f"cell {i}: {got}"
    if old is not None and led.upstream is old.upstream:
        return None
    prev = -1
    for lo, hi, since in led.upstream:
        if not (type(lo) is int and type(hi) is int and prev < lo <= hi):
            return (
                f"CuriosityLedger: upstream run ({lo!r}, {hi!r}) is empty, negative or not "
                f"above the run before it (ending at {prev})"
            )
        if type(since) is not int or since < 0:
            return f"CuriosityLedger: upstream run ({lo}, {hi}) became C at {since!r}"
        prev = hi
    return None


def stream_problem(s: Any, old: Any = None) -> str | None:
    """What keeps one GD stream (:class:`gapless.impl.gd.state.Stream`) from its canonical
    form (None: none): the knowledge stream, the curiosity ledger and the SHB's ``nacked``
    tick set each by its check above, and the two ties between the knowledge and the ledger
    that keeps curiosity apart from it: upstream C only on ticks that are Q here — a nack
    makes C only what it could not answer, and arriving knowledge settles it [GD §2.1, §3.1];
    and the acknowledged prefix as long as the cells' A allows, with no cell F or C below it
    (:func:`prefix_problem`). With ``old`` (the stream before a step), a part that is the very
    object it was is skipped."""
    k, led = s.knowledge, s.ledger
    k_new = old is None or k is not old.knowledge
    led_new = old is None or led is not old.ledger
    if k_new:
        got = run_stream_problem(k)
        if got is not None:
            return f"knowledge: {got}"
    if led_new:
        got = ledger_problem(led, None if old is None else old.ledger)
        if got is not None:
            return f"ledger: {got}"
    if (old is None or s.nacked is not old.nacked) and not is_canonical(s.nacked):
        return f"nacked: {s.nacked!r} is not a canonical tick set"
    if k_new or led_new:
        for lo, hi, _since in led.upstream:
            known = k.known(lo, hi)
            if known:
                return (
                    f"ledger: upstream C ({lo}, {hi}) holds ticks {known!r} the knowledge "
                    "already knows; istream C lies only on Q ticks, settled as knowledge "
                    "arrives [GD §3.1]"
                )
        got = prefix_problem(k, led)
        if got is not None:
            return f"knowledge and ledger: {got}"
    return None


def prefix_problem(k: KnowledgeStream, led: CuriosityLedger) -> str | None:
    """What ties a stream's acknowledged prefix ``0..fin`` and its cell ledgers wrong (None:
    nothing), both ways [GD §2.1, §2.4, §3.1]:

    * below it, no cell keeps F or any broker's C: where the istream is F, the ledger has
      let go of them (``grow_a_prefix`` releases the ledger in every step that changes the
      istream, also when the prefix grew from upstream F alone);
    * just past it, tick ``fin + 1`` is not A in every downstream cell (acked, or removed by
      the cell's edge filter): the roles grow the prefix, and make it F, in the very step
      that makes its next tick A. A prefix left short is acked upstream short and released
      late, and no wire or delivery rule sees it, since every later ack covers the tick.

    A stream with no cell ledgers (an SHB's) has no such tie."""
    cells = led.cells
    if not cells:
        return None
    fin = k.fin
    for i, c in enumerate(cells):
        # each tick set is canonical here (ledger_problem judged it first): its first run is
        # its lowest
        kept = [f"F {c.filtered[0]!r}"] if c.filtered and c.filtered[0][0] <= fin else []
        low = [(b, got[0]) for b, got in c.curious.items() if got and got[0][0] <= fin]
        kept += [f"C {run!r} of {b!r}" for b, run in low]
        if kept:
            return (
                f"cell {i} keeps {kept[0]} at or below the acknowledged prefix 0..{fin}: the "
                "ledger lets go of per-cell F and C where the istream is F [GD §2.1.1, §3.1]"
            )
    t = fin + 1
    if any(t > c.acked and not contains(c.filtered, t) for c in cells):
        return None
    return (
        f"the acknowledged prefix ends at tick {fin}, yet tick {t} is A in every downstream "
        "cell (acked or filtered there): the A prefix grows, and becomes F, in the step that "
        "makes its next tick A [GD §2.4, §3.1]"
    )


def malformed(before: object, after: object) -> str | None:
    """The first stream of the GD role state ``after`` that is not in canonical form
    (:func:`stream_problem`), named with its pubend; None when every stream is canonical. A
    stream that is the very object it was in ``before`` (the state before the step) is not
    looked at again, nor a part of a stream that is the very object it was: a step pays for
    the values it replaced."""
    streams = getattr(after, "streams", None)
    if not streams:
        return None
    old = getattr(before, "streams", ())
    names = getattr(getattr(after, "ctx", None), "pubends", ())
    for i, s in enumerate(streams):
        was = old[i] if i < len(old) else None
        if was is s:
            continue
        got = stream_problem(s, was)
        if got is not None:
            pubend = names[i] if i < len(names) else f"#{i}"
            return f"stream of pubend {pubend!r}: {got}"
    return None
