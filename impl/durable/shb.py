"""The subscriber hosting broker (SHB) of durable subscriptions as a pure role [DUR §4].

Theory of operation
-------------------
An SHB hosts durable subscribers and sits at the bottom of each pubend's knowledge tree
[DUR §3]. Per pubend ``p`` it holds (:class:`PubendView`) the knowledge it received from
upstream (D, S and L ticks in the verified :class:`~gapless.impl.streams.KnowledgeStream`),
its release state (:class:`~gapless.impl.durable.release.ShbRelease`: ``latestDelivered(p)``,
``released(s, p)``) and the pubend's PFS log stream
(:class:`~gapless.impl.durable.pfs.PfsStream`). It composes them, copying none:

* **constream** [DUR §4.1]: one consolidated stream for every subscriber not in catchup. When
  knowledge makes ``(latestDelivered(p), h]`` free of doubt (no Q tick), each event there is
  filtered *once* against every hosted subscriber, connected or not; each timestamp that
  matched someone becomes a PFS record naming them [DUR §4.2]; the PFS is synced, then
  ``latestDelivered(p) = h`` is put and flushed (``spec/durable_storage.md`` rule 3), and only
  then are the connected constream subscribers sent their event messages and one silence up to
  ``h``. So ``latestDelivered(p)`` never passes a PFS record that is not on stable storage, and
  every constream subscriber's position *is* ``latestDelivered(p)``.
* **catchup** [DUR §4.1]: a (re)connecting subscriber is in catchup for every pubend, its doubt
  horizon at the CT it presents (or the one the SHB kept, :class:`AckMode` ``SHB``). Each
  catchup stream advances by :func:`~gapless.impl.durable.catchup.catchup_step` (PFS batch
  reads, nacks for matched ticks the SHB does not hold, gaps for ticks the upstream says are
  L, refiltering for chopped ticks) and *switches over* to the constream when its position
  reaches ``latestDelivered(p)`` — never before (``ShbPolicy.switchover_at``).
* **acks** [DUR §2]: a subscriber's CT raises ``released(s, p)`` (merged by maximum, never past
  what the SHB delivered to it on this connection), put and flushed at once; when
  ``released(p)`` rises the PFS chops what it releases.
* **no event cache**: the SHB forgets the knowledge at or below ``latestDelivered(p)`` and every
  catchup stream's position; a stream that needs it later nacks it upstream [DUR §4.1].
* **reports and retries**: on the SHB's timer it reports ``(released(p), latestDelivered(p))``
  upstream for each pubend (:class:`~gapless.impl.durable.release.ReleaseReport`), nacks the
  first hole above ``latestDelivered(p)`` and lets every catchup stream ask again.
* **crash** [DUR §4.1]: :func:`shb_recover` rebuilds the role from what stable storage kept
  (``latestDelivered``, ``released(s, p)``, each PFS); the knowledge is gone, so the constream
  resumes from ``latestDelivered(p)`` by nacking, and no subscriber is connected: each enters
  catchup when it reconnects.
* **sync points** [DUR §5.1.2]: with ``ShbConfig.sync_every = n`` the constream holds a range
  back until it has ``n`` events or the timer fires (a group commit: one PFS sync per ``n``).
* **leaving and moving** [DUR §1 item 5, §3]: :func:`on_unsubscribe` drops a subscriber;
  :func:`on_move_in`, :func:`on_unregister` and :func:`on_unregistered` carry out
  reconnect-anywhere (:mod:`gapless.impl.durable.shb_move`, ``spec/durable.md``); in ack mode
  ``SHB`` the new SHB first fetches the CT the old one keeps (:func:`on_checkpoint_query`,
  :func:`on_checkpoint_answer`).

The state, the constream and a catchup stream's step live in
:mod:`gapless.impl.durable.shb_core`; this module re-exports the public names.

Upstream the SHB reads GD's :class:`~gapless.impl.gd.messages.Knowledge` (a data tick, silence
ranges, first-time or a nack's answer) and :class:`Lost` (ticks the pubend has made L, its
answer to a nack over released ticks); it sends GD :class:`~gapless.impl.gd.messages.Nack` and
release reports. A silence range of a durable pubend's knowledge means S (the pubend never
finalises a tick: it releases it to L instead), so ``prefix`` is ignored here.

Everything observable is an :class:`Emit` effect carrying a ``dur_*`` record of
:mod:`gapless.impl.durable.records` (a ``dur_message`` *is* the delivery); storage effects of
:mod:`gapless.impl.durable.storage` come in the order a store must carry them out; the world
carries out the effects of one input before it feeds the next.

Network input never raises (a :class:`~gapless.impl.effects.Rejected` effect); an ignored input
returns the same state and ``()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from pyrsistent import pmap, pset

from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.messages import GapMessage, SilenceMessage
from gapless.impl.durable.pfs import PfsStream
from gapless.impl.durable.records import (
    DurAck,
    DurConnect,
    DurDisconnect,
    DurJoin,
    DurLeave,
)
from gapless.impl.durable.release import (
    AckMode,
    ShbRelease,
    SubscriberRecord,
    shb_acknowledge,
    shb_crash,
    shb_join,
    shb_register_moved,
    shb_resume_point,
    shb_send_report,
)
from gapless.impl.durable.shb_core import (
    NEVER,
    Effects,
    PubendView,
    Session,
    ShbConfig,
    ShbPolicy,
    ShbState,
    Subscription,
    catchups,
    constream,
    deliver,
    forget,
    reject,
    release_moved,
    sent,
    step_catchup,
)
from gapless.impl.durable.shb_inputs import (
    Ack,
    CheckpointAnswer,
    CheckpointQuery,
    Emit,
    Lost,
    MoveIn,
    Subscribe,
    Tick,
    Unregister,
    Unregistered,
    Unsubscribe,
)
from gapless.impl.durable.shb_move import (
    activations,
    drop,
    drop_fetching,
    fetch_retries,
    on_checkpoint_answer,
    on_checkpoint_query,
    on_move_in,
    on_unregister,
    on_unregistered,
)
from gapless.impl.durable.storage import (
    Flush,
    PutCheckpoint,
    PutReleased,
)
from gapless.impl.effects import Send
from gapless.impl.filters import FilterIndex, FilterSyntaxError, parse_filter
from gapless.impl.gd.messages import Knowledge, Nack
from gapless.impl.inputs import Connect, Disconnect
from gapless.impl.knowledge import D, L, S
from gapless.impl.streams import CuriosityStream, KnowledgeStream

__all__ = [
    "Ack",
    "CheckpointAnswer",
    "CheckpointQuery",
    "Emit",
    "Lost",
    "MoveIn",
    "PubendView",
    "Session",
    "ShbConfig",
    "ShbPolicy",
    "ShbState",
    "Subscribe",
    "Subscription",
    "Tick",
    "Unregister",
    "Unregistered",
    "Unsubscribe",
    "commit_acks",
    "on_ack",
    "on_checkpoint_answer",
    "on_checkpoint_query",
    "on_connect",
    "on_disconnect",
    "on_knowledge",
    "on_lost",
    "on_move_in",
    "on_subscribe",
    "on_tick",
    "on_unregister",
    "on_unregistered",
    "on_unsubscribe",
    "shb_recover",
    "shb_start",
]


def shb_start(config: ShbConfig) -> ShbState:
    """A fresh SHB: nothing delivered, no subscriber."""
    views = {
        p: PubendView(
            knowledge=KnowledgeStream(),
            release=ShbRelease(shb=config.shb, pubend=p),
            pfs=PfsStream.empty(p, config.policy.pfs),
        )
        for p in config.pubends
    }
    return ShbState(config=config, views=pmap(views))


def shb_recover(
    config: ShbConfig,
    subscriptions: Iterable[tuple[str, int, str]],
    *,
    latest: Mapping[str, int],
    released: Mapping[tuple[int, str], int],
    pfs: Mapping[str, PfsStream],
    moved: Mapping[str, tuple[str | None, Mapping[str, int], int]] | None = None,
    pending: Mapping[str, Mapping[str, int]] | None = None,
) -> ShbState:
    """The SHB after a crash [DUR §4.1], from stable storage: ``latest`` (latestDelivered),
    ``released`` (``released(s, p)`` by subscriber number), each pubend's recovered ``pfs``;
    ``subscriptions`` are ``(name, number, filter)`` (the SHB's configuration). Knowledge and
    connections are gone; what it reported is taken to be ``released(p)``
    (:func:`~gapless.impl.durable.release.shb_crash`). ``moved`` gives, for each subscriber
    that moved here with its record active, the SHB it came from (None once that one
    confirmed dropping it), its ``refilter_upto`` and the move's generation; the caller keeps
    them (:class:`~gapless.impl.durable.storage.PutMove` rows). ``pending`` gives, for each
    moved subscriber whose record was not yet active (it has no ``released(s, p)`` row), the
    CT it presented: its record is registered pending there again
    (:func:`~gapless.impl.durable.release.shb_register_moved`), after the crash step, so it
    activates only above what this SHB may have reported; the SHB it came from still holds
    its own."""
    moves = moved or {}
    waiting = pending or {}
    subs = {
        name: Subscription(
            name=name,
            number=n,
            filter=parse_filter(f),
            refilter_upto=pmap(moves[name][1]) if name in moves else pmap(),
            previous=moves[name][0] if name in moves else None,
            generation=moves[name][2] if name in moves else 0,
        )
        for name, n, f in subscriptions
    }
    views = {}
    for p in config.pubends:
        ld = latest.get(p, -1)
        recs = {
            name: SubscriberRecord(released=released.get((s.number, p), ld))
            for name, s in subs.items()
            if name not in waiting
        }
        rel = shb_crash(ShbRelease(shb=config.shb, pubend=p, latest_delivered=ld, records=recs))
        for name in sorted(waiting):
            rel = shb_register_moved(rel, name, waiting[name].get(p, -1))
        views[p] = PubendView(
            knowledge=KnowledgeStream(),
            release=rel,
            pfs=(pfs.get(p) or PfsStream.empty(p)).with_policy(config.policy.pfs),
        )
    index = FilterIndex.build((name, s.filter) for name, s in subs.items())
    # never reuse a number a live PFS record still names (a subscriber that left): the new
    # subscriber would inherit its records
    named = (len(v.pfs.last_index) for v in views.values())
    top = max(1 + max((s.number for s in subs.values()), default=-1), *named)
    moving = pset(name for name, s in subs.items() if s.previous is not None)
    return ShbState(
        config=config,
        subs=pmap(subs),
        index=index,
        views=pmap(views),
        next_number=top,
        moving=moving,
    )


# ------------------------------------------------------------------------------ handlers


def on_subscribe(state: ShbState, inp: Subscribe, now: int) -> tuple[ShbState, Effects]:
    """A new durable subscriber: registered at ``latestDelivered(p)`` (durable at once),
    connected on the constream [DUR §4.1]."""
    if inp.subscriber in state.subs:
        return state, reject(f"subscribe at {state.config.shb!r}: already subscribed", inp)
    try:
        flt = parse_filter(inp.filter)
    except FilterSyntaxError as err:
        return state, reject(f"subscribe at {state.config.shb!r}: bad filter: {err}", inp)
    number = state.next_number
    views = state.views
    start: dict[str, int] = {}
    effects: list[Any] = []
    for p, view in state.views.items():
        rel, start[p] = shb_join(view.release, inp.subscriber)
        views = views.set(p, attrs.evolve(view, release=rel))
        effects.append(PutReleased(subscriber=number, pubend=p, timestamp=start[p]))
        if state.config.ack_mode is AckMode.SHB:
            effects.append(PutCheckpoint(subscriber=number, pubend=p, timestamp=start[p]))
    effects.append(Flush())
    ct = CheckpointToken.of(start)
    effects.append(
        Emit(
            kind="dur_join",
            detail=DurJoin(
                subscriber=inp.subscriber, shb=state.config.shb, filter=inp.filter, ct=ct
            ),
        )
    )
    sub = Subscription(name=inp.subscriber, number=number, filter=flt)
    sess = Session(connection=inp.connection, position=pmap(start))
    new = attrs.evolve(
        state,
        subs=state.subs.set(inp.subscriber, sub),
        index=state.index.add(inp.subscriber, flt),
        next_number=number + 1,
        sessions=state.sessions.set(inp.subscriber, sess),
        views=views,
    )
    return new, tuple(effects)


def on_connect(state: ShbState, inp: Connect, now: int) -> tuple[ShbState, Effects]:
    """A reconnection: in catchup for every pubend from the CT presented as the kit's
    ``Connect.resume`` (None in ack mode ``SHB``: the CT the SHB kept) [DUR §2, §4.1]; each
    catchup stream starts at once."""
    name = inp.subscriber
    resume = inp.resume
    if name not in state.subs or name in state.sessions:
        why = "unknown subscriber" if name not in state.subs else "already connected"
        return state, reject(f"connect at {state.config.shb!r}: {why}", inp)
    if resume is not None and not isinstance(resume, CheckpointToken):
        return state, reject(
            f"connect at {state.config.shb!r}: resume {resume!r} is not a checkpoint token; "
            "allowed: a CheckpointToken, or None in ack mode SHB",
            inp,
        )
    start: dict[str, int] = {}
    for p, view in state.views.items():
        presented = None if resume is None else resume.at(p)
        at, rej = shb_resume_point(view.release, name, state.config.ack_mode, presented)
        if at is None or at > view.release.latest_delivered:
            why = rej[0].reason if rej else f"CT {at} for {p} beyond latestDelivered"
            return state, reject(why, inp)
        start[p] = at
    ct = CheckpointToken.of(start)
    pubends = state.config.pubends
    effects: list[Any] = []
    if state.config.policy.catchup:
        sess = Session(
            connection=inp.connection,
            position=pmap(start),
            catchup=pmap(dict.fromkeys(pubends, NEVER)),
        )
        catchup = frozenset(pubends)
        state = attrs.evolve(state, catching=state.catching.add(name))
    else:  # the planted shortcut: a gap to latestDelivered, straight onto the constream
        sess = Session(connection=inp.connection, position=pmap(start))
        catchup = frozenset()
    detail = DurConnect(subscriber=name, shb=state.config.shb, ct=ct, catchup=catchup)
    effects.append(Emit(kind="dur_connect", detail=detail))
    state = attrs.evolve(state, sessions=state.sessions.set(name, sess))
    if not state.config.policy.catchup:
        for p in pubends:
            ld = state.latest_delivered(p)
            if start[p] < ld:
                effects.append(deliver(state, name, GapMessage(pubend=p, t0=start[p], t=ld)))
        sess = attrs.evolve(sess, position=pmap({p: state.latest_delivered(p) for p in pubends}))
        return attrs.evolve(state, sessions=state.sessions.set(name, sess)), tuple(effects)
    for p in pubends:
        state, fx = step_catchup(state, name, p)
        effects.extend(fx)
    return state, tuple(effects)


def on_disconnect(state: ShbState, inp: Disconnect, now: int) -> tuple[ShbState, Effects]:
    """The connection ended; the subscription and its records stay. A subscriber whose move
    here waited for its CT (ack mode SHB) abandons that move here."""
    if inp.subscriber in state.fetching and inp.subscriber not in state.sessions:
        return drop_fetching(state, inp.subscriber), ()
    if inp.subscriber not in state.sessions:
        return state, reject(f"disconnect at {state.config.shb!r}: not connected", inp)
    detail = DurDisconnect(subscriber=inp.subscriber, shb=state.config.shb)
    new = attrs.evolve(
        state,
        sessions=state.sessions.remove(inp.subscriber),
        catching=state.catching.discard(inp.subscriber),
    )
    return new, (Emit(kind="dur_disconnect", detail=detail),)


def on_unsubscribe(state: ShbState, inp: Unsubscribe, now: int) -> tuple[ShbState, Effects]:
    """The subscriber leaves [DUR §3]: :func:`~gapless.impl.durable.shb_move.drop` (its
    record leaves the release computation — the proved ``leave`` step —, its rows the tables,
    its filter the index, so no PFS record names it any more), then a ``dur_leave``. Its CT
    is refused from then on (it is no longer hosted here)."""
    name = inp.subscriber
    if name not in state.subs:
        return state, reject(f"unsubscribe at {state.config.shb!r}: {name!r} not hosted here", inp)
    state, effects = drop(state, name)
    effects.append(Emit(kind="dur_leave", detail=DurLeave(subscriber=name)))
    return state, tuple(effects)


def on_ack(state: ShbState, inp: Ack, now: int) -> tuple[ShbState, Effects]:
    """``released(s, p)`` rises to the acknowledged CT, never past what this connection
    delivered (the SHB never trusts a CT beyond that [DUR §2]); put and flushed at once, or
    with ``ack_batch`` committed with the others waiting (:func:`commit_acks`)."""
    name = inp.subscriber
    sess = state.sessions.get(name)
    if name not in state.subs:
        why = "not hosted here (never subscribed, unsubscribed or moved away)"
        return state, reject(f"ack at {state.config.shb!r}: {name!r} {why}", inp)
    if sess is None or not isinstance(inp.ct, CheckpointToken):
        return state, reject(f"ack at {state.config.shb!r}: not connected or no CT", inp)
    effects: list[Any] = [
        Emit(kind="dur_ack", detail=DurAck(subscriber=name, shb=state.config.shb, ct=inp.ct))
    ]
    acks: list[tuple[str, str, int]] = []
    for p, t in sorted(inp.ct.entries.items()):
        if p not in state.views or t > sent(state, name, sess, p):
            effects.extend(reject(f"ack of {p} at {t}: not delivered here", (name, p, t)))
            continue
        acks.append((name, p, t))
    batch = state.config.ack_batch
    if batch is None:
        state, fx = _commit(state, acks)
        return state, (*effects, *fx)
    state = attrs.evolve(state, acks=(*state.acks, *acks), acks_waiting=state.acks_waiting + 1)
    if state.acks_waiting >= batch:
        state, fx = commit_acks(state)
        effects.extend(fx)
    return state, tuple(effects)


def commit_acks(state: ShbState) -> tuple[ShbState, Effects]:
    """Commit every waiting acknowledgement in one transaction [DUR §5.2]."""
    if not state.acks_waiting:
        return state, ()
    acks = state.acks
    return _commit(attrs.evolve(state, acks=(), acks_waiting=0), acks)


def _commit(state: ShbState, acks: Iterable[tuple[str, str, int]]) -> tuple[ShbState, Effects]:
    """Raise ``released(s, p)`` for ``acks`` (max-merged; a subscriber no longer hosted is
    skipped), put the rows, one ``Flush``, then chop what that allows."""
    effects: list[Any] = []
    moved: dict[str, int] = {}
    views = state.views
    for name, p, t in acks:
        sub = state.subs.get(name)
        if sub is None:
            continue
        view = views[p]
        rel, rej = shb_acknowledge(view.release, name, t)
        effects.extend(rej)
        if rel is view.release:
            continue
        moved.setdefault(p, view.released())
        views = views.set(p, attrs.evolve(view, release=rel))
        if name in rel.pending:  # a moved subscriber's record is written once active
            continue
        effects.append(PutReleased(subscriber=sub.number, pubend=p, timestamp=t))
        if state.config.ack_mode is AckMode.SHB:
            effects.append(PutCheckpoint(subscriber=sub.number, pubend=p, timestamp=t))
    if not moved:
        return state, tuple(effects)
    effects.append(Flush())
    state = attrs.evolve(state, views=views)
    for p, before in sorted(moved.items()):
        state, fx = release_moved(state, p, before)
        effects.extend(fx)
    return state, tuple(effects)


def _accumulate(k: KnowledgeStream, msg: Knowledge) -> KnowledgeStream:
    for lo, hi in msg.silence:
        if lo >= 0 and hi >= lo:
            k = k.accumulate(lo, hi, S)
    if msg.data is not None and msg.data.tick >= 0:
        k = k.accumulate(msg.data.tick, msg.data.tick, D(msg.data))
    return k


def _learn(state: ShbState, p: str, k: KnowledgeStream) -> tuple[ShbState, Effects]:
    """The knowledge of ``p`` became ``k``: the constream, then the catchup streams advance,
    then what no stream needs is forgotten. When that changes nothing (a repeated message,
    or one about ticks already forgotten), the input is ignored: the same state and ``()``."""
    view = state.views[p]
    new = attrs.evolve(state, views=state.views.set(p, attrs.evolve(view, knowledge=k)))
    new, fx = constream(new, p)
    if not fx:
        new, fx = catchups(new, p)
        new = forget(new, p)
    if not fx and new.views[p].knowledge == view.knowledge:
        return state, ()
    return new, fx


def on_knowledge(state: ShbState, msg: Knowledge, now: int) -> tuple[ShbState, Effects]:
    """Knowledge from upstream (first-time or a nack's answer): the constream and the
    catchup streams of its pubend advance as far as it allows."""
    view = state.views.get(msg.pubend) if isinstance(msg, Knowledge) else None
    if view is None:
        return state, reject(f"knowledge at {state.config.shb!r}: unknown pubend", msg)
    try:
        k = _accumulate(view.knowledge, msg)
    except (ValueError, TypeError) as err:  # the lattice refuses a conflicting value
        return state, reject(f"knowledge at {state.config.shb!r}: {err}", msg)
    if k == view.knowledge:
        return state, ()
    before = view.release.latest_delivered
    new, fx = _learn(state, msg.pubend, k)
    if msg.retransmission and msg.silence:
        more = _next_window(new, msg.pubend, before)
        if more:
            return new, (*fx, *more)
    return new, fx


def _constream_nack(state: ShbState, p: str) -> Effects:
    """The nack of the constream's doubt: the first hole above latestDelivered(p), at most
    ``window`` ticks of it; nothing when there is no bounded hole."""
    first, last = state.views[p].knowledge.next_gap(state.latest_delivered(p) + 1)
    if last is None:
        return ()
    end = min(last, first + state.config.window - 1)
    nack = Nack(pubend=p, start=first, end=end, retransmission=True)
    return (Send(to=state.config.upstream, msg=nack),)


def _next_window(state: ShbState, p: str, before: int) -> Effects:
    """Flow control of the constream's nacks [DUR §4.1]: a nack's answer ends with its
    silence message; when that message moved latestDelivered(p) up from ``before`` and a hole
    is left (a constream recovering after a crash, or an answer the upstream cut at its
    answer window), the next window is asked at once. The constream so recovers as fast as
    answers come back and the SHB handles them (its capacity, when the world models one),
    one window in flight per pubend; the timer only retries (:func:`on_tick`)."""
    if state.latest_delivered(p) <= before:
        return ()
    return _constream_nack(state, p)


def on_lost(state: ShbState, msg: Lost, now: int) -> tuple[ShbState, Effects]:
    """Upstream says ``[start, end]`` is L: catchup streams waiting there may send gaps."""
    view = state.views.get(msg.pubend) if isinstance(msg, Lost) else None
    if view is None or msg.start < 0 or msg.end < msg.start:
        return state, reject(f"lost at {state.config.shb!r}: malformed", msg)
    k = view.knowledge.accumulate(msg.start, msg.end, L)
    if k == view.knowledge:
        return state, ()
    return _learn(state, msg.pubend, k)


def on_tick(state: ShbState, inp: Tick, now: int) -> tuple[ShbState, Effects]:
    """Report ``(released(p), latestDelivered(p))`` upstream; nack the first hole above
    latestDelivered (the constream's doubt); forget the istream's curiosity and let every
    catchup stream ask again (consolidated: one nack per tick, ``ShbConfig.consolidate``). With
    ``sync_every``, first deliver what the constream held back (a sync point); with
    ``ack_batch``, first commit the waiting acknowledgements."""
    effects: list[Any] = []
    if state.config.sync_every is not None:
        for p in state.config.pubends:
            state, fx = constream(state, p, force=True)
            effects.extend(fx)
    state, fx = commit_acks(state)  # before the report: it reports what is committed
    effects.extend(fx)
    views = state.views
    for p in state.config.pubends:  # in configured order: a hash map's order would make
        view = state.views[p]  # the effects depend on PYTHONHASHSEED
        rel, rep = shb_send_report(view.release)
        # the istream forgets its curiosity: every catchup stream asks again below, and a
        # tick already asked is asked once more, not once per stream [GD §3.1, DUR §5]
        views = views.set(p, attrs.evolve(view, release=rel, curious=CuriosityStream()))
        effects.append(Send(to=state.config.upstream, msg=rep))
        effects.append(Emit(kind="dur_report", detail=rep))
        effects.extend(_constream_nack(state, p))
    puts, unregister = activations(state, attrs.evolve(state, views=views))
    effects.extend(puts)
    sessions = state.sessions
    for name in sorted(state.sessions):  # by name, for the same reason
        sess = state.sessions[name]
        pos = sess.position
        for p in state.config.pubends:  # a silence to whom matched nothing lately [DUR §4.1]
            ld = views[p].release.latest_delivered
            if p not in sess.catchup and pos[p] < ld:
                at = sent(state, name, sess, p)
                if at < ld:
                    effects.append(deliver(state, name, SilenceMessage(pubend=p, t0=at, t=ld)))
                pos = pos.set(p, ld)
        fresh = pmap(dict.fromkeys(sess.catchup, NEVER))
        if pos is not sess.position or fresh != sess.catchup:
            sessions = sessions.set(name, attrs.evolve(sess, position=pos, catchup=fresh))
    state = attrs.evolve(state, views=views, sessions=sessions)
    for p in state.config.pubends:
        state, fx = catchups(state, p)
        effects.extend(fx)
    state, fx = fetch_retries(state, now)
    return state, (*effects, *fx, *unregister)
