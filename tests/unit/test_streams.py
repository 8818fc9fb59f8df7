"""Unit tests of ``gapless.impl.streams``: errors, edge cases, huge ranges, the paired view.

The random operation sequences live in ``tests/laws/test_stream_differential.py``; these are
the hand-picked cases, each with the paper sentence it checks where there is one.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from gapless.impl import curiosity, knowledge
from gapless.impl.curiosity import A, C, N
from gapless.impl.errors import GaplessError, InvalidRange, InvalidTick, LatticeMismatch
from gapless.impl.knowledge import DSTAR, D, E, F, Kind, Knowledge, L, Q, S
from gapless.impl.streams import (
    CuriosityStream,
    KnowledgeStream,
    PairedStream,
    Run,
    merge,
    upstream_curiosity,
)

BIG = 10**9


def runs(stream: Any) -> list[tuple[int, int, Any]]:
    return [(r.start, r.end, r.value) for r in stream.runs()]


def message(stream: KnowledgeStream, t: int, payload: object) -> KnowledgeStream:
    """A GD §3.1 data message at tick t (F prefix, one D) and the automatic lowering."""
    return stream.accumulate(0, t - 1, F).finalize(0, t - 1).accumulate(t, t, D(payload))


# -- errors: caller misuse raises a typed error naming operation, value and what is allowed --


@pytest.mark.parametrize("bad", [-1, -(10**12), 1.0, 2.5, "3", None, True, False])
def test_bad_ticks_are_refused_with_a_clear_message(bad: Any) -> None:
    k = KnowledgeStream()
    for call, op in [
        (lambda: k.accumulate(bad, 5, F), "KnowledgeStream.accumulate"),
        (lambda: k.accumulate(0, bad, F), "KnowledgeStream.accumulate"),
        (lambda: k.forget(bad, 5), "KnowledgeStream.forget"),
        (lambda: k.finalize(bad, 5), "KnowledgeStream.finalize"),
        (lambda: k.release(0, bad), "KnowledgeStream.release"),
        (lambda: k.value_at(bad), "KnowledgeStream.value_at"),
        (lambda: k.next_gap(bad), "KnowledgeStream.next_gap"),
        (lambda: CuriosityStream().accumulate(bad, 1, A), "CuriosityStream.accumulate"),
        (lambda: CuriosityStream().forget_curious(0, bad), "CuriosityStream.forget_curious"),
        (lambda: PairedStream().value_at(bad), "PairedStream.value_at"),
        (lambda: PairedStream().forget(bad, 3), "PairedStream.forget"),
    ]:
        with pytest.raises(InvalidTick) as info:
            call()
        text = str(info.value)
        assert op in text
        assert repr(bad) in text
        assert "int >= 0" in text


@pytest.mark.parametrize(("start", "end"), [(5, 4), (1, 0), (BIG, BIG - 1)])
def test_inverted_ranges_are_refused(start: int, end: int) -> None:
    for call in (
        lambda: KnowledgeStream().accumulate(start, end, F),
        lambda: KnowledgeStream().forget(start, end),
        lambda: CuriosityStream().accumulate(start, end, C),
        lambda: PairedStream().accumulate_knowledge(start, end, S),
        lambda: PairedStream().forget(start, end),
    ):
        with pytest.raises(InvalidRange, match=rf"\[{start}, {end}\].*start <= end"):
            call()


def test_errors_are_typed_and_catchable_as_value_or_type_errors() -> None:
    with pytest.raises(ValueError, match="tick"):
        KnowledgeStream().value_at(-1)
    with pytest.raises(TypeError, match="knowledge"):
        KnowledgeStream().accumulate(0, 1, A)  # type: ignore[arg-type]
    with pytest.raises(GaplessError):
        KnowledgeStream().forget(3, 2)


@pytest.mark.parametrize("bad", [A, C, N, "F", None, 3])
def test_a_value_of_the_wrong_lattice_is_refused_by_knowledge(bad: Any) -> None:
    with pytest.raises(LatticeMismatch) as info:
        KnowledgeStream().accumulate(0, 3, bad)
    text = str(info.value)
    assert "KnowledgeStream.accumulate" in text
    assert repr(bad) in text
    assert "Q, L, D(a), D*(a), F, S, E" in text


@pytest.mark.parametrize("bad", [F, Q, D("x"), "A", None])
def test_a_value_of_the_wrong_lattice_is_refused_by_curiosity(bad: Any) -> None:
    with pytest.raises(LatticeMismatch) as info:
        CuriosityStream().accumulate(0, 3, bad)
    assert "CuriosityStream.accumulate" in str(info.value)
    assert "N, C, A" in str(info.value)
    with pytest.raises(LatticeMismatch):
        PairedStream().accumulate_curiosity(0, 3, bad)


def test_wrong_lattice_in_tail_and_middle_alike() -> None:
    k = KnowledgeStream().accumulate(0, 9, S)
    with pytest.raises(LatticeMismatch):
        k.accumulate(20, 30, A)  # type: ignore[arg-type]  # the tail fast path
    with pytest.raises(LatticeMismatch):
        k.accumulate(2, 3, A)  # type: ignore[arg-type]  # the general path


def test_doubt_horizon_dur_refuses_bad_delivery_points() -> None:
    for bad in (-2, 1.5, "0", None, True):
        with pytest.raises(InvalidTick, match=r"latest_delivered.*int >= -1"):
            KnowledgeStream().doubt_horizon_dur(bad)  # type: ignore[arg-type]
    assert KnowledgeStream().doubt_horizon_dur(-1) == -1


def test_transfer_misuse_is_refused() -> None:
    with pytest.raises(LatticeMismatch, match="merge: a merge needs at least one input"):
        merge([])
    with pytest.raises(LatticeMismatch, match=r"merge: .* is not a KnowledgeStream"):
        merge([KnowledgeStream(), CuriosityStream()])  # type: ignore[list-item]
    with pytest.raises(LatticeMismatch, match="upstream_curiosity: needs at least one"):
        upstream_curiosity([])
    with pytest.raises(LatticeMismatch, match="is not a CuriosityStream"):
        upstream_curiosity([CuriosityStream(), KnowledgeStream()])  # type: ignore[list-item]
    with pytest.raises(LatticeMismatch, match="filtered: 3 is not a predicate"):
        KnowledgeStream().filtered(3)  # type: ignore[arg-type]
    with pytest.raises(LatticeMismatch, match=r"knowledge=.*is not a KnowledgeStream"):
        PairedStream(CuriosityStream())  # type: ignore[arg-type]
    with pytest.raises(LatticeMismatch, match=r"curiosity=.*is not a CuriosityStream"):
        PairedStream(None, KnowledgeStream())  # type: ignore[arg-type]


# -- edge cases ------------------------------------------------------------------------------


def test_the_empty_stream() -> None:
    k = KnowledgeStream()
    assert (k.final_prefix, k.extent, k.run_count, runs(k)) == (0, 0, 0, [])
    assert k.value_at(0) is Q
    assert k.value_at(10**30) is Q
    assert k.next_gap(0) == (0, None)
    assert k.next_gap(BIG) == (BIG, None)
    assert k.doubt_horizon_dur(-1) == -1
    assert k.doubt_horizon_dur(7) == 7
    assert k == KnowledgeStream()
    assert hash(k) == hash(KnowledgeStream())
    c = CuriosityStream()
    assert (c.value_at(5), c.final_prefix, runs(c)) == (N, 0, [])
    p = PairedStream()
    assert (p.value_at(3), p.final_prefix, p.extent, p.doubt_horizon_gd()) == ((Q, N), 0, 0, 0)
    assert merge([k]) is k
    assert upstream_curiosity([c]) is c


def test_single_tick_ranges_at_zero() -> None:
    k = KnowledgeStream().accumulate(0, 0, F)
    assert (k.final_prefix, k.extent, runs(k)) == (1, 1, [(0, 0, F)])
    k = KnowledgeStream().accumulate(0, 0, D(1))
    assert (k.final_prefix, runs(k)) == (0, [(0, 0, D(1))])


def test_huge_ranges_cost_one_run() -> None:
    k = KnowledgeStream().accumulate(0, 10**18, F)
    assert (k.final_prefix, k.run_count) == (10**18 + 1, 0)
    k = k.accumulate(10**18 + 1, 10**18 + 1, D("m"))
    k = k.accumulate(10**18 + 2, 3 * 10**18, S)
    assert k.run_count == 2
    assert k.value_at(2 * 10**18) is S
    # A silence over 10^9 ticks in the middle splits and re-merges only what it touches.
    m = k.forget(BIG, 2 * BIG)
    assert m.run_count == 4
    assert m.final_prefix == BIG
    assert m.next_gap(0) == (BIG, 2 * BIG)
    assert m.accumulate(BIG, 2 * BIG, F) == k


def test_gaps_and_dur_horizon_follow_dur_figure_1() -> None:
    """[DUR §4.1]: latestDelivered 104, ticks up to 106 known -> the doubt horizon is 106."""
    k = KnowledgeStream().accumulate(0, 103, F).accumulate(104, 104, D("D2"))
    k = k.accumulate(105, 105, S).accumulate(106, 106, D("D3")).accumulate(109, 120, S)
    assert k.doubt_horizon_dur(104) == 106
    assert k.doubt_horizon_dur(106) == 106
    assert k.doubt_horizon_dur(108) == 120
    assert k.doubt_horizon_dur(121) == 121
    assert k.next_gap(0) == (107, 108)
    assert k.next_gap(108) == (108, 108)
    assert k.next_gap(109) == (121, None)
    # A lost tick (L) is knowledge: it does not hold the horizon back [DUR §2 gap messages].
    assert k.accumulate(107, 108, L).doubt_horizon_dur(104) == 120


def test_e_values_accumulate_and_stay() -> None:
    k = KnowledgeStream().accumulate(0, 9, D("a")).accumulate(5, 14, D("b"))
    assert runs(k) == [(0, 4, D("a")), (5, 9, E), (10, 14, D("b"))]
    assert k.finalize(0, 20).value_at(7) is E
    assert k.release(0, 20).value_at(7) is L
    assert k.accumulate(0, 20, F).finalize(0, 20).final_prefix == 5
    p = PairedStream().accumulate_knowledge(3, 3, E)
    assert p.value_at(3) == (E, A)


def test_join_in_the_middle_splits_runs() -> None:
    k = KnowledgeStream().accumulate(0, 99, S)
    k2 = k.accumulate(40, 49, D("x"))
    assert runs(k2) == [(0, 39, S), (40, 49, E), (50, 99, S)]
    k3 = KnowledgeStream().accumulate(0, 99, F).accumulate(40, 40, D("x"))
    assert runs(k3) == [(0, 39, F), (40, 40, DSTAR("x")), (41, 99, F)]
    assert k3.final_prefix == 40
    assert k3.finalize(40, 40).final_prefix == 100


def test_tail_fast_path_shapes() -> None:
    k = KnowledgeStream().accumulate(0, 9, S)
    assert runs(k.accumulate(10, 19, S)) == [(0, 19, S)]  # extends the last run
    assert runs(k.accumulate(10, 19, F)) == [(0, 9, S), (10, 19, F)]
    assert runs(k.accumulate(15, 19, S)) == [(0, 9, S), (10, 14, Q), (15, 19, S)]  # a Q gap
    assert k.accumulate(10, BIG, Q) is k
    assert KnowledgeStream().accumulate(0, 9, F).accumulate(10, 19, F).final_prefix == 20
    f = KnowledgeStream().accumulate(0, 9, F)
    assert f.accumulate(10, 12, S).final_prefix == 10
    assert f.accumulate(11, 12, F).final_prefix == 10


def test_runs_are_named_tuples() -> None:
    k = KnowledgeStream().accumulate(0, 4, F).accumulate(5, 5, D(1))
    first = next(iter(k.runs()))
    assert first == Run(0, 4, F)
    assert (first.start, first.end, first.value) == (0, 4, F)


def test_lowerings_follow_the_papers() -> None:
    k = KnowledgeStream().accumulate(0, 2, S).accumulate(3, 3, D("a")).accumulate(4, 4, F)
    k = k.accumulate(3, 4, F)  # D(a) ⊔ F = D*(a) [GD §2.1]
    assert runs(k) == [(0, 2, S), (3, 3, DSTAR("a")), (4, 4, F)]
    assert runs(k.finalize(0, 4)) == [(0, 4, F)]  # S, D* -> F [GD §2.1]
    assert runs(k.release(0, 4)) == [(0, 4, L)]  # release -> L [DUR §3]
    assert KnowledgeStream().release(0, 5) == KnowledgeStream()  # Q stays Q
    assert runs(k.forget(1, 3)) == [(0, 0, S), (1, 3, Q), (4, 4, F)]
    c = CuriosityStream().accumulate(0, 4, C).accumulate(5, 9, A)
    assert runs(c.forget_curious(0, 9)) == [(0, 4, N), (5, 9, A)]
    assert runs(c.forget(0, 9)) == []


def test_no_op_returns_the_same_object() -> None:
    k = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 10, D("a")).accumulate(11, 20, S)
    assert k.accumulate(0, 5, F) is k  # F ⊔ F in the collapsed prefix
    assert k.accumulate(0, 20, Q) is k
    assert k.accumulate(10, 10, D("a")) is k
    assert k.accumulate(11, 15, S) is k
    assert k.finalize(0, 10) is k
    assert k.forget(30, BIG) is k
    assert k.release(21, 30) is k
    assert k.filtered(lambda _p: True) is k
    c = CuriosityStream().accumulate(0, 3, A)
    assert c.accumulate(0, 3, C) is c
    assert c.forget_curious(0, 3) is c
    p = PairedStream().accumulate_knowledge(0, 3, F)
    assert p.accumulate_curiosity(0, 3, A) is p
    assert p.accumulate_knowledge(0, 3, Q) is p
    assert p.forget(10, 20) is p
    assert p.finalize(0, 3) is p
    assert p.forget_curious(0, 3) is p


def test_values_are_immutable_hashable_and_picklable() -> None:
    k = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 10, D("a"))
    with pytest.raises(AttributeError, match="immutable"):
        k._p = 3  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        PairedStream().x = 1  # type: ignore[attr-defined]
    for value in (k, CuriosityStream().accumulate(3, 4, C), PairedStream(k)):
        copy = pickle.loads(pickle.dumps(value))
        assert copy == value
        assert hash(copy) == hash(value)
    assert k != KnowledgeStream()
    assert k != CuriosityStream()
    assert k.__eq__(3) is NotImplemented
    assert PairedStream().__eq__(3) is NotImplemented
    assert len({k, pickle.loads(pickle.dumps(k))}) == 1


def test_unpickled_values_still_work_in_queries() -> None:
    """Knowledge unpickles to fresh objects (not the Q/F singletons): queries compare by
    kind and equality, never by identity alone."""
    k = KnowledgeStream().accumulate(0, 9, F).accumulate(12, 12, D("a")).accumulate(14, 15, S)
    copy = pickle.loads(pickle.dumps(k))
    assert copy.next_gap(0) == k.next_gap(0) == (10, 11)
    assert copy.next_gap(13) == (13, 13)
    assert copy.doubt_horizon_dur(12) == 12
    assert copy.accumulate(0, 5, F) is copy
    assert copy.accumulate(16, 20, Q) is copy
    assert copy.accumulate(10, 11, Knowledge(Kind.F)).final_prefix == 12


def test_repr_shows_the_runs() -> None:
    k = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 10, D("a"))
    assert repr(k) == "KnowledgeStream([0..9]=F, [10..10]=D('a'), [11..]=Q)"
    assert repr(CuriosityStream()) == "CuriosityStream([0..]=N)"
    assert repr(PairedStream()).startswith("PairedStream(KnowledgeStream(")


# -- the in-order path (GD §3.1) ---------------------------------------------------------------


def test_in_order_messages_keep_one_run() -> None:
    k = KnowledgeStream()
    for i in range(1, 200):
        k = message(k, i * 40_000, i)
        assert k.final_prefix == i * 40_000
        assert k.run_count == 1
        assert runs(k)[-1] == (i * 40_000, i * 40_000, D(i))
    assert k.doubt_horizon_dur(199 * 40_000 - 1) == 199 * 40_000
    assert k.next_gap(0) == (199 * 40_000 + 1, None)


# -- transfer [GD §2.4] -----------------------------------------------------------------------


def test_filter_transfer() -> None:
    k = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 10, D("keep"))
    k = k.accumulate(11, 11, S).accumulate(12, 12, D("drop")).accumulate(13, 13, L)
    out = k.filtered(lambda p: p == "keep")
    assert runs(out) == [(0, 9, F), (10, 10, D("keep")), (11, 11, S), (12, 12, F), (13, 13, L)]
    dropped = k.filtered(lambda _p: False)
    assert dropped.value_at(10) is F
    assert dropped.final_prefix == 11  # the filtered D joins the F prefix
    assert KnowledgeStream().filtered(lambda _p: False) == KnowledgeStream()


def test_merge_transfer() -> None:
    a = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 10, D("a"))
    b = KnowledgeStream().accumulate(0, 14, F).accumulate(20, 20, D("b"))
    m = merge([a, b])
    # D passes; F only where every input is F; Q where any input is Q [GD §2.4].
    assert runs(m) == [(0, 9, F), (10, 10, D("a")), (11, 19, Q), (20, 20, D("b"))]
    assert merge([a, a]) == a
    clash = merge([a, KnowledgeStream().accumulate(10, 10, D("z"))])
    assert clash.value_at(10) is E  # two pubends never put data on one tick [GD §2.2]
    s = merge([KnowledgeStream().accumulate(0, 4, S), KnowledgeStream().accumulate(0, 4, S)])
    assert runs(s) == [(0, 4, S)]
    assert (
        merge(
            [KnowledgeStream().accumulate(0, 4, S), KnowledgeStream().accumulate(0, 4, F)]
        ).final_prefix
        == 5
    )


def test_upstream_curiosity() -> None:
    x = CuriosityStream().accumulate(0, 9, A).accumulate(12, 12, C)
    y = CuriosityStream().accumulate(0, 4, A).accumulate(5, 5, C)
    u = upstream_curiosity([x, y])
    # A only where all are A; any C gives C; otherwise N [GD §2.4].
    assert runs(u) == [(0, 4, A), (5, 5, C), (6, 11, N), (12, 12, C)]
    assert u.final_prefix == 5


# -- the paired view: linkage, horizons, release ------------------------------------------------


def test_linkage_on_accumulation() -> None:
    """ "A tick whose knowledge state becomes F is assigned a curiosity of A and vice-versa"
    [GD §2.1.1]."""
    p = PairedStream().accumulate_knowledge(0, 4, S)
    assert p.value_at(2) == (S, A)
    p = PairedStream().accumulate_curiosity(0, 4, A)
    assert p.value_at(2) == (F, A)
    assert p.final_prefix == 5
    p = PairedStream().accumulate_knowledge(3, 3, D("a")).accumulate_curiosity(0, 3, A)
    assert p.value_at(3) == (DSTAR("a"), A)
    assert p.final_prefix == 3
    assert p.finalize(0, 3).final_prefix == 4
    q = PairedStream().accumulate_curiosity(5, 6, C)
    assert q.value_at(5) == (Q, C)
    assert q.accumulate_knowledge(5, 5, F).value_at(5) == (F, A)
    assert q.forget_curious(0, 9).value_at(6) == (Q, N)


def test_release_makes_l_a_and_it_stays_until_knowledge_arrives() -> None:
    """[DUR §3]: the pubend releases an acknowledged prefix to L."""
    p = PairedStream().accumulate_knowledge(0, 9, F).accumulate_knowledge(10, 10, D("a"))
    p = p.accumulate_curiosity(0, 10, A).finalize(0, 10)
    r = p.release(0, 10)
    assert r.value_at(5) == (L, A)
    assert r.final_prefix == 0
    assert r.accumulate_curiosity(0, 10, A) is r  # acking again changes nothing
    assert r.accumulate_knowledge(4, 4, D("x")).value_at(4) == (DSTAR("x"), A)
    assert r.accumulate_knowledge(4, 4, L) is r
    assert r.forget(0, 10).value_at(5) == (Q, N)


def test_constructor_closes_the_pair() -> None:
    k = KnowledgeStream().accumulate(0, 4, S).accumulate(8, 8, D("a"))
    c = CuriosityStream().accumulate(6, 8, A).accumulate(9, 9, C)
    p = PairedStream(k, c)
    assert [p.value_at(t) for t in (0, 5, 6, 8, 9, 10)] == [
        (S, A),
        (Q, N),
        (F, A),
        (DSTAR("a"), A),
        (Q, C),
        (Q, N),
    ]
    assert PairedStream(k) == PairedStream().accumulate_knowledge(0, 4, S).accumulate_knowledge(
        8, 8, D("a")
    )


def test_gd_doubt_horizon() -> None:
    """[GD §2.3]: all ticks t < t_D whose curiosity is not A are D."""
    p = PairedStream().accumulate_knowledge(0, 99, F)
    assert p.doubt_horizon_gd() == 100
    p = p.accumulate_knowledge(100, 100, D("a")).accumulate_knowledge(102, 102, D("b"))
    assert p.doubt_horizon_gd() == 101  # tick 101 is a Q gap
    p2 = p.accumulate_knowledge(101, 101, S)
    assert p2.doubt_horizon_gd() == 103
    assert p2.accumulate_curiosity(0, 102, A).doubt_horizon_gd() == 103
    # An L tick that is not acked is in doubt; acked it is not [DUR §3 early release].
    p3 = p.accumulate_knowledge(101, 101, L)
    assert p3.doubt_horizon_gd() == 101
    assert p3.accumulate_curiosity(101, 101, A).doubt_horizon_gd() == 103
    # C ticks are in doubt until resolved; the horizon reaches into curiosity-only runs.
    c_only = PairedStream().accumulate_curiosity(0, 9, A).accumulate_curiosity(10, 10, C)
    assert c_only.doubt_horizon_gd() == 10
    r = PairedStream().accumulate_knowledge(0, 5, F).accumulate_curiosity(0, 5, A).release(0, 5)
    assert r.doubt_horizon_gd() == 6  # released (L, A) ticks are settled
    assert r.doubt_horizon_dur(-1) == 5


def test_paired_delegates_gap_queries_and_extent() -> None:
    p = PairedStream().accumulate_knowledge(0, 4, F).accumulate_curiosity(9, 12, C)
    assert p.next_gap(0) == (5, None)
    assert p.doubt_horizon_dur(-1) == 4
    assert p.extent == 13
    assert p.knowledge.extent == 5
    assert p.curiosity.final_prefix == 5


# -- exact messages: what a caller reads when they misuse a stream -----------------------------

TICK = "is not a tick; allowed: an int >= 0 (1 tick = 1 µs)"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: KnowledgeStream().accumulate(-1, 2, F),
            f"KnowledgeStream.accumulate: start=-1 {TICK}",
        ),
        (
            lambda: KnowledgeStream().accumulate(0, -2, F),
            f"KnowledgeStream.accumulate: end=-2 {TICK}",
        ),
        (lambda: KnowledgeStream().forget(-1, 2), f"KnowledgeStream.forget: start=-1 {TICK}"),
        (lambda: KnowledgeStream().finalize(0, "x"), f"KnowledgeStream.finalize: end='x' {TICK}"),
        (lambda: KnowledgeStream().release(-3, 2), f"KnowledgeStream.release: start=-3 {TICK}"),
        (lambda: KnowledgeStream().value_at(-1), f"KnowledgeStream.value_at: tick=-1 {TICK}"),
        (lambda: KnowledgeStream().next_gap(-1), f"KnowledgeStream.next_gap: tick=-1 {TICK}"),
        (
            lambda: CuriosityStream().accumulate(-1, 2, A),
            f"CuriosityStream.accumulate: start=-1 {TICK}",
        ),
        (
            lambda: CuriosityStream().forget_curious(0, -1),
            f"CuriosityStream.forget_curious: end=-1 {TICK}",
        ),
        (lambda: CuriosityStream().value_at(1.0), f"CuriosityStream.value_at: tick=1.0 {TICK}"),
        (lambda: PairedStream().value_at(-1), f"PairedStream.value_at: tick=-1 {TICK}"),
        (lambda: PairedStream().forget(-1, 3), f"PairedStream.forget: start=-1 {TICK}"),
        (
            lambda: KnowledgeStream().accumulate(5, 4, F),
            "KnowledgeStream.accumulate: range [5, 4] is empty or inverted; "
            "allowed: start <= end (inclusive)",
        ),
        (
            lambda: PairedStream().forget(2, 1),
            "PairedStream.forget: range [2, 1] is empty or inverted; "
            "allowed: start <= end (inclusive)",
        ),
        (
            lambda: KnowledgeStream().accumulate(0, 1, A),
            "KnowledgeStream.accumulate: A is not a knowledge value; "
            "allowed: Q, L, D(a), D*(a), F, S, E",
        ),
        (
            lambda: CuriosityStream().accumulate(0, 1, F),
            "CuriosityStream.accumulate: F is not a curiosity value; allowed: N, C, A",
        ),
        (
            lambda: KnowledgeStream().doubt_horizon_dur(-2),
            "KnowledgeStream.doubt_horizon_dur: latest_delivered=-2 is not a timestamp; "
            "allowed: an int >= -1 (-1: nothing delivered yet)",
        ),
        (
            lambda: KnowledgeStream().filtered(3),
            "KnowledgeStream.filtered: 3 is not a predicate; allowed: a callable taking a "
            "payload and returning a bool",
        ),
        (lambda: merge([]), "merge: a merge needs at least one input stream; got none"),
        (
            lambda: merge([KnowledgeStream(), 7]),
            "merge: 7 is not a KnowledgeStream; allowed: KnowledgeStream inputs",
        ),
        (
            lambda: upstream_curiosity([]),
            "upstream_curiosity: needs at least one downstream stream; got none",
        ),
        (
            lambda: upstream_curiosity([CuriosityStream(), 7]),
            "upstream_curiosity: 7 is not a CuriosityStream; allowed: CuriosityStream inputs",
        ),
        (
            lambda: PairedStream(7),
            "PairedStream: knowledge=7 is not a KnowledgeStream; "
            "allowed: a KnowledgeStream or None",
        ),
        (
            lambda: PairedStream(None, 7),
            "PairedStream: curiosity=7 is not a CuriosityStream; "
            "allowed: a CuriosityStream or None",
        ),
    ],
)
def test_misuse_messages_are_exact(call: Any, message: str) -> None:
    with pytest.raises(GaplessError) as info:
        call()
    assert str(info.value) == message


# -- the values streams are built from: misuse messages, constructors, equality ---------------

K_ALLOWED = "is not a knowledge value; allowed: Q, L, D(a), D*(a), F, S, E"
C_ALLOWED = "is not a curiosity value; allowed: N, C, A"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: F.join(3), f"Knowledge.join: 3 {K_ALLOWED}"),
        (lambda: F.meet(3), f"Knowledge.meet: 3 {K_ALLOWED}"),
        (lambda: F.leq(3), f"Knowledge.leq: 3 {K_ALLOWED}"),
        (lambda: knowledge.forget(3), f"Knowledge.forget: 3 {K_ALLOWED}"),
        (lambda: knowledge.finalize(3), f"Knowledge.finalize: 3 {K_ALLOWED}"),
        (lambda: knowledge.release(3), f"Knowledge.release: 3 {K_ALLOWED}"),
        (
            lambda: Knowledge(Kind.D),
            "Knowledge(D): a D value needs a payload; allowed: any hashable, non-None payload",
        ),
        (
            lambda: Knowledge(Kind.F, "x"),
            "Knowledge(F): payload 'x' given to a payload-free kind; only D and D* carry a payload",
        ),
        (lambda: A.join(3), f"Curiosity.join: 3 {C_ALLOWED}"),
        (lambda: A.meet(3), f"Curiosity.meet: 3 {C_ALLOWED}"),
        (lambda: A.leq(3), f"Curiosity.leq: 3 {C_ALLOWED}"),
        (lambda: curiosity.forget_curiosity(3), f"Curiosity.forget: 3 {C_ALLOWED}"),
        (lambda: curiosity.decompose(3), f"Curiosity.decompose: 3 {C_ALLOWED}"),
        (lambda: curiosity.combine([A, 3]), f"Curiosity.combine: 3 {C_ALLOWED}"),
        (lambda: curiosity.link(F, 3), f"Curiosity.link: 3 {C_ALLOWED}"),
        (lambda: curiosity.link(3, A), "link: 3 is not a knowledge value"),
    ],
)
def test_value_misuse_messages_are_exact(call: Any, message: str) -> None:
    with pytest.raises(LatticeMismatch) as info:
        call()
    assert str(info.value) == message


def test_curiosity_and_demand_values() -> None:
    for value in (N, C, A):
        fresh = curiosity.Curiosity(value.kind)
        assert fresh == value
        assert fresh.kind is value.kind
        assert hash(fresh) == hash(value)
        assert value.__eq__(3) is NotImplemented
    assert len({N, C, A}) == 3
    assert curiosity.Curiosity(C.kind) != A
    d = curiosity.Demand(acked=True, curious=False)
    assert d == curiosity.Demand(acked=True, curious=False)
    assert d != curiosity.Demand(acked=True, curious=True)
    assert d != curiosity.Demand(acked=False, curious=False)
    assert d.__eq__(3) is NotImplemented
    assert len({d, curiosity.Demand(acked=True, curious=False)}) == 1
    assert len({curiosity.Demand(acked=a, curious=c) for a in (0, 1) for c in (0, 1)}) == 4


# -- canonical form with equal values that are different objects ------------------------------


def test_equal_values_that_are_different_objects_merge() -> None:
    # D("x") builds a new object each time: runs compare by value, not identity.
    k = KnowledgeStream().accumulate(0, 4, D("x")).accumulate(5, 9, D("x"))
    assert runs(k) == [(0, 9, D("x"))]
    k = KnowledgeStream().accumulate(0, 4, D("x")).accumulate(8, 9, D("x"))
    assert runs(k.accumulate(5, 7, D("x"))) == [(0, 9, D("x"))]
    assert KnowledgeStream().accumulate(0, 4, Knowledge(Kind.F)).final_prefix == 5
    one = KnowledgeStream().accumulate(0, 4, D("a"))
    two = KnowledgeStream().accumulate(5, 9, D("a"))
    assert runs(merge([one, two])) == [(0, 9, D("a"))]
    assert merge([one, two]).run_count == 1


def test_same_kind_different_payload_never_merges() -> None:
    k = KnowledgeStream().accumulate(0, 4, D("a")).accumulate(5, 9, D("b"))
    assert runs(k) == [(0, 4, D("a")), (5, 9, D("b"))]
    k2 = k.forget(4, 5).accumulate(4, 4, D("a")).accumulate(5, 5, D("b"))
    assert runs(k2) == [(0, 4, D("a")), (5, 9, D("b"))]
    k3 = k.forget(5, 9).accumulate(5, 9, D("b"))
    assert runs(k3) == [(0, 4, D("a")), (5, 9, D("b"))]


def test_lowering_unpickled_runs() -> None:
    """After pickling, L and F are fresh objects equal to the singletons."""
    k = KnowledgeStream().accumulate(0, 4, L).accumulate(5, 9, D("a")).accumulate(10, 12, L)
    copy = pickle.loads(pickle.dumps(k))
    assert copy.release(0, 4) is copy
    assert runs(copy.release(0, 12)) == [(0, 12, L)]
    s = pickle.loads(pickle.dumps(KnowledgeStream().accumulate(0, 4, S).accumulate(5, 9, F)))
    assert runs(s.finalize(0, 9)) == [(0, 9, F)]
    assert s.finalize(0, 9).final_prefix == 10


def test_equality_identity_and_hashes() -> None:
    k = KnowledgeStream().accumulate(0, 4, S)
    assert k == k  # the identity shortcut of __eq__
    variants = [
        KnowledgeStream(),
        k,
        k.accumulate(5, 5, D(1)),
        KnowledgeStream().accumulate(0, 4, F),
        KnowledgeStream().accumulate(1, 4, F),
    ]
    assert len({hash(x) for x in variants}) == len(variants)
    p = PairedStream(k)
    q = p.accumulate_curiosity(10, 10, C)
    assert p != q
    assert p.knowledge == q.knowledge
    assert len({hash(p), hash(q), hash(PairedStream())}) == 3


def test_repr_of_several_runs() -> None:
    k = KnowledgeStream().accumulate(3, 4, S).accumulate(7, 9, D("a"))
    assert repr(k) == "KnowledgeStream([0..2]=Q, [3..4]=S, [5..6]=Q, [7..9]=D('a'), [10..]=Q)"


# -- the GD doubt horizon walks both run lists ---------------------------------------------------


def released_then_partly_forgotten() -> PairedStream:
    """(L, A) on [0, 4] (released), (L, N) on [5, 9] (lost but not acked), Q beyond."""
    p = PairedStream().accumulate_knowledge(0, 9, F).release(0, 9)
    return p.forget(5, 9).accumulate_knowledge(5, 9, L)


def test_gd_horizon_stops_at_a_curiosity_boundary_inside_a_knowledge_run() -> None:
    p = released_then_partly_forgotten()
    assert [p.value_at(t) for t in (0, 4, 5, 9, 10)] == [(L, A), (L, A), (L, N), (L, N), (Q, N)]
    assert p.doubt_horizon_gd() == 5
    assert p.doubt_horizon_dur(-1) == 9


def test_gd_horizon_passes_d_ticks_whatever_their_curiosity() -> None:
    p = PairedStream().accumulate_knowledge(0, 9, D("a")).accumulate_curiosity(3, 5, C)
    assert p.doubt_horizon_gd() == 10
    p = p.accumulate_knowledge(12, 12, D("b")).accumulate_curiosity(11, 11, C)
    assert p.doubt_horizon_gd() == 10
    p = p.accumulate_knowledge(10, 11, S)
    assert p.doubt_horizon_gd() == 13
    # Curiosity runs longer than the knowledge runs, and the other way round.
    q = PairedStream().accumulate_curiosity(0, 3, A).accumulate_knowledge(4, 20, D("z"))
    assert q.accumulate_curiosity(4, 30, C).doubt_horizon_gd() == 21
    assert q.accumulate_curiosity(0, 25, A).doubt_horizon_gd() == 26


# -- splicing: where a window meets the runs around it ------------------------------------------


def test_window_end_inside_a_run() -> None:
    k = KnowledgeStream().accumulate(0, 4, S).accumulate(5, 9, F)
    # The window ends inside the F run: its tail continues the window's last value ...
    assert runs(k.finalize(3, 7)) == [(0, 2, S), (3, 9, F)]
    # ... or starts a run of its own.
    assert runs(k.release(3, 7)) == [(0, 2, S), (3, 7, L), (8, 9, F)]
    assert runs(k.release(0, 7)) == [(0, 7, L), (8, 9, F)]


def test_window_before_a_run_of_the_same_kind() -> None:
    k = KnowledgeStream().accumulate(5, 9, D("b"))
    assert runs(k.accumulate(0, 4, D("a"))) == [(0, 4, D("a")), (5, 9, D("b"))]
    assert runs(k.accumulate(0, 4, D("b"))) == [(0, 9, D("b"))]


def test_pair_edits_merge_with_the_runs_around_them() -> None:
    # The new curiosity run continues the one before it (at run index 1 and 2).
    p = PairedStream().accumulate_curiosity(0, 4, C).accumulate_curiosity(5, 9, C)
    assert runs(p.curiosity) == [(0, 9, C)]
    p = PairedStream().accumulate_curiosity(2, 4, C).accumulate_curiosity(5, 9, C)
    assert runs(p.curiosity) == [(0, 1, N), (2, 9, C)]
    p = PairedStream().accumulate_knowledge(2, 4, D("a")).accumulate_knowledge(5, 9, D("a"))
    assert runs(p.knowledge) == [(0, 1, Q), (2, 9, D("a"))]
    # Several new segments with one value become one run.
    p = PairedStream().accumulate_curiosity(3, 3, C).accumulate_knowledge(0, 9, L)
    assert runs(p.knowledge) == [(0, 9, L)]
    assert runs(p.curiosity) == [(0, 2, N), (3, 3, C)]
    # Linked F at the front joins the prefix and the F run after it.
    p = PairedStream().accumulate_knowledge(5, 9, F).accumulate_curiosity(0, 4, A)
    assert p.final_prefix == 10
    assert (p.knowledge.run_count, p.curiosity.run_count) == (0, 0)
