"""Every tick-taking operation of the stream types refuses a bad tick or range with a typed
error that names the operation, the argument and what is allowed (common rules: "typed
errors for caller misuse, naming what was wrong and what is allowed").

``tests/unit/test_streams.py`` checks the error types on hand-picked calls; a mutation run
found operations whose message could lose its operation name unnoticed. Here every public
operation that takes a tick or a range is called with a negative tick, a non-int tick and an
inverted range, on an empty and on a non-trivial stream, and the whole message is checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from gapless.impl.curiosity import A, C
from gapless.impl.errors import InvalidRange, InvalidTick, LatticeMismatch
from gapless.impl.knowledge import D, F
from gapless.impl.streams import CuriosityStream, KnowledgeStream, PairedStream

K = KnowledgeStream().accumulate(0, 4, F).accumulate(6, 6, D("m"))
CS = CuriosityStream().accumulate(2, 8, C)
P = PairedStream(K, CS.accumulate(0, 1, A))

# (operation name, call taking the bad tick, argument name)
ONE_TICK: list[tuple[str, Callable[[Any], object], str]] = [
    ("KnowledgeStream.value_at", lambda t: K.value_at(t), "tick"),
    ("CuriosityStream.value_at", lambda t: CS.value_at(t), "tick"),
    ("PairedStream.value_at", lambda t: P.value_at(t), "tick"),
    ("KnowledgeStream.next_gap", lambda t: K.next_gap(t), "tick"),
    ("KnowledgeStream.payload_at", lambda t: K.payload_at(t), "tick"),
    ("KnowledgeStream.final_run_end", lambda t: K.final_run_end(t), "tick"),
    ("KnowledgeStream.acknowledge", lambda t: K.acknowledge(t), "upto"),
    ("KnowledgeStream.fill", lambda t: K.fill(t, D("x")), "tick"),
    ("KnowledgeStream.data", lambda t: K.data(t), "lo"),
    ("KnowledgeStream.has_data", lambda t: K.has_data(t), "lo"),
    ("KnowledgeStream.finals", lambda t: K.finals(t), "lo"),
    ("KnowledgeStream.known", lambda t: K.known(t), "lo"),
]

# (operation name, call taking a range)
RANGES: list[tuple[str, Callable[[Any, Any], object]]] = [
    ("KnowledgeStream.accumulate", lambda a, b: K.accumulate(a, b, F)),
    ("KnowledgeStream.append", lambda a, b: KnowledgeStream().append(a, b, F)),
    ("KnowledgeStream.finalize", lambda a, b: K.finalize(a, b)),
    ("KnowledgeStream.release", lambda a, b: K.release(a, b)),
    ("KnowledgeStream.forget", lambda a, b: K.forget(a, b)),
    ("KnowledgeStream.data", lambda a, b: K.data(a, b)),
    ("KnowledgeStream.has_data", lambda a, b: K.has_data(a, b)),
    ("KnowledgeStream.finals", lambda a, b: K.finals(a, b)),
    ("KnowledgeStream.known", lambda a, b: K.known(a, b)),
    ("KnowledgeStream.gaps", lambda a, b: K.gaps(a, b)),
    ("CuriosityStream.accumulate", lambda a, b: CS.accumulate(a, b, C)),
    ("CuriosityStream.forget_curious", lambda a, b: CS.forget_curious(a, b)),
    ("CuriosityStream.forget", lambda a, b: CS.forget(a, b)),
    ("PairedStream.forget", lambda a, b: P.forget(a, b)),
]

NOT_A_TICK = "{op}: {name}={t!r} is not a tick; allowed: an int >= 0 (1 tick = 1 µs)"


@pytest.mark.parametrize(("op", "call", "name"), ONE_TICK, ids=[o for o, _, _ in ONE_TICK])
@pytest.mark.parametrize("bad", [-1, 2.0, "3", None])
def test_a_bad_tick_names_the_operation(
    op: str, call: Callable[[Any], object], name: str, bad: object
) -> None:
    text = NOT_A_TICK.format(op=op, name=name, t=bad)
    with pytest.raises(InvalidTick, match="^" + re.escape(text) + "$"):
        call(bad)


@pytest.mark.parametrize(("op", "call"), RANGES, ids=[o for o, _ in RANGES])
def test_a_bad_range_names_the_operation(op: str, call: Callable[[Any, Any], object]) -> None:
    inverted = f"{op}: range [5, 3] is empty or inverted; allowed: start <= end (inclusive)"
    with pytest.raises(InvalidRange, match="^" + re.escape(inverted) + "$"):
        call(5, 3)
    for a, b, name, t in [(-1, 3, "start", -1), (1, -2, "end", -2), (1.0, 3, "start", 1.0)]:
        err: type[Exception] = InvalidTick
        text = NOT_A_TICK.format(op=op, name=name, t=t)
        if op == "KnowledgeStream.append" and t == -1:
            # append refuses any start below the stream's extent first (0 when empty)
            err = InvalidRange
            text = f"{op}: start=-1 is below extent=0; allowed: start >= extent (use accumulate"
            text += " for knowledge below it)"
        with pytest.raises(err, match="^" + re.escape(text) + "$"):
            call(a, b)


def test_gaps_needs_an_upper_bound() -> None:
    """The Q ticks above a stream never end: ``gaps`` refuses an open window (``hi`` None),
    where the other window queries accept one."""
    text = NOT_A_TICK.format(op="KnowledgeStream.gaps", name="end", t=None)
    with pytest.raises(InvalidTick, match="^" + re.escape(text) + "$"):
        K.gaps(0, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [None, "D", C, 3])
def test_fill_refuses_what_is_not_knowledge(bad: object) -> None:
    """``fill`` takes a knowledge value; anything else (a curiosity value too) is refused with
    the operation's name and what is allowed, before any tick is looked at."""
    text = (
        f"KnowledgeStream.fill: {bad!r} is not a knowledge value; "
        "allowed: Q, L, D(a), D*(a), F, S, E"
    )
    for tick in (0, 5, 6, 100):
        with pytest.raises(LatticeMismatch, match="^" + re.escape(text) + "$"):
            K.fill(tick, bad)  # type: ignore[arg-type]
