"""Connection news scoped by level [GES "The connectivity graph"]: a link's news reaches only
the unit the link lies in, no route changes for it, and the messages saved on the
``ges-latency`` topologies (:mod:`gapless.models.ges_news`)."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from gapless.impl.ges import PAPER_POLICY, GESConfig, handle, initial_state
from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.aggregate import per_link
from gapless.impl.ges.connectivity import next_hop
from gapless.impl.ges.linkstate import everywhere, within_unit
from gapless.impl.ges.messages import LinkNews
from gapless.impl.inputs import LinkChanged, Receive
from gapless.models.ges_binding import network
from gapless.models.ges_news import news_run
from gapless.models.ges_topology import ges_dense, ges_sparse

DENSE = network(ges_dense()).hierarchy
SPARSE = network(ges_sparse()).hierarchy


def _cluster_only(h: Hierarchy, link: tuple[str, str], node: str) -> bool:
    """Too narrow a scope (the cluster of the link's first end only)."""
    return h.nodes[node][:-1] == h.nodes[link[0]][:-1]


def test_a_links_news_reaches_exactly_the_unit_it_lies_in() -> None:
    h = DENSE
    level = {lv: [ln for ln in h.links if h.link_level(*ln) == lv] for lv in (0, 1, 2)}
    inside = level[0][0]  # n1-n2, in cluster (0, 0)
    assert sorted(n for n in h.nodes if within_unit(h, inside, n)) == sorted(h.members((0, 0)))
    across = level[1][0]  # between two clusters of super-cluster 0
    assert sorted(n for n in h.nodes if within_unit(h, across, n)) == sorted(h.members((0,)))
    top = level[2][0]  # between the super-clusters: every node
    assert all(within_unit(h, top, n) for n in h.nodes)


def _links(h: Hierarchy) -> st.SearchStrategy[frozenset[tuple[str, str]]]:
    return st.frozensets(st.sampled_from(h.links), max_size=6)


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_scoped_news_changes_no_route(data: st.DataObject) -> None:
    """For any set of down links, every node routes to every destination the same with only
    the news in its scope as with all of it."""
    h = data.draw(st.sampled_from((DENSE, SPARSE)))
    down = data.draw(_links(h))
    for v in h.nodes:
        mine = frozenset(ln for ln in down if within_unit(h, ln, v))
        for d in h.nodes:
            assert next_hop(h, v, d, mine, frozenset()) == next_hop(h, v, d, down, frozenset())


def _differs(h: Hierarchy, down: frozenset[tuple[str, str]], scope: object) -> bool:
    for v in h.nodes:
        mine = frozenset(ln for ln in down if scope(h, ln, v))  # type: ignore[operator]
        for d in h.nodes:
            if next_hop(h, v, d, mine, frozenset()) != next_hop(h, v, d, down, frozenset()):
                return True
    return False


def test_a_narrower_scope_does_change_routes() -> None:
    """Non-vacuity of the test above: the cluster of one end is too narrow for a link
    between two clusters; the nodes of the third cluster route into the down link."""
    h = DENSE
    between = [ln for ln in h.links if h.link_level(*ln) == 1]
    assert any(_differs(h, frozenset({ln}), _cluster_only) for ln in between)
    assert not any(_differs(h, frozenset({ln}), within_unit) for ln in between)


def _sends(effects: tuple[object, ...]) -> dict[str, LinkNews]:
    return {e.to: e.msg for e in effects if type(getattr(e, "msg", None)) is LinkNews}  # type: ignore[attr-defined]


def test_a_node_passes_news_only_to_neighbours_in_its_scope() -> None:
    net = network(ges_dense())
    h = net.hierarchy
    gate = next(n for n in sorted(h.nodes) if 2 in h.gatekeeper_levels(n))
    s = initial_state(gate, net, GESConfig(), PAPER_POLICY)
    inner = next(nb for nb in h.neighbours[gate] if h.link_level(gate, nb) == 0)
    s, effects = handle(s, LinkChanged(neighbour=inner, up=False), 0)
    out = _sends(effects)
    assert out, "the news goes to the rest of the cluster"
    assert all(h.nodes[to][:-1] == h.nodes[gate][:-1] for to in out)
    outside = [nb for nb in h.neighbours[gate] if h.link_level(gate, nb) > 0]
    assert outside
    assert not set(outside) & set(out)
    unscoped = attrs.evolve(PAPER_POLICY, news_scope=everywhere, news_key=per_link)
    flood = initial_state(gate, net, GESConfig(), unscoped)
    _, effects = handle(flood, LinkChanged(neighbour=inner, up=False), 0)
    assert set(outside) <= set(_sends(effects))
    # news heard from elsewhere is passed on in scope, too
    other = initial_state(inner, net, GESConfig(), PAPER_POLICY)
    far = next(ln for ln in h.links if h.link_level(*ln) == 2)
    entry = (far, (5, 0, far[0]), False)
    _, effects = handle(other, Receive(sender=gate, msg=LinkNews(entries=(entry,))), 5)
    assert set(_sends(effects)) == set(h.neighbours[inner]) - {gate}


def test_scoping_saves_news_messages_and_nothing_else_changes() -> None:
    """Every link of ``ges-dense`` fails once under the latency setting: every invariant
    holds, the deliveries are the flood's, and the scoped news is far less."""
    scoped, flooded = news_run("ges-dense", mode="scoped"), news_run("ges-dense", mode="flooded")
    assert scoped["verdict"] == flooded["verdict"] == "pass"
    assert scoped["delivered"] == flooded["delivered"] > 0
    assert scoped["link_news"] < 0.5 * flooded["link_news"]
