"""Fast paths of the stream and tick-set types that the random operation sequences of
``test_stream_differential.py`` and ``test_ticksets.py`` do not enter, judged by the same
references (``make coverage-laws`` lists what no generated case reaches).

* A :class:`~gapless.impl.streams.PairedStream` built from two given streams is their closure
  under the linkage [GD §2.1.1] — including a window that lies wholly in the final prefix,
  which the run-list core cuts without a scan, and runs after the window that merge with it.
* A window the linkage closes that ends exactly where an equal run starts merges with it.
* The paired view's own queries (``extent``, ``next_gap``) agree with the reference, and its
  doubt horizon walks curiosity runs that end inside a D run.
* Lattice values equal to the stored ones but not the same objects (a ``Knowledge(Kind.L)``
  built afresh): the run-list core keeps the stored object and reports no change.
* ``ticksets.is_canonical`` rejects a malformed run.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_stream_differential import (
    COARSE,
    KNOWLEDGE_VALUES,
    QUERY,
    Blocks,
    _join,
    _ref_c,
    _ref_k,
    apply_k,
    block_sizes,
    check_pair,
    check_stream,
    curiosity_values,
    k_ops,
    ranges,
    snapshot,
)

from gapless.impl import ticksets as ts
from gapless.impl.curiosity import A, C, Curiosity, N, forget_curiosity, link
from gapless.impl.knowledge import D, F, Knowledge
from gapless.impl.streams import CuriosityStream, KnowledgeStream, PairedStream
from gapless.spec.reference_stream import ReferencePair, ReferenceStream

c_ops = st.one_of(
    st.tuples(st.just("accumulate"), ranges(), curiosity_values),
    st.tuples(st.just("forget_curious"), ranges()),
)


def apply_c(
    c: CuriosityStream, ref: ReferenceStream[Curiosity], op: tuple[Any, ...], blk: Blocks
) -> tuple[CuriosityStream, ReferenceStream[Curiosity]]:
    a, b = op[1]
    lo, hi = blk.first(a), blk.last(b)
    if op[0] == "accumulate":
        return c.accumulate(lo, hi, op[2]), ref.accumulate(a, b, op[2], _join)
    return c.forget_curious(lo, hi), ref.lower(a, b, forget_curiosity)


def check_closure(
    k: KnowledgeStream,
    rk: ReferenceStream[Knowledge],
    c: CuriosityStream,
    rc: ReferenceStream[Curiosity],
    blk: Blocks,
) -> None:
    pair = PairedStream(knowledge=k, curiosity=c)
    ref = ReferencePair(rk, rc, link)
    check_pair(pair, ref, blk)
    want_extent = max(ref.knowledge.extent(), ref.curiosity.extent())
    assert pair.extent == blk.first(want_extent)
    for t in range(QUERY):
        g0, g1 = ref.knowledge.next_gap(t)
        assert pair.next_gap(blk.first(t)) == (
            blk.first(g0),
            None if g1 is None else blk.last(g1),
        )


@given(
    sizes=block_sizes,
    kops=st.lists(k_ops, max_size=8),
    cops=st.lists(c_ops, max_size=8),
)
def test_a_pair_of_given_streams_is_their_closure(
    sizes: list[int], kops: list[Any], cops: list[Any]
) -> None:
    blk = Blocks(sizes)
    k, rk = KnowledgeStream(), _ref_k()
    for op in kops:
        k, rk = apply_k(k, rk, op, blk)
    c, rc = CuriosityStream(), _ref_c()
    for op in cops:
        c, rc = apply_c(c, rc, op, blk)
    check_closure(k, rk, c, rc, blk)


@given(
    sizes=block_sizes,
    fin=st.integers(0, COARSE - 1),
    cops=st.lists(c_ops, max_size=4),
)
def test_a_pair_whose_knowledge_is_one_final_prefix_is_its_closure(
    sizes: list[int], fin: int, cops: list[Any]
) -> None:
    """The closure window can lie wholly inside the knowledge's final prefix (every tick F):
    the run-list core returns that window as one run without looking at the runs."""
    blk = Blocks(sizes)
    k = KnowledgeStream().accumulate(0, blk.last(fin), F)
    rk = _ref_k().accumulate(0, fin, F, _join)
    c, rc = CuriosityStream(), _ref_c()
    for op in cops:
        c, rc = apply_c(c, rc, op, blk)
    check_closure(k, rk, c, rc, blk)


#: Every knowledge value, as a new object equal to the module's constant.
fresh_values = st.sampled_from(KNOWLEDGE_VALUES).map(lambda v: Knowledge(v.kind, v.payload))
fresh_k_ops = st.one_of(
    st.tuples(st.just("accumulate"), ranges(), fresh_values),
    st.tuples(st.just("finalize"), ranges()),
    st.tuples(st.just("release"), ranges()),
    st.tuples(st.just("forget"), ranges()),
)


@given(sizes=block_sizes, ops=st.lists(fresh_k_ops, max_size=12))
def test_equal_values_that_are_other_objects_change_nothing(
    sizes: list[int], ops: list[Any]
) -> None:
    blk = Blocks(sizes)
    impl, ref = KnowledgeStream(), _ref_k()
    history = [(impl, snapshot(impl))]
    for op in ops:
        new_impl, new_ref = apply_k(impl, ref, op, blk)
        check_stream(new_impl, new_ref, blk, knowledge=True)
        if new_ref == ref:
            assert new_impl is impl, f"no-op {op!r} must return the same object"
        impl, ref = new_impl, new_ref
        history.append((impl, snapshot(impl)))
    for old, snap in history:
        assert snapshot(old) == snap


@given(
    sizes=block_sizes,
    d=ranges(),
    c=ranges(),
    value=st.sampled_from([C, N]),
    fin=st.integers(-1, COARSE - 1),
)
def test_the_doubt_horizon_walks_curiosity_runs_inside_a_d_run(
    sizes: list[int], d: tuple[int, int], c: tuple[int, int], value: Curiosity, fin: int
) -> None:
    blk = Blocks(sizes)
    pair = PairedStream()
    ref = ReferencePair(_ref_k(), _ref_c(), link)
    if fin >= 0:
        pair = pair.accumulate_knowledge(0, blk.last(fin), F)
        ref = ref.accumulate_knowledge(0, fin, F, _join)
    pair = pair.accumulate_knowledge(blk.first(d[0]), blk.last(d[1]), D("a"))
    ref = ref.accumulate_knowledge(d[0], d[1], D("a"), _join)
    pair = pair.accumulate_curiosity(blk.first(c[0]), blk.last(c[1]), value)
    ref = ref.accumulate_curiosity(c[0], c[1], value, _join)
    check_pair(pair, ref, blk)


@st.composite
def abutting(draw: st.DrawFn) -> tuple[int, int, int, int]:
    """``d < a <= f0 - 1 < f0 <= f1``: a D tick, an A window, then an F run right after it."""
    f0 = draw(st.integers(2, COARSE - 2))
    f1 = draw(st.integers(f0, COARSE - 1))
    a = draw(st.integers(1, f0 - 1))
    d = draw(st.integers(0, a - 1))
    return d, a, f0, f1


@given(sizes=block_sizes, where=abutting())
def test_a_closed_window_merges_with_the_equal_run_after_it(
    sizes: list[int], where: tuple[int, int, int, int]
) -> None:
    d, a, f0, f1 = where
    blk = Blocks(sizes)
    pair = PairedStream().accumulate_knowledge(blk.first(f0), blk.last(f1), F)
    ref = ReferencePair(_ref_k(), _ref_c(), link).accumulate_knowledge(f0, f1, F, _join)
    pair = pair.accumulate_knowledge(blk.first(d), blk.last(d), D("a"))
    ref = ref.accumulate_knowledge(d, d, D("a"), _join)
    pair = pair.accumulate_curiosity(blk.first(a), blk.last(f0 - 1), A)
    ref = ref.accumulate_curiosity(a, f0 - 1, A, _join)
    check_pair(pair, ref, blk)


def test_is_canonical_rejects_malformed_runs() -> None:
    assert not ts.is_canonical(((1, 2), (4,)))
    assert not ts.is_canonical(((1, 2), [4, 5]))
    assert not ts.is_canonical([(1, 2)])
    assert not ts.is_canonical(((-1, 2),))
    assert ts.is_canonical(((0, 2), (4, 4)))
