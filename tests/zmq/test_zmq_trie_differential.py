"""The radix trie against the dict reference, operation by operation; old versions never
change (as pyrsistent's own vector test checks its persistent vector against a list)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

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


def test_radix_edges_split_and_merge_back() -> None:
    t, _ = PrefixTrie.empty().add(b"ABCD", "p1")
    t2, first = t.add(b"AB", "p2")  # splits the ABCD edge
    assert first
    t3, result = t2.remove(b"AB", "p2")  # merges it again
    assert result == "last"
    assert t3 == t
    assert t3.root[2][65][0] == b"ABCD"  # one edge, not a chain
    assert t2.root[2][65][0] == b"AB"
