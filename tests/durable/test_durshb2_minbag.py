"""The SHB's incremental ``released(p)``: :class:`~gapless.impl.durable.minbag.MinBag` against a
plain list, and the containers of :mod:`gapless.impl.durable.bigmap` against dicts and lists
[DUR §4.1]. The release core's use of them is checked step by step in
``tests/durable/test_release_differential.py`` (``incremental_minimum_is_the_scan``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.durable import release as rl
from gapless.impl.durable.bigmap import ChunkedVector, ShardedMap
from gapless.impl.durable.minbag import MinBag
from gapless.impl.errors import ProtocolMisuse

OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "replace"]), st.integers(-2, 12), st.integers(-2, 12)
    ),
    max_size=60,
)


@given(OPS)
def test_minbag_is_a_multiset_with_its_minimum(ops: list[tuple[str, int, int]]) -> None:
    """Every version keeps its own contents (persistence): old bags are re-checked at the end."""
    bag, ref = MinBag.of([]), []
    history = [(bag, list(ref))]
    for op, a, b in ops:
        if op == "add":
            bag, ref = bag.add(a), [*ref, a]
        elif a in ref:
            bag = bag.remove(a) if op == "remove" else bag.replace(a, b)
            ref = list(ref)
            ref.remove(a)
            if op == "replace":
                ref.append(b)
        else:
            with pytest.raises(ProtocolMisuse):
                bag.remove(a)
            continue
        assert bag.min() == (min(ref) if ref else None)
        assert len(bag) == len(ref)
        history.append((bag, list(ref)))
    for old, contents in history:
        assert old.min() == (min(contents) if contents else None)
        assert old == MinBag.of(contents)


def test_minbag_keeps_the_root_live() -> None:
    """A value removed below the root stays in the heap, dead, until it surfaces."""
    bag = MinBag.of([1, 2, 3]).remove(2)
    assert bag.min() == 1
    bag = bag.remove(1)
    assert bag.min() == 3  # the dead 2 was dropped on the way
    assert bag.add(2).min() == 2


def test_a_released_scan_twin_is_what_the_bag_replaces() -> None:
    """Non-vacuity of ``incremental_minimum_is_the_scan``: a bag left stale by a step that
    forgot it (an ack that does not update it) disagrees with the scan."""
    b, _ = rl.shb_join(rl.ShbRelease(shb="b", pubend="p"), "s")
    b = rl.shb_delivered(b, 5)
    b, _ = rl.shb_acknowledge(b, "s", 4)
    assert b.released() == 4
    stale = rl.ShbRelease(
        shb="b", pubend="p", latest_delivered=5, records=b.records, active=MinBag.of([-1])
    )
    assert stale.released() != min(r.released for r in stale.records.values())


@given(st.lists(st.tuples(st.text(max_size=3), st.integers()), max_size=200), st.data())
def test_sharded_map_is_a_mapping(pairs: list[tuple[str, int]], data: st.DataObject) -> None:
    m: ShardedMap[str, int] = ShardedMap.of(())
    ref: dict[str, int] = {}
    for k, v in pairs:
        m, ref[k] = m.set(k, v), v
    assert m == ref
    assert len(m) == len(ref)
    assert dict(m.items()) == ref
    if ref:
        k = data.draw(st.sampled_from(sorted(ref)))
        smaller = m.remove(k)
        assert k not in smaller
        assert k in m  # the old version is intact
        assert smaller.discard("\x00never") is smaller
        assert len(smaller) == len(ref) - 1
        with pytest.raises(KeyError):
            smaller.remove(k)


@given(st.integers(0, 100), st.dictionaries(st.integers(0, 99), st.integers()), st.integers(0, 100))
def test_chunked_vector_is_a_list(size: int, sets: dict[int, int], drop: int) -> None:
    v = ChunkedVector.filled(size, -1)
    ref = [-1] * size
    sets = {i: x for i, x in sets.items() if i < size}
    w = v.set_many(sets)
    for i, x in sets.items():
        ref[i] = x
    assert list(w) == ref
    assert list(v) == [-1] * size  # persistent
    drop = min(drop, size)
    d = w.drop_first(drop).append(7)
    assert list(d) == [*ref[drop:], 7]
    assert d == ChunkedVector.of([*ref[drop:], 7])
