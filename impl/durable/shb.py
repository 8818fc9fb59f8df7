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
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from gapless.impl.durable.bigmap import ShardedMap, sharded
from gapless.impl.durable.catchup import catchup_step
from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.messages import EventMessage, GapMessage, SilenceMessage
from gapless.impl.durable.pfs import PfsStream
from gapless.impl.durable.records import (
    DurAck,
    DurConnect,
    DurDisconnect,
    DurJoin,
    DurMessage,
    DurSwitchover,
)
from gapless.impl.durable.release import (
    AckMode,
    ShbRelease,
    SubscriberRecord,
    shb_acknowledge,
    shb_crash,
    shb_delivered,
    shb_join,
    shb_resume_point,
    shb_send_report,
)
from gapless.impl.durable.shb_inputs import (
    Ack,
    Emit,
    Lost,
    Subscribe,
    Tick,
)
from gapless.impl.durable.storage import (
    Flush,
    PutCheckpoint,
    PutLatestDelivered,
    PutReleased,
)
from gapless.impl.effects import Rejected, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.filters import Filter, FilterIndex, FilterSyntaxError, parse_filter
from gapless.impl.gd.messages import Data, Knowledge, Nack
from gapless.impl.inputs import Connect, Disconnect
from gapless.impl.knowledge import D, L, S
from gapless.impl.streams import KnowledgeStream

__all__ = [
    "Ack",
    "Emit",
    "Lost",
    "PubendView",
    "Session",
    "ShbConfig",
    "ShbPolicy",
    "ShbState",
    "Subscribe",
    "Subscription",
    "Tick",
    "on_ack",
    "on_connect",
    "on_disconnect",
    "on_knowledge",
    "on_lost",
    "on_subscribe",
    "on_tick",
    "shb_recover",
    "shb_start",
]

NEVER: Final = -1
"""``asked`` of a catchup stream that has nacked nothing yet."""


# ------------------------------------------------------------------------------ state


@final
@attrs.frozen(kw_only=True)
class ShbPolicy:
    """The SHB's rules; the default is the paper's. A planted bug is another value."""

    #: switch a catchup stream over once its position reaches latestDelivered(p) minus this
    #: (0: the paper's rule [DUR §4.1])
    switchover_lag: int = 0
    #: a reconnecting subscriber gets a catchup stream (the paper); False: it is put straight
    #: on the constream with a gap up to latestDelivered(p) (a planted bug)
    catchup: bool = True

    def switchover_at(self, latest_delivered: int) -> int:
        """The position at which a catchup stream may switch over to the constream."""
        return latest_delivered - self.switchover_lag


@final
@attrs.frozen(kw_only=True)
class ShbConfig:
    """``shb`` (this node), ``upstream`` (where nacks and reports go), the ``pubends`` it
    carries, who keeps CT (``ack_mode``), the catchup read/nack ``window`` (Q ticks per
    step) and the ``policy``."""

    shb: str
    upstream: str
    pubends: tuple[str, ...]
    ack_mode: AckMode = AckMode.SUBSCRIBER
    window: int = 16
    policy: ShbPolicy = ShbPolicy()

    def __attrs_post_init__(self) -> None:
        if not self.pubends or len(set(self.pubends)) != len(self.pubends):
            raise ProtocolMisuse(
                f"ShbConfig: pubends {self.pubends!r}; allowed: one or more distinct names"
            )
        if self.window < 1:
            raise ProtocolMisuse(f"ShbConfig: window {self.window}; allowed: an int >= 1")


@final
@attrs.frozen(kw_only=True)
class Subscription:
    """A durable subscription hosted here: its PFS ``number`` and parsed ``filter``."""

    name: str
    number: int
    filter: Filter


@final
@attrs.frozen(kw_only=True)
class Session:
    """A connected subscriber: per pubend the ``t`` of the last message sent on this
    connection (``position``), and per pubend in catchup the highest tick it nacked. For a
    pubend served by the constream, ``position`` is a lower bound that the constream does not
    raise per event (that would touch a map of every connected subscriber per event):
    :meth:`ShbState.position` adds what the PFS and the release record say
    (:func:`_sent`)."""

    connection: int
    position: PMap[str, int]
    catchup: PMap[str, int] = attrs.field(factory=pmap)


@final
@attrs.frozen(kw_only=True)
class PubendView:
    """What the SHB holds of one pubend: ``knowledge``, ``release`` and ``pfs``."""

    knowledge: KnowledgeStream
    release: ShbRelease
    pfs: PfsStream

    def released(self) -> int:
        """``released(p)`` [DUR §4.1]: kept by ``release`` (its minimum over the active
        records is a :class:`~gapless.impl.durable.minbag.MinBag`), no scan."""
        return self.release.released()


@final
@attrs.frozen(kw_only=True)
class ShbState:
    """The SHB (module doc): ``subs`` every durable subscription hosted (``index`` their
    filters, matched by lookup [GD §4.1]), ``sessions`` the connected ones (``catching``: those
    with a catchup stream, so that the constream's work never scans all of them), ``views``
    one per pubend; ``next_number`` is the PFS number the next subscriber gets."""

    config: ShbConfig
    subs: PMap[str, Subscription] = attrs.field(factory=pmap)
    index: FilterIndex = attrs.field(factory=FilterIndex)
    sessions: ShardedMap[str, Session] = attrs.field(factory=ShardedMap, converter=sharded)
    catching: PSet[str] = attrs.field(factory=pset)
    next_number: int = 0
    views: PMap[str, PubendView] = attrs.field(factory=pmap)

    def latest_delivered(self, pubend: str) -> int:
        """``latestDelivered(p)``."""
        return self.views[pubend].release.latest_delivered

    def position(self, subscriber: str, pubend: str) -> int:
        """The ``t`` of the last message sent to connected ``subscriber`` for ``pubend``."""
        return _sent(self, subscriber, self.sessions[subscriber], pubend)


def _sent(state: ShbState, name: str, sess: Session, p: str) -> int:
    """Where ``name``'s message chain for ``p`` is. In catchup: ``sess.position``. On the
    constream, the constream sent it every event that matched it since ``sess.position``
    (where it switched over, joined, or the timer last sent it a silence), and each of those
    is a PFS record naming it; its latest is ``lastIndex(s)`` [DUR §4.2]. A record chopped
    since lies at or below ``released(p) <= released(s, p)``, which is at or below what was
    sent to it (an ack never passes that), so the chain is at the maximum of the three."""
    at = sess.position.get(p, -1)
    if p in sess.catchup:
        return at
    view = state.views[p]
    rec = view.release.records.get(name)
    if rec is not None and rec.released > at:
        at = rec.released
    pfs = view.pfs
    number = state.subs[name].number
    if number < len(pfs.last_index):
        index = pfs.last_index[number]
        if index >= pfs.first_index:
            at = max(at, pfs.records[index - pfs.first_index].timestamp)
    return at


Effects = tuple[Any, ...]


def shb_start(config: ShbConfig) -> ShbState:
    """A fresh SHB: nothing delivered, no subscriber."""
    views = {
        p: PubendView(
            knowledge=KnowledgeStream(),
            release=ShbRelease(shb=config.shb, pubend=p),
            pfs=PfsStream.empty(p),
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
) -> ShbState:
    """The SHB after a crash [DUR §4.1], from stable storage: ``latest`` (latestDelivered),
    ``released`` (``released(s, p)`` by subscriber number), each pubend's recovered ``pfs``;
    ``subscriptions`` are ``(name, number, filter)`` (the SHB's configuration). Knowledge and
    connections are gone; what it reported is taken to be ``released(p)``
    (:func:`~gapless.impl.durable.release.shb_crash`)."""
    subs = {
        name: Subscription(name=name, number=n, filter=parse_filter(f))
        for name, n, f in subscriptions
    }
    views = {}
    for p in config.pubends:
        ld = latest.get(p, -1)
        recs = {
            name: SubscriberRecord(released=released.get((s.number, p), ld))
            for name, s in subs.items()
        }
        rel = ShbRelease(shb=config.shb, pubend=p, latest_delivered=ld, records=recs)
        views[p] = PubendView(
            knowledge=KnowledgeStream(),
            release=shb_crash(rel),
            pfs=pfs.get(p) or PfsStream.empty(p),
        )
    index = FilterIndex.build((name, s.filter) for name, s in subs.items())
    top = 1 + max((s.number for s in subs.values()), default=-1)
    return ShbState(config=config, subs=pmap(subs), index=index, views=pmap(views), next_number=top)


# ------------------------------------------------------------------------------ helpers


def _reject(reason: str, inp: object) -> Effects:
    return (Rejected(reason=reason, input=inp),)


def _deliver(state: ShbState, sub: str, message: Any) -> Emit:
    return Emit(
        kind="dur_message",
        detail=DurMessage(subscriber=sub, shb=state.config.shb, message=message),
    )


def _release_moved(state: ShbState, p: str, before: int) -> tuple[ShbState, Effects]:
    """``released(p)`` may have risen from ``before``: chop the PFS up to it (the puts it
    depends on are flushed already)."""
    view = state.views[p]
    now = view.released()
    if now <= before or now < 0:
        return state, ()
    pfs, fx = view.pfs.chop(now)
    return attrs.evolve(state, views=state.views.set(p, attrs.evolve(view, pfs=pfs))), fx


def _forget(state: ShbState, p: str) -> ShbState:
    """Drop the knowledge no stream needs any more: at or below ``latestDelivered(p)`` and
    every catchup stream's position. The SHB is no event cache [DUR §4.1]: a stream that
    needs those ticks later (a reconnection) nacks them upstream."""
    view = state.views[p]
    floor = view.release.latest_delivered
    for name in state.catching:
        sess = state.sessions[name]
        if p in sess.catchup:
            floor = min(floor, sess.position.get(p, -1))
    if floor < 0:
        return state
    k = view.knowledge.forget(0, floor)
    if k == view.knowledge:
        return state
    return attrs.evolve(state, views=state.views.set(p, attrs.evolve(view, knowledge=k)))


# ------------------------------------------------------------------------------ constream


def _filter_once(
    state: ShbState, p: str, lo: int, hi: int
) -> tuple[PfsStream, Effects, dict[str, list[Data]]]:
    """Filter each event of ``[lo, hi]`` once against every hosted subscriber (an index
    lookup: the cost grows with the matching subscribers, not with all of them [GD §4.1]):
    PFS records for the matching numbers, and the events for each matching subscriber that
    is connected and not in catchup."""
    view = state.views[p]
    pfs = view.pfs
    out: list[Any] = []
    sends: dict[str, list[Data]] = {}
    sessions = state.sessions
    for first, _last, payload in view.knowledge.data(lo, hi):
        if not isinstance(payload, Data):
            continue
        nums = []
        for name in state.index.match(payload.attributes):
            nums.append(state.subs[name].number)
            sess = sessions.get(name)
            if sess is not None and p not in sess.catchup:
                sends.setdefault(name, []).append(payload)
        pfs, fx = pfs.write(first, nums)
        out.extend(fx)
    pfs, fx = pfs.write(hi, ())
    out.extend(fx)
    return pfs, tuple(out), sends


def _constream(state: ShbState, p: str) -> tuple[ShbState, Effects]:
    """Deliver ``(latestDelivered(p), h]`` where ``h`` is the knowledge's doubt horizon
    [DUR §4.1] (module doc: PFS first, synced; latestDelivered flushed; then subscribers)."""
    view = state.views[p]
    ld = view.release.latest_delivered
    h = view.knowledge.doubt_horizon_dur(ld)
    if h <= ld:
        return state, ()
    pfs, store_fx, sends = _filter_once(state, p, ld + 1, h)
    pfs, sync_fx = pfs.sync()
    effects: list[Any] = [*store_fx, *sync_fx, PutLatestDelivered(pubend=p, timestamp=h), Flush()]
    before = view.released()
    view = attrs.evolve(view, pfs=pfs, release=shb_delivered(view.release, h))
    for name, datas in sends.items():  # the sessions are not touched (Session doc)
        t0 = _sent(state, name, state.sessions[name], p)  # its last message, before this batch
        for data in datas:
            msg = EventMessage(
                pubend=p, t0=t0, t=data.tick, payload=data, attributes=data.attributes
            )
            effects.append(_deliver(state, name, msg))
            t0 = data.tick
    state = attrs.evolve(state, views=state.views.set(p, view))
    state, chop = _release_moved(state, p, before)
    state, more = _catchups(state, p)
    return _forget(state, p), (*effects, *chop, *more)


# ------------------------------------------------------------------------------ catchup


def _catchup(state: ShbState, name: str, p: str) -> tuple[ShbState, Effects]:
    """One step of ``name``'s catchup stream for ``p``; switch over when it may."""
    sess = state.sessions[name]
    view = state.views[p]
    ld = view.release.latest_delivered
    step = catchup_step(
        pubend=p,
        subscriber=state.subs[name].number,
        flt=state.subs[name].filter,
        position=sess.position.get(p, -1),
        latest_delivered=ld,
        asked=sess.catchup[p],
        knowledge=view.knowledge,
        pfs=view.pfs,
        window=state.config.window,
    )
    effects: list[Any] = [_deliver(state, name, m) for m in step.messages]
    effects.extend(
        Send(to=state.config.upstream, msg=Nack(pubend=p, start=a, end=b, retransmission=True))
        for a, b in step.nacks
    )
    catchup = sess.catchup.set(p, step.asked)
    if step.position >= state.config.policy.switchover_at(ld):
        catchup = catchup.remove(p)
        effects.append(Emit(kind="dur_switchover", detail=DurSwitchover(subscriber=name, pubend=p)))
    new = attrs.evolve(sess, position=sess.position.set(p, step.position), catchup=catchup)
    if new == sess:
        return state, ()
    catching = state.catching if catchup else state.catching.discard(name)
    state = attrs.evolve(state, sessions=state.sessions.set(name, new), catching=catching)
    return state, tuple(effects)


def _catchups(state: ShbState, p: str) -> tuple[ShbState, Effects]:
    """Step every catchup stream of pubend ``p``."""
    out: list[Any] = []
    for name in sorted(state.catching):
        if p in state.sessions[name].catchup:
            state, fx = _catchup(state, name, p)
            out.extend(fx)
    return state, tuple(out)


# ------------------------------------------------------------------------------ handlers


def on_subscribe(state: ShbState, inp: Subscribe, now: int) -> tuple[ShbState, Effects]:
    """A new durable subscriber: registered at ``latestDelivered(p)`` (durable at once),
    connected on the constream [DUR §4.1]."""
    if inp.subscriber in state.subs:
        return state, _reject(f"subscribe at {state.config.shb!r}: already subscribed", inp)
    try:
        flt = parse_filter(inp.filter)
    except FilterSyntaxError as err:
        return state, _reject(f"subscribe at {state.config.shb!r}: bad filter: {err}", inp)
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
        return state, _reject(f"connect at {state.config.shb!r}: {why}", inp)
    if resume is not None and not isinstance(resume, CheckpointToken):
        return state, _reject(
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
            return state, _reject(why, inp)
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
                effects.append(_deliver(state, name, GapMessage(pubend=p, t0=start[p], t=ld)))
        sess = attrs.evolve(sess, position=pmap({p: state.latest_delivered(p) for p in pubends}))
        return attrs.evolve(state, sessions=state.sessions.set(name, sess)), tuple(effects)
    for p in pubends:
        state, fx = _catchup(state, name, p)
        effects.extend(fx)
    return state, tuple(effects)


def on_disconnect(state: ShbState, inp: Disconnect, now: int) -> tuple[ShbState, Effects]:
    """The connection ended; the subscription and its records stay."""
    if inp.subscriber not in state.sessions:
        return state, _reject(f"disconnect at {state.config.shb!r}: not connected", inp)
    detail = DurDisconnect(subscriber=inp.subscriber, shb=state.config.shb)
    new = attrs.evolve(
        state,
        sessions=state.sessions.remove(inp.subscriber),
        catching=state.catching.discard(inp.subscriber),
    )
    return new, (Emit(kind="dur_disconnect", detail=detail),)


def on_ack(state: ShbState, inp: Ack, now: int) -> tuple[ShbState, Effects]:
    """``released(s, p)`` rises to the acknowledged CT, never past what this connection
    delivered (the SHB never trusts a CT beyond that [DUR §2]); put and flushed at once."""
    name = inp.subscriber
    sess = state.sessions.get(name)
    if sess is None or not isinstance(inp.ct, CheckpointToken):
        return state, _reject(f"ack at {state.config.shb!r}: not connected or no CT", inp)
    number = state.subs[name].number
    effects: list[Any] = [
        Emit(kind="dur_ack", detail=DurAck(subscriber=name, shb=state.config.shb, ct=inp.ct))
    ]
    moved: list[tuple[str, int]] = []
    views = state.views
    for p, t in sorted(inp.ct.entries.items()):
        view = views.get(p)
        if view is None or t > _sent(state, name, sess, p):
            effects.extend(_reject(f"ack of {p} at {t}: not delivered here", (name, p, t)))
            continue
        rel, rej = shb_acknowledge(view.release, name, t)
        effects.extend(rej)
        if rel is view.release:
            continue
        moved.append((p, view.released()))
        views = views.set(p, attrs.evolve(view, release=rel))
        effects.append(PutReleased(subscriber=number, pubend=p, timestamp=t))
        if state.config.ack_mode is AckMode.SHB:
            effects.append(PutCheckpoint(subscriber=number, pubend=p, timestamp=t))
    if not moved:
        return state, tuple(effects)
    effects.append(Flush())
    state = attrs.evolve(state, views=views)
    for p, before in moved:
        state, fx = _release_moved(state, p, before)
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
    new, fx = _constream(new, p)
    if not fx:
        new, fx = _catchups(new, p)
        new = _forget(new, p)
    if not fx and new.views[p].knowledge == view.knowledge:
        return state, ()
    return new, fx


def on_knowledge(state: ShbState, msg: Knowledge, now: int) -> tuple[ShbState, Effects]:
    """Knowledge from upstream (first-time or a nack's answer): the constream and the
    catchup streams of its pubend advance as far as it allows."""
    view = state.views.get(msg.pubend) if isinstance(msg, Knowledge) else None
    if view is None:
        return state, _reject(f"knowledge at {state.config.shb!r}: unknown pubend", msg)
    try:
        k = _accumulate(view.knowledge, msg)
    except (ValueError, TypeError) as err:  # the lattice refuses a conflicting value
        return state, _reject(f"knowledge at {state.config.shb!r}: {err}", msg)
    if k == view.knowledge:
        return state, ()
    return _learn(state, msg.pubend, k)


def on_lost(state: ShbState, msg: Lost, now: int) -> tuple[ShbState, Effects]:
    """Upstream says ``[start, end]`` is L: catchup streams waiting there may send gaps."""
    view = state.views.get(msg.pubend) if isinstance(msg, Lost) else None
    if view is None or msg.start < 0 or msg.end < msg.start:
        return state, _reject(f"lost at {state.config.shb!r}: malformed", msg)
    k = view.knowledge.accumulate(msg.start, msg.end, L)
    if k == view.knowledge:
        return state, ()
    return _learn(state, msg.pubend, k)


def on_tick(state: ShbState, inp: Tick, now: int) -> tuple[ShbState, Effects]:
    """Report ``(released(p), latestDelivered(p))`` upstream; nack the first hole above
    latestDelivered (the constream's doubt); let every catchup stream ask again."""
    effects: list[Any] = []
    views = state.views
    window = state.config.window
    for p, view in state.views.items():
        rel, rep = shb_send_report(view.release)
        views = views.set(p, attrs.evolve(view, release=rel))
        effects.append(Send(to=state.config.upstream, msg=rep))
        effects.append(Emit(kind="dur_report", detail=rep))
        first, last = view.knowledge.next_gap(rel.latest_delivered + 1)
        if last is not None:
            end = min(last, first + window - 1)
            effects.append(
                Send(
                    to=state.config.upstream,
                    msg=Nack(pubend=p, start=first, end=end, retransmission=True),
                )
            )
    sessions = state.sessions
    for name, sess in state.sessions.items():
        pos = sess.position
        for p in state.config.pubends:  # a silence to whom matched nothing lately [DUR §4.1]
            ld = views[p].release.latest_delivered
            if p not in sess.catchup and pos[p] < ld:
                at = _sent(state, name, sess, p)
                if at < ld:
                    effects.append(_deliver(state, name, SilenceMessage(pubend=p, t0=at, t=ld)))
                pos = pos.set(p, ld)
        fresh = pmap(dict.fromkeys(sess.catchup, NEVER))
        if pos is not sess.position or fresh != sess.catchup:
            sessions = sessions.set(name, attrs.evolve(sess, position=pos, catchup=fresh))
    state = attrs.evolve(state, views=views, sessions=sessions)
    for p in state.config.pubends:
        state, fx = _catchups(state, p)
        effects.extend(fx)
    return state, tuple(effects)
