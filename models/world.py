"""A deterministic discrete-event network that carries out the roles' effects (DESIGN.md).

Theory of operation
-------------------
Virtual time is an int in µs. The event queue is a heap of ``(time, seq, ...)`` tuples:
``seq`` is a global counter, so ties are broken by insertion order — a total, deterministic
order. Nothing here iterates a hash-ordered collection without sorting it first.

*Nodes* are physical brokers driven through a :class:`~gapless.models.binding.Binding`:
every input goes through ``binding.handle(state, input, now)`` and every effect is carried
out in order:

* ``Send(to, msg)`` — over the link ``node -> to``: base delay plus jitter (the link's own
  random stream), FIFO per direction unless a reorder window is active; drop / duplicate /
  reorder windows draw from *their fault event's* own stream; a failed or stalled link, a
  stalled sender, or a message still in flight when its link fails or its receiver crashes
  is lost (recorded as ``drop``);
* ``SetTimer`` / ``CancelTimer`` — one deadline per key; re-arming replaces it; a crash
  cancels every timer;
* ``Persist`` — completes ``delay`` µs later with a ``Persisted`` input, unless the node
  crashed meanwhile (the write is then lost, the message was never published [GD §2.2]);
* ``Deliver``, ``DeliverCohort`` (one message to several subscribers: one record) and
  ``Rejected`` — recorded.

Faults (:mod:`gapless.models.faults`) start and end as events. A ``fail`` is a crash with no
restart, ever (not even when everything is healed at ``duration_us``). A crash replaces the state
with ``binding.crash(state)`` (soft state lost, the pubend's stable log kept), cancels timers
and pending writes, ends the connections of the subscribers the broker hosts, and tells live
neighbours ``LinkChanged(up=False)``; a restart feeds ``Restart``, then ``LinkChanged`` for
each neighbour, then reconnects the hosted subscribers as *new* connections [GD §2.3]. Links
also report their status periodically (``status_period_us``).

Joins (optional): a binding with ``joiners`` (a mapping: broker of the graph -> the broker it
joins by a link, its *attach point*) and the hook ``join(broker, state) -> state`` has those
brokers start *absent* — not booted, unreachable, hosting no connection, publishing nothing,
a crash or restart of them ignored — until a ``join`` fault (:mod:`gapless.models.faults`)
names them: the world hands the held state to ``join`` and starts the broker as a restart
does (``Restart``, then ``LinkChanged`` both ways, then its subscribers connect). A newcomer
joins by a link to a broker already there [DFT §II]: while the attach point is down or that
link has failed, the join waits (:attr:`World.joining`) and happens as soon as both are up.
A join is never undone (it stays among the active faults, like a ``fail``, and has no end
phase).

Roaming: a binding with the optional hook ``roam(subscriber, connection, alive) -> broker``
chooses the broker each (re)connection of a subscriber attaches to, among the brokers alive
then (``alive``, sorted); the world keeps each subscriber's current broker in
:attr:`World.host`. Without the hook a subscriber always attaches to its workload SHB.
A binding with ``profile(subscriber, connection) -> filter`` chooses the profile each
connection presents (a client that changes its profile when it reconnects).

Capacity (optional, off by default): a graph with a ``service_us`` attribute or links with
``bytes_per_s``, driven through a binding with ``message_cost(msg) -> (events, bytes)``, makes
each broker send one message at a time (``service_us`` per event carried) and each link
direction transmit one at a time at its bandwidth, so latency grows with load
(:meth:`World._occupy`). Without it nothing changes, digests included.

Local work (optional, off by default, independent of the above): a graph with ``deliver_us``
(service time per message a broker hands to one of its local clients: each ``Deliver``, each
member of a ``DeliverCohort``) or ``receive_us`` (per event a received message carries, by the
binding's ``message_cost``) makes each broker a single server of what it receives: a message
that arrives while the broker is busy waits in its inbox (FIFO) and is handled when the broker
is free (:meth:`World._take`); handling it occupies the broker for ``receive_us`` per event it
carries plus ``deliver_us`` per delivery it causes (deliveries caused by a timer or a
connection occupy it too), and what the broker sends waits until it is free. So a subscriber
hosting broker delivers at most ``1e6 / deliver_us`` messages a second, and work that nacks
and waits for answers (catching up) goes no faster than the broker's spare capacity [DUR
§5.1: "about 20,000 events/s" for one SHB]. Deliveries are recorded when their handling
starts. A crash loses the inbox (each message recorded as a ``drop``, reason ``"inbox"``).

At ``duration_us`` every fault still active is healed, publishing has stopped, and the
network drains for ``drain_us``; then the liveness invariants are judged.

Trace records: ``publish``, ``persist``, ``persisted``, ``send``, ``drop``, ``deliver``,
``fault``, ``connect``, ``disconnect`` and ``rejected``. Arrivals, timer firings and link
status are inputs, not observations; they are not recorded, which keeps the digest cheap.
Coverage labels (the lattice transitions a step reported, through the binding's optional
``coverage`` and ``effect_labels``) are counted in :attr:`World.coverage`, beside the trace and
never in it: a change of a role's internals that changes nothing observable cannot change a
run's digest (``gapless.impl.trace.DIGEST_VERSION`` 2).

This module is the event engine only: building a run from a spec and judging it is
:mod:`gapless.models.run`.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable
from typing import Any, Final, final

import networkx as nx

from gapless.impl.effects import (
    CancelTimer,
    Deliver,
    DeliverCohort,
    Persist,
    Rejected,
    Send,
    SetTimer,
    deliveries,
)
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import (
    Connect,
    Disconnect,
    Input,
    LinkChanged,
    Persisted,
    Receive,
    Restart,
    TimerFired,
)
from gapless.impl.trace import (
    Dropped,
    Fault,
    Malformed,
    Published,
    Sent,
    TraceDigest,
    TraceRecord,
    Wire,
)
from gapless.models.binding import Binding
from gapless.models.faults import RECONNECTING_KINDS, FaultEvent, FaultSchedule, derive_seed
from gapless.models.topology import link_name
from gapless.models.workload import PublishEvent, Workload

__all__ = ["Observer", "World"]

# event codes (ints: cheap to compare in the heap)
_ARRIVE: Final = 0
_TIMER: Final = 1
_PERSISTED: Final = 2
_PUBLISH: Final = 3
_FAULT: Final = 4
_STATUS: Final = 5
_CONNECT: Final = 6
_SERVE: Final = 7
_SUB_KINDS: Final = (*RECONNECTING_KINDS, "reprofile")
"""Fault kinds whose target is a subscriber."""

Observer = Callable[[TraceRecord], bool]
"""Called with every trace record; returning True stops the run (a violation was found)."""


def _randint0(rng: random.Random, hi: int) -> int:
    """``rng.randint(0, hi)`` (``hi`` >= 0), drawn exactly as CPython draws it — the fewest
    bits that hold ``hi``, redrawn while above it — without ``randint``'s argument checks on
    the hot path (a test pins equality with ``randint``)."""
    n = hi + 1
    k = n.bit_length()
    getrandbits = rng.getrandbits
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


@final
class _Node:
    __slots__ = ("alive", "epoch", "name", "neighbours", "stalled", "state", "timers")

    def __init__(self, name: str, state: Any, neighbours: tuple[str, ...]) -> None:
        self.name = name
        self.state = state
        self.alive = True
        self.epoch = 0
        self.stalled = 0
        self.timers: dict[Any, int] = {}
        self.neighbours = neighbours


@final
class _Link:
    __slots__ = ("down", "epoch", "last", "rng", "stalled", "windows")

    def __init__(self, rng: random.Random) -> None:
        self.down = 0  # failure count (link_fail, stall_link's fail phase, partitions)
        self.stalled = 0
        self.epoch = 0
        self.last: dict[str, int] = {}  # direction "a>b" -> last FIFO arrival time
        self.rng = rng
        self.windows: list[tuple[int, FaultEvent, random.Random]] = []


@final
class World:
    """One simulated run (see module doc). Drive it with :meth:`run`."""

    def __init__(
        self,
        *,
        graph: nx.Graph,
        workload: Workload,
        schedule: FaultSchedule,
        seed: int,
        binding: Binding,
        observer: Observer | None = None,
        record: bool = False,
        max_events: int = 5_000_000,
        link_delay_us: int = 1_000,
        link_jitter_us: int = 200,
    ) -> None:
        self.graph = graph
        self.binding = binding
        self.workload = workload
        self.schedule = schedule
        self.fault_events: list[FaultEvent] = list(schedule.events)
        self.timed_out = False
        self._started = False
        self.publishing = True
        self.observer = observer
        self.record = record
        self.records: list[TraceRecord] = []
        self.digest = TraceDigest()
        self.max_events = max_events
        self.now = 0
        self.events = 0
        self.stopped = False
        self._seq = 0
        self._rseq = 0
        self._queue: list[tuple[Any, ...]] = []
        self.coverage: dict[str, int] = {}
        self.fault_hook: Callable[[tuple[FaultEvent, ...]], None] | None = None
        """Called with the active fault events after every fault phase change (a run's fault
        budget is judged with it)."""
        states = binding.initial_states()
        self.nodes: dict[str, _Node] = {}
        for name in sorted(graph.nodes):
            nbs = tuple(sorted(graph.neighbors(name)))
            self.nodes[name] = _Node(name, states[name], nbs)
        self.links: dict[str, _Link] = {}
        # sender -> receiver -> their link (both directions), so the hot paths skip link_name
        self._link_to: dict[str, dict[str, _Link]] = {name: {} for name in self.nodes}
        for a, b in sorted(tuple(sorted(e)) for e in graph.edges):
            ln = link_name(a, b)
            self.links[ln] = link = _Link(random.Random(derive_seed(seed, "link", ln)))
            if a != b:
                self._link_to[a][b] = self._link_to[b][a] = link
        # subscribers: name -> (shb, filter); connection numbers; who is disconnected by a fault
        self.subs = {s.name: s for s in workload.subscriptions}
        self.conn: dict[str, int] = {}
        self.connected: dict[str, bool] = {}
        self.sub_faults: dict[str, int] = {}
        self.host: dict[str, str] = {name: s.shb for name, s in self.subs.items()}
        """Each subscriber's current broker (its SHB unless the binding lets it roam)."""
        self.failed: set[str] = set()
        """Brokers that failed forever (``fail`` faults): never restarted."""
        self._joiners: dict[str, str] = dict(getattr(binding, "joiners", {}))
        self.unjoined: set[str] = set(self._joiners)
        """Brokers not in the system yet: absent until their ``join`` fault (module doc)."""
        self.joining: set[str] = set()
        """Brokers whose ``join`` fault came while their attach point was unreachable."""
        for name in self.unjoined:
            self.nodes[name].alive = False
        self._roam: Callable[[str, int, tuple[str, ...]], str] | None = getattr(
            binding, "roam", None
        )
        self.active: dict[int, bool] = {}
        self.delay = link_delay_us
        self.jitter = link_jitter_us
        self._has_coverage = hasattr(binding, "coverage")
        self._malformed: Callable[[Any, Any], str | None] | None = getattr(
            binding, "malformed", None
        )
        self.check_forms = False
        """Whether each step that changes a node's state asks the binding's optional
        ``malformed(before, after)`` and records what it names as a ``malformed`` record
        (``canonical_state``, :mod:`gapless.invariants.gd.forms`); a run turns it on when that
        invariant is judged."""
        self._effect_labels: Callable[[Any], tuple[str, ...] | None] | None = getattr(
            binding, "effect_labels", None
        )
        self._resume_token: Callable[[str, dict[str, int]], Any] | None = getattr(
            binding, "resume_token", None
        )
        self._reconnecting: Callable[[str, str], None] | None = getattr(
            binding, "reconnecting", None
        )
        """Optional: told the kind of the fault (``disconnect``, ``move``, ``older_ct``) whose
        end reconnects a subscriber, just before it reconnects (``faults.py``)."""
        self._profile: Callable[[str, int], str] | None = getattr(binding, "profile", None)
        """Optional: the profile (filter) a subscriber presents at each connection number (a
        client may change its profile when it reconnects); without it, its workload filter."""
        self._may_disconnect: Callable[[str, Any], bool] | None = getattr(
            binding, "may_disconnect", None
        )
        """Optional: whether a subscriber may leave now, given its broker's role state (a
        client that waits for something before it disconnects); a ``disconnect`` fault of a
        subscriber that may not is held until it may (:meth:`_leave`)."""
        self.held: set[str] = set()
        """Subscribers whose ``disconnect`` fault started while they could not leave yet."""
        self.consumed: dict[str, dict[str, int]] = {}
        """Per subscriber, per pubend: the highest tick delivered to it (what a client that
        keeps its own checkpoint has consumed; kept only for bindings with ``resume_token``)."""
        self._cost: Callable[[Any], tuple[int, int]] | None = None
        self.service_us = int(graph.graph.get("service_us", 0))
        self.bandwidth = {
            link_name(a, b): int(d["bytes_per_s"])
            for a, b, d in graph.edges(data=True)
            if d.get("bytes_per_s")
        }
        self.deliver_us = int(graph.graph.get("deliver_us", 0))
        self.receive_us = int(graph.graph.get("receive_us", 0))
        self._serve = bool(self.deliver_us or self.receive_us)
        if self.service_us or self.bandwidth or self._serve:
            self._cost = getattr(binding, "message_cost", None)
        if self.receive_us and self._cost is None:
            raise ProtocolMisuse(
                "World: receive_us needs a binding with message_cost(msg) -> (events, bytes)"
            )
        self._gated = self._cost is not None or self._serve
        self.busy: dict[str, int] = {}
        """Capacity (optional, see :meth:`_occupy`): when each broker, and each link
        direction ``"a>b"``, is next free."""
        self.inbox: dict[str, deque[tuple[str, Any, Wire, int]]] = {}
        """Local work (optional, see :meth:`_take`): per broker, the received messages
        waiting to be handled, with their sender, wire summary and link epoch."""

    # ---------------------------------------------------------------- plumbing

    def _push(self, time: int, code: int, *args: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (time, self._seq, code, *args))

    def _rec(self, node: str, kind: str, detail: Any) -> None:
        if self.observer is None and not self.record:  # only the digest reads it
            self.digest.add_fields(self._rseq, self.now, node, kind, detail)
            self._rseq += 1
            return
        r = TraceRecord(seq=self._rseq, time=self.now, node=node, kind=kind, detail=detail)
        self.digest.add_fields(self._rseq, self.now, node, kind, detail)
        self._rseq += 1
        if self.record:
            self.records.append(r)
        if self.observer is not None and self.observer(r):
            self.stopped = True

    def _input(self, node: _Node, inp: Input) -> None:
        before = node.state
        state, effects = self.binding.handle(before, inp, self.now)
        node.state = state
        if self._has_coverage and state is not before:
            for label in self.binding.coverage(before, state, inp):  # type: ignore[attr-defined]
                self.coverage[label] = self.coverage.get(label, 0) + 1
        if self.check_forms and state is not before and self._malformed is not None:
            problem = self._malformed(before, state)
            if problem is not None:
                self._rec(node.name, "malformed", Malformed(text=problem))
        for eff in effects:
            if type(eff) is Send:  # the commonest effect: no second dispatch
                self._send(node, eff)
            else:
                self._effect(node, eff)
        if self.held:
            self._release_held(node.name)

    def _leave(self, sub: str) -> None:
        """A ``disconnect`` fault starts: the subscriber leaves now, or is held while the
        binding's ``may_disconnect`` says it must wait."""
        node, may = self.nodes[self.host[sub]], self._may_disconnect
        if may is not None and self.connected.get(sub) and node.alive and not may(sub, node.state):
            self.held.add(sub)
            return
        self._disconnect(sub)

    def _release_held(self, name: str) -> None:
        """After a step of ``name``: its held subscribers that may leave now leave (those
        that lost their connection meanwhile, e.g. to a crash, are no longer held)."""
        node = self.nodes[name]
        for sub in sorted(self.held):
            if self.host[sub] != name:
                continue
            if not self.connected.get(sub):
                self.held.discard(sub)
            elif self._may_disconnect is not None and self._may_disconnect(sub, node.state):
                self.held.discard(sub)
                self._disconnect(sub)

    def _effect(self, node: _Node, eff: Any) -> None:
        t = type(eff)
        if t is Send:
            self._send(node, eff)
        elif t is SetTimer:
            self._seq += 1
            gen = self._seq
            node.timers[eff.key] = gen
            heapq.heappush(
                self._queue,
                (max(eff.at, self.now), gen, _TIMER, node.name, eff.key, gen, node.epoch),
            )
        elif t is CancelTimer:
            node.timers.pop(eff.key, None)
        elif t is Persist:
            self._rec(node.name, "persist", eff)
            self._push(self.now + max(0, eff.delay), _PERSISTED, node.name, eff.key, node.epoch)
        elif t is Deliver or t is DeliverCohort:
            self._rec(node.name, "deliver", eff)
            if self.deliver_us:
                n = 1 if t is Deliver else len(eff.to)
                self.busy[node.name] = max(self.busy.get(node.name, 0), self.now) + (
                    n * self.deliver_us
                )
            if self._resume_token is not None:
                for d in deliveries(eff):
                    got = self.consumed.setdefault(d.subscriber, {})
                    got[d.pubend] = max(got.get(d.pubend, -1), d.tick)
        elif t is Rejected:
            self._rec(node.name, "rejected", eff)
        else:
            labels = self._effect_labels(eff) if self._effect_labels is not None else None
            if labels is not None:  # counted beside the trace, never in it (digest v2)
                cov = self.coverage
                for label in labels:
                    cov[label] = cov.get(label, 0) + 1
            else:
                self._rec(node.name, "rejected", Rejected(reason=f"unknown effect {t.__name__}"))

    def _link_up(self, a: str, b: str, link: _Link) -> bool:
        return link.down == 0 and self.nodes[a].alive and self.nodes[b].alive

    def _send(self, node: _Node, eff: Send) -> None:
        src, to, msg = node.name, eff.to, eff.msg
        wire = self.binding.wire(msg)
        self._rec(src, "send", Sent(to=to, msg=msg, wire=wire))
        link = self._link_to[src].get(to) if to != src else None
        if (
            link is not None
            and not link.windows
            and not link.down
            and not link.stalled
            and not node.stalled
            and not self._gated
            and node.alive
            and self.nodes[to].alive
        ):
            # the common case, as the general path below computes it: a healthy link without
            # fault windows, no capacity model, one copy in FIFO order
            jitter = self.jitter
            if jitter:  # _randint0(link.rng, jitter), inline
                n = jitter + 1
                k = n.bit_length()
                getrandbits = link.rng.getrandbits
                r = getrandbits(k)
                while r >= n:
                    r = getrandbits(k)
                jitter = r
            arrival = self.now + self.delay + jitter
            direction = src + ">" + to
            last = link.last.get(direction, 0)
            if last > arrival:
                arrival = last
            link.last[direction] = arrival
            self._seq += 1
            heapq.heappush(
                self._queue, (arrival, self._seq, _ARRIVE, to, src, msg, link.epoch, wire)
            )
            return
        reason = None
        if link is None:
            reason = "no link"
        elif node.stalled:
            reason = "sender stalled"
        elif not self._link_up(src, to, link):
            reason = "link down"
        elif link.stalled:
            reason = "link stalled"
        if reason is not None or link is None:
            why = reason or "no link"
            self._rec(src, "drop", Dropped(sender=src, to=to, msg=msg, wire=wire, reason=why))
            return
        copies = 1
        extra = 0
        reordered = False
        for _i, ev, rng in link.windows:
            if ev.kind == "drop":
                if rng.random() < ev.probability:
                    self._rec(
                        src, "drop", Dropped(sender=src, to=to, msg=msg, wire=wire, reason="loss")
                    )
                    return
            elif ev.kind == "duplicate":
                if rng.random() < ev.probability:
                    copies += 1
            else:  # reorder
                extra += rng.randint(0, ev.max_delay_us)
                reordered = True
        jitter = _randint0(link.rng, self.jitter) if self.jitter else 0
        depart = self._occupy(src, to, msg) if self._gated else self.now
        arrival = depart + self.delay + jitter + extra
        direction = src + ">" + to
        if not reordered:
            arrival = max(arrival, link.last.get(direction, 0))
            link.last[direction] = arrival
        q = self._queue
        for c in range(copies):  # _push, inline (one heap entry per copy, no argument tuple)
            self._seq += 1
            heapq.heappush(q, (arrival + c, self._seq, _ARRIVE, to, src, msg, link.epoch, wire))

    def _occupy(self, src: str, to: str, msg: Any) -> int:
        """When ``msg`` leaves ``src`` on its link to ``to`` under the optional capacity model
        (off unless the graph has a ``service_us`` attribute or links with ``bytes_per_s``, and
        the binding has ``message_cost(msg) -> (events, bytes)``): the sender's broker handles
        one message at a time, ``service_us`` per event the message carries; then the link
        direction transmits one message at a time, ``bytes`` at its ``bytes_per_s``. Queueing
        behind earlier messages is what makes latency grow with load."""
        events, size = (0, 0) if self._cost is None else self._cost(msg)
        busy = self.busy
        t = self.now
        if self.service_us:
            t = max(t, busy.get(src, 0)) + events * self.service_us
            busy[src] = t
        elif self._serve:  # local work (:meth:`_take`): it leaves once the broker is free
            t = max(t, busy.get(src, 0))
        bw = self.bandwidth.get(link_name(src, to), 0)
        if bw:
            d = src + ">" + to
            t = max(t, busy.get(d, 0)) + -(-size * 1_000_000 // bw)
            busy[d] = t
        return t

    def _take(self, node: _Node, src: str, msg: Any, epoch: int, wire: Wire) -> None:
        """Local work (module doc): ``msg`` from ``src`` arrived at ``node``; handle it now
        if the broker is free and nothing waits before it, else queue it in its inbox behind
        the others (one ``_SERVE`` event is pending while the inbox is not empty)."""
        q = self.inbox.get(node.name)
        if q is None:
            q = self.inbox[node.name] = deque()
        if not q and self.busy.get(node.name, 0) <= self.now:
            self._handle(node, src, msg)
            return
        q.append((src, msg, wire, epoch))
        if len(q) == 1:
            self._push(self.busy.get(node.name, 0), _SERVE, node.name, node.epoch)

    def _handle(self, node: _Node, src: str, msg: Any) -> None:
        if self.receive_us:
            assert self._cost is not None
            events = self._cost(msg)[0]
            if events:
                busy = max(self.busy.get(node.name, 0), self.now)
                self.busy[node.name] = busy + events * self.receive_us
        self._input(node, Receive(sender=src, msg=msg))

    def _serve_next(self, name: str, epoch: int) -> None:
        """The broker is free: handle the message at the head of its inbox (dropped if its
        link failed since it arrived), then wait for the next one."""
        node = self.nodes[name]
        q = self.inbox.get(name)
        if node.epoch != epoch or not q:
            return
        src, msg, wire, link_epoch = q.popleft()
        if self._link_to[src][name].epoch != link_epoch:
            self._rec(
                name, "drop", Dropped(sender=src, to=name, msg=msg, wire=wire, reason="in flight")
            )
        else:
            self._handle(node, src, msg)
        if q and node.epoch == epoch:
            self._push(max(self.now, self.busy.get(name, 0)), _SERVE, name, epoch)

    # ---------------------------------------------------------------- faults

    def _notify_link(self, a: str, b: str, up: bool) -> None:
        for x, y in ((a, b), (b, a)):
            nx_ = self.nodes[x]
            if nx_.alive:
                self._input(nx_, LinkChanged(neighbour=y, up=up))

    def _link_down(self, ln: str) -> None:
        link = self.links[ln]
        a, b = ln.split("|")
        was = self._link_up(a, b, link)
        link.down += 1
        link.epoch += 1
        if was:
            self._notify_link(a, b, False)

    def _link_heal(self, ln: str) -> None:
        link = self.links[ln]
        a, b = ln.split("|")
        link.down = max(0, link.down - 1)
        if self._link_up(a, b, link):
            self._notify_link(a, b, True)

    def _crash(self, name: str) -> None:
        node = self.nodes[name]
        if not node.alive:
            return
        ups = [
            nb for nb in node.neighbours if self._link_up(name, nb, self.links[link_name(name, nb)])
        ]
        node.alive = False
        node.epoch += 1
        node.timers.clear()
        node.state = self.binding.crash(node.state)
        for src, msg, wire, _e in self.inbox.pop(name, ()):
            self._rec(
                name, "drop", Dropped(sender=src, to=name, msg=msg, wire=wire, reason="inbox")
            )
        for nb in node.neighbours:
            self.links[link_name(name, nb)].epoch += 1
        for sub in sorted(self.subs):
            if self.host[sub] == name and self.connected.get(sub):
                self.connected[sub] = False
                self._rec(name, "disconnect", Disconnect(subscriber=sub))
        for nb in ups:
            nbn = self.nodes[nb]
            if nbn.alive:
                self._input(nbn, LinkChanged(neighbour=name, up=False))

    def _restart(self, name: str) -> None:
        node = self.nodes[name]
        if node.alive or name in self.failed or name in self.unjoined:
            return
        node.alive = True
        self._input(node, Restart())
        for nb in node.neighbours:
            up = self._link_up(name, nb, self.links[link_name(name, nb)])
            self._input(node, LinkChanged(neighbour=nb, up=up))
            if up:
                self._input(self.nodes[nb], LinkChanged(neighbour=name, up=True))
        for sub in sorted(self.subs):
            if self.host[sub] == name and not self.sub_faults.get(sub):
                self._connect(sub)

    def _connect(self, sub: str) -> None:
        s = self.subs[sub]
        if self.connected.get(sub):
            return
        n = self.conn.get(sub, -1) + 1
        if self._roam is not None:
            alive = tuple(name for name in sorted(self.nodes) if self.nodes[name].alive)
            if not alive:
                return
            self.host[sub] = self._roam(sub, n, alive)
        node = self.nodes[self.host[sub]]
        if not node.alive:
            return
        self.conn[sub] = n
        self.connected[sub] = True
        resume = None
        if self._resume_token is not None:
            resume = self._resume_token(sub, dict(sorted(self.consumed.get(sub, {}).items())))
        flt = s.filter if self._profile is None else self._profile(sub, n)
        inp = Connect(subscriber=sub, filter=flt, connection=n, resume=resume)
        self._rec(node.name, "connect", inp)
        self._input(node, inp)

    def _disconnect(self, sub: str) -> None:
        if not self.connected.get(sub):
            return
        self.connected[sub] = False
        inp = Disconnect(subscriber=sub)
        self._rec(self.host[sub], "disconnect", inp)
        node = self.nodes[self.host[sub]]
        if node.alive:
            self._input(node, inp)

    def _reprofile(self, sub: str) -> None:
        """A ``reprofile`` fault: a connected subscriber changes its profile within its
        connection. Its broker gets a ``Connect`` for the connection it holds, with the profile
        the binding's optional ``reprofile`` seam picks (given the broker's state; None: no
        change now)."""
        seam = getattr(self.binding, "reprofile", None)
        node = self.nodes[self.host[sub]]
        if seam is None or not self.connected.get(sub) or not node.alive:
            return
        flt = seam(sub, node.state)
        if flt is None:
            return
        inp = Connect(subscriber=sub, filter=flt, connection=self.conn[sub])
        self._rec(node.name, "connect", inp)
        self._input(node, inp)

    def _crossing(self, target: str) -> list[str]:
        side = set(target.split(","))
        return sorted(link_name(a, b) for a, b in self.graph.edges if (a in side) != (b in side))

    def _fault(self, index: int, phase: str) -> None:
        ev = self.fault_events[index]
        k, tgt = ev.kind, ev.target
        if phase == "start":
            if index in self.active:
                return
            self.active[index] = True
        elif not self.active.get(index) or k == "join":  # a join has no end
            return
        where = self.host[tgt] if k in _SUB_KINDS else tgt.split("|")[0].split(",")[0]
        self._rec(where, "fault", Fault(kind=k, target=tgt, phase=phase))
        if k == "crash":
            if phase == "start":
                self._crash(tgt)
            else:
                self._restart(tgt)
        elif k == "fail":
            if phase == "start":
                self.failed.add(tgt)
                self._crash(tgt)
            else:  # its clients reconnect elsewhere (when they may roam); it stays failed
                for sub in sorted(self.subs):
                    if self.host[sub] == tgt and not self.sub_faults.get(sub):
                        self._connect(sub)
        elif k == "stall_broker":
            node = self.nodes[tgt]
            if phase == "start":
                node.stalled += 1
            elif phase == "fail":
                node.stalled = max(0, node.stalled - 1)
                self._crash(tgt)
            else:
                self._restart(tgt)
        elif k == "link_fail":
            (self._link_down if phase == "start" else self._link_heal)(tgt)
        elif k == "stall_link":
            link = self.links[tgt]
            if phase == "start":
                link.stalled += 1
            elif phase == "fail":
                link.stalled = max(0, link.stalled - 1)
                self._link_down(tgt)
            else:
                self._link_heal(tgt)
        elif k in ("drop", "duplicate", "reorder"):
            link = self.links[tgt]
            if phase == "start":
                link.windows.append((index, ev, ev.rng()))
                link.windows.sort(key=lambda w: w[0])
            else:
                link.windows = [w for w in link.windows if w[0] != index]
        elif k in RECONNECTING_KINDS:
            if phase == "start":
                self.sub_faults[tgt] = self.sub_faults.get(tgt, 0) + 1
                self._leave(tgt)
            else:
                self.sub_faults[tgt] = max(0, self.sub_faults.get(tgt, 0) - 1)
                if not self.sub_faults[tgt]:
                    self.held.discard(tgt)  # still waiting when the fault ended: it stays
                    if self._reconnecting is not None:  # a move, an older CT (faults.py)
                        self._reconnecting(tgt, k)
                    self._connect(tgt)
        elif k == "reprofile":
            if phase == "start":
                self._reprofile(tgt)
        elif k == "partition":
            for ln in self._crossing(tgt):
                (self._link_down if phase == "start" else self._link_heal)(ln)
        elif k == "join":
            self._join(tgt)
        for name in sorted(self.joining):  # a heal or restart may let a waiting join in
            self._join(name)
        if phase == "end":
            self.active[index] = k == "fail"  # a broker that failed forever stays failed
        elif phase == "fail":
            self.active[index] = True
        if self.fault_hook is not None:
            self.fault_hook(self.active_faults())

    def _join(self, name: str) -> None:
        """A ``join`` fault: broker ``name`` enters the system (module doc, "Joins")."""
        if name not in self.unjoined:
            return
        to = self._joiners[name]
        link = self.links.get(link_name(name, to))
        if not self.nodes[to].alive or (link is not None and link.down):
            self.joining.add(name)  # it joins when its attach point is reachable
            return
        self.unjoined.discard(name)
        self.joining.discard(name)
        node = self.nodes[name]
        node.state = self.binding.join(name, node.state)  # type: ignore[attr-defined]
        self._restart(name)

    def active_faults(self) -> tuple[FaultEvent, ...]:
        """The fault events active now, in schedule order."""
        return tuple(self.fault_events[i] for i in sorted(i for i, on in self.active.items() if on))

    def _end_phase_of(self, index: int) -> list[tuple[int, str]]:
        ev = self.fault_events[index]
        if ev.kind == "join":
            return []
        if ev.kind in ("stall_broker", "stall_link"):
            return [(ev.at_us + ev.stall_us, "fail"), (ev.end_us, "end")]
        return [(ev.end_us, "end")]

    # ---------------------------------------------------------------- main loop

    def _validate_event(self, ev: FaultEvent) -> None:
        if ev.kind in ("crash", "stall_broker", "fail") and ev.target not in self.nodes:
            raise ProtocolMisuse(f"World: fault {ev.kind} targets unknown broker {ev.target!r}")
        if ev.kind in ("link_fail", "stall_link", "drop", "duplicate", "reorder") and (
            ev.target not in self.links
        ):
            raise ProtocolMisuse(f"World: fault {ev.kind} targets unknown link {ev.target!r}")
        if ev.kind in _SUB_KINDS and ev.target not in self.subs:
            raise ProtocolMisuse(f"World: fault {ev.kind} targets unknown subscriber {ev.target!r}")
        if ev.kind == "join" and ev.target not in self._joiners:
            allowed = ", ".join(sorted(self._joiners)) or "none (the binding names no joiners)"
            raise ProtocolMisuse(
                f"World: join targets {ev.target!r}, not a joiner; allowed: {allowed}"
            )
        if ev.kind == "partition":
            bad = [n for n in ev.target.split(",") if n not in self.nodes]
            if bad:
                raise ProtocolMisuse(f"World: partition names unknown brokers {bad!r}")

    def start(self, *, duration_us: int) -> None:
        """Connect the subscribers and queue the workload's publishes and the schedule's
        faults that start before ``duration_us`` (and their phases before it)."""
        for ev in self.fault_events:
            self._validate_event(ev)
        self._started = True
        self._duration = duration_us
        for name in sorted(self.nodes):  # boot every node at time 0 (a joiner at its join)
            if name not in self.unjoined:
                self._input(self.nodes[name], Restart())
        for sub in sorted(self.subs):
            if self.subs[sub].arrives_us > 0:  # a scripted subscriber that arrives later
                self._push(self.subs[sub].arrives_us, _CONNECT, sub)
            else:
                self._connect(sub)
        for pub in self.workload.publishes:
            if pub.at_us < duration_us:
                self._push(pub.at_us, _PUBLISH, pub)
        for i in range(len(self.fault_events)):
            self._queue_fault(i, duration_us)
        if self.binding.status_period_us > 0:
            self._push(self.binding.status_period_us, _STATUS)

    def _queue_fault(self, i: int, duration_us: int) -> None:
        ev = self.fault_events[i]
        if ev.at_us < duration_us:
            self._push(max(ev.at_us, self.now), _FAULT, i, "start")
            for at, phase in self._end_phase_of(i):
                if at < duration_us:
                    self._push(max(at, self.now), _FAULT, i, phase)

    def add_fault(self, ev: FaultEvent) -> int:
        """Add a fault event during a run (stateful tests); returns its index."""
        self._validate_event(ev)
        self.fault_events.append(ev)
        i = len(self.fault_events) - 1
        self._queue_fault(i, self._duration)
        return i

    def add_publish(self, ev: PublishEvent) -> None:
        """Queue one more published message (stateful tests)."""
        self._push(max(ev.at_us, self.now), _PUBLISH, ev)

    def advance(self, until_us: int) -> None:
        """Process every event up to virtual time ``until_us`` (or until stopped)."""
        self._loop(until_us)
        if not self.stopped:
            self.now = max(self.now, until_us)

    def run(self, *, duration_us: int, drain_us: int) -> None:
        """Publish and inject faults until ``duration_us``, heal everything, drain until
        ``duration_us + drain_us``. Stops early when the observer reports a violation or the
        event budget runs out (``self.stopped`` / ``self.timed_out``)."""
        self.start(duration_us=duration_us)
        self.advance(duration_us)
        if self.stopped:
            return
        self.heal_all()
        self.advance(duration_us + drain_us)

    def stop_publishing(self) -> None:
        """Publish nothing more (the drain phase of a stateful test)."""
        self.publishing = False

    def heal_all(self) -> None:
        """End every active fault now, in event order."""
        for i in sorted(i for i, on in self.active.items() if on):
            ev = self.fault_events[i]
            if ev.kind in ("stall_broker", "stall_link") and self.now < ev.at_us + ev.stall_us:
                # still stalling: the stall ends without the failure
                if ev.kind == "stall_broker":
                    self.nodes[ev.target].stalled = max(0, self.nodes[ev.target].stalled - 1)
                else:
                    self.links[ev.target].stalled = max(0, self.links[ev.target].stalled - 1)
                self._rec(
                    ev.target.split("|")[0],
                    "fault",
                    Fault(kind=ev.kind, target=ev.target, phase="end"),
                )
                self.active[i] = False
                if self.fault_hook is not None:
                    self.fault_hook(self.active_faults())
                continue
            self._fault(i, "end")

    def _loop(self, until: int) -> None:
        q = self._queue
        nodes = self.nodes
        while q and not self.stopped:
            if q[0][0] > until:
                return
            if self.events >= self.max_events:
                self.timed_out = True
                self.stopped = True
                return
            item = heapq.heappop(q)
            self.events += 1
            self.now = item[0]
            code = item[2]
            if code == _ARRIVE:
                _t, _s, _c, to, src, msg, epoch, wire = item
                node = nodes[to]
                link = self._link_to[src][to]
                if not node.alive or link.epoch != epoch:
                    self._rec(
                        to,
                        "drop",
                        Dropped(sender=src, to=to, msg=msg, wire=wire, reason="in flight"),
                    )
                    continue
                if self._serve:
                    self._take(node, src, msg, epoch, wire)
                else:
                    self._input(node, Receive(sender=src, msg=msg))
            elif code == _TIMER:
                _t, _s, _c, name, key, gen, epoch = item
                node = nodes[name]
                if node.epoch != epoch or node.timers.get(key) != gen:
                    continue
                del node.timers[key]
                self._input(node, TimerFired(key=key))
            elif code == _PERSISTED:
                _t, _s, _c, name, key, epoch = item
                node = nodes[name]
                if node.epoch != epoch or not node.alive:
                    continue
                inp = Persisted(key=key)
                self._rec(name, "persisted", inp)
                self._input(node, inp)
            elif code == _PUBLISH:
                if not self.publishing:
                    continue
                ev = item[3]
                host = self._host(ev.pubend)
                node = nodes[host]
                if not node.alive:
                    continue
                self._rec(
                    host,
                    "publish",
                    Published(
                        pubend=ev.pubend, index=ev.index, attributes=ev.attributes, size=ev.size
                    ),
                )
                self._input(node, self.binding.publish_input(ev))
            elif code == _FAULT:
                self._fault(item[3], item[4])
            elif code == _CONNECT:
                self._connect(item[3])
            elif code == _SERVE:
                self._serve_next(item[3], item[4])
            else:  # _STATUS
                for name in sorted(nodes):
                    node = nodes[name]
                    if not node.alive:
                        continue
                    for nb in node.neighbours:
                        up = self._link_up(name, nb, self.links[link_name(name, nb)])
                        self._input(node, LinkChanged(neighbour=nb, up=up))
                self._push(self.now + self.binding.status_period_us, _STATUS)

    def _host(self, pubend: str) -> str:
        hosts = getattr(self, "_hosts", None)
        if hosts is None:
            hosts = dict(self.graph.graph["pubends"])
            self._hosts = hosts
        return str(hosts[pubend])

    def wire_of(self, msg: Any) -> Wire:
        """The binding's summary of ``msg`` (for tools that read traces)."""
        return self.binding.wire(msg)
