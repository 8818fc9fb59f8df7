"""Profile propagation to the gatekeepers with per-edge destination reference counts
[GES "Profiles and the profile graph", "Routing events"]: registrations flooded as messages,
merged last-writer-wins by connection number (a duplicate or late one changes nothing), each
node's graph over the units of its own view, and the gatekeeping it drives."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from gapless.impl.ges import PAPER_POLICY, GESConfig, handle, initial_state
from gapless.impl.ges.messages import EventMsg, ProfileDigest, ProfileNews
from gapless.impl.ges.node import forward_event
from gapless.impl.ges.profiles import ProfileGraph
from gapless.impl.ges.propagation import Interest, merge, passes, unit_name
from gapless.impl.ges.variants import unregister_uncounted
from gapless.impl.inputs import Connect, Receive, TimerFired
from gapless.models.ges_binding import network
from gapless.models.ges_topology import ges_dense

NET = network(ges_dense())
H = NET.hierarchy
NY = 'loc == "NY"'
TK = 'loc == "TK"'
COUNTED = PAPER_POLICY.unregister_unit


def _far(vertex: str) -> str:
    """A node in another super-cluster than ``vertex``."""
    return next(n for n in sorted(H.nodes) if H.nodes[n][0] != H.nodes[vertex][0])


def test_registrations_are_counted_per_unit_of_the_view_and_replaced_by_newer_ones() -> None:
    v, far = "n1", _far("n1")
    unit = unit_name(H, v, far)
    assert unit != unit_name(H, v, "n1")
    got, new = merge(Interest(), (("a", 0, far, NY), ("b", 0, far, NY)), H, v, COUNTED)
    assert len(new) == 2
    assert got.graph.destinations({"loc": "NY"}) == (unit,)
    moved, _ = merge(got, (("a", 1, v, TK),), H, v, COUNTED)
    assert moved.graph.destinations({"loc": "NY"}) == (unit,)  # b still wants NY there
    again, none = merge(moved, (("a", 1, v, TK), ("a", 0, far, NY)), H, v, COUNTED)
    assert again is moved  # a duplicate and a late registration change nothing
    assert none == ()


def test_without_edge_counts_one_client_leaving_takes_the_unit_off_the_edge() -> None:
    v, far = "n1", _far("n1")
    two, _ = merge(Interest(), (("a", 0, far, NY), ("b", 0, far, NY)), H, v, unregister_uncounted)
    one, _ = merge(two, (("a", 1, v, TK),), H, v, unregister_uncounted)
    assert one.graph.destinations({"loc": "NY"}) == ()
    assert not passes(one, H, v, "b", far, {"loc": "NY"})
    ok, _ = merge(two, (("a", 1, v, TK),), H, v, COUNTED)
    assert passes(ok, H, v, "b", far, {"loc": "NY"})


NEWS = st.lists(
    st.tuples(
        st.sampled_from(("a", "b", "c")),
        st.integers(0, 4),
        st.sampled_from(sorted(H.nodes)),
        st.sampled_from((NY, TK, "true")),
    ),
    max_size=12,
)


@given(NEWS)
def test_merging_converges_whatever_the_order_and_duplicates(entries: list) -> None:
    """Nodes that heard the same registrations in any order, any number of times, agree
    (a join; ties on one connection number are one registration, its node and profile)."""
    entries = list({(c, n): (c, n, node, p) for c, n, node, p in entries}.values())
    a, _ = merge(Interest(), entries, H, "n1", COUNTED)
    b, _ = merge(Interest(), [*reversed(entries), *entries], H, "n1", COUNTED)
    assert a.table == b.table
    assert (a.count, a.checksum) == (b.count, b.checksum)
    assert a.graph == b.graph
    for _path, counts in a.graph.edges.items():
        assert all(n > 0 for n in counts.values())


def test_the_gatekeeper_holds_back_only_what_it_can_judge() -> None:
    v, far = "n1", _far("n1")
    here, _ = merge(Interest(), (("a", 0, far, NY),), H, v, COUNTED)
    assert passes(here, H, v, "a", far, {"loc": "NY"})
    assert not passes(here, H, v, "a", far, {"loc": "TK"})
    assert passes(here, H, v, "a", "n2", {"loc": "TK"})  # heard of a at another node
    assert passes(here, H, v, "zz", far, {"loc": "TK"})  # never heard of zz


def _node(name: str):
    return initial_state(name, NET, GESConfig(), PAPER_POLICY)


def test_a_connect_floods_its_registration_and_forwarding_obeys_the_gatekeeping() -> None:
    v, far = "n1", _far("n1")
    s, effects = handle(_node(v), Connect(subscriber="a", filter=NY, connection=0), 0)
    news = [e.msg for e in effects if type(getattr(e, "msg", None)) is ProfileNews]
    assert news
    assert news[0].entries == (("a", 0, v, NY),)
    s, _ = handle(_node(v), Receive(sender="n2", msg=ProfileNews(entries=(("b", 0, far, NY),))), 0)
    ev = EventMsg(
        storage="n7",
        epoch=1,
        pubend="P",
        attributes=pmap({"loc": "TK"}),
        targets=(("b", far, 0),),
        dests=(far,),
        visited=frozenset(),
    )
    _, held = forward_event(s, ev, 0)
    assert held == ()
    _, sent = forward_event(s, attrs.evolve(ev, attributes=pmap({"loc": "NY"})), 0)
    assert len(sent) == 1


def test_digests_make_up_lost_news() -> None:
    a, _ = handle(_node("n1"), Connect(subscriber="a", filter=NY, connection=0), 0)
    b = _node(H.neighbours["n1"][0])
    a, effects = handle(a, TimerFired(key=("ges", "tick")), 300_000)
    digest = next(e.msg for e in effects if type(getattr(e, "msg", None)) is ProfileDigest)
    b2, reply = handle(b, Receive(sender="n1", msg=digest), 300_001)
    assert b2 is b
    assert reply == ()  # an empty table is not worth sending...
    _, back = handle(a, Receive(sender=b.name, msg=ProfileDigest(count=0, checksum=0)), 1)
    table = back[0].msg
    assert table.entries == (("a", 0, "n1", NY),)  # ...and then it gets it
    b3, _ = handle(b, Receive(sender="n1", msg=table), 2)
    assert b3.interest.table == a.interest.table
    assert isinstance(b3.interest.graph, ProfileGraph)
