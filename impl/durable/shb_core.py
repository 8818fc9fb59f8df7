"""The durable SHB's state and its two streams (constream, catchup), shared by the handlers
of :mod:`gapless.impl.durable.shb` [DUR §4]. Read that module's doc first; this module holds
the values (:class:`ShbState` and its parts) and the steps the handlers compose: the
constream (:func:`constream`), one catchup stream's step (:func:`step_catchup`), forgetting
knowledge no stream needs (:func:`forget`) and chopping the PFS when ``released(p)`` rises
(:func:`release_moved`)."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Final, final

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from gapless.impl.curiosity import C, N
from gapless.impl.durable.bigmap import ShardedMap, sharded
from gapless.impl.durable.catchup import catchup_step
from gapless.impl.durable.messages import EventMessage
from gapless.impl.durable.pfs import PAPER_PFS, PfsPolicy, PfsStream
from gapless.impl.durable.records import DurMessage, DurSwitchover
from gapless.impl.durable.release import AckMode, ShbRelease, shb_delivered
from gapless.impl.durable.shb_inputs import Emit, MoveIn
from gapless.impl.durable.storage import Flush, PutLatestDelivered
from gapless.impl.effects import Rejected, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.filters import Filter, FilterIndex
from gapless.impl.gd.messages import Data, Nack
from gapless.impl.knowledge import Kind
from gapless.impl.streams import CuriosityStream, KnowledgeStream

__all__ = [
    "NEVER",
    "Effects",
    "PubendView",
    "Session",
    "ShbConfig",
    "ShbPolicy",
    "ShbState",
    "Subscription",
    "catchups",
    "constream",
    "deliver",
    "forget",
    "reject",
    "release_moved",
    "sent",
    "step_catchup",
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
    #: how the PFS writes back-pointers (the paper's; a planted bug slips them [DUR §4.2])
    pfs: PfsPolicy = PAPER_PFS

    def switchover_at(self, latest_delivered: int) -> int:
        """The position at which a catchup stream may switch over to the constream."""
        return latest_delivered - self.switchover_lag


@final
@attrs.frozen(kw_only=True)
class ShbConfig:
    """``shb`` (this node), ``upstream`` (where nacks and reports go), the ``pubends`` it
    carries, who keeps CT (``ack_mode``), the catchup read/nack ``window`` (Q ticks per
    step), the ``policy`` and ``sync_every``: None, the constream delivers (and syncs the
    PFS) whenever knowledge frees a range of doubt; ``n``, it waits until the range holds
    ``n`` events or the timer fires, then delivers it with one sync [DUR §5.1.2: "sync
    every 200 events"] (``spec/durable.md``, "Sync points"); ``catchup_window``: a catchup
    stream's read/nack window (matched ticks read and asked at a time beyond its position:
    the flow control of catchup nacks [DUR §4.1]), None: ``window``; ``ack_batch``: None,
    each acknowledgement is put and committed in a flush of its own; ``n``, acknowledgements
    wait and are committed together, one transaction, once ``n`` wait or at the timer —
    ``released(s, p)`` (and in ack mode ``SHB`` the kept CT) rises only then [DUR §5.2: each
    thread "batched all the waiting requests into one database transaction"];
    ``consolidate``: catchup streams' nacks are consolidated in the istream's curiosity
    (:class:`PubendView` ``curious``): a tick some stream already nacked since the last timer
    is not nacked again [DUR §4, §5: "little overhead on the PHB during catchup due to nack
    consolidation"]; False, each stream nacks for itself (the behaviour before; kept to
    measure what consolidation saves)."""

    shb: str
    upstream: str
    pubends: tuple[str, ...]
    ack_mode: AckMode = AckMode.SUBSCRIBER
    window: int = 16
    policy: ShbPolicy = ShbPolicy()
    sync_every: int | None = None
    catchup_window: int | None = None
    ack_batch: int | None = None
    consolidate: bool = True

    def __attrs_post_init__(self) -> None:
        if not self.pubends or len(set(self.pubends)) != len(self.pubends):
            raise ProtocolMisuse(
                f"ShbConfig: pubends {self.pubends!r}; allowed: one or more distinct names"
            )
        if self.window < 1:
            raise ProtocolMisuse(f"ShbConfig: window {self.window}; allowed: an int >= 1")
        if self.catchup_window is not None and self.catchup_window < 1:
            raise ProtocolMisuse(
                f"ShbConfig: catchup_window {self.catchup_window}; allowed: None or an int >= 1"
            )
        if self.sync_every is not None and self.sync_every < 1:
            raise ProtocolMisuse(
                f"ShbConfig: sync_every {self.sync_every}; allowed: None or an int >= 1"
            )
        if self.ack_batch is not None and self.ack_batch < 1:
            raise ProtocolMisuse(
                f"ShbConfig: ack_batch {self.ack_batch}; allowed: None or an int >= 1"
            )


@final
@attrs.frozen(kw_only=True)
class Subscription:
    """A durable subscription hosted here: its PFS ``number`` and parsed ``filter``. One that
    moved here from another SHB [DUR §1 item 5] has ``refilter_upto`` (per pubend, the
    ``latestDelivered(p)`` when it was registered: the PFS names it in no record at or below)
    and, until that SHB confirmed it dropped its record, ``previous`` (its name), and the
    ``generation`` of the move (how many times it had moved)."""

    name: str
    number: int
    filter: Filter
    refilter_upto: PMap[str, int] = attrs.field(factory=pmap)
    previous: str | None = None
    #: the subscriber's move count when it was registered here (0: it subscribed here)
    generation: int = 0


@final
@attrs.frozen(kw_only=True)
class Session:
    """A connected subscriber: per pubend the ``t`` of the last message sent on this
    connection (``position``), and per pubend in catchup the highest tick it nacked. For a
    pubend served by the constream, ``position`` is a lower bound that the constream does not
    raise per event (that would touch a map of every connected subscriber per event):
    :meth:`ShbState.position` adds what the PFS and the release record say
    (:func:`sent`)."""

    connection: int
    position: PMap[str, int]
    catchup: PMap[str, int] = attrs.field(factory=pmap)
    #: per pubend in catchup, the stream's PFS read buffer (:mod:`~gapless.impl.durable.catchup`)
    reads: PMap[str, tuple[int, ...]] = attrs.field(factory=pmap)


@final
@attrs.frozen(kw_only=True)
class PubendView:
    """What the SHB holds of one pubend: ``knowledge``, ``release`` and ``pfs``; with
    ``ShbConfig.sync_every``, ``held`` events wait above ``latestDelivered(p)`` in a range
    free of doubt up to ``held_upto`` (counted as knowledge arrives, not recounted)."""

    knowledge: KnowledgeStream
    release: ShbRelease
    pfs: PfsStream
    held: int = 0
    held_upto: int = -1
    #: the istream's curiosity [DUR §4, Figure 1: "consolidated nacks from downstream"]: C
    #: where a catchup stream nacked upstream since the SHB's last timer (which forgets it,
    #: so a lost nack or answer is asked again, as GD's istream forgets C [GD §3.1])
    curious: CuriosityStream = attrs.field(factory=CuriosityStream)

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
    #: subscribers that moved here whose previous SHB has not confirmed dropping them
    moving: PSet[str] = attrs.field(factory=pset)
    #: ack mode ``SHB``: moves waiting for the CT the previous SHB keeps (``ct`` None), or
    #: holding it while it lies beyond latestDelivered here (soft: a crash forgets them)
    fetching: PMap[str, MoveIn] = attrs.field(factory=pmap)
    next_number: int = 0
    views: PMap[str, PubendView] = attrs.field(factory=pmap)
    #: with ``ack_batch``: acknowledged (subscriber, pubend, tick) not yet committed, from
    #: ``acks_waiting`` acknowledgements (soft: a crash forgets them, as a database loses an
    #: uncommitted transaction)
    acks: tuple[tuple[str, str, int], ...] = ()
    acks_waiting: int = 0

    def latest_delivered(self, pubend: str) -> int:
        """``latestDelivered(p)``."""
        return self.views[pubend].release.latest_delivered

    def position(self, subscriber: str, pubend: str) -> int:
        """The ``t`` of the last message sent to connected ``subscriber`` for ``pubend``."""
        return sent(self, subscriber, self.sessions[subscriber], pubend)


def sent(state: ShbState, name: str, sess: Session, p: str) -> int:
    """Where ``name``'s message chain for ``p`` is. In catchup: ``sess.position``. On the
    constream, the constream sent it every event that matched it since ``sess.position``
    (where it switched over, joined, or the timer last sent it a silence), and each of those
    is a PFS record naming it; its latest is ``lastIndex(s)`` [DUR §4.2]. A record chopped
    since lies at or below ``released(s, p)`` (the chop stops at ``released(p)`` and at every
    pending record, :func:`release_moved`), which is at or below what was sent to it (an ack
    never passes that), so the chain is at the maximum of the three."""
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


# ------------------------------------------------------------------------------ helpers


def reject(reason: str, inp: object) -> Effects:
    return (Rejected(reason=reason, input=inp),)


def deliver(state: ShbState, sub: str, message: Any) -> Emit:
    return Emit(
        kind="dur_message",
        detail=DurMessage(subscriber=sub, shb=state.config.shb, message=message),
    )


def release_moved(state: ShbState, p: str, before: int) -> tuple[ShbState, Effects]:
    """``released(p)`` may have risen from ``before``: chop the PFS up to it (the puts it
    depends on are flushed already) — but not past a pending record (a subscriber that moved
    here, [DUR §1 item 5]): it does not count in ``released(p)``, yet its records here are
    the ones it will be served from (and :func:`sent` relies on them)."""
    view = state.views[p]
    rel = view.release
    now = min([view.released(), *(rel.records[s].released for s in rel.pending)])
    if now <= before or now < 0:
        return state, ()
    pfs, fx = view.pfs.chop(now)
    return attrs.evolve(state, views=state.views.set(p, attrs.evolve(view, pfs=pfs))), fx


def forget(state: ShbState, p: str) -> ShbState:
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


def _hold(state: ShbState, p: str, h: int) -> ShbState | None:
    """With ``sync_every = n``: the state holding ``(latestDelivered(p), h]`` back while it
    has fewer than ``n`` events (a group commit: one sync per ``n``); None to deliver now."""
    n = state.config.sync_every
    if n is None:
        return None
    view = state.views[p]
    lo = max(view.held_upto, view.release.latest_delivered) + 1
    held = view.held
    if lo <= h:
        held += sum(1 for *_r, x in view.knowledge.data(lo, h) if isinstance(x, Data))
    if held >= n:
        return None
    if held == view.held and h == view.held_upto:
        return state
    view = attrs.evolve(view, held=held, held_upto=h)
    return attrs.evolve(state, views=state.views.set(p, view))


def constream(state: ShbState, p: str, *, force: bool = False) -> tuple[ShbState, Effects]:
    """Deliver ``(latestDelivered(p), h]`` where ``h`` is the knowledge's doubt horizon
    [DUR §4.1] (module doc: PFS first, synced; latestDelivered flushed; then subscribers);
    with ``sync_every``, only once the range holds that many events, or when ``force``d (the
    timer)."""
    view = state.views[p]
    ld = view.release.latest_delivered
    h = view.knowledge.doubt_horizon_dur(ld)
    if h <= ld:
        return state, ()
    held = None if force else _hold(state, p, h)
    if held is not None:
        return held, ()
    if view.held_upto >= 0:
        view = attrs.evolve(view, held=0, held_upto=-1)
        state = attrs.evolve(state, views=state.views.set(p, view))
    pfs, store_fx, sends = _filter_once(state, p, ld + 1, h)
    pfs, sync_fx = pfs.sync()
    effects: list[Any] = [*store_fx, *sync_fx, PutLatestDelivered(pubend=p, timestamp=h), Flush()]
    before = view.released()
    view = attrs.evolve(view, pfs=pfs, release=shb_delivered(view.release, h))
    for name, datas in sends.items():  # the sessions are not touched (Session doc)
        t0 = sent(state, name, state.sessions[name], p)  # its last message, before this batch
        for data in datas:
            msg = EventMessage(
                pubend=p, t0=t0, t=data.tick, payload=data, attributes=data.attributes
            )
            effects.append(deliver(state, name, msg))
            t0 = data.tick
    state = attrs.evolve(state, views=state.views.set(p, view))
    state, chop = release_moved(state, p, before)
    state, more = catchups(state, p, moved=True)
    return forget(state, p), (*effects, *chop, *more)


# ------------------------------------------------------------------------------ catchup


def step_catchup(state: ShbState, name: str, p: str) -> tuple[ShbState, Effects]:
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
        window=state.config.catchup_window or state.config.window,
        refilter_upto=state.subs[name].refilter_upto.get(p, -1),
        buffer=sess.reads.get(p, ()),
    )
    effects: list[Any] = [deliver(state, name, m) for m in step.messages]
    nacks = step.nacks
    if nacks and state.config.consolidate:
        cur = view.curious
        nacks = tuple(r for a, b in nacks for r in _not_curious(cur, a, b))
        for a, b in nacks:
            cur = cur.accumulate(a, b, C)
        if nacks:
            view = attrs.evolve(view, curious=cur)
            state = attrs.evolve(state, views=state.views.set(p, view))
    effects.extend(
        Send(to=state.config.upstream, msg=Nack(pubend=p, start=a, end=b, retransmission=True))
        for a, b in nacks
    )
    switch = step.position >= state.config.policy.switchover_at(ld)
    if (
        not effects
        and not switch
        and step.asked == sess.catchup[p]
        and step.position == sess.position.get(p, -1)
        and step.buffer is sess.reads.get(p, ())
    ):
        return state, ()  # nothing moved, nothing asked, the same read buffer
    catchup = sess.catchup.set(p, step.asked)
    reads = sess.reads.set(p, step.buffer) if step.buffer else sess.reads.discard(p)
    if switch:
        catchup = catchup.remove(p)
        reads = reads.discard(p)
        effects.append(Emit(kind="dur_switchover", detail=DurSwitchover(subscriber=name, pubend=p)))
    position = sess.position.set(p, step.position)
    new = attrs.evolve(sess, position=position, catchup=catchup, reads=reads)
    if new == sess:
        return state, ()
    catching = state.catching if catchup else state.catching.discard(name)
    state = attrs.evolve(state, sessions=state.sessions.set(name, new), catching=catching)
    return state, tuple(effects)


def _not_curious(cur: CuriosityStream, a: int, b: int) -> tuple[tuple[int, int], ...]:
    """The parts of ``[a, b]`` no stream has nacked since the last timer (N in ``cur``), as
    inclusive ranges in order: what a consolidated nack still has to ask upstream."""
    out: list[tuple[int, int]] = []
    if b - a < 256:  # catchup nacks are a window of matched ticks: look each one up
        for t in range(a, b + 1):
            if cur.value_at(t) is N:
                if out and out[-1][1] + 1 == t:
                    out[-1] = (out[-1][0], t)
                else:
                    out.append((t, t))
        return tuple(out)
    t = a
    for run in cur.runs():
        if run.end < t:
            continue
        if run.start > b:
            break
        if run.start > t:
            out.append((t, run.start - 1))
        if run.value is N:
            lo, hi = max(t, run.start), min(b, run.end)
            if out and out[-1][1] + 1 == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        t = run.end + 1
    if t <= b:
        if out and out[-1][1] + 1 == t:
            out[-1] = (out[-1][0], b)
        else:
            out.append((t, b))
    return tuple(out)


def _waiting(state: ShbState, name: str, sess: Session, p: str, moved: bool) -> bool:
    """Whether stepping ``name``'s catchup stream for ``p`` would change nothing, so
    :func:`catchups` may leave it (the same trace: ``tests/durable/test_dur7_consolidation.py``).
    It waits for an answer it asked for: held at the tick after its position, that tick
    still Q here, and already nacked; and a step would ask nothing new:

    * reading the PFS, a step stops at that tick and asks the matched ticks still Q among
      the first ``window`` after its position, so nothing new only if all of those are at or
      below what it asked (counted in its read buffer, which holds every matched tick it
      read; knowledge only ever fills Q ticks);
    * refiltering (chopped ticks, or a subscriber that moved here), a step asks from that
      tick up to at most ``window`` ticks and ``latestDelivered(p)``: nothing new unless
      latestDelivered(p) ``moved``."""
    pos = sess.position.get(p, -1)
    asked = sess.catchup[p]
    view = state.views[p]
    if asked <= pos or view.knowledge.value_at(pos + 1).kind is not Kind.Q:
        return False
    if view.pfs.chopped_through > pos or state.subs[name].refilter_upto.get(p, -1) > pos:
        return not moved
    buf = sess.reads.get(p, ())
    i = bisect_right(buf, pos)
    window = state.config.catchup_window or state.config.window
    return i < len(buf) and buf[i] == pos + 1 and bisect_right(buf, asked) - i >= window


def catchups(state: ShbState, p: str, *, moved: bool = False) -> tuple[ShbState, Effects]:
    """Step every catchup stream of pubend ``p`` that may move (not :func:`_waiting`);
    ``moved``: latestDelivered(p) has just advanced."""
    out: list[Any] = []
    for name in sorted(state.catching):
        sess = state.sessions[name]
        if p in sess.catchup and not _waiting(state, name, sess, p, moved):
            state, fx = step_catchup(state, name, p)
            out.extend(fx)
    return state, tuple(out)
