"""The prefix trie (and the hash map under it) against dict references, operation by
operation; old versions never change (as pyrsistent's own vector test checks its persistent
vector against a list)."""

from __future__ import annotations

import random
from typing import final

from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.zmq import hamt
from gapless.impl.zmq.trie import PrefixTrie
from gapless.spec.zmq_reference import ReferenceTrie

# a tiny alphabet so that prefixes share, split and merge radix edges often
prefixes = st.binary(max_size=5).map(lambda b: bytes(x % 3 + 65 for x in b))
holders = st.sampled_from(["p1", "p2", "p3"])
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), prefixes, holders),
        st.tuples(st.just("remove"), prefixes, holders),
        st.tuples(st.just("strip"), st.just(b""), holders),
    ),
    max_size=40,
)


@given(ops=ops, probes=st.lists(prefixes, max_size=6))
def test_trie_matches_reference_and_old_versions_never_change(
    ops: list[tuple[str, bytes, str]], probes: list[bytes]
) -> None:
    ref = ReferenceTrie()
    trie = PrefixTrie.empty()
    history: list[tuple[PrefixTrie, list[tuple[bytes, frozenset[object]]]]] = []
    for op, prefix, holder in ops:
        before = trie
        if op == "add":
            trie, first = trie.add(prefix, holder)
            assert first == ref.add(prefix, holder)
        elif op == "remove":
            trie, result = trie.remove(prefix, holder)
            assert result == ref.remove(prefix, holder)
        else:
            trie, removed = trie.remove_holder(holder)
            assert list(removed) == ref.remove_holder(holder)
        if trie.items() == before.items():
            assert trie is before  # a no-op returns the same object
        assert list(trie.items()) == ref.items()
        assert len(trie) == len(ref.items())
        for probe in (*probes, prefix, prefix + b"AB"):
            assert trie.match(probe) == ref.match(probe)
            assert trie.holders(probe) == frozenset(ref.table.get(probe, set()))
        history.append((trie, ref.items()))
    for version, snapshot in history:
        assert list(version.items()) == snapshot


@final
class _Key:
    """A key whose hash the test chooses, to force leaf splits and full-hash collisions."""

    def __init__(self, name: int, h: int) -> None:
        self.name, self.h = name, h

    def __hash__(self) -> int:
        return self.h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and other.name == self.name


# hashes from a small pool: many keys share all 64 bits (a collision leaf at the last level),
# many share their low bits (splits several levels deep)
_hashes = st.sampled_from([0, 1, 1 << 40, (1 << 40) | 1, -1, 7 << 20, 2**63 - 1, -(2**63)])
_map_ops = st.lists(
    st.tuples(st.booleans(), st.integers(0, 300), _hashes | st.integers(-(2**63), 2**63 - 1)),
    max_size=400,
)


@given(ops=_map_ops)
def test_hamt_matches_dict_through_splits_and_collisions(ops: list[tuple[bool, int, int]]) -> None:
    ref: dict[_Key, int] = {}
    root = hamt.EMPTY
    history = []
    for put, name, h in ops:
        key = _Key(name, h)
        before = root
        if put:
            root = hamt.assoc(root, key, name)
            ref[key] = name
        else:
            root = hamt.dissoc(root, key)
            if key not in ref:
                assert root is before  # a no-op returns the same root
            ref.pop(key, None)
        assert hamt.get(root, key) == ref.get(key)
        history.append((root, dict(ref)))
    for version, snapshot in history:  # old versions never change
        assert dict(hamt.items(version)) == snapshot
        assert all(hamt.get(version, k) == v for k, v in snapshot.items())


def test_hamt_splits_a_full_leaf_and_keeps_every_key() -> None:
    root = hamt.EMPTY
    keys = [b"k%d" % i for i in range(hamt.LEAF * hamt.WIDTH * 2)]
    for i, k in enumerate(keys):
        root = hamt.assoc(root, k, i)
    assert isinstance(root, list)  # the root leaf was split, and split again below
    assert any(isinstance(child, list) for child in root)
    assert sorted(v for _, v in hamt.items(root)) == list(range(len(keys)))
    assert hamt.get_prefixes(root, b"k12345", [1, 2, 3, 5, 6, 9]) == [1, 12, 1234]
    for k in keys[::2]:
        root = hamt.dissoc(root, k)
    assert sorted(v for _, v in hamt.items(root)) == list(range(1, len(keys), 2))


def test_equal_tries_built_in_different_orders_are_equal() -> None:
    a, b = PrefixTrie.empty(), PrefixTrie.empty()
    for p in (b"A", b"AB", b"", b"B"):
        a, _ = a.add(p, "p1")
    for p in (b"B", b"", b"AB", b"A"):
        b, _ = b.add(p, "p1")
    assert a == b
    assert hash(a) == hash(b)
    assert len(a) == 4
    assert a.lengths == (0, 1, 2)  # the per-length index, ascending
    c, _ = a.remove(b"AB", "p1")
    assert c != a
    assert len(c) == 3
    assert c.lengths == (0, 1, 2)  # it only grows: a lookup of length 2 now finds nothing
    assert c.match(b"ABC") == frozenset({"p1"})


def test_a_large_trie_agrees_with_the_reference_through_leaf_splits() -> None:
    """Thousands of prefixes: the hash map under the trie splits its leaves several levels
    deep; every answer still equals the reference's, and an old version is unchanged."""
    rng = random.Random(15)
    ref = ReferenceTrie()
    trie = PrefixTrie.empty()
    peers = [f"p{i}" for i in range(5)]
    for _ in range(4_000):
        prefix = bytes(rng.choice(b"ABCD") for _ in range(rng.randint(0, 6)))
        peer = rng.choice(peers)
        if rng.random() < 0.7:
            trie, first = trie.add(prefix, peer)
            assert first == ref.add(prefix, peer)
        else:
            trie, result = trie.remove(prefix, peer)
            assert result == ref.remove(prefix, peer)
    assert isinstance(trie.table, list)  # split at least once
    snapshot = ref.items()
    assert list(trie.items()) == snapshot
    for _ in range(300):
        probe = bytes(rng.choice(b"ABCD") for _ in range(rng.randint(0, 8)))
        assert trie.match(probe) == ref.match(probe)
    stripped, removed = trie.remove_holder("p0")
    assert list(removed) == ref.remove_holder("p0")
    assert list(stripped.items()) == ref.items()
    assert list(trie.items()) == snapshot
