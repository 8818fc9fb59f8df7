"""Connection news rewritten into aggregated entries at the gatekeepers [GES "The connectivity
graph"] (:mod:`gapless.impl.ges.aggregate`, :mod:`gapless.impl.ges.newsflow`): once the news
has settled, in any delivery order and across a restart, every node routes exactly as the
per-link news makes it route, with fewer news entries; the weight keeps a restarted
gatekeeper's ignorance from winning; and the planted bug is caught."""

from __future__ import annotations

import random
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from gapless.impl.effects import Send
from gapless.impl.ges import PAPER_POLICY, GESConfig, handle, initial_state
from gapless.impl.ges.aggregate import derive, per_link, unit_pair
from gapless.impl.ges.connectivity import next_hop
from gapless.impl.ges.crashes import crash
from gapless.impl.ges.messages import LinkNews
from gapless.impl.ges.newest import keep_newest
from gapless.impl.ges.policy import GESPolicy
from gapless.impl.ges.variants import VARIANTS
from gapless.impl.inputs import LinkChanged, Receive
from gapless.models.ges_binding import network
from gapless.models.ges_news import news_run
from gapless.models.ges_topology import ges_dense, ges_sparse

NETS = {"ges-dense": network(ges_dense()), "ges-sparse": network(ges_sparse())}
PER_LINK = attrs.evolve(PAPER_POLICY, news_key=per_link)


class Nodes:
    """Every node of a network, driven by hand: link changes in, ``LinkNews`` delivered in a
    seeded random order until none is in flight."""

    def __init__(self, net: Any, policy: GESPolicy, seed: int) -> None:
        self.net, self.h = net, net.hierarchy
        self.s = {n: initial_state(n, net, GESConfig(), policy) for n in self.h.nodes}
        self.flight: list[tuple[str, str, LinkNews]] = []
        self.rng = random.Random(seed)
        self.now = 0
        self.messages = self.entries = 0

    def _step(self, node: str, inp: Any) -> None:
        self.now += 1
        self.s[node], effects = handle(self.s[node], inp, self.now)
        for e in effects:
            if type(e) is Send and type(e.msg) is LinkNews:
                self.flight.append((node, e.to, e.msg))
                self.messages += 1
                self.entries += len(e.msg.entries) + len(e.msg.pairs)

    def link(self, link: tuple[str, str], up: bool) -> None:
        a, b = link
        self._step(a, LinkChanged(neighbour=b, up=up))
        self._step(b, LinkChanged(neighbour=a, up=up))

    def restart(self, node: str) -> None:
        self.s[node] = crash(self.s[node])

    def settle(self) -> None:
        while self.flight:
            sender, to, msg = self.flight.pop(self.rng.randrange(len(self.flight)))
            self._step(to, Receive(sender=sender, msg=msg))

    def routes(self) -> dict[tuple[str, str], str | None]:
        return {
            (v, d): next_hop(self.h, v, d, self.s[v].avoid, frozenset())
            for v in self.h.nodes
            for d in self.h.nodes
        }


def truth(h: Any, down: set[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
    return {
        (v, d): next_hop(h, v, d, frozenset(down), frozenset()) for v in h.nodes for d in h.nodes
    }


def _play(net: Any, policy: GESPolicy, seed: int, steps: list[tuple[str, Any]]) -> Nodes:
    nodes = Nodes(net, policy, seed)
    for kind, arg in steps:
        if kind == "restart":
            node = arg
            for nb in nodes.h.neighbours[node]:
                nodes.link(tuple(sorted((node, nb))), False)  # type: ignore[arg-type]
            nodes.settle()
            nodes.restart(node)
            for nb in nodes.h.neighbours[node]:
                nodes.link(tuple(sorted((node, nb))), True)  # type: ignore[arg-type]
        else:
            nodes.link(arg, kind == "up")
        if nodes.rng.random() < 0.5:
            nodes.settle()
    nodes.settle()
    return nodes


@st.composite
def _schedule(draw: st.DrawFn) -> tuple[str, int, list[tuple[str, Any]], set[tuple[str, str]]]:
    name = draw(st.sampled_from(sorted(NETS)))
    h = NETS[name].hierarchy
    links = st.sampled_from(h.links)
    steps: list[tuple[str, Any]] = []
    down: set[tuple[str, str]] = set()
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(("down", "down", "up", "restart")))
        if kind == "restart":
            node = draw(st.sampled_from(sorted(h.nodes)))
            if any(tuple(sorted((node, nb))) in down for nb in h.neighbours[node]):
                continue  # a restart brings all its links up: keep the truth simple
            steps.append(("restart", node))
        elif kind == "up" and down:
            link = draw(st.sampled_from(sorted(down)))
            down.discard(link)
            steps.append(("up", link))
        else:
            link = draw(links)
            if link not in down:
                down.add(link)
                steps.append(("down", link))
    return name, draw(st.integers(0, 2**16)), steps, down


@settings(max_examples=10, deadline=None)
@given(plan=_schedule())
def test_settled_aggregated_news_routes_as_the_per_link_news(plan: Any) -> None:
    name, seed, steps, down = plan
    net = NETS[name]
    agg = _play(net, PAPER_POLICY, seed, steps)
    per = _play(net, PER_LINK, seed, steps)
    assert agg.routes() == per.routes() == truth(net.hierarchy, down)


def test_every_link_down_and_up_once_saves_entries() -> None:
    """Every link of each 22-node topology fails and comes back, one at a time: the same
    routes at every settled step, and fewer news messages and entries."""
    for name, net in NETS.items():
        h = net.hierarchy
        runs = {}
        for label, policy in (("agg", PAPER_POLICY), ("per", PER_LINK)):
            nodes = Nodes(net, policy, 7)
            for link in h.links:
                nodes.link(link, False)
                nodes.settle()
                assert nodes.routes() == truth(h, {link}), (label, link)
                nodes.link(link, True)
                nodes.settle()
            assert nodes.routes() == truth(h, set())
            runs[label] = nodes
        assert runs["agg"].entries < runs["per"].entries, name
        assert runs["agg"].messages <= runs["per"].messages, name


def test_a_pair_is_stated_only_by_who_sees_it_finer() -> None:
    """A node that sees a pair as the pair itself cannot derive it (it passes entries on);
    one inside a unit of the pair derives the live count from its per-link news."""
    net = NETS["ges-dense"]
    h = net.hierarchy
    top = next(ln for ln in h.links if h.link_level(*ln) == 2)
    far = next(n for n in sorted(h.nodes) if unit_pair(h, n, top) is not None)
    pair = unit_pair(h, far, top)
    assert pair is not None
    links = tuple(ln for ln in h.links if unit_pair(h, far, ln) == pair)
    assert (
        derive(
            h,
            far,
            unit_pair,
            links,
            pair,
            {},
            initial_state(far, net, GESConfig(), PAPER_POLICY).pairs,
        )
        is None
    )
    end = top[0]
    assert unit_pair(h, end, top) is None
    news = {top: ((5, 0, end), False)}
    got = derive(
        h,
        end,
        unit_pair,
        links,
        pair,
        news,
        initial_state(end, net, GESConfig(), PAPER_POLICY).pairs,
    )
    assert got is not None
    assert got[0] == len(links) - 1


def test_a_lighter_statement_never_replaces_a_heavier_one() -> None:
    """The weight, not arrival, decides: a restarted gatekeeper's statement from less
    knowledge (lighter) arriving last does not overwrite the informed one."""
    pair = ((0, 1), (1,))
    pairs, new = keep_newest(
        initial_state("n1", NETS["ges-dense"], GESConfig(), PAPER_POLICY).pairs,
        (((pair, (200, 3), 0)),),
    )
    assert new
    pairs, new = keep_newest(pairs, ((pair, (100, 1), 1),))
    assert not new
    assert pairs[pair] == ((200, 3), 0)
    pairs, new = keep_newest(pairs, ((pair, (300, 4), 2),))
    assert new
    assert pairs[pair] == ((300, 4), 2)


def test_the_losses_only_bug_leaves_a_pair_down() -> None:
    """Non-vacuity: with the planted ``aggregate-losses-only`` gatekeepers, a pair whose
    links all failed and came back stays down for the nodes that see it as one edge."""
    net = NETS["ges-dense"]
    h = net.hierarchy
    bug = VARIANTS["aggregate-losses-only"].policy
    failing = None
    for v in sorted(h.nodes):
        groups: dict[Any, list[tuple[str, str]]] = {}
        for ln in h.links:
            if (p := unit_pair(h, v, ln)) is not None and p[0] != p[1]:
                groups.setdefault(p, []).append(ln)
        failing = next(iter(groups.values()), None)
        if failing:
            break
    assert failing
    for policy, same in ((PAPER_POLICY, True), (bug, False)):
        nodes = Nodes(net, policy, 3)
        for ln in failing:
            nodes.link(ln, False)
        nodes.settle()
        for ln in failing:
            nodes.link(ln, True)
        nodes.settle()
        assert (nodes.routes() == truth(h, set())) is same


def test_in_the_world_every_invariant_holds_with_fewer_news_entries() -> None:
    """Every link of ``ges-sparse`` fails once under the latency setting
    (:func:`gapless.models.ges_news.news_run`): judged by every invariant, the same
    deliveries as with per-link news, and fewer news entries."""
    agg, per = news_run("ges-sparse"), news_run("ges-sparse", mode="scoped")
    assert agg["verdict"] == per["verdict"] == "pass"
    assert agg["delivered"] == per["delivered"] > 0
    assert agg["pair_entries"] > 0
    assert agg["news_entries"] < per["news_entries"]


_ENTRY = st.tuples(st.sampled_from("abc"), st.integers(0, 5), st.booleans()).map(
    lambda e: (e[0], e[1], e[1] % 2 == 0)  # one value per order, as both kinds of news have
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_ENTRY, max_size=8), st.lists(_ENTRY, max_size=8), st.randoms())
def test_keep_newest_is_one_join_for_news_and_pairs(
    xs: list[Any], ys: list[Any], rnd: random.Random
) -> None:
    """The one merge of per-link news and aggregated entries: the order of the entries does
    not matter, merging again brings nothing new (and the same table object), and merging
    in two steps is merging at once."""
    empty = initial_state("n1", NETS["ges-dense"], GESConfig(), PAPER_POLICY).news
    both = xs + ys
    shuffled = list(both)
    rnd.shuffle(shuffled)
    once, _ = keep_newest(empty, both)
    assert keep_newest(empty, shuffled)[0] == once
    again, new = keep_newest(once, both)
    assert again is once
    assert new == ()
    step, _ = keep_newest(empty, xs)
    assert keep_newest(step, ys)[0] == once
