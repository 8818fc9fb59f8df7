"""Durable subscriptions (``gapless.impl.durable``) bound to the world [DUR].

Theory of operation
-------------------
:class:`DurableBinding` adapts the three durable roles to
:class:`~gapless.models.binding.Binding`: the PHB's pubend
(:mod:`gapless.impl.durable.pubend`), intermediate brokers (:mod:`gapless.impl.durable.node`)
and SHBs (:mod:`gapless.impl.durable.shb`), on the topologies of :data:`TOPOLOGIES` (a tree:
one PHB, one intermediate broker, one or two SHBs).

* **storage**: each SHB's storage effects are carried out, in order, by its own in-memory
  store (:class:`~gapless.models.durable_store.MemoryStore`); a crash keeps what that store
  keeps across a restart (committed tables, synced PFS records up to latestDelivered) and
  rebuilds the SHB from it (:func:`~gapless.impl.durable.shb.shb_recover`) [DUR §4.1]. With
  ``power_loss`` on, each SHB's store is the real one's code
  (:class:`~gapless.models.durable_store.LogStore`: checksummed segment files, the tables in
  :class:`~gapless.models.durable_store.SimMeta`) on a simulated disk
  (:class:`~gapless.models.durable_disk.SimDisk`), and an SHB crash is a power loss: each file
  keeps what an fsync made durable and, at random (drawn from the SHB's name, its crash count
  and ``power_seed``), a prefix of its later writes, the last one possibly torn [issue 13 §4].
  A recovery that refuses (``CorruptLog``) ends the run with verdict ``error``;
* **observables**: a ``dur_message`` becomes the world's ``Deliver`` (``kind`` event, silence or
  gap; ``tick`` the message's ``t``; the payload the
  :class:`~gapless.impl.durable.records.DurMessage`); every other ``dur_*`` record rides a
  ``Persist`` whose key is ``("dur", kind, ...)`` and whose value is the record's detail
  (the world records a fixed set of kinds;
  :class:`~gapless.invariants.durable.online.DurableChecker` turns these back into ``dur_*``
  records). A ``dur_event`` is indeed the pubend's log write;
* **subscribers** (the clients): each keeps its own CT — its join CT, then the ``t`` of every
  message it is delivered — and, every ``ack_every`` SHB ticks, acknowledges it (under the
  policy's :class:`~gapless.impl.durable.policy.ClientPolicy`) [DUR §2]. A first connection
  subscribes (``Subscribe``); a later one reconnects presenting its CT through the world's
  ``resume_token`` seam — or, for ``older_ct_percent`` of reconnections (drawn from the
  subscriber's name and connection number), the CT it acknowledged before its last
  acknowledgement (a client restoring an older checkpoint: it may then get gaps only for what
  was released [DUR §2]). In ack mode ``shb`` it presents none and the SHB resumes it from the
  CT it kept;
* **fault kinds** ``older_ct`` and ``move`` (``models/faults.py``; the world's
  ``reconnecting`` seam names the fault whose end reconnects a subscriber): after ``older_ct``
  the subscriber presents the CT it acknowledged before its latest; after ``move`` ``roam``
  sends it to another live SHB holding no record of it, where it presents its last
  acknowledged CT in a :class:`~gapless.impl.durable.shb.MoveIn` (retried on each tick while
  refused) — in ack mode ``shb`` it presents none, and the new SHB fetches the CT the old one
  keeps (``CheckpointQuery``/``CheckpointAnswer``) —, and the SHBs' messages
  (``Unregister``/``Unregistered`` and those two) travel through the broker tree as
  :class:`Routed` messages (reconnect-anywhere [DUR §1 item 5], ``spec/durable.md``). A
  crashed SHB is rebuilt from the subscribers that subscribed there and the moves its store
  kept (a pending one pending).

Configuration (:class:`DurableConfig`, the run's ``config`` overrides) is in µs of virtual time;
a tick is a µs, as GD's [GD §2.2].
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Final, final, get_args

import attrs
import networkx as nx

from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.messages import EventMessage, GapMessage
from gapless.impl.durable.node import (
    DurNodeConfig,
    DurNodeState,
    node_crash,
    node_on_receive,
    node_start,
)
from gapless.impl.durable.policy import PAPER_POLICY, DurablePolicy
from gapless.impl.durable.pubend import (
    HEARTBEAT,
    DurPubendConfig,
    DurPubendState,
    pubend_crash,
    pubend_heartbeat,
    pubend_on_nack,
    pubend_on_publish,
    pubend_on_release_report,
    pubend_restart,
    pubend_start,
)
from gapless.impl.durable.records import DurEvent, DurMessage
from gapless.impl.durable.release import AckMode, ReleaseReport
from gapless.impl.durable.shb import (
    Ack,
    CheckpointAnswer,
    CheckpointQuery,
    Emit,
    Lost,
    MoveIn,
    ShbConfig,
    ShbState,
    Subscribe,
    Tick,
    Unregister,
    Unregistered,
    on_ack,
    on_checkpoint_answer,
    on_checkpoint_query,
    on_connect,
    on_disconnect,
    on_knowledge,
    on_lost,
    on_move_in,
    on_subscribe,
    on_tick,
    on_unregister,
    on_unregistered,
    shb_recover,
    shb_start,
)
from gapless.impl.durable.storage import StorageEffect
from gapless.impl.durable.variants import VARIANTS
from gapless.impl.durable.wire import wire
from gapless.impl.effects import Deliver, Persist, Rejected, Send, SetTimer
from gapless.impl.gd.messages import Knowledge, Nack
from gapless.impl.inputs import Connect, Disconnect, Publish, Receive, Restart, TimerFired
from gapless.impl.variants import resolve
from gapless.models.durable_disk import SimDisk
from gapless.models.durable_store import LogStore, MemoryStore, SimMeta
from gapless.models.faults import derive_seed
from gapless.models.runspec import RunSpecError
from gapless.models.workload import PublishEvent, Workload

__all__ = [
    "TOPOLOGIES",
    "DurableBinding",
    "DurableConfig",
    "dur_line",
    "dur_two",
    "make_binding",
]

SHB_TICK: Final = "dur-tick"
"""The SHB's timer key."""

_STORAGE: Final = get_args(StorageEffect)
_SEGMENT_RECORDS: Final = 256
"""Records per PFS segment file with ``power_loss`` (small: segments come and go in a run)."""
_ROUTED: Final = (Unregister, Unregistered, CheckpointQuery, CheckpointAnswer)


@final
@attrs.frozen(kw_only=True)
class DurableConfig:
    """A durable run's configuration (µs; see the module doc): ``max_retain_us`` (None:
    infinite, early release off [DUR §3]), the pubend's ``heartbeat_us``, the SHB's
    ``tick_us`` (reports, silences, nack retries), subscribers acknowledge every
    ``ack_every`` SHB ticks, ``ack_mode`` (``"subscriber"`` or ``"shb"`` [DUR §5.2]), the
    catchup and constream-recovery ``window`` (ticks per step: with ``tick_us`` it models
    how fast an SHB catches up), at most ``answer_window`` events per nack answer,
    ``older_ct_percent`` of reconnections present an older CT, and ``catchup_window``: a
    catchup stream's read/nack window in matched ticks (None: ``window``); ``ack_batch``:
    acknowledgements committed together, ``n`` at a time or at the SHB's timer (None: each
    its own flush; ``ShbConfig.ack_batch`` [DUR §5.2]); ``consolidate``: the SHB consolidates
    its catchup streams' nacks (``ShbConfig.consolidate``, on by default [DUR §5]). ``power_loss``:
    the SHBs' stores are log files on a simulated disk and a crash is a power loss
    (``power_seed`` varies its draws); ``store_ack_before_fsync`` plants the store bug
    "acknowledge before fsync" there (for its non-vacuity test; module doc)."""

    max_retain_us: int | None = None
    heartbeat_us: int = 100_000
    tick_us: int = 100_000
    ack_every: int = 5
    ack_mode: str = "subscriber"
    window: int = 500_000
    answer_window: int = 64
    older_ct_percent: int = 0
    catchup_window: int | None = None
    ack_batch: int | None = None
    consolidate: bool = True
    power_loss: bool = False
    power_seed: int = 0
    store_ack_before_fsync: bool = False

    def __attrs_post_init__(self) -> None:
        if self.ack_mode not in ("subscriber", "shb"):
            raise RunSpecError(
                f"DurableConfig: ack_mode {self.ack_mode!r}; allowed: subscriber, shb"
            )
        if min(self.heartbeat_us, self.tick_us, self.ack_every) < 1:
            raise RunSpecError("DurableConfig: heartbeat_us, tick_us, ack_every must be >= 1")
        if not 0 <= self.older_ct_percent <= 100:
            raise RunSpecError(
                f"DurableConfig: older_ct_percent {self.older_ct_percent}; allowed: 0..100"
            )


# ------------------------------------------------------------------------------ topologies


def _tree(name: str, shbs: tuple[str, ...], pubends: int = 4) -> nx.Graph:
    """PHB ``phb`` (pubends ``p0``..) -> intermediate broker ``ib`` -> the SHBs; every broker
    its own cell (the invariants read the cell tree)."""
    tree = (("phb", "ib"), *(("ib", s) for s in shbs))
    g = nx.Graph(
        name=name,
        pubends=tuple((f"p{i}", "phb") for i in range(pubends)),
        cell_tree=tree,
        order="publisher",
        merged=(),
    )
    g.add_node("phb", role="phb", cell="phb")
    g.add_node("ib", role="ib", cell="ib")
    for s in shbs:
        g.add_node(s, role="shb", cell=s)
    for a, b in tree:
        g.add_edge(a, b, kind="tree")
    return g


def dur_line() -> nx.Graph:
    """One PHB with 4 pubends, one intermediate broker, one SHB [DUR §5.1]."""
    return _tree("dur-line", ("shb1",))


def dur_two() -> nx.Graph:
    """One PHB with 4 pubends, one intermediate broker, two SHBs (the node's minimum)."""
    return _tree("dur-two", ("shb1", "shb2"))


def dur_two_early() -> nx.Graph:
    """``dur-two`` whose runs default to maxRetain 2 s (early release on) and one reconnection
    in three presenting an older CT (``graph.graph["durable_config"]``: campaign files have no
    config table, so a topology carries these defaults; a run's config overrides them)."""
    g = _tree("dur-two-early", ("shb1", "shb2"))
    g.graph["durable_config"] = (("max_retain_us", 2_000_000), ("older_ct_percent", 34))
    return g


def dur_two_shb() -> nx.Graph:
    """``dur-two`` whose runs default to ack mode ``shb`` (the SHB keeps CT(s) [DUR §5.2], so a
    moving subscriber's CT is fetched from the SHB it leaves) and maxRetain 2 s."""
    g = _tree("dur-two-shb", ("shb1", "shb2"))
    g.graph["durable_config"] = (("ack_mode", "shb"), ("max_retain_us", 2_000_000))
    return g


def dur_two_power() -> nx.Graph:
    """``dur-two-early`` whose SHBs keep their PFS in log files on a simulated disk, and whose
    crashes are power losses (``power_loss``, module doc) [issue 13 §4]."""
    g = _tree("dur-two-power", ("shb1", "shb2"))
    g.graph["durable_config"] = (
        ("max_retain_us", 2_000_000),
        ("older_ct_percent", 34),
        ("power_loss", True),
    )
    return g


TOPOLOGIES: Final[dict[str, Callable[[], nx.Graph]]] = {
    "dur-line": dur_line,
    "dur-two": dur_two,
    "dur-two-early": dur_two_early,
    "dur-two-power": dur_two_power,
    "dur-two-shb": dur_two_shb,
}
"""The durable protocol's topologies."""


# ------------------------------------------------------------------------------ the binding


@final
@attrs.frozen(kw_only=True)
class Routed:
    """An SHB-to-SHB message of reconnect-anywhere (``Unregister``, ``Unregistered``,
    ``CheckpointQuery``, ``CheckpointAnswer``) on its way to SHB ``to`` through the broker
    tree (SHBs are not neighbours; the binding's intermediate brokers pass it on)."""

    to: str
    msg: Unregister | Unregistered | CheckpointQuery | CheckpointAnswer


@final
class DurableBinding:
    """The durable roles as the world drives them (see the module doc)."""

    status_period_us = 0
    min_repetition_us = 0

    def __init__(
        self, graph: nx.Graph, workload: Workload, config: DurableConfig, policy: DurablePolicy
    ) -> None:
        self.graph = graph
        self.config = config
        self.policy = policy
        self.wire = wire
        self.filters = {s.name: s.filter for s in workload.subscriptions}
        self.roles = {n: str(d["role"]) for n, d in graph.nodes(data=True)}
        self.pubends = tuple(p for p, _h in graph.graph["pubends"])
        self.stores: dict[str, MemoryStore | LogStore] = {}
        #: with ``power_loss``: each SHB's simulated disk and tables, and its crash count
        self.disks: dict[str, tuple[SimDisk, SimMeta]] = {}
        self.crashes: dict[str, int] = {}
        #: per subscriber: its CT (what it consumed) and the CTs it acknowledged, latest last
        self.ct: dict[str, dict[str, int]] = {}
        self.acked: dict[str, list[dict[str, int]]] = {}
        self.ticks: dict[str, int] = {}
        self.reconnections: dict[str, int] = {}
        self.mode = AckMode(config.ack_mode)
        #: reconnect-anywhere (module doc): each subscriber's current SHB, the SHBs holding a
        #: record of it, the SHB it moved from, its move count, the kind of the fault whose
        #: end reconnects it, the CT it joined at, and moves waiting for the SHB to accept
        self.home = {s.name: s.shb for s in workload.subscriptions}
        self.records: dict[str, set[str]] = {}
        self.previous: dict[str, str] = {}
        self.generation: dict[str, int] = {}
        self.next_kind: dict[str, str] = {}
        self.join_ct: dict[str, dict[str, int]] = {}
        self.waiting: dict[str, dict[str, MoveIn]] = {}

    # -------------------------------------------------------------- roles

    def _children(self, node: str) -> tuple[str, ...]:
        return tuple(sorted(d for u, d in self.graph.graph["cell_tree"] if u == node))

    def _parent(self, node: str) -> str:
        return next(u for u, d in self.graph.graph["cell_tree"] if d == node)

    def initial_states(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        c = self.config
        for n in sorted(self.roles):
            role = self.roles[n]
            if role == "phb":
                hosted = tuple(p for p, h in self.graph.graph["pubends"] if h == n)
                out[n] = pubend_start(
                    DurPubendConfig(
                        node=n,
                        pubends=hosted,
                        children=self._children(n),
                        max_retain=c.max_retain_us,
                        heartbeat=c.heartbeat_us,
                        answer_window=c.answer_window,
                        policy=self.policy.pubend,
                    )
                )
            elif role == "shb":
                self.stores[n] = self._new_store(n)
                out[n] = shb_start(self._shb_config(n))
            else:
                cfg = DurNodeConfig(
                    node=n,
                    upstream=self._parent(n),
                    children=self._children(n),
                    pubends=self.pubends,
                    policy=self.policy.node,
                )
                out[n] = node_start(cfg)
        return out

    def _new_store(self, n: str) -> MemoryStore | LogStore:
        if not self.config.power_loss:
            return MemoryStore()
        self.disks[n] = (SimDisk(), SimMeta())
        store, _got = self._open_log_store(n)
        return store

    def _open_log_store(self, n: str) -> tuple[LogStore, Any]:
        disk, meta = self.disks[n]
        return LogStore.open_on(
            disk,
            meta,
            segment_records=_SEGMENT_RECORDS,
            ack_before_sync=self.config.store_ack_before_fsync,
        )

    def _restart_store(self, n: str) -> tuple[MemoryStore | LogStore, Any]:
        """The store of crashed SHB ``n`` after a process restart, or with ``power_loss``
        after the power came back (module doc)."""
        old = self.stores[n]
        if isinstance(old, MemoryStore):
            return old.restart()
        old.close()
        self.crashes[n] = self.crashes.get(n, 0) + 1
        draws = random.Random(f"{self.config.power_seed}/{n}/{self.crashes[n]}")
        self.disks[n][0].power_loss(draws)
        return self._open_log_store(n)

    def _shb_config(self, n: str) -> ShbConfig:
        return ShbConfig(
            shb=n,
            upstream=self._parent(n),
            pubends=self.pubends,
            ack_mode=self.mode,
            window=self.config.window,
            policy=self.policy.shb,
            catchup_window=self.config.catchup_window,
            ack_batch=self.config.ack_batch,
            consolidate=self.config.consolidate,
        )

    def handle(self, state: Any, inp: Any, now: int) -> tuple[Any, tuple[Any, ...]]:
        t = type(state)
        if t is ShbState:
            return self._shb(state, inp, now)
        if t is DurPubendState:
            return self._pubend(state, inp, now)
        if type(inp) is Receive and type(inp.msg) is Routed:
            return state, (self._route(state.config.node, inp.msg),)
        if type(inp) is Receive:
            state, fx = node_on_receive(state, inp.msg, inp.sender, now)
            return state, self._out(state.config.node, fx, None)
        return state, ()

    def _below(self, node: str, target: str) -> str | None:
        """The child of ``node`` whose subtree holds ``target`` (None: not below ``node``)."""
        for child in self._children(node):
            if child == target or self._below(child, target) is not None:
                return child
        return None

    def _route(self, node: str, msg: Routed) -> Send:
        """One hop of an SHB-to-SHB message through the broker tree: down towards its
        target when it is below ``node``, else up."""
        down = self._below(node, msg.to)
        return Send(to=down if down is not None else self._parent(node), msg=msg)

    def crash(self, state: Any) -> Any:
        t = type(state)
        if t is DurPubendState:
            return pubend_crash(state)
        if t is DurNodeState:
            return node_crash(state)
        return self._recover(state)

    def _recover(self, state: ShbState) -> ShbState:
        """The SHB rebuilt from its store [DUR §4.1]: the subscribers that subscribed here
        (its configuration) and those whose move here the store kept (``PutMove`` rows; one
        without a ``released(s, p)`` row is still pending at the CT it presented)."""
        name = state.config.shb
        store, got = self._restart_store(name)
        self.stores[name] = store
        t = got.tables
        moves = {m.name: m for m in t.moves.values()}
        subs = [
            (s.name, s.number, self.filters[s.name])
            for s in state.subs.values()
            if s.generation == 0 and s.name not in moves
        ]
        subs += [(m.name, m.subscriber, m.filter) for m in moves.values()]
        active = {s for s, _p in t.released}
        new = shb_recover(
            state.config,
            subs,
            latest=t.latest,
            released=t.released,
            pfs=got.pfs,
            moved={
                m.name: (m.previous, dict(m.refilter_upto), m.generation) for m in moves.values()
            },
            pending={m.name: dict(m.start) for m in moves.values() if m.subscriber not in active},
        )
        self.waiting.pop(name, None)
        for sub, holders in self.records.items():
            if sub in new.subs:
                holders.add(name)
            else:
                holders.discard(name)
        return new

    # -------------------------------------------------------------- the PHB

    def _pubend(self, state: DurPubendState, inp: Any, now: int) -> tuple[Any, tuple[Any, ...]]:
        ti = type(inp)
        if ti is Publish:
            state, fx = pubend_on_publish(state, inp, now)
        elif ti is TimerFired and inp.key == HEARTBEAT:
            state, fx = pubend_heartbeat(state, now)
        elif ti is Receive and type(inp.msg) is Nack:
            state, fx = pubend_on_nack(state, inp.msg, inp.sender, now)
        elif ti is Receive and type(inp.msg) is ReleaseReport:
            state, fx = pubend_on_release_report(state, inp.msg, now)
        elif ti is Restart:
            state, fx = pubend_restart(state, now)
        elif ti is Receive:
            why = f"pubend {state.config.node!r}: unexpected {type(inp.msg).__name__}"
            return state, (Rejected(reason=why, input=inp.msg),)
        else:
            return state, ()
        return state, self._out(state.config.node, fx, None)

    # -------------------------------------------------------------- the SHB

    def _shb(self, state: ShbState, inp: Any, now: int) -> tuple[Any, tuple[Any, ...]]:
        ti = type(inp)
        name = state.config.shb
        if ti is Receive:
            msg = inp.msg
            if type(msg) is Knowledge:
                state2, fx = on_knowledge(state, msg, now)
            elif type(msg) is Lost:
                state2, fx = on_lost(state, msg, now)
            elif type(msg) is Routed and msg.to != name:
                return state, (self._route(name, msg),)
            elif type(msg) is Routed and type(msg.msg) is Unregister:
                state2, fx = on_unregister(state, msg.msg, now)
                if msg.msg.subscriber not in state2.subs:
                    self.records.get(msg.msg.subscriber, set()).discard(name)
            elif type(msg) is Routed and type(msg.msg) is Unregistered:
                state2, fx = on_unregistered(state, msg.msg, now)
            elif type(msg) is Routed and type(msg.msg) is CheckpointQuery:
                state2, fx = on_checkpoint_query(state, msg.msg, now)
            elif type(msg) is Routed and type(msg.msg) is CheckpointAnswer:
                state2, fx = on_checkpoint_answer(state, msg.msg, now)
            else:
                why = f"shb {name!r}: unexpected {type(msg).__name__}"
                return state, (Rejected(reason=why, input=msg),)
        elif ti is Connect:
            if inp.connection == 0 and inp.subscriber not in state.subs:
                sub = Subscribe(subscriber=inp.subscriber, filter=inp.filter, connection=0)
                state2, fx = on_subscribe(state, sub, now)
                self.records.setdefault(inp.subscriber, set()).add(name)
            elif inp.subscriber not in state.subs and inp.subscriber in self.previous:
                return self._move_in(state, self._move(inp), now)
            else:
                state2, fx = on_connect(state, inp, now)
        elif ti is Disconnect and inp.subscriber in self.waiting.get(name, {}):
            del self.waiting[name][inp.subscriber]  # its move was never accepted here
            return state, ()
        elif ti is Disconnect:
            state2, fx = on_disconnect(state, inp, now)
        elif ti is TimerFired and inp.key == SHB_TICK:
            return self._shb_tick(state, now)
        elif ti is Restart:
            return state, (SetTimer(key=SHB_TICK, at=now + self.config.tick_us),)
        else:
            return state, ()
        return state2, self._out(name, fx, state2)

    def _move(self, inp: Connect) -> MoveIn:
        """The registration a subscriber that moved here asks for (module doc)."""
        sub = inp.subscriber
        return MoveIn(
            subscriber=sub,
            filter=inp.filter,
            previous=self.previous[sub],
            ct=inp.resume,
            connection=inp.connection,
            generation=self.generation[sub],
        )

    def _move_in(self, state: ShbState, move: MoveIn, now: int) -> tuple[Any, tuple[Any, ...]]:
        """Register a moved subscriber here [DUR §1 item 5]; while its CT is beyond this SHB's
        latestDelivered the SHB refuses, and the subscriber retries on every tick."""
        name, sub = state.config.shb, move.subscriber
        state2, fx = on_move_in(state, move, now)
        if state2 is state:  # refused: wait (the constream here has not reached its CT)
            self.waiting.setdefault(name, {})[sub] = move
            return state, ()
        self.waiting.get(name, {}).pop(sub, None)
        return state2, self._out(name, fx, state2)

    def _shb_tick(self, state: ShbState, now: int) -> tuple[Any, tuple[Any, ...]]:
        """Report, silences, nack retries; moves waiting here retry; then every
        ``ack_every`` ticks each connected subscriber acknowledges what it consumed
        [DUR §2]."""
        name = state.config.shb
        state, fx = on_tick(state, Tick(), now)
        out = list(self._out(name, fx, state))
        for move in sorted(self.waiting.get(name, {}).values(), key=lambda m: m.subscriber):
            state, fx = self._move_in(state, move, now)
            out.extend(fx)
        n = self.ticks.get(name, 0) + 1
        self.ticks[name] = n
        if n % self.config.ack_every == 0:
            client = self.policy.client
            for sub in sorted(state.sessions):
                ct = {p: client.ack(t) for p, t in sorted(self.ct.get(sub, {}).items())}
                if not ct:
                    continue
                self.acked.setdefault(sub, []).append(dict(ct))
                del self.acked[sub][:-3]
                ack = Ack(subscriber=sub, ct=CheckpointToken.of(ct))
                state, fx = on_ack(state, ack, now)
                out.extend(self._out(name, fx, state))
                state, fx = self.policy.catchup_ack.after_ack(state, sub)
                out.extend(self._out(name, fx, state))
        out.append(SetTimer(key=SHB_TICK, at=now + self.config.tick_us))
        return state, tuple(out)

    # -------------------------------------------------------------- effects

    def _out(self, node: str, fx: tuple[Any, ...], shb: ShbState | None) -> tuple[Any, ...]:
        """Carry out storage effects in the node's store; turn ``Emit`` records into what the
        world records (module doc); pass the rest through."""
        out: list[Any] = []
        for e in fx:
            if type(e) is Emit:
                out.append(self._observable(node, e, shb))
            elif isinstance(e, _STORAGE):
                self.stores[node].apply([e])
            elif type(e) is Send and type(e.msg) in _ROUTED:
                out.append(self._route(node, Routed(to=e.to, msg=e.msg)))
            else:
                out.append(e)
        return tuple(out)

    def _observable(self, node: str, e: Emit, shb: ShbState | None) -> Any:
        d = e.detail
        if e.kind == "dur_message":
            m = d.message
            got = self.ct.setdefault(d.subscriber, {})
            got[m.pubend] = m.t
            sess = shb.sessions.get(d.subscriber) if shb is not None else None
            kind = (
                "event"
                if type(m) is EventMessage
                else "gap"
                if type(m) is GapMessage
                else "silence"
            )
            return Deliver(
                subscriber=d.subscriber,
                pubend=m.pubend,
                tick=m.t,
                payload=d,
                connection=0 if sess is None else sess.connection,
                kind=kind,
            )
        if e.kind in ("dur_join", "dur_connect"):
            self.ct[d.subscriber] = d.ct.as_dict()
            self.records.setdefault(d.subscriber, set()).add(node)  # a move's registration too
        if e.kind == "dur_join":
            self.join_ct[d.subscriber] = d.ct.as_dict()
        key: tuple[Any, ...] = ("dur", e.kind)
        if type(d) is DurEvent:
            key = ("dur", e.kind, d.pubend, d.tick)
        return Persist(key=key, value=d, delay=0)

    # -------------------------------------------------------------- seams and decoders

    def publish_input(self, event: PublishEvent) -> Publish:
        return Publish(pubend=event.pubend, attributes=event.attributes, size=event.size)

    def logged(self, persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        d = persist.value
        if type(d) is DurEvent:
            return d.pubend, d.tick, d.attributes
        return None

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        if type(payload) is DurMessage and type(payload.message) is EventMessage:
            attrs_: Mapping[str, Any] | None = payload.message.attributes
            return attrs_
        return None

    def message_cost(self, msg: Any) -> tuple[int, int]:
        """The world's optional capacity model (``receive_us``, ``service_us``): a knowledge
        message carrying a data tick is one event of its ``size`` bytes; anything else is
        control (no event, no bytes)."""
        if type(msg) is Knowledge and msg.data is not None:
            return 1, msg.data.size
        return 0, 0

    def durable(self, persist: Persist) -> str | None:
        return "log" if type(persist.value) is DurEvent else None

    def reconnecting(self, subscriber: str, kind: str) -> None:
        """The world's seam: the fault whose end reconnects ``subscriber`` is ``kind``
        (``disconnect``, ``move`` or ``older_ct``, ``models/faults.py``)."""
        self.next_kind[subscriber] = kind

    def roam(self, subscriber: str, connection: int, alive: tuple[str, ...]) -> str:
        """Where ``subscriber`` connects: its current SHB, or, when a ``move`` fault ends,
        another live SHB holding no record of it (none while an earlier move is unfinished:
        it then stays) [DUR §1 item 5]."""
        home = self.home[subscriber]
        if self.next_kind.get(subscriber) != "move":
            return home
        held = self.records.get(subscriber, set())
        choices = [n for n in alive if self.roles.get(n) == "shb" and n != home and n not in held]
        if not choices:
            return home
        to = choices[derive_seed(subscriber, connection, "move") % len(choices)]
        self.previous[subscriber] = home
        self.generation[subscriber] = self.generation.get(subscriber, 0) + 1
        self.home[subscriber] = to
        return to

    def resume_token(self, subscriber: str, consumed: dict[str, int]) -> Any:
        """The CT a reconnecting subscriber presents (module doc); None in ack mode ``shb``.
        After a ``move`` it presents the CT it last acknowledged (its durable CT: the record
        it leaves behind is at or below it); after an ``older_ct`` fault, the one it
        acknowledged before that (its join CT if it has acknowledged at most once)."""
        kind = self.next_kind.pop(subscriber, "disconnect")
        if self.mode is AckMode.SHB:
            return None
        ct = self.ct.get(subscriber, {})
        acked = self.acked.get(subscriber, [])
        joined = self.join_ct.get(subscriber, {})
        n = self.reconnections[subscriber] = self.reconnections.get(subscriber, 0) + 1
        draw = derive_seed(subscriber, n, "older-ct") % 100
        if kind == "older_ct":
            ct = acked[-2] if len(acked) >= 2 else joined
        elif self.home[subscriber] not in self.records.get(subscriber, set()):
            ct = acked[-1] if acked else joined  # a move: its durable CT
        elif len(acked) >= 2 and draw < self.config.older_ct_percent:
            ct = acked[-2]
        return CheckpointToken.of(ct)


def make_binding(spec: Any, graph: nx.Graph, workload: Workload) -> DurableBinding:
    """The binding of ``spec`` (a ``RunSpec``): its variant's policy, its config overrides
    (over the topology's defaults, if it carries any)."""
    given = {**dict(graph.graph.get("durable_config", ())), **dict(spec.config)}
    try:
        config = DurableConfig(**given)
    except TypeError as exc:
        fields = ", ".join(a.name for a in attrs.fields(DurableConfig))
        raise RunSpecError(f"RunSpec.config: {exc}; allowed keys: {fields}") from exc
    policy = resolve("durable", spec.variant, PAPER_POLICY, VARIANTS)
    return DurableBinding(graph, workload, config, policy)
