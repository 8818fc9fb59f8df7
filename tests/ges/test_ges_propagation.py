"""Profile propagation to the gatekeepers of each level with per-edge destination reference
counts [GES "Profiles and the profile graph", "Routing events"]: registrations sent to the
gatekeepers that gate events into the node's units (and nowhere else), acknowledged and
resent until they are, asked for again by a restarted gatekeeper, merged last-writer-wins by
registration number (a duplicate or late one changes nothing), each node's graph over the
units of its own view, and the gatekeeping it drives."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap

from gapless.impl.ges import PAPER_POLICY, GESConfig, crash, handle, initial_state
from gapless.impl.ges.connectivity import next_hop
from gapless.impl.ges.messages import EventMsg, ProfileAck, ProfileAsk, ProfileNews, Routed
from gapless.impl.ges.node import forward_event
from gapless.impl.ges.propagation import Interest, gatekeepers, merge, origins, passes, unit_name
from gapless.impl.ges.variants import unregister_uncounted
from gapless.impl.inputs import Connect, Receive, Restart, TimerFired
from gapless.models.ges_binding import network
from gapless.models.ges_topology import ges_dense, ges_sparse

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


def _sent(effects, kind):
    return [e for e in effects if type(getattr(e, "msg", None)) is kind]


def test_a_connect_sends_its_registration_to_its_gatekeepers_and_forwarding_obeys_them() -> None:
    v, far = "n1", _far("n1")
    s, effects = handle(_node(v), Connect(subscriber="a", filter=NY, connection=0), 0)
    news = _sent(effects, ProfileNews)
    assert news
    assert {d for e in news for d in e.msg.dests} == set(gatekeepers(H, v))
    assert all(e.msg.entries == (("a", 0, v, NY),) and e.msg.origin == v for e in news)
    for e in news:  # one copy per next hop, toward the gatekeepers behind it
        assert all(next_hop(H, v, d, frozenset(), frozenset({v})) == e.to for d in e.msg.dests)
    gk = next(g for g in sorted(H.nodes) if far in origins(H, g))
    got = ProfileNews(origin=far, entries=(("b", 0, far, NY),), dests=(gk,))
    s, effects = handle(_node(gk), Receive(sender="n2", msg=got), 0)
    (ack,) = [e.msg for e in effects if type(getattr(e, "msg", None)) is Routed]
    assert ack.dest == far
    assert ack.body == ProfileAck(origin=far, gatekeeper=gk, ids=(("b", 0),))
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


def test_a_node_that_is_no_gatekeeper_passes_the_news_on_without_keeping_it() -> None:
    net = network(ges_sparse())  # rings and paths: some routes to a gatekeeper pass others
    h = net.hierarchy
    v, g, hop = next(
        (v, g, hop)
        for v in sorted(h.nodes)
        for g in gatekeepers(h, v)
        if (hop := next_hop(h, v, g, frozenset(), frozenset({v}))) not in gatekeepers(h, v)
    )
    msg = ProfileNews(origin=v, entries=(("a", 0, v, NY),), dests=(g,))
    node = initial_state(hop, net, GESConfig(), PAPER_POLICY)
    s, effects = handle(node, Receive(sender=v, msg=msg), 0)
    assert s.interest.table == pmap()
    assert [e.msg.dests for e in effects] == [(g,)]


def test_registrations_are_resent_until_every_gatekeeper_acknowledged_them() -> None:
    v = "n1"
    s, _ = handle(_node(v), Connect(subscriber="a", filter=NY, connection=0), 0)
    tick = TimerFired(key=("ges", "tick"))
    s, effects = handle(s, tick, 300_000)
    assert {d for e in _sent(effects, ProfileNews) for d in e.msg.dests} == set(gatekeepers(H, v))
    for g in gatekeepers(H, v)[1:]:
        body = ProfileAck(origin=v, gatekeeper=g, ids=(("a", 0),))
        s, _ = handle(s, Receive(sender=g, msg=Routed(dest=v, visited=frozenset(), body=body)), 1)
    again = ProfileAck(origin=v, gatekeeper=gatekeepers(H, v)[1], ids=(("a", 0),))
    same, _ = handle(s, Receive(sender="x", msg=Routed(dest=v, visited=frozenset(), body=again)), 1)
    assert same is s  # a repeated acknowledgement changes nothing
    s, effects = handle(s, tick, 600_000)
    assert [e.msg.dests for e in _sent(effects, ProfileNews)] == [gatekeepers(H, v)[:1]]
    last = ProfileAck(origin=v, gatekeeper=gatekeepers(H, v)[0], ids=(("a", 0),))
    s, _ = handle(s, Receive(sender="x", msg=Routed(dest=v, visited=frozenset(), body=last)), 1)
    _, effects = handle(s, tick, 900_000)
    assert _sent(effects, ProfileNews) == []


def test_a_restarted_gatekeeper_asks_again_and_a_late_old_registration_cannot_win() -> None:
    """The hole the asks close: a gatekeeper acknowledged registration 1 of ``a``, crashed
    (empty table), then a late copy of registration 0 (another profile) reached it."""
    v = "n1"
    gk = gatekeepers(H, v)[0]
    g = crash(_node(gk))
    g, effects = handle(g, Restart(), 5_000_000)
    asks = [e.msg.body for e in effects if type(getattr(e, "msg", None)) is Routed]
    assert {a.origin for a in asks} == set(origins(H, gk))
    assert v in origins(H, gk)
    late = ProfileNews(origin=v, entries=(("a", 0, v, TK),), dests=(gk,))
    g, _ = handle(g, Receive(sender="x", msg=late), 5_000_001)
    assert g.interest.table["a"] == (0, v, TK)
    o, _ = handle(_node(v), Connect(subscriber="a", filter=TK, connection=0), 0)
    o, _ = handle(o, Connect(subscriber="a", filter=NY, connection=0), 1)  # registration 1
    ask = next(a for a in asks if a.origin == v)
    o, effects = handle(
        o, Receive(sender="x", msg=Routed(dest=v, visited=frozenset(), body=ask)), 2
    )
    answers = [e.msg for e in _sent(effects, ProfileNews) if gk in e.msg.dests]
    assert answers
    assert all(m.since == 5_000_000 for m in answers)
    for m in answers:
        g, _ = handle(g, Receive(sender="x", msg=attrs.evolve(m, dests=(gk,))), 5_000_002)
    assert g.interest.table["a"] == (1, v, NY)
    assert v not in g.interest.asking
    g2, _ = handle(g, Receive(sender="x", msg=late), 5_000_003)
    assert g2.interest.table["a"] == (1, v, NY)


def test_a_node_with_no_client_answers_an_ask_so_that_it_stops() -> None:
    v = "n1"
    gk = gatekeepers(H, v)[0]
    ask = ProfileAsk(origin=v, gatekeeper=gk, since=7)
    _, effects = handle(
        _node(v), Receive(sender="x", msg=Routed(dest=v, visited=frozenset(), body=ask)), 8
    )
    (answer,) = _sent(effects, ProfileNews)
    assert (answer.msg.entries, answer.msg.since) == ((), 7)


def _gateway_crossings(h, src: str, dest: str, down: frozenset):
    """The hops of the route from ``src`` to ``dest`` that cross a link between clusters into
    a unit holding ``dest`` (the gateways the paper gates at)."""
    here, seen, out = src, frozenset(), []
    while here != dest:
        seen = seen | {here}
        hop = next_hop(h, here, dest, down, seen)
        if hop is None:
            return out
        if h.link_level(here, hop) >= 1 and h.shared(hop, dest) > h.shared(here, dest):
            out.append(here)
        here = hop
    return out


@settings(max_examples=6, deadline=None)  # each example walks all 484 routes
@given(st.data())
def test_every_gateway_into_a_units_holding_a_node_is_one_of_its_gatekeepers(data) -> None:
    """Whatever links are down, every node that sends an event across a gateway into a unit
    holding ``dest`` has ``dest``'s registrations: gatekeeping loses nothing it should do
    because the news went to the gatekeepers only. A narrower set (the gatekeepers of the
    node's own cluster only) is caught."""
    h = network(data.draw(st.sampled_from((ges_dense, ges_sparse)))()).hierarchy
    down = frozenset(data.draw(st.lists(st.sampled_from(h.links), max_size=4)))
    narrow_missed = False
    for dest in sorted(h.nodes):
        cluster = set(h.members(h.unit(dest, 1)))
        for src in sorted(h.nodes):
            for x in _gateway_crossings(h, src, dest, down):
                assert x in gatekeepers(h, dest), (src, dest, x)
                narrow_missed |= x not in cluster
    assert narrow_missed
