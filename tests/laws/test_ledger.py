"""Differential tests: ``gapless.impl.ledger`` against the per-tick reference
``gapless.spec.ledger`` (STYLE.md, "Oracles").

Random sequences of every operation the roles perform — nacks at advancing times, forgetting,
knowledge settling C, the A prefix released, and per cell acks, per-cell F, per-broker C,
serving and first-time sends — run on both. After every step the ledger must hold exactly
the reference's ticks, times and prefixes, keep its canonical form, answer the queries alike
(``a_end``, ``since``, the newly-C ticks of a nack, what ``forget`` reports), and return its
very receiver when the reference did not change. At the end every earlier value must still
hold what it held when it was made: old versions never change.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl import ticksets as ts
from gapless.impl.errors import InvalidRange, InvalidTick, ProtocolMisuse
from gapless.impl.ledger import CellLedger, CuriosityLedger
from gapless.invariants.gd.forms import cell_problem, ledger_problem
from gapless.spec import ledger as ref
from gapless.spec import ticksets as tref

SMALL = 20
N_CELLS = 2
BROKERS = ("x", "y", "z")

tick = st.integers(0, SMALL)
prefix = st.integers(-1, SMALL + 2)
tick_sets = st.one_of(
    st.sets(tick, max_size=12).map(tref.runs),
    st.tuples(tick, st.integers(0, 8)).map(lambda p: ((p[0], p[0] + p[1]),)),
    st.just(()),
)
broker = st.sampled_from(BROKERS)

cell_ops = st.one_of(
    st.tuples(st.just("ack"), prefix),
    st.tuples(st.just("filter"), tick_sets),
    st.tuples(st.just("filter_tick"), st.integers(0, 6)),
    st.tuples(st.just("want"), broker, tick_sets),
    st.tuples(st.just("serve"), broker, tick_sets),
    st.tuples(st.just("sent"), tick),
    st.tuples(st.just("release"), prefix),
)
ledger_ops = st.one_of(
    st.tuples(st.just("nack"), tick_sets, st.integers(0, 5)),
    st.tuples(st.just("forget"), st.integers(0, 6)),
    st.tuples(st.just("settle"), prefix, tick_sets),
    st.tuples(st.just("release"), prefix),
    st.tuples(st.just("cell"), st.integers(0, N_CELLS - 1), cell_ops),
)


def cell_to_ref(c: CellLedger) -> ref.Cell:
    """The reference value a cell ledger stands for."""
    return ref.Cell(
        acked=c.acked,
        filtered=frozenset(tref.to_set(c.filtered)),
        curious={x: frozenset(tref.to_set(r)) for x, r in c.curious.items()},
        sent_upto=c.sent_upto,
    )


def to_ref(led: CuriosityLedger) -> ref.Ledger:
    """The reference value a ledger stands for."""
    since: dict[int, int] = {}
    for lo, hi, w in led.upstream:
        for t in range(lo, hi + 1):
            assert t not in since, f"upstream runs overlap at {t}: {led.upstream}"
            since[t] = w
    return ref.Ledger(cells=tuple(cell_to_ref(c) for c in led.cells), since=since)


def assert_canonical_cell(c: CellLedger) -> None:
    assert cell_problem(c) is None, "canonical_state's form check agrees"
    assert ts.is_canonical(c.filtered)
    assert not c.filtered or c.filtered[0][0] > c.acked
    for r in c.curious.values():
        assert r
        assert ts.is_canonical(r)
        assert r[0][0] > c.acked


def assert_canonical(led: CuriosityLedger) -> None:
    assert ledger_problem(led) is None, "canonical_state's form check agrees"
    for c in led.cells:
        assert_canonical_cell(c)
    prev = -1
    for lo, hi, _w in led.upstream:
        assert prev < lo <= hi
        prev = hi


def apply_cell(c: CellLedger, r: ref.Cell, op: tuple[Any, ...]) -> tuple[CellLedger, ref.Cell]:
    name = op[0]
    if name == "ack":
        return c.ack(op[1]), ref.ack(r, op[1])
    if name == "filter":
        return c.filter(op[1]), ref.filter_ticks(r, tref.to_set(op[1]))
    if name == "filter_tick":
        return c.filter_tick(op[1]), ref.filter_ticks(r, {op[1]})
    if name == "want":
        return c.want(op[1], op[2]), ref.want(r, op[1], tref.to_set(op[2]))
    if name == "serve":
        return c.serve(op[1], op[2]), ref.serve(r, op[1], tref.to_set(op[2]))
    if name == "sent":
        return c.sent(op[1]), ref.sent(r, op[1])
    assert name == "release"
    return c.release(op[1]), ref.release_cell(r, op[1])


def check_cell_queries(c: CellLedger, r: ref.Cell) -> None:
    for t in range(SMALL + 10):
        assert c.a_end(t) == ref.a_end(r, t), t


@given(st.lists(cell_ops, max_size=30))
def test_cell_ledger_matches_the_reference(ops: list[tuple[Any, ...]]) -> None:
    run_cell_ops(ops)


@given(tick_sets, tick_sets, tick_sets, tick_sets, prefix, prefix, st.integers(0, 6))
def test_cell_ledger_fast_paths_match_the_reference(
    cx: ts.TickSet,
    cy: ts.TickSet,
    f: ts.TickSet,
    served: ts.TickSet,
    a: int,
    p: int,
    t: int,
) -> None:
    """One fixed pattern of operations with random arguments, so that every shortcut of
    :class:`CellLedger` (F or C partly below the A prefix, a tick filtered twice, a broker
    whose C all lies above a release, serving ticks a broker never wanted) is judged by the
    reference in every run, not only when a random sequence happens to line them up."""
    run_cell_ops(
        [
            ("want", "x", cx),
            ("want", "y", cy),
            ("filter", f),
            ("filter_tick", t),
            ("filter_tick", t),
            ("serve", "x", served),
            ("ack", a),
            ("filter", f),
            ("want", "x", cy),
            ("release", p),
            ("filter_tick", t),
            ("serve", "y", served),
        ]
    )


def run_cell_ops(ops: list[tuple[Any, ...]]) -> None:
    """Run ``ops`` on a fresh cell ledger and the reference, checking every step."""
    c, r = CellLedger(), ref.Cell()
    history = [(c, r)]
    for op in ops:
        c2, r2 = apply_cell(c, r, op)
        assert cell_to_ref(c2) == r2, op
        assert_canonical_cell(c2)
        if r2 == r:
            assert c2 is c, f"{op} changed nothing but made a new value"
        check_cell_queries(c2, r2)
        history.append((c2, r2))
        c, r = c2, r2
    for old, want in history:
        assert cell_to_ref(old) == want


def apply(
    led: CuriosityLedger, r: ref.Ledger, op: tuple[Any, ...], now: int
) -> tuple[CuriosityLedger, ref.Ledger, int]:
    """One operation on both; checks what it reports. Returns both results and the clock."""
    name = op[0]
    if name == "nack":
        now += op[2]
        got, newly = led.nack(op[1], now)
        want = ref.newly_curious(r, tref.to_set(op[1]))
        assert tref.to_set(newly) == want
        assert ts.is_canonical(newly)
        return got, ref.nack(r, tref.to_set(op[1]), now), now
    if name == "forget":
        limit = now - op[1]
        f = led.forget(limit)
        r2 = ref.forget(r, limit)
        assert f.forgot == (r2 != r)
        assert f.earliest == min(r2.since.values(), default=None)
        return f.ledger, r2, now
    if name == "settle":
        return led.settle(op[1], op[2]), ref.settle(r, op[1], tref.to_set(op[2])), now
    if name == "release":
        return led.release(op[1]), ref.release(r, op[1]), now
    assert name == "cell"
    i = op[1]
    c, rc = apply_cell(led.cell(i), r.cells[i], op[2])
    cells = (*r.cells[:i], rc, *r.cells[i + 1 :])
    return led.with_cell(i, c), ref.Ledger(cells=cells, since=r.since), now


@given(st.lists(ledger_ops, max_size=40))
def test_curiosity_ledger_matches_the_reference(ops: list[tuple[Any, ...]]) -> None:
    led, r, now = CuriosityLedger.fresh(N_CELLS), ref.fresh(N_CELLS), 0
    history = [(led, r)]
    for op in ops:
        led2, r2, now = apply(led, r, op, now)
        assert to_ref(led2) == r2, op
        assert_canonical(led2)
        if r2 == r:
            assert led2 is led, f"{op} changed nothing but made a new value"
        for t in range(SMALL + 10):
            assert led2.since(t) == r2.since.get(t)
        assert tref.to_set(led2.curious_ticks()) == set(r2.since)
        assert led2.any_broker_curious() == any(c.curious for c in r2.cells)
        history.append((led2, r2))
        led, r = led2, r2
    for old, want in history:
        assert to_ref(old) == want


@given(tick_sets, tick_sets, tick_sets, prefix, prefix, st.integers(0, 3))
def test_curiosity_ledger_fast_paths_match_the_reference(
    n1: ts.TickSet, n2: ts.TickSet, known: ts.TickSet, fin: int, p: int, age: int
) -> None:
    """A fixed pattern with random arguments (overlapping nacks at two times, knowledge
    settling part of the C, a partial forget, a release through both), as for the cells."""
    led, r, now = CuriosityLedger.fresh(N_CELLS), ref.fresh(N_CELLS), 0
    for op in [
        ("nack", n1, 1),
        ("release", max(p - 3, -1)),
        ("nack", n2, 1),
        ("release", n2[0][1] if n2 else -1),  # a release that ends exactly where a C run ends
        ("cell", 0, ("want", "x", n2)),
        ("nack", n2, 2),
        ("nack", n1, 1),
        ("settle", fin, known),
        ("forget", age),
        ("release", p),
        ("nack", n2, 1),
        ("forget", 0),
    ]:
        led2, r2, now = apply(led, r, op, now)
        assert to_ref(led2) == r2, op
        assert_canonical(led2)
        if r2 == r:
            assert led2 is led, f"{op} changed nothing but made a new value"
        led, r = led2, r2


@given(st.lists(st.tuples(tick_sets.filter(bool), st.integers(0, 3)), min_size=1, max_size=8))
def test_a_repeated_nack_is_fresh_only_once_its_curiosity_is_forgotten(
    nacks: list[tuple[ts.TickSet, int]],
) -> None:
    """[GD §3.1] consolidation: a tick's C time is the time of the nack that made it C; a
    later nack for it reports nothing new until forget(limit) passed that time."""
    led, now = CuriosityLedger.fresh(0), 0
    first: dict[int, int] = {}
    for ticks, dt in nacks:
        now += dt
        led, newly = led.nack(ticks, now)
        for t in tref.to_set(ticks):
            assert (t in tref.to_set(newly)) == (t not in first)
            first.setdefault(t, now)
    for t, w in first.items():
        assert led.since(t) == w
    led = led.forget(now).ledger
    assert led.upstream == ()
    again, newly = led.nack(nacks[0][0], now + 1)
    assert newly == nacks[0][0]
    assert again.since(nacks[0][0][0][0]) == now + 1


def test_misuse_raises_typed_errors() -> None:
    c = CellLedger()
    for call, err, text in [
        (lambda: c.ack(-2), InvalidTick, "CellLedger.ack: -2 is not a prefix end"),
        (lambda: c.filter(((-1, 3),)), InvalidRange, "CellLedger.filter: "),
        (lambda: c.ack(3).filter(((-1, 3),)), InvalidRange, "CellLedger.filter: "),
        (lambda: c.filter_tick(-1), InvalidTick, "CellLedger.filter_tick: -1"),
        (lambda: c.want("x", ((3, 2),)), InvalidRange, "CellLedger.want: "),
        (lambda: c.want("x", ((1, 2), (3, 4))), InvalidRange, "CellLedger.want: .* not a tick set"),
        (lambda: CuriosityLedger.fresh(-1), ProtocolMisuse, "CuriosityLedger.fresh: -1 cells"),
        (
            lambda: CuriosityLedger.fresh(1).cell(1),
            ProtocolMisuse,
            "CuriosityLedger.cell: no cell 1; allowed: 0..0",
        ),
        (lambda: CuriosityLedger.fresh(1).with_cell(1, c), ProtocolMisuse, "CuriosityLedger.with_"),
        (lambda: CuriosityLedger.fresh(1).cell(-1), ProtocolMisuse, "CuriosityLedger.cell: no"),
        (
            lambda: CuriosityLedger.fresh(1).with_cells(()),
            ProtocolMisuse,
            "CuriosityLedger.with_cells: 0 cells",
        ),
        (
            lambda: CuriosityLedger().nack(((1, 2),), -1),
            InvalidTick,
            "CuriosityLedger.nack: now=-1",
        ),
        (lambda: CuriosityLedger().nack(((2, 1),), 0), InvalidRange, "CuriosityLedger.nack: "),
        (lambda: CuriosityLedger().release(-2), InvalidTick, "CuriosityLedger.release: -2 "),
        (lambda: c.ack(5).ack(-3), InvalidTick, "CellLedger.ack: -3 is not a prefix end"),
        (lambda: c.ack(2.5), InvalidTick, "CellLedger.ack: 2.5 is not a prefix end"),  # type: ignore[arg-type]
    ]:
        # anchored: the message starts with the operation's name
        with pytest.raises(err, match="^" + text.replace("(", r"\(").replace(")", r"\)")):
            call()


def test_replacing_cells_by_themselves_is_a_no_op() -> None:
    led = CuriosityLedger.fresh(2)
    assert led.with_cells(led.cells) is led
    assert led.with_cell(1, led.cells[1]) is led
    other = (CellLedger(acked=3), CellLedger())
    assert led.with_cells(other).cells is other


def test_the_differential_check_catches_a_ledger_that_refreshes_c_times() -> None:
    """Non-vacuity: a ledger whose repeated nack refreshes the C time (no consolidation)
    differs from the reference."""
    led, _ = CuriosityLedger.fresh(0).nack(((1, 3),), 10)
    r = ref.nack(ref.fresh(0), {1, 2, 3}, 10)
    wrong = CuriosityLedger(upstream=((1, 3, 20),))  # what a refreshing nack at 20 would hold
    assert to_ref(led.nack(((2, 2),), 20)[0]) == ref.nack(r, {2}, 20)
    assert to_ref(wrong) != ref.nack(r, {2}, 20)
