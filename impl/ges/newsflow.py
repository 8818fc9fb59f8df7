"""Connection news through a node: its own links' changes, news heard, and what it passes on
[GES "The connectivity graph"].

Theory of operation
-------------------
A node's knowledge of the links is per link (:mod:`gapless.impl.ges.linkstate`: its own
suspicions and the newest news of each link it sees per link) and per unit pair
(:mod:`gapless.impl.ges.aggregate`: the newest aggregated entry of each pair it sees as one
edge). When it changes — a ``LinkChanged`` of its own, or news heard — the node tells each
live neighbour but the sender what it sees at the neighbour's granularity, only inside the
unit the link lies in (the policy's ``news_scope``):

* the new per-link entries of links the neighbour sees per link (the policy's ``news_key``
  says None);
* for the unit pairs the neighbour sees the changed links as: the new aggregated entry, when
  this node sees the pair as the neighbour does (passed on unchanged); or, when it sees the
  pair finer, its own statement of the pair's live count, made only when that count changed
  from its last statement (:func:`_state`) — the rewriting at the gatekeeper.

When a link comes up, each end also sends the other its whole table at the other's
granularity (the other may have restarted with no news at all): the per-link entries, the
aggregated entries it holds, and its last statements. Routing avoids the links suspected here,
the links the per-link news says are down, and, per pair, as many links as the aggregated
entry says are not live (:func:`gapless.impl.ges.aggregate.expand`).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from gapless.impl.effects import Effect, Send
from gapless.impl.ges.aggregate import Pair, PairEntry, derive, expand, grouping
from gapless.impl.ges.connectivity import link_key
from gapless.impl.ges.linkstate import Entry, avoided
from gapless.impl.ges.messages import LinkNews
from gapless.impl.ges.newest import keep_newest
from gapless.impl.ges.node import NodeState
from gapless.impl.inputs import LinkChanged

__all__ = ["link_changed", "news_heard"]

Link = tuple[str, str]
Step = tuple[NodeState, tuple[Effect, ...]]


def link_changed(s: NodeState, inp: LinkChanged, now: int) -> Step:
    """One of this node's links went down or came up: record, tell, and on an up hand the
    other end the whole table."""
    key = link_key(s.name, inp.neighbour)
    if (key in s.suspected) != inp.up:
        return s, ()
    suspected = s.suspected - {key} if inp.up else s.suspected | {key}
    news, new = keep_newest(s.news, ((key, (now, s.reports, s.name), inp.up),))
    s = _avoid(attrs.evolve(s, suspected=suspected, news=news, reports=s.reports + 1))
    s, effects = _pass_on(s, new, (), "", now)
    if inp.up:
        s, table = _table(s, inp.neighbour, now)
        effects = (*effects, *table)
    return s, effects


def news_heard(s: NodeState, msg: LinkNews, sender: str, now: int) -> Step:
    """News from a neighbour: keep what is new, and pass it on."""
    news, new = keep_newest(s.news, msg.entries)
    pairs, new_pairs = keep_newest(s.pairs, msg.pairs)
    if not new and not new_pairs:
        return s, ()
    s = _avoid(attrs.evolve(s, news=news, pairs=pairs))
    return _pass_on(s, new, new_pairs, sender, now)


def _avoid(s: NodeState) -> NodeState:
    h, key = s.net.hierarchy, s.policy.news_key
    return attrs.evolve(s, avoid=avoided(s.suspected, s.news) | expand(h, s.name, key, s.pairs))


def _pass_on(
    s: NodeState, new: tuple[Entry, ...], new_pairs: tuple[PairEntry, ...], sender: str, now: int
) -> Step:
    h, scope, key = s.net.hierarchy, s.policy.news_scope, s.policy.news_key
    mine = grouping(h, s.name, key)
    changed = {e[0] for e in new} | {ln for p, _v, _c in new_pairs for ln in mine.get(p, ())}
    if not changed:
        return s, ()
    live = [
        nb
        for nb in h.neighbours[s.name]
        if nb != sender and link_key(s.name, nb) not in s.suspected
    ]
    wanted = {nb: _pairs_of(s, nb, changed) for nb in live}
    s, stated = _state(s, set().union(*wanted.values()), now)
    held = {e[0]: e for e in new_pairs}
    effects: list[Effect] = []
    for nb in live:
        per = tuple(e for e in new if scope(h, e[0], nb) and key(h, nb, e[0]) is None)
        agg = tuple(sorted(x for p in wanted[nb] if (x := stated.get(p) or held.get(p))))
        if per or agg:
            effects.append(Send(to=nb, msg=LinkNews(entries=per, pairs=agg)))
    return s, tuple(effects)


def _pairs_of(s: NodeState, nb: str, links: Iterable[Link]) -> set[Pair]:
    """The unit pairs neighbour ``nb`` sees ``links`` as, among those in its scope."""
    h, scope, key = s.net.hierarchy, s.policy.news_scope, s.policy.news_key
    out: set[Pair] = set()
    for ln in links:
        if scope(h, ln, nb) and (p := key(h, nb, ln)) is not None and p[0] != p[1]:
            out.add(p)
    return out


def _links_of(s: NodeState, pair: Pair) -> tuple[Link, ...]:
    """The physical links between the two units of ``pair``, sorted."""
    h = s.net.hierarchy
    u, v = pair

    def ends(a: str, b: str) -> bool:
        x, y = h.nodes[a], h.nodes[b]
        return x[: len(u)] == u and y[: len(v)] == v

    return tuple(sorted(ln for ln in h.links if ends(*ln) or ends(ln[1], ln[0])))


def _state(s: NodeState, pairs: set[Pair], now: int) -> tuple[NodeState, dict[Pair, PairEntry]]:
    """This node's statements of ``pairs`` it sees finer: a new one for each whose live count
    changed from its last statement (or, never stated, from all its links), with the weight
    of what it knows (:func:`gapless.impl.ges.aggregate.derive`)."""
    h, key = s.net.hierarchy, s.policy.news_key
    stated: dict[Pair, PairEntry] = {}
    told = s.told
    for pair in sorted(pairs):
        links = _links_of(s, pair)
        derived = derive(h, s.name, key, links, pair, s.news, s.pairs)
        if derived is None:
            continue
        live, weight = derived
        last = told.get(pair)
        if not s.policy.restates(live, None if last is None else last[1], len(links)):
            continue
        told = told.set(pair, (weight, live))
        stated[pair] = (pair, weight, live)
    return attrs.evolve(s, told=told), stated


def _table(s: NodeState, nb: str, now: int) -> Step:
    """Everything this node knows, at ``nb``'s granularity and in its scope."""
    h, scope, key = s.net.hierarchy, s.policy.news_scope, s.policy.news_key
    per = tuple(
        (link, v, up)
        for link, (v, up) in sorted(s.news.items())
        if scope(h, link, nb) and key(h, nb, link) is None
    )
    wanted = _pairs_of(s, nb, h.links)
    s, _ = _state(s, wanted, now)
    agg: list[PairEntry] = []
    for pair in sorted(wanted):
        got = s.told.get(pair) or s.pairs.get(pair)
        if got is not None:
            agg.append((pair, got[0], got[1]))
    if not per and not agg:
        return s, ()
    return s, (Send(to=nb, msg=LinkNews(entries=per, pairs=tuple(agg))),)
