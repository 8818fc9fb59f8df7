"""The accumulate shortcut for "exactly one bottom run between two others" (a pubend's pending
tick between silences), judged by the per-tick reference on every combination of the values
around the run and the value joined in.

The random sequences of ``test_stream_differential.py`` enter this shortcut, but a mutation
run showed they rarely line up its side conditions (the value joined equal to the run before
or after it, the run before being the collapsed final prefix, the bottom joined in): changed
guards there survived. Here every knowledge value (and values equal to the stored ones but
other objects) is tried before, after and in the gap, with
a real run before the gap and with the final prefix before it, and the result must equal the
reference, be canonical, and be the stream itself when the reference did not change.
"""

from __future__ import annotations

from itertools import product

import pytest
from test_stream_differential import KNOWLEDGE_VALUES, Blocks, _join, _ref_k, check_stream

from gapless.impl.knowledge import D, F, Kind, Knowledge, Q, finalize
from gapless.impl.streams import KnowledgeStream

UNIT = Blocks([1] * 40)
AROUND = [x for x in KNOWLEDGE_VALUES if x != Q]
# equal to stored values but other objects: a no-op must still return the stream itself
JOINED = [*KNOWLEDGE_VALUES, Knowledge(Kind.Q), Knowledge(Kind.F), Knowledge(Kind.L)]


@pytest.mark.parametrize("before", AROUND, ids=repr)
def test_joining_into_a_pending_tick_between_two_runs(before: Knowledge) -> None:
    for after, value, start in product(AROUND, JOINED, (0, 1)):
        # runs: [start, 1] before (the final prefix when before is F and start is 0), the
        # bottom gap [2, 2], [3, 4] after; then value is joined into exactly the gap
        s = KnowledgeStream().accumulate(start, 1, before).accumulate(3, 4, after)
        ref = _ref_k().accumulate(start, 1, before, _join).accumulate(3, 4, after, _join)
        got = s.accumulate(2, 2, value)
        want = ref.accumulate(2, 2, value, _join)
        check_stream(got, want, UNIT, knowledge=True)
        if want == ref:
            assert got is s, (before, after, value, start)


def test_the_prefix_case_is_reached() -> None:
    """Non-vacuity of the set-up: with F before the gap from tick 0, the gap is the first run
    after the final prefix (the shortcut's ``i == 0`` case)."""
    s = KnowledgeStream().accumulate(0, 1, F).accumulate(3, 4, F)
    assert s.final_prefix == 2
    assert s.value_at(2) == Q


@pytest.mark.parametrize("first", KNOWLEDGE_VALUES, ids=repr)
def test_acknowledging_every_two_run_prefix(first: Knowledge) -> None:
    """``acknowledge`` on every stream of two runs and every ``upto``: in particular a prefix
    that holds only E (which stays E [GD §2.1]), which random sequences rarely build."""
    for second, upto in product(KNOWLEDGE_VALUES, range(6)):
        s = KnowledgeStream().accumulate(0, 1, first).accumulate(2, 3, second)
        ref = _ref_k().accumulate(0, 1, first, _join).accumulate(2, 3, second, _join)
        got = s.acknowledge(upto)
        want = ref.acknowledge(upto, _join, finalize)
        check_stream(got, want, UNIT, knowledge=True)
        if want == ref:
            assert got is s, (first, second, upto)


@pytest.mark.parametrize("before", AROUND, ids=repr)
def test_filling_a_pending_tick_between_two_runs(before: Knowledge) -> None:
    """``fill`` (the in-order publish [GD §2.2]) on the same streams: the tick is Q, so it is
    ``accumulate`` of that one tick, by the reference — the shortcut that keeps the run
    starts, and the neighbours equal to the value joined that it hands to ``accumulate``."""
    for after, value, start in product(AROUND, JOINED, (0, 1)):
        s = KnowledgeStream().accumulate(start, 1, before).accumulate(3, 4, after)
        ref = _ref_k().accumulate(start, 1, before, _join).accumulate(3, 4, after, _join)
        got = s.fill(2, value)
        want = ref.accumulate(2, 2, value, _join)
        check_stream(got, want, UNIT, knowledge=True)
        if want == ref:
            assert got is s, (before, after, value, start)
        elif value != before and value != after:
            # the shortcut: the run starts stay the same tuple
            assert got._s is s._s, (before, after, value, start)


@pytest.mark.parametrize("value", JOINED, ids=repr)
def test_filling_elsewhere(value: Knowledge) -> None:
    """``fill`` of a tick that is not Q (known, or in the acknowledged prefix) is the stream
    itself; of a Q tick in a longer Q run, or in the bottom tail, it is ``accumulate``."""
    s = KnowledgeStream().accumulate(0, 1, F).accumulate(3, 3, value).accumulate(6, 7, value)
    ref = _ref_k().accumulate(0, 1, F, _join).accumulate(3, 3, value, _join)
    ref = ref.accumulate(6, 7, value, _join)
    for t in range(12):
        other = D("z")
        want = ref.accumulate(t, t, other, _join) if ref.value(t) == Q else ref
        got = s.fill(t, other)
        check_stream(got, want, UNIT, knowledge=True)
        if want == ref:
            assert got is s, t
