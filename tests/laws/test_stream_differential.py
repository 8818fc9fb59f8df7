"""Differential tests: ``gapless.impl.streams`` against the per-tick reference of
``gapless.spec.reference_stream`` (STYLE.md, "Oracles").

Random operation sequences run on both; after every step every query is compared, every old
version is re-checked (it must never change), and a no-op must return the very same object.

Huge ranges: each reference tick ``c`` stands for a *block* of real ticks ``[B[c], B[c+1])``
whose size is drawn from {1, 2, 10^9}. Every impl operation covers whole blocks, so the impl
stream is exactly the reference blown up block by block -- single ticks and 10^9-tick ranges in
one stream, checked against a plain dict.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import accumulate as running_sum
from itertools import pairwise
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from gapless.impl import ticksets as R
from gapless.impl.curiosity import A, C, Curiosity, N, forget_curiosity, link, upstream
from gapless.impl.knowledge import (
    DSTAR,
    D,
    E,
    F,
    Kind,
    Knowledge,
    L,
    Q,
    S,
    finalize,
    release,
)
from gapless.impl.streams import (
    CuriosityStream,
    KnowledgeStream,
    PairedStream,
    merge,
    upstream_curiosity,
)
from gapless.impl.transfer import filter_value, merge_values
from gapless.invariants.gd.forms import run_stream_problem
from gapless.spec.reference_stream import ReferencePair, ReferenceStream, reference_merge

COARSE = 20  # reference ticks an operation may touch
QUERY = COARSE + 3  # reference ticks queried (past every run)
HUGE = 10**9

KNOWLEDGE_VALUES = [Q, L, F, S, E, D("a"), D("b"), DSTAR("a"), DSTAR("b")]
CURIOSITY_VALUES = [N, C, A]

knowledge_values = st.sampled_from(KNOWLEDGE_VALUES) | st.sampled_from([F, F, D("a"), D("b")])
curiosity_values = st.sampled_from(CURIOSITY_VALUES)
block_sizes = st.lists(st.sampled_from([1, 1, 1, 2, HUGE]), min_size=QUERY + 2, max_size=QUERY + 2)


@st.composite
def ranges(draw: st.DrawFn) -> tuple[int, int]:
    a = draw(st.integers(0, COARSE - 1))
    length = draw(st.integers(0, 5) | st.integers(0, COARSE))
    return a, min(a + length, COARSE - 1)


def _join(x: Any, y: Any) -> Any:
    return x.join(y)


def _ref_k() -> ReferenceStream[Knowledge]:
    return ReferenceStream(bottom=Q, final=F)


def _ref_c() -> ReferenceStream[Curiosity]:
    return ReferenceStream(bottom=N, final=A)


def _matches_a(payload: Hashable) -> bool:
    return payload == "a"


PREDICATES: list[Callable[[Hashable], bool]] = [_matches_a, lambda _p: True, lambda _p: False]


# -- comparing one impl stream with one reference stream ------------------------------------


class Blocks:
    """The map from reference ticks to blocks of real ticks."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.b = [0, *running_sum(sizes)]
        self.index = {t: c for c, t in enumerate(self.b)}

    def first(self, c: int) -> int:
        return self.b[c]

    def last(self, c: int) -> int:
        return self.b[c + 1] - 1

    def coarse_runs(self, runs: Any) -> list[tuple[int, int, Any]]:
        out = []
        for r in runs:
            assert r.start in self.index, f"run {r} does not start on a block boundary"
            assert r.end + 1 in self.index, f"run {r} does not end on a block boundary"
            out.append((self.index[r.start], self.index[r.end + 1] - 1, r.value))
        return out


def check_stream(impl: Any, ref: ReferenceStream[Any], blk: Blocks, *, knowledge: bool) -> None:
    for c in range(QUERY):
        want = ref.value(c)
        assert impl.value_at(blk.first(c)) == want, f"tick {blk.first(c)} (block {c})"
        assert impl.value_at(blk.last(c)) == want, f"tick {blk.last(c)} (block {c})"
    runs = list(impl.runs())
    assert blk.coarse_runs(runs) == ref.runs()
    for x, y in pairwise(runs):
        assert x.value != y.value, "adjacent runs must differ (canonical form)"
        assert x.end + 1 == y.start, "runs must be contiguous"
    assert run_stream_problem(impl) is None, "canonical_state's form check agrees"
    assert impl.final_prefix == blk.first(ref.final_prefix())
    assert impl.extent == blk.first(ref.extent())
    assert impl.run_count == len(runs) - (1 if impl.final_prefix else 0)
    if knowledge:
        for c in range(QUERY):
            g0, g1 = ref.next_gap(c)
            assert impl.next_gap(blk.first(c)) == (
                blk.first(g0),
                None if g1 is None else blk.last(g1),
            )
        for ld in range(-1, QUERY):
            tick = -1 if ld < 0 else blk.last(ld)
            assert impl.doubt_horizon_dur(tick) == blk.last(ref.doubt_horizon_dur(ld))


def gd_settled(k: Knowledge, c: Curiosity) -> bool:
    """[GD §2.3]: a tick below the doubt horizon is acked or holds D."""
    return c == A or k.kind is Kind.D


def check_pair(impl: PairedStream, ref: ReferencePair[Knowledge, Curiosity], blk: Blocks) -> None:
    check_stream(impl.knowledge, ref.knowledge, blk, knowledge=True)
    check_stream(impl.curiosity, ref.curiosity, blk, knowledge=False)
    assert impl.final_prefix == blk.first(ref.final_prefix())
    assert impl.doubt_horizon_gd() == blk.first(ref.doubt_horizon_gd(gd_settled))
    # How the two doubt horizons relate (impl/streams/__init__.py, "Doubt horizons").
    gd = impl.doubt_horizon_gd()
    for ld in range(-1, QUERY):
        if not all(gd_settled(*ref.value(t)) for t in range(ld + 1)):
            break
        dur = impl.doubt_horizon_dur(-1 if ld < 0 else blk.last(ld))
        h = ref.knowledge.doubt_horizon_dur(ld)
        unacked_l = any(ref.value(t)[0] == L and ref.value(t)[1] != A for t in range(ld + 1, h + 1))
        assert gd <= dur + 1
        assert (gd == dur + 1) == (not unacked_l), f"ld={ld}: gd={gd} dur={dur}"
    for c in range(QUERY):
        assert impl.value_at(blk.first(c)) == ref.value(c)
        k, cur = ref.value(c)
        # The linkage: knowledge at or above F is always acked [GD §2.1.1].
        if F.leq(k):
            assert cur == A, f"tick {c}: {k!r} with {cur!r} breaks F => A"


def snapshot(impl: Any) -> tuple[Any, ...]:
    return (tuple(impl.runs()), impl.final_prefix, impl.extent)


# -- knowledge streams ----------------------------------------------------------------------

k_ops = st.one_of(
    st.tuples(st.just("accumulate"), ranges(), knowledge_values),
    st.tuples(st.just("forget"), ranges()),
    st.tuples(st.just("finalize"), ranges()),
    st.tuples(st.just("release"), ranges()),
    st.tuples(st.just("message"), st.integers(1, COARSE - 1), st.sampled_from(["a", "b"])),
    st.tuples(st.just("acknowledge"), st.integers(0, COARSE - 1)),
    st.tuples(st.just("fill_gap"), st.integers(0, 3), knowledge_values),
    st.tuples(st.just("append"), st.integers(0, 3), st.integers(0, 3), knowledge_values),
    st.tuples(st.just("fill"), st.integers(0, COARSE - 1), st.booleans(), knowledge_values),
    st.tuples(
        st.just("in_order"), st.integers(0, 2), st.sampled_from(["a", "b"]), st.integers(0, 1)
    ),
)


def apply_k(
    impl: KnowledgeStream, ref: ReferenceStream[Knowledge], op: tuple[Any, ...], blk: Blocks
) -> tuple[KnowledgeStream, ReferenceStream[Knowledge]]:
    name = op[0]
    if name in ("acknowledge", "append", "in_order", "fill_gap", "fill"):
        return apply_role_op(impl, ref, op, blk)
    if name == "message":
        # A GD §3.1 data message: F over [0, t-1], D(a) at t; then the automatic lowering.
        t, payload = op[1], op[2]
        impl = impl.accumulate(0, blk.last(t - 1), F).finalize(0, blk.last(t - 1))
        impl = impl.accumulate(blk.first(t), blk.last(t), D(payload))
        ref = ref.accumulate(0, t - 1, F, _join).lower(0, t - 1, finalize)
        return impl, ref.accumulate(t, t, D(payload), _join)
    a, b = op[1]
    lo, hi = blk.first(a), blk.last(b)
    if name == "accumulate":
        return impl.accumulate(lo, hi, op[2]), ref.accumulate(a, b, op[2], _join)
    if name == "forget":
        return impl.forget(lo, hi), ref.lower(a, b, lambda _x: Q)
    if name == "finalize":
        return impl.finalize(lo, hi), ref.lower(a, b, finalize)
    assert name == "release"
    return impl.release(lo, hi), ref.lower(a, b, release)


def apply_role_op(
    impl: KnowledgeStream, ref: ReferenceStream[Knowledge], op: tuple[Any, ...], blk: Blocks
) -> tuple[KnowledgeStream, ReferenceStream[Knowledge]]:
    """The operations the GD roles perform on their knowledge [GD §2.1, §2.2, §3.1]."""
    name = op[0]
    if name == "acknowledge":
        t = op[1]
        return impl.acknowledge(blk.last(t)), ref.acknowledge(t, _join, finalize)
    ext = ref.extent()
    if name == "fill_gap":
        # join a value into exactly one run of Q ticks below the extent (a pubend's pending
        # tick between silences [GD §2.2]: the one-run shortcut)
        gaps = [(a, b) for a, b, x in ref.runs() if x == Q]
        if not gaps:
            return impl, ref
        a, b = gaps[op[1] % len(gaps)]
        return impl.accumulate(blk.first(a), blk.last(b), op[2]), ref.accumulate(a, b, op[2], _join)
    if name == "fill":
        # one tick takes a value if it is Q (a pubend's logged message landing on its pending
        # tick [GD §2.2]), else nothing changes; only one-tick blocks, so the impl stays the
        # reference blown up. With op[2], a Q tick is chosen when there is one.
        single = [c for c in range(COARSE) if blk.first(c) == blk.last(c)]
        pool = [c for c in single if ref.value(c) == Q] if op[2] else []
        pool = pool or single
        if not pool:
            return impl, ref
        c = pool[op[1] % len(pool)]
        want = ref.accumulate(c, c, op[3], _join) if ref.value(c) == Q else ref
        return impl.fill(blk.first(c), op[3]), want
    if name == "append":
        # accumulate in the bottom tail (the tail-append shortcut), right at the extent or
        # past it; ranges beyond the reference ticks are not drawn
        a = min(ext + op[1], COARSE - 1)
        b = min(a + op[2], COARSE - 1)
        if a < ext:
            return impl, ref
        return impl.append(blk.first(a), blk.last(b), op[3]), ref.accumulate(a, b, op[3], _join)
    # "in_order": a pubend's next message [GD §2.2] -- silence up to it, then D(a), both
    # appended; with op[3], the acknowledged prefix then reaches the message.
    t = min(ext + op[1], COARSE - 1)
    if t < ext:
        return impl, ref
    if t > ext:
        impl = impl.append(blk.first(ext), blk.last(t - 1), F)
        ref = ref.accumulate(ext, t - 1, F, _join)
    impl = impl.append(blk.first(t), blk.last(t), D(op[2]))
    ref = ref.accumulate(t, t, D(op[2]), _join)
    if op[3]:
        impl, ref = impl.acknowledge(blk.last(t)), ref.acknowledge(t, _join, finalize)
    return impl, ref


def _payload(x: Knowledge) -> object | None:
    return x.payload if x.is_data else None


def _coarse_set(blk: Blocks, ticks: set[int]) -> R.TickSet:
    return R.normalize((blk.first(c), blk.last(c)) for c in ticks)


def check_role_queries(impl: KnowledgeStream, ref: ReferenceStream[Knowledge], blk: Blocks) -> None:
    """The queries the GD roles make, against the reference [GD §2.1, §2.3, §3.1]."""
    assert impl.fin == impl.final_prefix - 1
    assert impl.highest == blk.first(ref.extent()) - 1
    top = QUERY - 1
    for c in range(QUERY):
        want = ref.payload_at(c, _payload)
        assert impl.payload_at(blk.first(c)) == want
        assert impl.payload_at(blk.last(c)) == want
        end = ref.final_run_end(c)
        assert impl.final_run_end(blk.first(c)) == (None if end is None else blk.last(end))
    for lo in range(QUERY):
        for hi in {lo, min(lo + 3, top), top}:
            a, b = blk.first(lo), blk.last(hi)
            assert impl.finals(a, b) == _coarse_set(blk, ref.where(lo, hi, _is_final))
            assert impl.known(a, b) == _coarse_set(blk, ref.where(lo, hi, _not_bottom))
            assert impl.gaps(a, b) == _coarse_set(blk, ref.where(lo, hi, _is_bottom))
            got = []
            for first, last, x in impl.data(a, b):
                got += [(c, x) for c in range(blk.index[first], blk.index[last + 1])]
            assert got == ref.data(lo, hi, _payload)
            assert impl.has_data(a, b) == bool(got)
        assert impl.has_data(blk.first(lo)) == bool(impl.data(blk.first(lo)))
        assert impl.finals(blk.first(lo)) == impl.finals(blk.first(lo), blk.last(top))
        assert impl.known(blk.first(lo)) == impl.known(blk.first(lo), blk.last(top))
    assert impl.data() == impl.data(0, blk.last(top))


def _is_final(x: Knowledge) -> bool:
    return x == F


def _is_bottom(x: Knowledge) -> bool:
    return x == Q


def _not_bottom(x: Knowledge) -> bool:
    return x != Q


@given(sizes=block_sizes, ops=st.lists(k_ops, max_size=14))
def test_knowledge_stream_matches_reference(sizes: list[int], ops: list[Any]) -> None:
    blk = Blocks(sizes)
    impl, ref = KnowledgeStream(), _ref_k()
    check_stream(impl, ref, blk, knowledge=True)
    history = [(impl, ref, snapshot(impl))]
    for op in ops:
        note(f"op {op!r}")
        new_impl, new_ref = apply_k(impl, ref, op, blk)
        note(f"-> {new_impl!r}")
        check_stream(new_impl, new_ref, blk, knowledge=True)
        check_role_queries(new_impl, new_ref, blk)
        if new_ref == ref:
            assert new_impl is impl, f"no-op {op!r} must return the same object"
        else:
            assert new_impl != impl
        impl, ref = new_impl, new_ref
        history.append((impl, ref, snapshot(impl)))
        for old, _old_ref, snap in history:
            assert snapshot(old) == snap, "an old version changed"
    # Transfer functions of whole streams [GD §2.4].
    for pred in PREDICATES:
        check_stream(
            impl.filtered(pred),
            ref.mapped(lambda x, p=pred: filter_value(x, p)),
            blk,
            knowledge=True,
        )
    others = [
        history[len(history) // 2],
        history[0],
        history[-2] if len(history) > 1 else history[0],
    ]
    ins = [impl, *(h[0] for h in others)]
    refs = [ref, *(h[1] for h in others)]
    for n in range(1, len(ins) + 1):
        check_stream(merge(ins[:n]), reference_merge(refs[:n], merge_values), blk, knowledge=True)


# -- curiosity streams ----------------------------------------------------------------------

c_ops = st.one_of(
    st.tuples(st.just("accumulate"), ranges(), curiosity_values),
    st.tuples(st.just("forget"), ranges()),
    st.tuples(st.just("forget_curious"), ranges()),
)


@given(sizes=block_sizes, ops=st.lists(c_ops, max_size=14))
def test_curiosity_stream_matches_reference(sizes: list[int], ops: list[Any]) -> None:
    blk = Blocks(sizes)
    impl, ref = CuriosityStream(), _ref_c()
    history = [(impl, ref, snapshot(impl))]
    for op in ops:
        a, b = op[1]
        lo, hi = blk.first(a), blk.last(b)
        if op[0] == "accumulate":
            new_impl, new_ref = impl.accumulate(lo, hi, op[2]), ref.accumulate(a, b, op[2], _join)
        elif op[0] == "forget":
            new_impl, new_ref = impl.forget(lo, hi), ref.lower(a, b, lambda _y: N)
        else:
            new_impl, new_ref = impl.forget_curious(lo, hi), ref.lower(a, b, forget_curiosity)
        check_stream(new_impl, new_ref, blk, knowledge=False)
        if new_ref == ref:
            assert new_impl is impl
        impl, ref = new_impl, new_ref
        history.append((impl, ref, snapshot(impl)))
        for old, _r, snap in history:
            assert snapshot(old) == snap
    ins = [impl, *(h[0] for h in history[:3])]
    refs = [ref, *(h[1] for h in history[:3])]
    for n in range(1, len(ins) + 1):
        check_stream(
            upstream_curiosity(ins[:n]), reference_merge(refs[:n], upstream), blk, knowledge=False
        )


# -- the paired view ------------------------------------------------------------------------

p_ops = st.one_of(
    st.tuples(st.just("accumulate_knowledge"), ranges(), knowledge_values),
    st.tuples(st.just("accumulate_curiosity"), ranges(), curiosity_values),
    st.tuples(st.just("ack"), st.integers(0, COARSE - 1)),
    st.tuples(st.just("forget"), ranges()),
    st.tuples(st.just("forget_curious"), ranges()),
    st.tuples(st.just("finalize"), ranges()),
    st.tuples(st.just("release"), ranges()),
)


def apply_p(
    impl: PairedStream, ref: ReferencePair[Knowledge, Curiosity], op: tuple[Any, ...], blk: Blocks
) -> tuple[PairedStream, ReferencePair[Knowledge, Curiosity]]:
    name = op[0]
    if name == "ack":  # GD §3.1: an ack message with timestamp T makes [0, T] A
        t = op[1]
        return (
            impl.accumulate_curiosity(0, blk.last(t), A),
            ref.accumulate_curiosity(0, t, A, _join),
        )
    a, b = op[1]
    lo, hi = blk.first(a), blk.last(b)
    if name == "accumulate_knowledge":
        return (
            impl.accumulate_knowledge(lo, hi, op[2]),
            ref.accumulate_knowledge(a, b, op[2], _join),
        )
    if name == "accumulate_curiosity":
        return (
            impl.accumulate_curiosity(lo, hi, op[2]),
            ref.accumulate_curiosity(a, b, op[2], _join),
        )
    if name == "forget":
        return impl.forget(lo, hi), ref.forget(a, b)
    if name == "forget_curious":
        return impl.forget_curious(lo, hi), ref.lower_curiosity(a, b, forget_curiosity)
    if name == "finalize":
        return impl.finalize(lo, hi), ref.lower_knowledge(a, b, finalize)
    assert name == "release"
    return impl.release(lo, hi), ref.lower_knowledge(a, b, release)


@given(sizes=block_sizes, ops=st.lists(p_ops, max_size=14))
def test_paired_stream_matches_reference(sizes: list[int], ops: list[Any]) -> None:
    blk = Blocks(sizes)
    impl = PairedStream()
    ref = ReferencePair(_ref_k(), _ref_c(), link)
    check_pair(impl, ref, blk)
    history = [(impl, snapshot(impl.knowledge), snapshot(impl.curiosity))]
    for op in ops:
        note(f"op {op!r}")
        new_impl, new_ref = apply_p(impl, ref, op, blk)
        note(f"-> {new_impl!r}")
        check_pair(new_impl, new_ref, blk)
        if new_ref == ref:
            assert new_impl is impl, f"no-op {op!r} must return the same object"
        # Structural sharing: an unchanged half is the very same object.
        if new_ref.knowledge == ref.knowledge:
            assert new_impl.knowledge is impl.knowledge
        if new_ref.curiosity == ref.curiosity:
            assert new_impl.curiosity is impl.curiosity
        impl, ref = new_impl, new_ref
        history.append((impl, snapshot(impl.knowledge), snapshot(impl.curiosity)))
        for old, sk, sc in history:
            assert snapshot(old.knowledge) == sk
            assert snapshot(old.curiosity) == sc


@given(
    sizes=block_sizes,
    k_runs=st.lists(st.tuples(ranges(), knowledge_values), max_size=6),
    c_runs=st.lists(st.tuples(ranges(), curiosity_values), max_size=6),
)
def test_paired_constructor_is_the_closure(
    sizes: list[int], k_runs: list[Any], c_runs: list[Any]
) -> None:
    """``PairedStream(k, c)`` closes every tick under the linkage, like the reference."""
    blk = Blocks(sizes)
    k, rk = KnowledgeStream(), _ref_k()
    for (a, b), x in k_runs:
        k, rk = k.accumulate(blk.first(a), blk.last(b), x), rk.accumulate(a, b, x, _join)
    c, rc = CuriosityStream(), _ref_c()
    for (a, b), y in c_runs:
        c, rc = c.accumulate(blk.first(a), blk.last(b), y), rc.accumulate(a, b, y, _join)
    check_pair(PairedStream(k, c), ReferencePair(rk, rc, link), blk)


build_ops = st.lists(st.tuples(st.just("accumulate"), ranges(), knowledge_values), max_size=8)


@given(sizes=block_sizes, ops=build_ops)
def test_acknowledge_everywhere_matches_reference(sizes: list[int], ops: list[Any]) -> None:
    """The acknowledged prefix [GD §2.1.1] grown to every block end of a random stream: each
    shortcut of :meth:`KnowledgeStream.acknowledge` (in the tail, inside a run, where the next
    run is F, past an E) against ``finalize(F ⊔ x)`` per tick."""
    blk = Blocks(sizes)
    impl, ref = KnowledgeStream(), _ref_k()
    for op in ops:
        impl, ref = apply_k(impl, ref, op, blk)
    for t in range(QUERY):
        got = impl.acknowledge(blk.last(t))
        want = ref.acknowledge(t, _join, finalize)
        check_stream(got, want, blk, knowledge=True)
        if want == ref:
            assert got is impl, "an acknowledgement that changes nothing returns the stream"
