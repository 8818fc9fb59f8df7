"""The GES node's inputs, one handler each, and the dispatcher the world calls
[GES "Routing events", "Stable storages", "Recovering clients"].

Theory of operation
-------------------
``handle(state, input, now)`` picks ``on_<input>`` by the input's type (a table, not a chain
of tests). What each handler does is in :mod:`gapless.impl.ges.node`'s theory of operation;
here are the inputs:

* ``Restart`` — boot or restart: arm the retransmission tick; a cluster storage (the finer
  tier, :mod:`gapless.impl.ges.tier`) sends every system storage a ``Retrieve`` (one added
  while the run goes, ``Network.joins``, from the first tick after it joined), resent every
  tick until each answers ``Retrieved``;
* ``Publish`` — a client publishes here: write the event to the outbox;
* ``Persisted`` — a write completed (:func:`~gapless.impl.ges.node.on_written`);
* ``Receive`` — a routed message (forwarded, or handled when addressed here) or an event;
* ``Connect`` / ``Disconnect`` — a client attaches (with its resume token and profile) or
  leaves; an attachment is also a registration, sent to the gatekeepers of each level that
  gate events into the units holding this node (:mod:`gapless.impl.ges.propagation`);
  ``Receive(ProfileNews)`` — registrations on their way to gatekeepers (merged here if this
  node is one of them, acknowledged, and passed on toward the others);
  ``Receive(ProfileAck)`` — a gatekeeper holds them; ``Receive(ProfileAsk)`` — a restarted
  gatekeeper asks for the registrations of the clients attached here;
* ``LinkChanged`` — a link is suspected (down) or trusted again (up), and the news flooded
  inside the unit the link lies in, rewritten into aggregated entries per unit pair for the
  nodes that see the link as one (:mod:`gapless.impl.ges.newsflow`); ``Receive(LinkNews)`` —
  news from elsewhere;
* ``TimerFired`` — the tick: retransmit the outbox, a storage's pending events (and, with the
  finer tier, its replicas and the unconfirmed part of recovery queues), and the
  handoffs no storage has answered yet; a cluster storage tells each system storage the
  replicas it still holds (``Held``, answered with ``Unreplicate`` where one is due: a lost
  one is made up); resend the registrations a gatekeeper has not acknowledged, and a
  restarted gatekeeper's asks that no node has answered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from gapless.impl.effects import Effect, Rejected, Send, SetTimer
from gapless.impl.ges.hops import returns_to, split_by_hop
from gapless.impl.ges.messages import (
    EventMsg,
    Held,
    LinkNews,
    ProfileAck,
    ProfileAsk,
    ProfileNews,
    Retrieve,
    Routed,
    Store,
)
from gapless.impl.ges.newsflow import link_changed, news_heard
from gapless.impl.ges.node import (
    TICK,
    NodeState,
    connect,
    event_msg,
    forward_event,
    handoffs,
    on_written,
    replicate,
    resend_queues,
    route,
    sys_forward,
    unreplicate,
    write,
)
from gapless.impl.ges.propagation import (
    acknowledged,
    gatekeepers,
    merge,
    origins,
    spread,
)
from gapless.impl.ges.records import unrouted
from gapless.impl.inputs import (
    Connect,
    Disconnect,
    Input,
    LinkChanged,
    Persisted,
    Publish,
    Receive,
    Restart,
    TimerFired,
)

__all__ = ["handle"]

Step = tuple[NodeState, tuple[Effect, ...]]


def on_restart(s: NodeState, inp: Restart, now: int) -> Step:
    """Arm the tick; a cluster storage asks every system storage for what it lacks
    (:mod:`gapless.impl.ges.tier`); a gatekeeper restarted after boot (time 0: nobody has
    registered yet) asks the nodes it gatekeeps for their clients' registrations
    (:mod:`gapless.impl.ges.propagation`)."""
    s, effects = retrieve(s, now)
    if now > 0:
        asking = frozenset(origins(s.net.hierarchy, s.name))
        s = attrs.evolve(s, interest=attrs.evolve(s.interest, asking=asking, since=now))
        s, asks = _ask(s, now)
        effects = (*effects, *asks)
    return s, (SetTimer(key=TICK, at=now + s.config.retry_us), *effects)


def retrieve(s: NodeState, now: int) -> Step:
    """A cluster storage (once it has joined, for one added while the run goes) sends a
    ``Retrieve`` to every system storage that has not answered it yet: at boot and restart,
    and again every tick, so a lost one is resent [GES "Stable storages": storage
    addition]."""
    if s.name not in s.net.fine_storages or now < s.net.joins.get(s.name, 0):
        return s, ()
    effects: list[Effect] = []
    for storage in s.net.storages:
        if storage not in s.retrieved:
            s, effs = route(s, storage, Retrieve(storage=storage, unit=s.name), frozenset(), now)
            effects.extend(effs)
    return s, tuple(effects)


def on_publish(s: NodeState, inp: Publish, now: int) -> Step:
    seq = s.pub_next.get(inp.pubend, 0)
    body = Store(
        storage=s.net.storage_of[s.name],
        origin=s.name,
        pubend=inp.pubend,
        seq=seq,
        attributes=inp.attributes,
    )
    key = ("outbox", inp.pubend, seq)
    s = attrs.evolve(
        s,
        pub_next=s.pub_next.set(inp.pubend, seq + 1),
        outbox=s.outbox.set((inp.pubend, seq), body),
    )
    s, p = write(s, key, body)
    return s, (p,)


def on_persisted(s: NodeState, inp: Persisted, now: int) -> Step:
    return on_written(s, inp.key, now)


def on_receive(s: NodeState, inp: Receive, now: int) -> Step:
    msg = inp.msg
    if type(msg) is EventMsg:
        return forward_event(s, msg, now)
    if type(msg) is Routed and msg.dest == s.name and type(msg.body) in _ROUTED_HERE:
        return _ROUTED_HERE[type(msg.body)](s, msg.body, now)
    if type(msg) is Routed:
        return route(s, msg.dest, msg.body, msg.visited, now, msg.back)
    if type(msg) is LinkNews:
        return news_heard(s, msg, inp.sender, now)
    if type(msg) is ProfileNews:
        return on_profile_news(s, msg, now)
    return s, (Rejected(reason=f"GES node {s.name}: unknown message", input=msg),)


def on_connect(s: NodeState, inp: Connect, now: int) -> Step:
    s, effects = connect(s, inp.subscriber, inp.filter, inp.connection, inp.resume, now)
    sess = s.sessions[inp.subscriber]
    entry = (inp.subscriber, sess.number, s.name, sess.profile)
    s, news = _register(s, entry, now)
    return s, (*effects, *news)


def _register(s: NodeState, entry: Any, now: int) -> Step:
    """A client attached here registered: merge it into this node's own view and send it to
    the gatekeepers of each level (:func:`gapless.impl.ges.propagation.gatekeepers`)."""
    h = s.net.hierarchy
    interest, new = merge(s.interest, (entry,), h, s.name, s.policy.unregister_unit)
    if not new:
        return s, ()
    interest = spread(interest, entry, frozenset(gatekeepers(h, s.name)))
    s = attrs.evolve(s, interest=interest)
    return _spread(s, (entry[0],), now)


def _spread(s: NodeState, clients: tuple[str, ...], now: int, since: int = -1) -> Step:
    """Send the registrations of ``clients`` to the gatekeepers still owed them: one
    ``ProfileNews`` per set of gatekeepers owed, split at each hop like an event."""
    groups: dict[frozenset[str], list[Any]] = {}
    for client in clients:
        got = s.interest.spreading.get(client)
        if got is not None:
            groups.setdefault(got[1], []).append(got[0])
    effects: list[Effect] = []
    for owed, entries in sorted(groups.items(), key=lambda kv: sorted(kv[0])):
        msg = ProfileNews(
            origin=s.name, entries=tuple(entries), dests=tuple(sorted(owed)), since=since
        )
        s, effs = on_profile_news(s, msg, now)
        effects.extend(effs)
    return s, tuple(effects)


def on_profile_news(s: NodeState, msg: ProfileNews, now: int) -> Step:
    """Registrations on their way to gatekeepers: merged and acknowledged if this node is
    one of them; one copy per next hop toward the others."""
    effects: list[Effect] = []
    if s.name in msg.dests:
        h, interest = s.net.hierarchy, s.interest
        interest, _new = merge(interest, msg.entries, h, s.name, s.policy.unregister_unit)
        if msg.since >= 0 and msg.since == interest.since and msg.origin in interest.asking:
            interest = attrs.evolve(interest, asking=interest.asking - {msg.origin})
        if interest is not s.interest:
            s = attrs.evolve(s, interest=interest)
        ids = tuple((c, number) for c, number, _node, _p in msg.entries)
        if ids:
            ack = ProfileAck(origin=msg.origin, gatekeeper=s.name, ids=ids)
            s, effs = route(s, msg.origin, ack, frozenset(), now)
            effects.extend(effs)
    seen = msg.visited | {s.name}
    dests = [d for d in msg.dests if d != s.name]
    hops, lost = split_by_hop(s.policy.route, s.net.hierarchy, s.name, s.avoid, dests, seen)
    to = returns_to(s.name, s.avoid, msg.back) if lost else None
    if to is not None:  # a dead end toward these: back where it came from
        hops.setdefault(to, []).extend(lost)
    elif lost:  # no route toward these now: recorded; the origin resends until acknowledged
        effects.append(unrouted(s.name, tuple(lost), msg.visited - {s.name}, "profile_news"))
    ahead = (*msg.back, s.name)
    for hop, dests in sorted(hops.items()):
        back = msg.back[:-1] if hop == to else ahead
        copy = attrs.evolve(msg, dests=tuple(dests), visited=seen, back=back)
        effects.append(Send(to=hop, msg=copy))
    return s, tuple(effects)


def on_profile_ack(s: NodeState, ack: ProfileAck, now: int) -> Step:
    interest = acknowledged(s.interest, ack.gatekeeper, ack.ids)
    if interest is s.interest:
        return s, ()
    return attrs.evolve(s, interest=interest), ()


def on_profile_ask(s: NodeState, ask: ProfileAsk, now: int) -> Step:
    """A restarted gatekeeper asks for the registrations of the clients attached here: they
    are owed to it again (an empty answer if there are none, so that it stops asking)."""
    interest = s.interest
    for client in sorted(s.sessions):
        sess = s.sessions[client]
        entry = (client, sess.number, s.name, sess.profile)
        interest = spread(interest, entry, frozenset({ask.gatekeeper}))
    s = attrs.evolve(s, interest=interest) if interest is not s.interest else s
    owed = tuple(c for c in sorted(s.sessions) if c in interest.spreading)
    if owed:
        return _spread(s, owed, now, since=ask.since)
    answer = ProfileNews(origin=s.name, entries=(), dests=(ask.gatekeeper,), since=ask.since)
    return on_profile_news(s, answer, now)


def _ask(s: NodeState, now: int) -> Step:
    """A restarted gatekeeper (re)sends its ask to every node that has not answered it."""
    effects: list[Effect] = []
    for origin in sorted(s.interest.asking):
        ask = ProfileAsk(origin=origin, gatekeeper=s.name, since=s.interest.since)
        s, effs = route(s, origin, ask, frozenset(), now)
        effects.extend(effs)
    return s, tuple(effects)


def on_disconnect(s: NodeState, inp: Disconnect, now: int) -> Step:
    if inp.subscriber not in s.sessions:
        return s, ()
    return attrs.evolve(s, sessions=s.sessions.remove(inp.subscriber)), ()


def on_link_changed(s: NodeState, inp: LinkChanged, now: int) -> Step:
    return link_changed(s, inp, now)


def held_replicas(s: NodeState, now: int) -> Step:
    """A cluster storage, every tick: tell each system storage which replicas of its events
    it still holds (:class:`~gapless.impl.ges.messages.Held`), so that a lost
    ``Unreplicate`` is sent again (``spec/ges.md``, "Finer-grained storages")."""
    if s.name not in s.net.fine_storages:
        return s, ()
    by: dict[str, list[int]] = {}
    for key in s.disk:
        if key[0] == "replica" and key[1] == s.name:
            by.setdefault(key[2], []).append(key[3])
    effects: list[Effect] = []
    for source, epochs in sorted(by.items()):
        held = Held(storage=source, unit=s.name, epochs=tuple(sorted(epochs)))
        s, effs = route(s, source, held, frozenset(), now)
        effects.extend(effs)
    return s, tuple(effects)


def on_held(s: NodeState, h: Held, now: int) -> Step:
    """A system storage hears which replicas a cluster storage still holds: it sends an
    ``Unreplicate`` again for each one it would have sent one for — the event was released
    (its ``release`` write completed), or the unit holds it and every client it was destined
    to confirmed it. (Dispatched here, not in :func:`~gapless.impl.ges.node.on_body`.)"""
    st = s.store
    if st is None or h.storage != s.name:
        return s, ()
    effects: list[Effect] = []
    for epoch in h.epochs:
        rel = s.disk.get(("release", s.name, epoch))
        ev = st.events.get(epoch)
        if rel is not None:
            targets = rel.targets
        elif (
            ev is None
            or h.unit in ev.units_pending
            or s.policy.replica_needed(frozenset(ev.pending))
        ):
            continue
        else:
            targets = tuple(sorted(ev.targets))
        s, effs = unreplicate(s, epoch, (h.unit,), targets, now)
        effects.extend(effs)
    return s, tuple(effects)


def _retransmit(s: NodeState, now: int) -> Step:
    """A storage resends every pending event it logged and last sent ``retry_us`` ago or
    more (an event whose write has not completed is not published yet [GES "Stable
    storages"]: it is sent once the write completes)."""
    st = s.store
    if st is None:
        return s, ()
    effects: list[Effect] = []
    sent_at = s.sent_at
    for epoch, ev in sorted(st.events.items()):
        if ("log", s.name, epoch) not in s.disk:
            continue  # not durable yet: nothing about it may leave the storage
        if now - sent_at.get(epoch, -s.config.retry_us) < s.config.retry_us:
            continue
        sent_at = sent_at.set(epoch, now)
        s, effs = forward_event(s, event_msg(s, ev), now)
        effects.extend(effs)
        s, effs = replicate(s, ev, now)
        effects.extend(effs)
        s, effs = sys_forward(s, ev, now)
        effects.extend(effs)
    return attrs.evolve(s, sent_at=sent_at), tuple(effects)


def on_timer(s: NodeState, inp: TimerFired, now: int) -> Step:
    if inp.key != TICK:
        return s, ()
    effects: list[Effect] = [SetTimer(key=TICK, at=now + s.config.retry_us)]
    for _key, body in sorted(s.outbox.items()):  # by (pubend, seq): not the map's hash order
        s, effs = route(s, body.storage, body, frozenset(), now)
        effects.extend(effs)
    s, effs = _retransmit(s, now)
    effects.extend(effs)
    s, effs = resend_queues(s, now)
    effects.extend(effs)
    s, effs = retrieve(s, now)
    effects.extend(effs)
    s, effs = held_replicas(s, now)
    effects.extend(effs)
    for client in sorted(s.sessions):
        s, effs = handoffs(s, s.sessions[client], now)
        effects.extend(effs)
    s, effs = _spread(s, tuple(sorted(s.interest.spreading)), now)
    effects.extend(effs)
    s, effs = _ask(s, now)
    effects.extend(effs)
    return s, tuple(effects)


_ROUTED_HERE: Final[dict[type, Callable[[NodeState, Any, int], Step]]] = {
    Held: on_held,
    ProfileAck: on_profile_ack,
    ProfileAsk: on_profile_ask,
}
"""Routed bodies addressed to this node that this module handles (not
:func:`~gapless.impl.ges.node.on_body`)."""

_HANDLERS: Final[dict[type, Callable[[NodeState, Any, int], Step]]] = {
    Restart: on_restart,
    Publish: on_publish,
    Persisted: on_persisted,
    Receive: on_receive,
    Connect: on_connect,
    Disconnect: on_disconnect,
    LinkChanged: on_link_changed,
    TimerFired: on_timer,
}


def handle(s: NodeState, inp: Input, now: int) -> Step:
    """One step of a GES node: the handler of ``inp``'s type."""
    return _HANDLERS[type(inp)](s, inp, now)
