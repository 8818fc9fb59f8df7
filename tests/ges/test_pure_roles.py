"""GES's pure modules: addressing, connectivity and routing, the profile graph, the stable
storage's epochs/recovery queues, and a session's chain [GES; spec/ges.md]."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.ges import PAPER_POLICY, GESConfig, crash, handle, initial_state
from gapless.impl.ges.addressing import BLOCK_LIMIT, Hierarchy
from gapless.impl.ges.connectivity import next_hop, view_edges
from gapless.impl.ges.profiles import ProfileGraph, constraints
from gapless.impl.ges.session import offer, start_session
from gapless.impl.ges.storage import (
    StorageState,
    confirm,
    handoff,
    recover,
    recovery_queue,
    store,
)
from gapless.impl.inputs import Disconnect, LinkChanged, TimerFired
from gapless.models.ges_binding import network
from gapless.models.ges_topology import ges_dense, ges_small
from gapless.models.workload import MIXED_FILTERS
from gapless.spec.filters import reference_match

# ------------------------------------------------------------------ addressing


def test_the_block_limit_is_64_per_level() -> None:
    assert BLOCK_LIMIT == 64
    Hierarchy.build({"a": (0, 63), "b": (1, 0)}, [("a", "b")])
    with pytest.raises(ProtocolMisuse, match="block-limit"):
        Hierarchy.build({"a": (0, 64), "b": (1, 0)}, [("a", "b")])
    with pytest.raises(ProtocolMisuse, match="same length"):
        Hierarchy.build({"a": (0, 1), "b": (1,)}, [])
    with pytest.raises(ProtocolMisuse, match="share"):
        Hierarchy.build({"a": (0, 1), "b": (0, 1)}, [])


def test_gatekeepers_of_the_22_node_topology() -> None:
    h = network(ges_dense()).hierarchy
    assert h.depth == 2
    assert h.gatekeeper_levels("n9") == (1, 2)  # cluster gateway and super-cluster gateway
    assert h.gatekeeper_levels("n3") == ()
    assert h.link_level("n9", "n12") == 2
    assert len(h.members((0,))) == 11


# ------------------------------------------------------------------ routing


def test_the_connectivity_graph_counts_links_between_units() -> None:
    h = network(ges_dense()).hierarchy
    edges = view_edges(h, "n1", frozenset(), frozenset())
    # n1 sees the other super-cluster as one unit, reached from cluster (0, 2) over two
    # links (n9-n12 and n11-n20), at the level-2 cost
    assert edges[((0, 2), (1,))].count == 2
    assert edges[((0, 2), (1,))].cost == 16
    assert edges[((0, 0, 0), (0, 0, 1))].count == 1


def test_routing_takes_the_alternate_link_and_avoids_suspected_ones() -> None:
    h = network(ges_small()).hierarchy
    hop = next_hop(h, "n3", "n8", frozenset(), frozenset())
    assert hop == "n5"
    assert next_hop(h, "n3", "n8", frozenset({("n3", "n5")}), frozenset()) == "n4"
    cut = frozenset({("n3", "n5"), ("n3", "n4"), ("n2", "n3")})
    assert next_hop(h, "n3", "n8", cut, frozenset()) is None
    assert next_hop(h, "n3", "n8", frozenset(), frozenset({"n5"})) == "n4"


# ------------------------------------------------------------------ profile graph


def test_shared_edges_are_reference_counted() -> None:
    g = ProfileGraph().add('loc == "NY"', "b").add('loc == "NY" and p > 3', "b")
    (edge,) = [k for k in g.edges if len(k) == 1]
    assert g.count(edge, "b") == 2
    g2 = g.remove('loc == "NY" and p > 3', "b")
    assert g2.count(edge, "b") == 1
    assert g2.destinations({"loc": "NY", "p": 0}) == ("b",)
    assert g2.remove("p > 3", "b") is g2  # never negative: nothing to remove


def test_opaque_profiles_are_one_constraint() -> None:
    assert len(constraints('not loc == "LN"')) == 1
    assert constraints("true") == ()


@given(
    st.lists(st.tuples(st.sampled_from(MIXED_FILTERS), st.sampled_from("abc")), max_size=12),
    st.fixed_dictionaries({"loc": st.sampled_from(("NY", "LN", "TK")), "p": st.integers(0, 9)}),
)
def test_destinations_are_the_nodes_with_a_matching_profile(
    profiles: list[tuple[str, str]], attributes: dict[str, Any]
) -> None:
    g = ProfileGraph()
    for text, dest in profiles:
        g = g.add(text, dest)
    want = sorted({d for t, d in profiles if reference_match(t, attributes)})
    assert list(g.destinations(attributes)) == want
    for text, dest in profiles:  # removing everything leaves the empty graph
        g = g.remove(text, dest)
    assert not g.edges
    assert not g.ends


# ------------------------------------------------------------------ storage


def _storage_with(clients: dict[str, tuple[str, str]]) -> StorageState:
    s = StorageState(name="S")
    for i, (c, (broker, profile)) in enumerate(sorted(clients.items())):
        s, _rec, _ = handoff(s, c, i, broker, None, profile, PAPER_POLICY)
    return s


def test_epochs_follow_publisher_order_and_targets_chain() -> None:
    s = _storage_with({"x": ("b1", "true"), "y": ("b2", "p > 3")})
    brokers = ("b1", "b2")
    s, ev = store(s, "P", 1, pmap({"p": 5}), brokers, PAPER_POLICY)
    assert ev is None  # seq 1 before seq 0: refused
    s, ev0 = store(s, "P", 0, pmap({"p": 5}), brokers, PAPER_POLICY)
    s, ev1 = store(s, "P", 1, pmap({"p": 1}), brokers, PAPER_POLICY)
    s, ev2 = store(s, "P", 2, pmap({"p": 9}), brokers, PAPER_POLICY)
    assert ev0
    assert ev1
    assert ev2
    assert (ev0.epoch, ev1.epoch, ev2.epoch) == (1, 2, 3)
    assert dict(ev0.targets) == {"x": 0, "y": 0}
    assert dict(ev1.targets) == {"x": 1}
    assert dict(ev2.targets) == {"x": 2, "y": 1}  # y's chain skips what it is not destined


def test_release_only_after_every_target_confirmed() -> None:
    s = _storage_with({"x": ("b1", "true"), "y": ("b2", "true")})
    s, ev = store(s, "P", 0, pmap(), ("b1", "b2"), PAPER_POLICY)
    assert ev is not None
    s, gone = confirm(s, 1, "x", PAPER_POLICY)
    assert gone is None
    assert confirm(s, 1, "x", PAPER_POLICY) == (s, None)  # twice counts once
    s, gone = confirm(s, 1, "y", PAPER_POLICY)
    assert gone is not None
    assert gone.remaining == 0
    assert 1 not in s.events


def test_handoff_cut_and_recovery_queue() -> None:
    s = _storage_with({"x": ("b1", "true")})
    for seq in range(4):
        s, _ = store(s, "P", seq, pmap({"n": seq}), ("b1",), PAPER_POLICY)
    s, _ = confirm(s, 1, "x", PAPER_POLICY)  # x received epoch 1, then left
    s, rec, gone = handoff(s, "x", 5, "b9", 2, "true", PAPER_POLICY)
    assert rec is not None
    assert rec.confirmed == 2
    assert rec.cut == 4
    assert rec.broker == "b9"
    assert [g.epoch for g in gone] == [2]  # presenting epoch 2 confirms it
    assert [q.epoch for q in recovery_queue(s, "x", rec.confirmed, rec.cut)] == [3, 4]
    assert [q.prev for q in recovery_queue(s, "x", rec.confirmed, rec.cut)] == [2, 3]
    stale, none, _ = handoff(s, "x", 4, "b7", None, "true", PAPER_POLICY)
    assert stale is s
    assert none is None
    s, ev = store(s, "P", 4, pmap(), ("b1", "b9"), PAPER_POLICY)
    assert ev is not None
    assert dict(ev.targets) == {"x": 4}


def test_recover_rebuilds_the_storage_from_its_writes() -> None:
    s = _storage_with({"x": ("b1", "true")})
    logs = {}
    for seq in range(3):
        s, ev = store(s, "P", seq, pmap(), ("b1",), PAPER_POLICY)
        assert ev is not None
        logs[ev.epoch] = ev
    back = recover("S", logs, {1}, dict(s.clients))
    assert back.epoch == 3
    assert back.next_seq["P"] == 3
    assert sorted(back.events) == [2, 3]
    assert back.clients["x"].last == 3
    assert back.graph == s.graph


# ------------------------------------------------------------------ session


def test_a_session_delivers_its_chain_once_in_order() -> None:
    sess = start_session("x", "true", 1, (("S", 2),))
    sess, out = offer(sess, "S", 5, 4, "P", pmap(), PAPER_POLICY)
    assert out == ()  # not ready: buffered
    sess = attrs.evolve(sess, last=sess.last.set("S", 2))
    sess, out = offer(sess, "S", 4, 2, "P", pmap(), PAPER_POLICY)
    assert [(w, e) for w, e, _, _ in out] == [("deliver", 4), ("deliver", 5)]
    sess, out = offer(sess, "S", 4, 2, "P", pmap(), PAPER_POLICY)
    assert [(w, e) for w, e, _, _ in out] == [("confirm", 4)]  # a duplicate
    sess, out = offer(sess, "S", 9, 7, "P", pmap(), PAPER_POLICY)
    assert out == ()  # 7 has not come


# ------------------------------------------------------------------ the node role


def test_ignored_inputs_return_the_same_state_and_crash_keeps_only_writes() -> None:
    net = network(ges_small())
    s = initial_state("n2", net, GESConfig(), PAPER_POLICY)
    assert handle(s, Disconnect(subscriber="nobody"), 0) == (s, ())
    assert handle(s, TimerFired(key="other"), 0) == (s, ())
    s2, _ = handle(s, LinkChanged(neighbour="n3", up=False), 0)
    assert s2 is not s
    assert handle(s2, LinkChanged(neighbour="n3", up=False), 0)[0] is s2
    assert crash(s2).suspected == frozenset()
    assert crash(s2).store == s.store
