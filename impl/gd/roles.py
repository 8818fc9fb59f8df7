"""The GD roles — pubend hosting broker, intermediate broker, subscriber hosting broker — as pure
state machines [GD §2-3].

Theory of operation
-------------------
Every physical broker is one :class:`~gapless.impl.gd.state.NodeState`; :func:`handle` feeds it
one input and returns the new state and the effects. A broker keeps, per pubend ``P`` whose
knowledge tree passes through its cell, one stream (``istream[P]``) and per downstream cell
``c`` one ``ostream[P, c]`` [GD §3.1]. The three roles differ only in where knowledge comes
from and where it goes:

* **PHB** (pubend hosting broker, [GD §2.2, §3.2]): a ``Publish`` gets the next tick on the
  pubend's residue (tick ``t`` with ``t % tick_modulus == number``, so merged pubends never
  share a tick), the ticks since the previous one become F, and the message is written to
  stable storage (``Persist``, completing ``logging_delay_us`` later). Only when ``Persisted``
  arrives is the tick D and the message published: it is forwarded first-time with the silence
  since the previous D. An idle pubend advances silence (Q -> F up to now) every
  ``silence_period_us``; every ``ack_expected_period_us`` it sends ``AckExpected(now - AET)``
  down every path that has not acked that far; after a restart it rebuilds its stream from the
  log (every unlogged tick is silence) and at once sends ``AckExpected(last logged tick)``
  [GD §4.2]. Nacks are answered from the stream (the log). Acked ticks are released from the
  log. For total order, each D pre-assigns F to the next ``preassign_us`` ticks [GD §2.2]: the
  data message carries them (``D F*``), so a merge downstream never waits on a quiet pubend for
  longer than that; the reservation is logged with the message so a restart never reuses it.
* **IB** (intermediate broker, [GD §3.1]): accumulates knowledge messages into ``istream[P]``.
  First-time data goes to the downstream cells whose edge filter matches (a non-matching D is
  F for that cell — acked at once); first-time silence goes only to downstream brokers whose
  ostream holds an overlapping C; retransmitted knowledge only to brokers curious for some of
  its ticks, with D ticks they are not curious for removed. A nack is first satisfied from the
  streams (a retransmission to the nacker); the rest becomes C in the ostream and in the
  istream, and only ticks *newly* C in the istream go upstream (nack consolidation). istream C is
  forgotten after ``min_repetition_us`` so a repeated nack looks fresh. The istream is A where
  every ostream is A or the istream is F; its A prefix is acked upstream (ack consolidation).
  ``AckExpected`` is answered with an ack when the istream is acked that far, else forwarded to
  the cells that are not.
* **SHB** (subscriber hosting broker, [GD §2.3, §3.2, §4.1]): one stream per pubend serves every
  subscriber there. Its doubt horizon ``t_D`` is the first Q tick above the delivered prefix;
  when it advances the D ticks below it are delivered in tick order to every subscriber whose
  filter matches (an index: equality subscriptions by lookup), then become F. A total-order
  group delivers the merged stream below the least horizon of its members [GD §2.4]. The
  delivered prefix is acked (at most every ``ack_delay_us``). A gap (Q ticks below a known tick)
  is nacked after GCT; unsatisfied nacks are repeated with an RTO estimated from nack round
  trips (initial NRT, floor ``min_repetition_us``, exponential backoff capped at
  ``backoff_cap_us``); ranges are chopped into ``nack_chunk_us`` pieces; ``AckExpected(T)``
  nacks every Q tick up to T at once; with a finite DCT a horizon lagging now by more than DCT
  is nacked. A stream starts at the boot time: ticks before it belong to no connection.

Cells and link bundles [GD §3.1]: towards a downstream cell a broker picks, among the cell's
brokers it has an up link to, the one at position ``number(P) % len(cell)`` of the sorted list
(next ones if that link is down, or if that broker's link status says it cannot reach the
cell's own downstream cells). With no up link to the cell it routes *sideways* through a cell
neighbour (``for_cell``). Acks and nacks go to the broker that last sent knowledge of that
pubend, or to every broker of the upstream cell with an up link when that is unknown or down.
Every broker sends :class:`~gapless.impl.gd.messages.LinkStatus` to its neighbours every
``link_status_period_us``.

Best-effort mode (``config.best_effort``, [GD §4.1]): a pubend forwards each message at once,
brokers forward D along matching edges, an SHB delivers on arrival; nothing else.

What a role may assume: inputs come from the world in virtual-time order, ``now`` never
decreases, every node gets ``Restart()`` once at boot (time 0) and after each crash, a crashed
node gets nothing until its ``Restart()``. What it never assumes: that links are reliable,
ordered or up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, final

import attrs

from gapless.impl.effects import Deliver, DeliverCohort, Persist, Rejected, Send, SetTimer
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.filters import FilterIndex, FilterSyntaxError, parse_filter
from gapless.impl.fmap import FMap
from gapless.impl.gd import ranges as R
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.messages import Ack, AckExpected, Data, Knowledge, LinkStatus, Nack
from gapless.impl.gd.policy import (
    PAPER_POLICY,
    GDPolicy,
    paper_doubt_horizon,
    paper_filter_transfer,
    paper_first_time_silence,
)
from gapless.impl.gd.state import (
    EdgeFilter,
    GroupState,
    LogRecord,
    NodeCtx,
    NodeState,
    Ostream,
    PubendLog,
    Rows,
    Stream,
    data_above,
    data_get,
    data_put,
    data_remove,
    evolve,
)
from gapless.impl.gd.topology import GDTopology
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
from gapless.impl.knowledge import D as KD
from gapless.impl.knowledge import Kind

__all__ = [
    "Observe",
    "crash",
    "handle",
    "initial_states",
    "on_connect",
    "on_disconnect",
    "on_link_changed",
    "on_persisted",
    "on_publish",
    "on_receive",
    "on_restart",
    "on_timer_fired",
]

LOG_KEY: Final = "gd-log"
FILTERED: Final = "K:D->F(filter)"
#: The D value handed to ``policy.filter_transfer``: the rule judges the kind, the match is
#: computed by the edge filter (a payload-free stand-in avoids hashing the message).
_DATA: Final = KD("data")
_NO_OSTREAM: Final = Ostream()
_TIMER: Final = "gd"


@final
@attrs.frozen(kw_only=True)
class Observe:
    """Coverage effect (only with ``config.coverage``): the lattice transitions one step made,
    e.g. ``"K:Q->D"``, ``"K:Q->F"``, ``"K:D->F"``, ``"C:N->C"``, ``"C:C->N"``, ``"C:N->A"``.
    It changes nothing; the world records it (trace kind ``coverage``)."""

    labels: tuple[str, ...]


Out = list[Any]
Step = tuple[NodeState, tuple[Any, ...]]


# ==========================================================================================
# construction, crash
# ==========================================================================================


def initial_states(
    topology: GDTopology, config: GDConfig | None = None, policy: GDPolicy | None = None
) -> dict[str, NodeState]:
    """The initial state of every broker of ``topology``, keyed by broker name (sorted). Feed each
    ``Restart()`` at time 0 to boot it (arms its periodic timers)."""
    config = GDConfig() if config is None else config
    policy = PAPER_POLICY if policy is None else policy
    if not isinstance(topology, GDTopology):
        raise ProtocolMisuse(f"initial_states: {topology!r} is not a GDTopology")
    if len(topology.pubends) > config.tick_modulus:
        raise ProtocolMisuse(
            f"initial_states: {len(topology.pubends)} pubends but tick_modulus="
            f"{config.tick_modulus}; allowed: at most tick_modulus pubends [GD §2.2]"
        )
    pubend_ids = sorted(topology.pubends)
    numbers = _ro({p: i for i, p in enumerate(pubend_ids)})
    cell_brokers = _ro({c: topology.cell_brokers(c) for c in topology.cells()})
    broker_cells = _ro({b: spec.cell for b, spec in sorted(topology.brokers.items())})
    filter_cache: dict[tuple[str, tuple[str, ...]], EdgeFilter] = {}

    def edge_filter(p: str, c: str) -> EdgeFilter:
        explicit = topology.edge_filters.get(c)
        subs = topology.subscribers_below(p, c)
        key = (explicit or "", subs) if explicit is None else (explicit, ())
        if key not in filter_cache:
            if explicit is not None:
                filter_cache[key] = EdgeFilter(explicit=parse_filter(explicit), below=FilterIndex())
            else:
                filter_cache[key] = EdgeFilter(
                    explicit=None,
                    below=FilterIndex.build((s, topology.subscribers[s].filter) for s in subs),
                )
        return filter_cache[key]

    out: dict[str, NodeState] = {}
    for name in sorted(topology.brokers):
        spec = topology.brokers[name]
        cell = spec.cell
        pubends = tuple(p for p in pubend_ids if topology.in_tree(p, cell))
        children = {p: topology.child_cells(p, cell) for p in pubends}
        filters = {(p, c): edge_filter(p, c) for p in pubends for c in children[p]}
        neighbours = topology.neighbours(name)
        subs_here = sorted(s for s, sp in topology.subscribers.items() if sp.shb == name)
        sub_groups = {s: topology.subscribers[s].group for s in subs_here}
        groups = {
            g: topology.groups[g] for g in sorted({g for g in sub_groups.values() if g is not None})
        }
        ctx = NodeCtx(
            name=name,
            role=spec.role,
            cell=cell,
            topology=topology,
            config=config,
            policy=policy,
            pubends=pubends,
            hosted=tuple(p for p in pubend_ids if topology.pubends[p] == name),
            index=_ro({p: i for i, p in enumerate(pubends)}),
            child_index=_ro({(p, c): i for p in pubends for i, c in enumerate(children[p])}),
            numbers=numbers,
            parent=_ro({p: topology.parent_cell(p, cell) for p in pubends}),
            children=_ro(children),
            filters=_ro(filters),
            cell_brokers=cell_brokers,
            neighbours=neighbours,
            cell_neighbours=tuple(n for n in neighbours if topology.cell_of(n) == cell),
            groups=_ro(groups),
            groups_of=_ro({p: tuple(g for g in sorted(groups) if p in groups[g]) for p in pubends}),
            sub_groups=_ro(sub_groups),
            grandchildren=_ro(
                {(p, c): topology.child_cells(p, c) for p in pubends for c in children[p]}
            ),
            broker_cells=broker_cells,
            fast_publish=config.fast_paths and _phb_fast_policy(config, policy),
        )
        out[name] = NodeState(ctx=ctx, up=False)
    return out


def _ro(d: dict[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(d)


def crash(state: NodeState) -> NodeState:
    """The broker crashes [GD §2.1]: all soft state is lost, the pubend's stable log is kept.
    The node ignores every input until ``Restart()``."""
    if not isinstance(state, NodeState):
        raise ProtocolMisuse(f"crash: {state!r} is not a GD NodeState")
    return NodeState(ctx=state.ctx, up=False, epoch=state.epoch, log=state.log)


# ==========================================================================================
# dispatch
# ==========================================================================================


def handle(state: NodeState, inp: Input, now: int) -> Step:
    """One step of a broker: dispatch ``inp`` to its ``on_<input>`` handler. An input that
    changes nothing returns the same state object and ``()``."""
    if not isinstance(state, NodeState):
        raise ProtocolMisuse(f"handle: {state!r} is not a GD NodeState")
    if isinstance(inp, Restart):
        return on_restart(state, inp, now)
    if not state.up:
        return state, ()
    handler = _HANDLERS.get(type(inp))
    if handler is None:
        raise ProtocolMisuse(
            f"handle: node {state.name!r} got {inp!r}; allowed: Receive, TimerFired, Persisted, "
            "LinkChanged, Publish, Connect, Disconnect, Restart"
        )
    return handler(state, inp, now)


def _finish(old: NodeState, new: NodeState, out: Out, labels: list[str]) -> Step:
    if labels and new.ctx.config.coverage:
        out.append(Observe(labels=tuple(sorted(set(labels)))))
    if not out and (new is old or new == old):
        return old, ()
    return new, tuple(out)


def _timer(state: NodeState, *key: Any) -> tuple[Any, ...]:
    return (_TIMER, state.epoch, *key)


# ==========================================================================================
# routing helpers [GD §3.1]
# ==========================================================================================


def _cell_of(ctx: NodeCtx, broker: str) -> str | None:
    return ctx.broker_cells.get(broker)


# _route is a pure function of (ctx, links_down, status, p, cell); links and status change
# rarely, so the last answer per (node, pubend, cell) is kept with the values it was computed
# from (a transparent memo: identity-checked inputs, same result).
_ROUTES: dict[tuple[int, str, str], tuple[Any, Any, Any, tuple[str, str | None] | None]] = {}


def _route(ctx: NodeCtx, st: NodeState, p: str, cell: str) -> tuple[str, str | None] | None:
    """``(broker, for_cell)`` to send ``p``'s knowledge towards downstream ``cell``."""
    key = (id(ctx), p, cell)
    hit = _ROUTES.get(key)
    if hit is not None and hit[0] is ctx and hit[1] is st.links_down and hit[2] is st.status:
        return hit[3]
    got = _route_now(ctx, st, p, cell)
    if len(_ROUTES) >= 65_536:
        _ROUTES.clear()
    _ROUTES[key] = (ctx, st.links_down, st.status, got)
    return got


def _route_now(ctx: NodeCtx, st: NodeState, p: str, cell: str) -> tuple[str, str | None] | None:
    brokers = ctx.cell_brokers[cell]
    neighbours = ctx.neighbours
    linked = [b for b in brokers if b in neighbours and b not in st.links_down]
    if linked:
        n = len(brokers)
        k = ctx.numbers[p]
        order = [brokers[(k + i) % n] for i in range(n)]
        needed = ctx.grandchildren.get((p, cell), ())
        fallback = None
        for b in order:
            if b not in linked:
                continue
            if fallback is None:
                fallback = b
            reach = st.status.get(b)
            if reach is None or all(c in reach for c in needed):
                return (b, None)
        return (fallback, None) if fallback is not None else None
    for nb in ctx.cell_neighbours:
        if nb in st.links_down:
            continue
        reach = st.status.get(nb)
        if reach is None or cell in reach:
            return (nb, cell)
    return None


def _upstream(ctx: NodeCtx, st: NodeState, s: Stream, p: str) -> tuple[str, ...]:
    """Where acks and nacks of ``p`` go: the last sender, else every up broker upstream."""
    up_cell = ctx.parent.get(p)
    if up_cell is None:
        return ()
    if s.last_sender is not None and s.last_sender not in st.links_down:
        return (s.last_sender,)
    return tuple(
        b for b in ctx.cell_brokers[up_cell] if b in ctx.neighbours and b not in st.links_down
    )


def _send_up(ctx: NodeCtx, st: NodeState, s: Stream, msg: Any, out: Out) -> None:
    for b in _upstream(ctx, st, s, msg.pubend):
        out.append(Send(to=b, msg=msg))


def _send_nacks(
    ctx: NodeCtx, st: NodeState, s: Stream, p: str, rs: R.Ranges, repeat: bool, out: Out
) -> None:
    for lo, hi in R.chunks(rs, ctx.config.nack_chunk_us):
        _send_up(ctx, st, s, Nack(pubend=p, start=lo, end=hi, retransmission=repeat), out)


def _stream(st: NodeState, p: str) -> Stream:
    return st.streams[st.ctx.index[p]]


def _o(ctx: NodeCtx, s: Stream, p: str, c: str) -> Ostream:
    """``ostream[p, c]`` [GD §3.1]."""
    return s.ostreams[ctx.child_index[(p, c)]]


def _with_o(ctx: NodeCtx, s: Stream, p: str, c: str, o: Ostream) -> Stream:
    i = ctx.child_index[(p, c)]
    return evolve(s, ostreams=(*s.ostreams[:i], o, *s.ostreams[i + 1 :]))


def _fresh(ctx: NodeCtx, p: str, **fields: Any) -> Stream:
    """A new stream of ``p`` with one empty ostream per downstream cell."""
    return Stream(ostreams=(_NO_OSTREAM,) * len(ctx.children.get(p, ())), **fields)


def _data_ranges(s: Stream) -> R.Ranges:
    return tuple((t, t) for t, _ in s.data)


def _known(s: Stream) -> R.Ranges:
    """D-or-F ticks above ``fin``."""
    if not s.data:
        return s.silent
    return R.union(s.silent, _data_ranges(s))


def _highest(s: Stream) -> int:
    hi = s.fin
    if s.silent:
        hi = max(hi, s.silent[-1][1])
    if s.data:
        hi = max(hi, s.data[-1][0])
    return hi


# ==========================================================================================
# accumulation [GD §2.1, §3.1]
# ==========================================================================================


def _accumulate(
    s: Stream, msg: Knowledge, labels: list[str], out: Out, inp: Any
) -> tuple[Stream, list[Data], bool]:
    """Join ``msg`` into ``s``. Returns the new stream, the D ticks new to it, and whether any
    knowledge changed."""
    fin, silent, data = s.fin, s.silent, s.data
    changed = False
    new_data: list[Data] = []
    if msg.prefix > fin:
        add = ((fin + 1, msg.prefix),)
        if R.subtract(add, R.union(silent, _data_ranges(s))):
            labels.append("K:Q->F")
        keep = data_above(data, msg.prefix)
        if keep is not data:
            labels.append("K:D->F")
        data = keep
        fin = msg.prefix
        silent = R.clip(silent, fin + 1, 1 << 62)
        changed = True
    for lo, hi in msg.silence:
        lo = max(lo, fin + 1)
        if lo > hi:
            continue
        if R.contains_range(silent, lo, hi):
            continue
        piece: R.Ranges = ((lo, hi),)
        if data:
            inside = tuple((t, t) for t, _ in data if lo <= t <= hi)
            piece = R.subtract(piece, inside)
        if piece:
            silent = R.union(silent, piece)
            labels.append("K:Q->F")
            changed = True
    d = msg.data
    if d is not None and d.tick > fin and not R.contains(silent, d.tick):
        old = data_get(data, d.tick)
        if old is None:
            data = data_put(data, d)
            new_data.append(d)
            labels.append("K:Q->D")
            changed = True
        elif old != d:
            labels.append("K:D->E")
            out.append(Rejected(reason=f"conflicting data at tick {d.tick} [GD §2.2]", input=inp))
    # absorb a silent run that now starts right after fin
    while silent and silent[0][0] <= fin + 1:
        fin = max(fin, silent[0][1])
        silent = silent[1:]
        changed = True
    if not changed:
        return s, new_data, False
    data = data_above(data, fin)
    curious = s.curious
    if curious:
        known = R.union(silent, tuple((t, t) for t, _ in data))
        kept = []
        for lo, hi, since in curious:
            for a, b in R.subtract(((max(lo, fin + 1), hi),), known):
                kept.append((a, b, since))
        curious = tuple(kept)
    return evolve(s, fin=fin, silent=silent, data=data, curious=curious), new_data, True


# ==========================================================================================
# PHB and IB: forwarding, nacks, acks [GD §3.1]
# ==========================================================================================


def _msg_finals(msg: Knowledge) -> R.Ranges:
    rs = R.normalize(msg.silence)
    if msg.prefix >= 0:
        rs = R.union(rs, ((0, msg.prefix),))
    return rs


def _emit(
    out: Out,
    to: str,
    p: str,
    prefix: int,
    finals: R.Ranges,
    datas: Sequence[Data],
    retrans: bool,
    for_cell: str | None = None,
) -> R.Ranges:
    """Send knowledge (``finals`` and ``datas``) to ``to`` as one message per D (the first
    carrying the silence); returns the ticks sent."""
    sent = finals
    if not datas:
        if finals:
            out.append(
                Send(
                    to=to,
                    msg=Knowledge(
                        pubend=p,
                        prefix=prefix,
                        silence=finals,
                        retransmission=retrans,
                        for_cell=for_cell,
                    ),
                )
            )
        return sent
    for i, d in enumerate(sorted(datas, key=_tick_of)):
        out.append(
            Send(
                to=to,
                msg=Knowledge(
                    pubend=p,
                    prefix=prefix,
                    silence=finals if i == 0 else (),
                    data=d,
                    retransmission=retrans,
                    for_cell=for_cell,
                ),
            )
        )
        sent = R.add(sent, d.tick, d.tick)
    return sent


def _tick_of(d: Data) -> int:
    return d.tick


def _send_route(
    ctx: NodeCtx,
    st: NodeState,
    p: str,
    cell: str,
    prefix: int,
    finals: R.Ranges,
    datas: Sequence[Data],
    retrans: bool,
    out: Out,
) -> str | None:
    route = _route(ctx, st, p, cell)
    if route is None:
        return None
    to, for_cell = route
    _emit(out, to, p, prefix, finals, datas, retrans, for_cell)
    return to if for_cell is None else None


def _forward(
    ctx: NodeCtx,
    st: NodeState,
    s: Stream,
    p: str,
    msg_finals: R.Ranges,
    msg_data: Sequence[Data],
    new_data: Sequence[Data],
    retrans: bool,
    only_cell: str | None,
    out: Out,
    labels: list[str],
) -> Stream:
    """Propagate new knowledge of ``p`` to the downstream cells by the rules of [GD §3.1]."""
    policy = ctx.policy
    ostreams = s.ostreams
    sent_msgs: dict[tuple[int, R.Ranges], Knowledge] = {}
    for ci, c in enumerate(ctx.children.get(p, ())):
        if only_cell is not None and c != only_cell:
            continue
        o = ostreams[ci]
        o0 = o
        filt = ctx.filters[(p, c)]
        finals_c = msg_finals
        if finals_c and finals_c[0][0] <= o.acked:
            finals_c = R.clip(msg_finals, o.acked + 1, 1 << 62)
        passing: list[Data] = []
        filtered = o.filtered
        for d in msg_data:
            if d.tick <= o.acked:
                continue
            v = policy.filter_transfer(_DATA, filt.matches(d.attributes))
            if v.kind is Kind.D:
                passing.append(d)
            elif v.kind is Kind.F:
                finals_c = R.add(finals_c, d.tick, d.tick)
                if not R.contains(filtered, d.tick):
                    filtered = R.add(filtered, d.tick, d.tick)
                    labels.append(FILTERED)
                    labels.append("C:N->A")
            # any other value (a planted bug): the tick stays Q downstream
        if filtered is not o.filtered:
            o = evolve(o, filtered=filtered)
        curious = o.curious
        served: dict[str, R.Ranges] = {}
        if not retrans:
            for d in passing:
                if d not in new_data:
                    continue
                lo = max(o.sent_upto, s.fin) + 1
                # the F ticks known here between the last sent and this D: clipping each set
                # first (bisection) equals clipping their union, without merging whole sets
                bracket = R.clip(s.silent, lo, d.tick - 1)
                if o.filtered:
                    bracket = R.union(bracket, R.clip(o.filtered, lo, d.tick - 1))
                # "D F*": the F after the D (pre-assigned by the pubend [GD §2.2]) goes along
                if finals_c and finals_c[-1][1] > d.tick:
                    bracket = R.union(bracket, R.clip(finals_c, d.tick + 1, 1 << 62))
                route = _route(ctx, st, p, c)
                if route is not None:
                    to, for_cell = route
                    key = (d.tick, bracket)
                    msg = sent_msgs.get(key) if for_cell is None else None
                    if msg is None:
                        msg = Knowledge(
                            pubend=p, prefix=s.fin, silence=bracket, data=d, for_cell=for_cell
                        )
                        if for_cell is None:
                            sent_msgs[key] = msg
                    out.append(Send(to=to, msg=msg))
                    if for_cell is None and curious:
                        served[to] = R.add(R.union(served.get(to, ()), bracket), d.tick, d.tick)
                o = evolve(o, sent_upto=max(o.sent_upto, d.tick))
            if not passing and finals_c and policy.first_time_silence(False):
                _send_route(ctx, st, p, c, s.fin, finals_c, (), False, out)
        elif not policy.retransmit_to_nackers_only and (finals_c or passing):
            _send_route(ctx, st, p, c, s.fin, finals_c, passing, True, out)
        if curious:
            for x in sorted(curious):
                cx = curious[x]
                if x in served:
                    cx = R.subtract(cx, served[x])
                over_f = R.intersect(finals_c, cx)
                over_d = [d for d in passing if R.contains(cx, d.tick)]
                if (over_f or over_d) and (retrans or policy.first_time_silence(True)):
                    sent = _emit(out, x, p, s.fin, over_f, over_d, retrans)
                    cx = R.subtract(cx, sent)
                if cx is not curious[x]:
                    curious = curious.set(x, cx) if cx else curious.remove(x)
            if curious is not o.curious:
                o = evolve(o, curious=curious)
        if o is not o0:
            ostreams = (*ostreams[:ci], o, *ostreams[ci + 1 :])
    if ostreams is not s.ostreams:
        s = evolve(s, ostreams=ostreams)
    return s


def _a_end(ctx: NodeCtx, s: Stream, p: str, t: int) -> int | None:
    """Last tick of the run of istream-A ticks starting at ``t`` (None if ``t`` is not A)."""
    e = R.run_end(s.silent, t)
    if e is not None:
        return e
    if not s.ostreams:
        return None
    ends: list[int | None] = []
    for o in s.ostreams:
        if t <= o.acked:
            ends.append(o.acked)
        else:
            ends.append(R.run_end(o.filtered, t))
    if ctx.policy.ack_all_downstream:
        if any(e is None for e in ends):
            return None
        return min(e for e in ends if e is not None)
    present = [e for e in ends if e is not None]
    return max(present) if present else None


def _advance_ack(
    ctx: NodeCtx,
    st: NodeState,
    s: Stream,
    p: str,
    out: Out,
    labels: list[str],
    now: int,
    send: bool = True,
    log: PubendLog | None = None,
) -> tuple[Stream, PubendLog | None]:
    """Grow the istream's A prefix [GD §3.1] (D* -> F); ack it upstream when ``send`` (a
    downstream ack or a filter made ticks A — silence the upstream itself sent needs no ack);
    at a PHB release the log below it. Returns the stream and the new log (None if unchanged)."""
    cur = s.fin + 1
    end = _a_end(ctx, s, p, cur)
    while end is not None:
        cur = end + 1
        end = _a_end(ctx, s, p, cur)
    prefix = cur - 1
    if prefix > s.fin:
        s = _raise_fin(s, prefix, labels)
    prefix = s.fin
    new_log = None
    if ctx.parent.get(p) is not None:
        if send and prefix > s.acked_sent:
            delay = ctx.config.ack_delay_us
            if not delay:
                _send_up(ctx, st, s, Ack(pubend=p, upto=prefix), out)
                s = evolve(s, acked_sent=prefix)
            elif not s.ack_armed:
                # consolidated acks go up at most once per ack_delay_us
                out.append(SetTimer(key=_timer(st, "ack", p), at=now + delay))
                s = evolve(s, ack_armed=True)
    elif log is not None or p in st.log:
        log = st.log[p] if log is None else log
        if prefix > log.floor:
            new_log = evolve(
                log,
                floor=prefix,
                entries=data_above(log.entries, prefix),
            )
    return s, new_log


def _raise_fin(s: Stream, prefix: int, labels: list[str]) -> Stream:
    """Ticks ``0..prefix`` become A, hence F (D* -> F) [GD §2.1.1, §3.1]."""
    labels.append("C:N->A")
    data = data_above(s.data, prefix)
    if data is not s.data:
        labels.append("K:D->F")
    silent = R.clip(s.silent, prefix + 1, 1 << 62)
    curious = tuple((max(lo, prefix + 1), hi, w) for lo, hi, w in s.curious if hi > prefix)
    ostreams = s.ostreams
    for ci, o in enumerate(s.ostreams):
        if (o.filtered and o.filtered[0][0] <= prefix) or o.curious:
            o2 = evolve(
                o,
                filtered=R.clip(o.filtered, prefix + 1, 1 << 62),
                curious=_clip_curious(o.curious, prefix),
            )
            if o2 != o:
                ostreams = (*ostreams[:ci], o2, *ostreams[ci + 1 :])
    return evolve(s, fin=prefix, data=data, silent=silent, curious=curious, ostreams=ostreams)


def _clip_curious(curious: FMap[str, R.Ranges], upto: int) -> FMap[str, R.Ranges]:
    """Per-broker C ranges without the ticks ``0..upto``."""
    out = curious
    for x in sorted(curious):
        r = R.clip(curious[x], upto + 1, 1 << 62)
        if r != curious[x]:
            out = out.set(x, r) if r else out.remove(x)
    return out


def _put(
    st: NodeState, p: str, s: Stream, log: PubendLog | None = None, **changes: Any
) -> NodeState:
    if log is not None:
        changes["log"] = st.log.set(p, log)
    i = st.ctx.index[p]
    if s is not st.streams[i]:
        changes["streams"] = (*st.streams[:i], s, *st.streams[i + 1 :])
    if not changes:
        return st
    return evolve(st, **changes)


def _broker_knowledge(
    st: NodeState, sender: str, msg: Knowledge, now: int, out: Out, labels: list[str], inp: Any
) -> NodeState:
    ctx = st.ctx
    p = msg.pubend
    s0 = _stream(st, p)
    sender_cell = _cell_of(ctx, sender)
    only_cell = None
    if sender_cell == ctx.cell and msg.for_cell is not None:
        if msg.for_cell not in ctx.children.get(p, ()):
            out.append(
                Rejected(
                    reason=f"sideways message for a cell not downstream: {msg.for_cell}", input=inp
                )
            )
            return st
        only_cell = msg.for_cell
    elif sender_cell != ctx.parent.get(p):
        out.append(Rejected(reason=f"knowledge of {p} from {sender}, not upstream", input=inp))
        return st
    if ctx.config.best_effort:
        if msg.data is not None:
            _be_forward(ctx, st, p, msg.data, only_cell, out)
        return st
    if only_cell is None:
        s, new_data, _changed = _accumulate(s0, msg, labels, out, inp)
        if s.last_sender != sender:
            s = evolve(s, last_sender=sender)
    else:
        # A sideways message carries what one cell needs: its silence may cover D ticks that
        # cell's filter removed, so it is F for that cell only (its ostream), never istream F.
        core = Knowledge(pubend=p, prefix=msg.prefix, data=msg.data)
        s, new_data, _changed = _accumulate(s0, core, labels, out, inp)
        s = _cell_finals(ctx, s, p, only_cell, msg.silence)
    msg_data = [msg.data] if msg.data is not None else []
    n_labels = len(labels)
    s = _forward(
        ctx,
        st,
        s,
        p,
        _msg_finals(msg),
        msg_data,
        new_data,
        msg.retransmission,
        only_cell,
        out,
        labels,
    )
    s, _ = _advance_ack(ctx, st, s, p, out, labels, now, FILTERED in labels[n_labels:])
    return _put(st, p, s)


def _cell_finals(ctx: NodeCtx, s: Stream, p: str, cell: str, finals: R.Ranges) -> Stream:
    """Record ticks known F for one downstream cell only (A there, [GD §2.1.1])."""
    o = _o(ctx, s, p, cell)
    add = R.clip(R.normalize(finals), max(s.fin, o.acked) + 1, 1 << 62)
    if s.data:
        add = R.subtract(add, tuple((t, t) for t, _ in s.data))
    if not add:
        return s
    filtered = R.union(o.filtered, add)
    if filtered == o.filtered:
        return s
    return _with_o(ctx, s, p, cell, evolve(o, filtered=filtered))


def _downstream_cell(
    ctx: NodeCtx, sender: str, p: str, what: str, out: Out, inp: Any
) -> str | None:
    """The downstream cell of ``sender`` for pubend ``p``, or None after recording a Rejected
    effect: acks and nacks are only accepted from a cell downstream of us [GD §3.1]."""
    c = _cell_of(ctx, sender)
    if c is None or c not in ctx.children.get(p, ()):
        out.append(Rejected(reason=f"{what} for {p} from {sender}, not downstream", input=inp))
        return None
    return c


def _from_upstream(ctx: NodeCtx, sender: str, p: str, what: str, out: Out, inp: Any) -> bool:
    """True if ``sender`` is in our upstream cell for pubend ``p``; otherwise record a Rejected
    effect: knowledge and AckExpected only flow downstream [GD §3.1, §3.2]."""
    if _cell_of(ctx, sender) == ctx.parent.get(p):
        return True
    out.append(Rejected(reason=f"{what} {p} from {sender}, not upstream", input=inp))
    return False


def _satisfy_nack(
    st: NodeState, sender: str, msg: Nack, now: int, out: Out, labels: list[str], inp: Any
) -> NodeState:
    """[GD §3.1] Satisfy a nack from the streams; the rest becomes C; consolidate upstream."""
    ctx = st.ctx
    p = msg.pubend
    c = _downstream_cell(ctx, sender, p, "nack", out, inp)
    if c is None:
        return st
    if msg.end < msg.start or msg.start < 0:
        out.append(Rejected(reason=f"nack range [{msg.start}, {msg.end}] is empty", input=inp))
        return st
    s = _stream(st, p)
    if p in ctx.hosted:
        s, st = _advance_silence(st, p, s, now)
    o = _o(ctx, s, p, c)
    want: R.Ranges = ((msg.start, msg.end),)
    finals = R.clip(R.union(s.silent, o.filtered), msg.start, msg.end)
    top = max(s.fin, o.acked)
    if top >= msg.start:
        finals = R.add(finals, msg.start, min(top, msg.end))
    filt = ctx.filters[(p, c)]
    datas: list[Data] = []
    for t, d in s.data:
        if msg.start <= t <= msg.end and t > top:
            v = ctx.policy.filter_transfer(_DATA, filt.matches(d.attributes))
            if v.kind is Kind.D:
                datas.append(d)
            elif v.kind is Kind.F:
                finals = R.add(finals, t, t)
    satisfied = finals
    if finals or datas:
        satisfied = _emit(out, sender, p, s.fin, finals, datas, True)
    unsatisfied = R.subtract(want, satisfied)
    # a D tick a buggy filter turned into Q is neither sent nor curious-able: it stays C
    if unsatisfied:
        labels.append("C:N->C")
        o = evolve(
            o, curious=o.curious.set(sender, R.union(o.curious.get(sender, ()), unsatisfied))
        )
        s = _with_o(ctx, s, p, c, o)
        if ctx.parent.get(p) is not None:
            already = R.normalize((lo, hi) for lo, hi, _ in s.curious)
            newly = R.subtract(unsatisfied, already)
            up = ctx.policy.nack_upstream(newly, unsatisfied)
            if newly:
                s = evolve(
                    s, curious=tuple(sorted((*s.curious, *((lo, hi, now) for lo, hi in newly))))
                )
            if up:
                _send_nacks(ctx, st, s, p, up, False, out)
            if ctx.policy.forget_curiosity and newly and not s.forget_armed:
                out.append(
                    SetTimer(key=_timer(st, "forget", p), at=now + ctx.config.min_repetition_us)
                )
                s = evolve(s, forget_armed=True)
    return _put(st, p, s)


def _on_ack(
    st: NodeState, sender: str, msg: Ack, now: int, out: Out, labels: list[str], inp: Any
) -> NodeState:
    ctx = st.ctx
    p = msg.pubend
    c = _downstream_cell(ctx, sender, p, "ack", out, inp)
    if c is None:
        return st
    s = _stream(st, p)
    o = _o(ctx, s, p, c)
    if msg.upto <= o.acked:
        return st
    curious = _clip_curious(o.curious, msg.upto)
    o = evolve(
        o, acked=msg.upto, filtered=R.clip(o.filtered, msg.upto + 1, 1 << 62), curious=curious
    )
    s = _with_o(ctx, s, p, c, o)
    s, log = _advance_ack(ctx, st, s, p, out, labels, now)
    return _put(st, p, s, log)


def _broker_ack_expected(
    st: NodeState, sender: str, msg: AckExpected, out: Out, inp: Any
) -> NodeState:
    """[GD §3.2] Answer AckExpected(T) with an ack if acked that far, else pass it down the paths
    that have not acked T."""
    ctx = st.ctx
    p = msg.pubend
    if not _from_upstream(ctx, sender, p, "AckExpected for", out, inp):
        return st
    s = _stream(st, p)
    if s.last_sender != sender:
        # AckExpected is a downstream message of the pubend: acks follow it [GD §3.1]
        s = evolve(s, last_sender=sender)
    if s.fin >= 0:
        _send_up(ctx, st, s, Ack(pubend=p, upto=s.fin, retransmission=True), out)
    if s.fin < msg.upto:
        for c, o in zip(ctx.children.get(p, ()), s.ostreams, strict=True):
            if o.acked < msg.upto:
                route = _route(ctx, st, p, c)
                if route is not None and route[1] is None:
                    out.append(Send(to=route[0], msg=msg))
    if s.fin > s.acked_sent:
        s = evolve(s, acked_sent=s.fin)
    return _put(st, p, s)


# ==========================================================================================
# PHB [GD §2.2, §3.2]
# ==========================================================================================


def _advance_silence(st: NodeState, p: str, s: Stream, now: int) -> tuple[Stream, NodeState]:
    """An idle pubend turns Q ticks up to ``now - 1`` into F [GD §2.2]."""
    last = st.assigned.get(p, -1)
    if now - 1 <= last:
        return s, st
    silent = R.add(s.silent, last + 1, now - 1)
    fin = s.fin
    while silent and silent[0][0] <= fin + 1:
        fin = max(fin, silent[0][1])
        silent = silent[1:]
    s = evolve(s, silent=silent, fin=fin)
    st = _put(st, p, s, assigned=st.assigned.set(p, now - 1))
    return s, st


def on_publish(state: NodeState, inp: Publish, now: int) -> Step:
    """A client publishes through pubend ``inp.pubend`` [GD §2.2]."""
    ctx = state.ctx
    p = inp.pubend
    if p not in ctx.hosted:
        raise ProtocolMisuse(
            f"on_publish: node {state.name!r} does not host pubend {p!r}; "
            f"allowed: {list(ctx.hosted)}"
        )
    cfg = ctx.config
    m = cfg.tick_modulus
    k = ctx.numbers[p]
    last = state.assigned.get(p, -1)
    base = max(now, last + 1)
    t = base + ((k - base) % m)
    d = Data(pubend=p, tick=t, attributes=inp.attributes, size=inp.size, published_at=now)
    out: Out = []
    labels: list[str] = []
    if cfg.best_effort:
        st = evolve(state, assigned=state.assigned.set(p, t))
        _be_forward(ctx, st, p, d, None, out)
        return st, tuple(out)
    s = _stream(state, p)
    if last + 1 <= t - 1:
        silent = R.add(s.silent, last + 1, t - 1)
        fin = s.fin
        while silent and silent[0][0] <= fin + 1:
            fin = max(fin, silent[0][1])
            silent = silent[1:]
        s = evolve(s, silent=silent, fin=fin)
        labels.append("K:Q->F")
    reserved = t + cfg.preassign_us
    pending = data_put(state.pending.get(p, ()), d)
    st = _put(
        state,
        p,
        s,
        assigned=state.assigned.set(p, reserved),
        pending=state.pending.set(p, pending),
    )
    out.append(
        Persist(
            key=(LOG_KEY, p, t),
            value=LogRecord(data=d, reserved=reserved),
            delay=cfg.logging_delay_us,
        )
    )
    if ctx.policy.publish_before_logged:
        st = _publish_logged(st, p, d, reserved, now, out, labels)
    return _finish(state, st, out, labels)


def _publish_logged(
    st: NodeState, p: str, d: Data, reserved: int, now: int, out: Out, labels: list[str]
) -> NodeState:
    """The tick is D from now on: forward the message first-time [GD §2.2, §3.1]."""
    ctx = st.ctx
    s = _stream(st, p)
    if d.tick <= s.fin or data_get(s.data, d.tick) is not None:
        return st
    labels.append("K:Q->D")
    silent = s.silent
    if reserved > d.tick:
        silent = R.add(silent, d.tick + 1, reserved)
    s = evolve(s, data=data_put(s.data, d), silent=silent)
    finals: R.Ranges = ((d.tick + 1, reserved),) if reserved > d.tick else ()
    s = _forward(ctx, st, s, p, finals, [d], [d], False, None, out, labels)
    s, log = _advance_ack(ctx, st, s, p, out, labels, now)
    return _put(st, p, s, log)


def on_persisted(state: NodeState, inp: Persisted, now: int) -> Step:
    """The log write of a message completed: it is published [GD §2.2]."""
    key = inp.key
    if not (isinstance(key, tuple) and len(key) == 3 and key[0] == LOG_KEY):
        return state, ()
    _, p, t = key
    pend = state.pending.get(p, ())
    d0 = data_get(pend, t)
    if d0 is None:
        return state, ()
    d = d0
    ctx = state.ctx
    if ctx.fast_publish:
        got = _phb_publish_in_order(state, p, t, d, pend, now)
        if got is not None:
            return got
    out: Out = []
    labels: list[str] = []
    reserved = t + ctx.config.preassign_us
    log = state.log.get(p) or PubendLog()
    log = evolve(log, entries=data_put(log.entries, d), reserved=max(log.reserved, reserved))
    rest = data_remove(pend, t)
    st = evolve(
        state,
        log=state.log.set(p, log),
        pending=state.pending.set(p, rest) if rest else state.pending.remove(p),
    )
    st = _publish_logged(st, p, d, reserved, now, out, labels)
    return _finish(state, st, out, labels)


def _phb_fast_policy(config: GDConfig, pol: GDPolicy) -> bool:
    """The rules :func:`_phb_publish_in_order` builds in are the paper's."""
    return (
        config.preassign_us == 0
        and pol.filter_transfer is paper_filter_transfer
        and pol.first_time_silence is paper_first_time_silence
        and not pol.publish_before_logged
    )


def _phb_publish_in_order(
    state: NodeState, p: str, t: int, d: Data, pend: Rows, now: int
) -> Step | None:
    """:func:`on_persisted` in the common case — the logged tick is above every tick the
    stream knows and no downstream broker is curious — with the same effects, state and
    coverage labels as the general rules (:func:`_publish_logged`, :func:`_forward`), in one
    pass over the downstream cells and one copy of the stream [GD §2.2, §3.1]. ``None``: not
    this case (the caller applies the general rules)."""
    ctx = state.ctx
    s = _stream(state, p)
    if t <= s.fin or (s.data and s.data[-1][0] >= t):
        return None
    ostreams = s.ostreams
    for o in ostreams:
        if o.curious:
            return None
    out: Out = []
    labels: list[str] = ["K:Q->D"]
    fin = s.fin
    attributes = d.attributes
    sent: dict[tuple[int, R.Ranges], Knowledge] = {}
    for ci, c in enumerate(ctx.children.get(p, ())):
        o = ostreams[ci]
        if t <= o.acked:
            continue
        if ctx.filters[(p, c)].matches(attributes):
            # first-time D with the F ticks known here since the last one sent [GD §3.1]
            lo = max(o.sent_upto, fin) + 1
            bracket = R.clip(s.silent, lo, t - 1)
            if o.filtered:
                bracket = R.union(bracket, R.clip(o.filtered, lo, t - 1))
            route = _route(ctx, state, p, c)
            if route is not None:
                to, for_cell = route
                msg = sent.get((t, bracket)) if for_cell is None else None
                if msg is None:
                    msg = Knowledge(
                        pubend=p, prefix=fin, silence=bracket, data=d, for_cell=for_cell
                    )
                    if for_cell is None:
                        sent[(t, bracket)] = msg
                out.append(Send(to=to, msg=msg))
            o = evolve(o, sent_upto=max(o.sent_upto, t))
        elif R.contains(o.filtered, t):
            continue
        else:
            # the edge filter turns the D into F, acked at once [GD §2.4, §3.1]; first-time
            # silence goes nowhere, as no broker is curious
            o = evolve(o, filtered=R.add(o.filtered, t, t))
            labels.append(FILTERED)
            labels.append("C:N->A")
        ostreams = (*ostreams[:ci], o, *ostreams[ci + 1 :])
    s = evolve(s, data=data_put(s.data, d), ostreams=ostreams)
    log = state.log.get(p) or PubendLog()
    log = evolve(log, entries=data_put(log.entries, d), reserved=max(log.reserved, t))
    s, released = _advance_ack(ctx, state, s, p, out, labels, now, log=log)
    rest = data_remove(pend, t)
    i = ctx.index[p]
    st = evolve(
        state,
        log=state.log.set(p, released or log),
        pending=state.pending.set(p, rest) if rest else state.pending.remove(p),
        streams=(*state.streams[:i], s, *state.streams[i + 1 :]),
    )
    return _finish(state, st, out, labels)


def _phb_silence_tick(st: NodeState, p: str, now: int, out: Out, labels: list[str]) -> NodeState:
    ctx = st.ctx
    s0 = _stream(st, p)
    last = st.assigned.get(p, -1)
    s, st = _advance_silence(st, p, s0, now)
    if s is s0:
        return st
    labels.append("K:Q->F")
    finals: R.Ranges = ((last + 1, now - 1),)
    s = _forward(ctx, st, s, p, finals, (), (), False, None, out, labels)
    s, log = _advance_ack(ctx, st, s, p, out, labels, now)
    return _put(st, p, s, log)


def _phb_ack_expected(st: NodeState, p: str, upto: int, out: Out) -> None:
    ctx = st.ctx
    s = _stream(st, p)
    for c, o in zip(ctx.children.get(p, ()), s.ostreams, strict=True):
        if o.acked < upto:
            route = _route(ctx, st, p, c)
            if route is not None and route[1] is None:
                out.append(Send(to=route[0], msg=AckExpected(pubend=p, upto=upto)))


# ==========================================================================================
# SHB [GD §2.3, §3.2, §4.1]
# ==========================================================================================


def _ack_point(ctx: NodeCtx, st: NodeState, p: str, s: Stream) -> int:
    """What the SHB acks for ``p``: the prefix delivered to every subscriber [GD §2.1.1] —
    for a pubend in a total-order group, the group's merged prefix too."""
    delivered = s.fin
    for g in ctx.groups_of.get(p, ()):
        gs = st.groups.get(g)
        if gs is not None:
            delivered = min(delivered, gs.merged - 1)
    return ctx.policy.ack_point(delivered, _highest(s))


def _shb_ack(st: NodeState, p: str, s: Stream, now: int, out: Out, force: bool) -> Stream:
    ctx = st.ctx
    point = _ack_point(ctx, st, p, s)
    if point < 0 or (point <= s.acked_sent and not force):
        return s
    if ctx.config.ack_delay_us and not force:
        if not s.ack_armed:
            out.append(SetTimer(key=_timer(st, "ack", p), at=now + ctx.config.ack_delay_us))
            return evolve(s, ack_armed=True)
        return s
    _send_up(ctx, st, s, Ack(pubend=p, upto=point, retransmission=force), out)
    return evolve(s, acked_sent=max(point, s.acked_sent))


def _deliver(st: NodeState, index: FilterIndex, p: str, d: Data, out: Out) -> None:
    conns = st.connections
    subs = index.match(d.attributes)
    if len(subs) == 1:
        sub = subs[0]
        out.append(Deliver(subscriber=sub, pubend=p, tick=d.tick, payload=d, connection=conns[sub]))
    elif subs:
        out.append(DeliverCohort(pubend=p, tick=d.tick, payload=d, to=_cohort(subs, conns)))


# Cohorts built for each connections map: a transparent memo (same inputs, same value), so
# the SHB reuses one ``to`` tuple per set of matching subscribers while their connections
# stay the same, and readers can memoise by identity.
_COHORTS: dict[int, tuple[Any, dict[tuple[str, ...], tuple[tuple[str, int], ...]]]] = {}


def _cohort(subs: tuple[str, ...], conns: Any) -> tuple[tuple[str, int], ...]:
    hit = _COHORTS.get(id(conns))
    if hit is None or hit[0] is not conns:
        if len(_COHORTS) >= 64:
            _COHORTS.clear()
        hit = _COHORTS[id(conns)] = (conns, {})
    table = hit[1]
    to = table.get(subs)
    if to is None:
        to = tuple([(sub, conns[sub]) for sub in subs])
        if len(table) >= 65_536:
            table.clear()
        table[subs] = to
    return to


def _shb_advance(
    st: NodeState, p: str, s: Stream, now: int, out: Out, labels: list[str]
) -> tuple[NodeState, Stream]:
    """Advance the doubt horizon and deliver [GD §2.3]; then the total-order merges. The
    returned state holds the returned stream only when ``p`` is merged (else the caller puts
    it)."""
    ctx = st.ctx
    in_groups = ctx.groups_of.get(p, ())
    h = ctx.policy.doubt_horizon(s.fin, _known(s))
    if h > s.fin + 1:
        data = data_above(s.data, h - 1)
        ready = s.data[: len(s.data) - len(data)]
        if ready:
            labels.append("K:D->F")
            for _t, d in ready:
                _deliver(st, st.index, p, d, out)
            if in_groups:
                groups = st.groups
                rows = tuple((t, p, d) for t, d in ready)
                for g in in_groups:
                    gs = groups[g]
                    groups = groups.set(g, evolve(gs, buffer=(*gs.buffer, *rows)))
                st = evolve(st, groups=groups)
        s = evolve(
            s,
            fin=h - 1,
            data=data,
            silent=R.clip(s.silent, h, 1 << 62) if s.silent and s.silent[0][0] < h else s.silent,
            nacked=R.clip(s.nacked, h, 1 << 62) if s.nacked else s.nacked,
        )
    if in_groups:
        st = _put(st, p, s)
        for g in in_groups:
            st = _merge(st, g, out)
    return st, s


def _merge(st: NodeState, g: str, out: Out) -> NodeState:
    """Deliver a total-order group's merged stream below the merge horizon [GD §2.3, §2.4]."""
    ctx = st.ctx
    gs = st.groups[g]
    members = ctx.groups[g]
    merged = ctx.policy.merge_horizon([_stream(st, m).fin + 1 for m in members])
    merged = max(merged, gs.merged)
    if not gs.buffer and merged == gs.merged:
        return st
    buffer = sorted(gs.buffer, key=_first)
    ready = [e for e in buffer if e[0] < merged]
    for _t, p, d in ready:
        _deliver(st, gs.index, p, d, out)
    rest = tuple(e for e in buffer if e[0] >= merged)
    return evolve(st, groups=st.groups.set(g, evolve(gs, merged=merged, buffer=rest)))


def _first(e: tuple[int, str, Data]) -> int:
    return e[0]


def _gap_limit(st: NodeState, p: str, s: Stream) -> int:
    hi = _highest(s)
    ctx = st.ctx
    for g in ctx.groups_of.get(p, ()):
        for m in ctx.groups[g]:
            if m != p:
                hi = max(hi, _stream(st, m).fin)
    return hi


def _arm_gct(st: NodeState, p: str, s: Stream, now: int, out: Out) -> Stream:
    """Start the GCT timer for the Q ticks of a gap [GD §3.2] (unless one runs for a gap that
    is still open)."""
    if s.gct_mark is not None and s.gct_mark > s.fin:
        return s
    hi = _gap_limit(st, p, s)
    if hi <= s.fin:
        return s
    out.append(SetTimer(key=_timer(st, "gct", p), at=now + st.ctx.config.gct_us))
    return evolve(s, gct_mark=hi)


def _shb_nack(
    st: NodeState, p: str, s: Stream, rs: R.Ranges, now: int, out: Out, labels: list[str]
) -> Stream:
    """Send fresh nacks for ``rs`` and arm the repetition timer [GD §3.2]."""
    if not rs:
        return s
    ctx = st.ctx
    labels.append("C:N->C")
    _send_nacks(ctx, st, s, p, rs, False, out)
    s = evolve(
        s,
        nacked=R.union(s.nacked, rs),
        nack_at=now if s.nack_at is None else s.nack_at,
    )
    if not s.nrt_armed:
        out.append(SetTimer(key=_timer(st, "nrt", p), at=now + s.rto_cur))
        s = evolve(s, nrt_armed=True)
    return s


def _rtt_sample(cfg: GDConfig, s: Stream, now: int) -> Stream:
    if s.nack_at is None or s.repeated:
        return s
    sample = max(0, now - s.nack_at)
    if s.srtt is None:
        srtt, rttvar = sample, sample // 2
    else:
        err = sample - s.srtt
        srtt = s.srtt + (
            err >> cfg.rto_alpha_shift if err >= 0 else -((-err) >> cfg.rto_alpha_shift)
        )
        dev = abs(err) - s.rttvar
        rttvar = s.rttvar + (
            dev >> cfg.rto_beta_shift if dev >= 0 else -((-dev) >> cfg.rto_beta_shift)
        )
    rto = min(max(cfg.min_repetition_us, srtt + cfg.rto_k * rttvar), cfg.backoff_cap_us)
    return evolve(s, srtt=srtt, rttvar=rttvar, rto_est=rto)


def _shb_knowledge(
    st: NodeState, sender: str, msg: Knowledge, now: int, out: Out, labels: list[str], inp: Any
) -> NodeState:
    ctx = st.ctx
    p = msg.pubend
    if p not in ctx.pubends or not _from_upstream(ctx, sender, p, "knowledge of", out, inp):
        return st
    if ctx.config.best_effort:
        if msg.data is not None:
            _deliver(st, st.index, p, msg.data, out)
            for g in ctx.groups_of.get(p, ()):
                gs = st.groups.get(g)
                if gs is not None:
                    _deliver(st, gs.index, p, msg.data, out)
        return st
    s0 = _stream(st, p)
    if ctx.config.fast_paths:
        fin = _in_order_fin(ctx, s0, msg)
        if fin is not None:
            return _shb_in_order(st, sender, msg, s0, fin, now, out, labels)
    s, _new, changed = _accumulate(s0, msg, labels, out, inp)
    if s.last_sender != sender:
        s = evolve(s, last_sender=sender)
    if changed and s.nacked:
        left = R.subtract(s.nacked, _known(s))
        left = R.clip(left, s.fin + 1, 1 << 62)
        if left != s.nacked:
            s = _rtt_sample(ctx.config, s, now)
            s = evolve(s, nacked=left)
            if not left:
                s = evolve(s, nack_at=None, repeated=False, rto_cur=s.rto_est)
    if changed:
        st, s = _shb_advance(st, p, s, now, out, labels)
        s = _shb_ack(st, p, s, now, out, False)
        s = _arm_gct(st, p, s, now, out)
    st = _put(st, p, s)
    if changed:
        for g in ctx.groups_of.get(p, ()):
            for m in ctx.groups[g]:
                if m != p:
                    sm = _shb_ack(st, m, _stream(st, m), now, out, False)
                    st = _put(st, m, _arm_gct(st, m, sm, now, out))
    return st


def _in_order_fin(ctx: NodeCtx, s: Stream, msg: Knowledge) -> int | None:
    """The common case at an SHB, recognised in O(1): the stream holds no pending knowledge
    or curiosity above ``fin`` (every tick up to ``fin`` delivered), ``msg`` carries the next D
    and exactly the silence between ``fin`` and it (a first-time message in order [GD §3.1]),
    the pubend is in no total-order group here and the doubt horizon is the paper's. Returns
    the tick below which ``msg`` makes the stream final before its D (``None``: not this
    case). Then accumulating ``msg`` and advancing the doubt horizon amount to: deliver the D,
    everything up to it is F (see :func:`_shb_in_order`)."""
    d = msg.data
    if d is None or s.data or s.silent or s.nacked or s.curious:
        return None
    t = d.tick
    if t <= s.fin or msg.prefix >= t or ctx.groups_of.get(p := msg.pubend):
        return None
    if ctx.policy.doubt_horizon is not paper_doubt_horizon or p not in ctx.index:
        return None
    lo = max(s.fin, msg.prefix) + 1  # first tick neither final here nor in msg's prefix
    sil = msg.silence
    if not sil:
        return s.fin if lo == t else None
    if len(sil) == 1 and sil[0][0] <= lo <= sil[0][1] == t - 1:
        return s.fin
    return None


def _shb_in_order(
    st: NodeState,
    sender: str,
    msg: Knowledge,
    s: Stream,
    fin: int,
    now: int,
    out: Out,
    labels: list[str],
) -> NodeState:
    """:func:`_shb_knowledge` for the case :func:`_in_order_fin` recognised: the same effects,
    state and coverage labels as accumulating ``msg`` [GD §2.1] and advancing the doubt horizon
    [GD §2.3] by the general rules, without building the intermediate streams (the
    differential test compares both on fault-injected runs)."""
    d = msg.data
    assert d is not None
    p = msg.pubend
    if msg.prefix > fin or msg.silence:
        labels.append("K:Q->F")  # ticks fin+1 .. t-1 were Q here
    labels.append("K:Q->D")
    labels.append("K:D->F")  # the D is delivered and becomes F at once
    _deliver(st, st.index, p, d, out)
    s = evolve(s, fin=d.tick, last_sender=sender)
    if not (s.ack_armed and st.ctx.config.ack_delay_us):
        # (an armed ack timer makes _shb_ack return the stream unchanged, effect-free)
        s = _shb_ack(st, p, s, now, out, False)
    # _arm_gct has nothing to do: nothing is known above the new fin (no gap), and p is in no
    # total-order group
    i = st.ctx.index[p]
    return evolve(st, streams=(*st.streams[:i], s, *st.streams[i + 1 :]))


def _shb_ack_expected(
    st: NodeState, sender: str, msg: AckExpected, now: int, out: Out, labels: list[str], inp: Any
) -> NodeState:
    ctx = st.ctx
    p = msg.pubend
    if p not in ctx.pubends or not _from_upstream(ctx, sender, p, "AckExpected for", out, inp):
        return st
    if not ctx.policy.answer_ack_expected:
        return st
    s = _stream(st, p)
    if s.last_sender != sender:
        # AckExpected is a downstream message of the pubend: acks follow it [GD §3.1]
        s = evolve(s, last_sender=sender)
    if msg.upto > s.fin:
        q = R.subtract(((s.fin + 1, msg.upto),), _known(s))
        if not ctx.policy.repeat_nacks:
            q = R.subtract(q, s.nacked)  # a tick once nacked is never asked for again
        s = _shb_nack(st, p, s, q, now, out, labels)
    s = _shb_ack(st, p, s, now, out, True)
    return _put(st, p, s)


# ==========================================================================================
# best effort [GD §4.1]
# ==========================================================================================


def _be_forward(
    ctx: NodeCtx, st: NodeState, p: str, d: Data, only_cell: str | None, out: Out
) -> None:
    for c in ctx.children.get(p, ()):
        if only_cell is not None and c != only_cell:
            continue
        if ctx.filters[(p, c)].matches(d.attributes):
            route = _route(ctx, st, p, c)
            if route is not None:
                out.append(Send(to=route[0], msg=Knowledge(pubend=p, data=d, for_cell=route[1])))


# ==========================================================================================
# handlers
# ==========================================================================================


def on_receive(state: NodeState, inp: Receive, now: int) -> Step:
    """A message from a neighbour. Malformed or unexpected messages become ``Rejected``."""
    ctx = state.ctx
    msg = inp.msg
    sender = inp.sender
    out: Out = []
    labels: list[str] = []
    if sender not in ctx.neighbours:
        return state, (Rejected(reason=f"message from {sender!r}, not a neighbour", input=inp),)
    if isinstance(msg, LinkStatus):
        reach = tuple(msg.reach)
        if state.status.get(sender) == reach:
            return state, ()
        return evolve(state, status=state.status.set(sender, reach)), ()
    p = getattr(msg, "pubend", None)
    if not isinstance(msg, Knowledge | Ack | Nack | AckExpected) or p not in ctx.pubends:
        return state, (
            Rejected(reason=f"unexpected message {type(msg).__name__} for {p!r}", input=inp),
        )
    if ctx.config.best_effort and not isinstance(msg, Knowledge):
        return state, ()
    role = ctx.role
    if isinstance(msg, Knowledge):
        if role == "SHB":
            st = _shb_knowledge(state, sender, msg, now, out, labels, inp)
        elif role == "IB":
            st = _broker_knowledge(state, sender, msg, now, out, labels, inp)
        else:
            out.append(Rejected(reason=f"knowledge of {p} sent to its PHB", input=inp))
            st = state
    elif isinstance(msg, Nack):
        if role == "SHB":
            out.append(Rejected(reason="nack sent to an SHB", input=inp))
            st = state
        else:
            st = _satisfy_nack(state, sender, msg, now, out, labels, inp)
    elif isinstance(msg, Ack):
        if role == "SHB":
            out.append(Rejected(reason="ack sent to an SHB", input=inp))
            st = state
        else:
            st = _on_ack(state, sender, msg, now, out, labels, inp)
    else:
        if role == "SHB":
            st = _shb_ack_expected(state, sender, msg, now, out, labels, inp)
        elif role == "IB":
            st = _broker_ack_expected(state, sender, msg, out, inp)
        else:
            out.append(Rejected(reason="AckExpected sent to a PHB", input=inp))
            st = state
    return _finish(state, st, out, labels)


def on_timer_fired(state: NodeState, inp: TimerFired, now: int) -> Step:
    """A timer armed by this node fired; timers armed before a crash are ignored."""
    key = inp.key
    if not (
        isinstance(key, tuple) and len(key) >= 3 and key[0] == _TIMER and key[1] == state.epoch
    ):
        return state, ()
    kind = key[2]
    ctx = state.ctx
    cfg = ctx.config
    out: Out = []
    labels: list[str] = []
    st = state
    if kind == "status":
        st = _status_tick(st, now, out, labels)
        out.append(SetTimer(key=_timer(st, "status"), at=now + cfg.link_status_period_us))
    elif kind == "silence":
        for p in ctx.hosted:
            st = _phb_silence_tick(st, p, now, out, labels)
        out.append(SetTimer(key=_timer(st, "silence"), at=now + cfg.silence_period_us))
    elif kind == "aet":
        upto = now - cfg.aet_us
        if upto >= 0:
            for p in ctx.hosted:
                s = _stream(st, p)
                if s.fin < upto and (s.data or p in st.pending):
                    _phb_ack_expected(st, p, upto, out)
        out.append(SetTimer(key=_timer(st, "aet"), at=now + cfg.ack_expected_period_us))
    elif kind == "forget" and len(key) == 4:
        st = _forget(st, key[3], now, out, labels)
    elif kind == "ack" and len(key) == 4:
        p = key[3]
        s = evolve(_stream(st, p), ack_armed=False)
        point = _ack_point(ctx, st, p, s) if ctx.role == "SHB" else s.fin
        if point > s.acked_sent:
            _send_up(ctx, st, s, Ack(pubend=p, upto=point), out)
            s = evolve(s, acked_sent=point)
        st = _put(st, p, s)
    elif kind == "gct" and len(key) == 4:
        st = _gct(st, key[3], now, out, labels)
    elif kind == "nrt" and len(key) == 4:
        st = _nrt(st, key[3], now, out)
    return _finish(state, st, out, labels)


def _status_tick(st: NodeState, now: int, out: Out, labels: list[str]) -> NodeState:
    ctx = st.ctx
    reach = tuple(
        sorted(
            {
                ctx.topology.cell_of(n)
                for n in ctx.neighbours
                if n not in st.links_down and ctx.topology.cell_of(n) != ctx.cell
            }
        )
    )
    for n in ctx.neighbours:
        if n not in st.links_down:
            out.append(Send(to=n, msg=LinkStatus(reach=reach)))
    dct = ctx.config.dct_us
    if ctx.role == "SHB" and dct is not None:
        for p in ctx.pubends:
            s = _stream(st, p)
            upto = now - dct
            if upto > s.fin:
                q = R.subtract(R.subtract(((s.fin + 1, upto),), _known(s)), s.nacked)
                if q:
                    st = _put(st, p, _shb_nack(st, p, s, q, now, out, labels))
    return st


def _forget(st: NodeState, p: str, now: int, out: Out, labels: list[str]) -> NodeState:
    """[GD §3.1] istream C older than the minimum repetition interval is forgotten."""
    s = _stream(st, p)
    limit = now - st.ctx.config.min_repetition_us
    keep = tuple(e for e in s.curious if e[2] > limit)
    if len(keep) != len(s.curious):
        labels.append("C:C->N")
    if keep:
        out.append(
            SetTimer(
                key=_timer(st, "forget", p),
                at=min(e[2] for e in keep) + st.ctx.config.min_repetition_us,
            )
        )
    s = evolve(s, curious=keep, forget_armed=bool(keep))
    return _put(st, p, s)


def _gct(st: NodeState, p: str, now: int, out: Out, labels: list[str]) -> NodeState:
    """The gap curiosity threshold expired: nack the gap's Q ticks [GD §3.2]."""
    s = _stream(st, p)
    mark = s.gct_mark
    s = evolve(s, gct_mark=None)
    if mark is not None and mark > s.fin:
        q = R.subtract(R.subtract(((s.fin + 1, mark),), _known(s)), s.nacked)
        s = _shb_nack(st, p, s, q, now, out, labels)
    floor = s.fin if mark is None else max(mark, s.fin)
    if _gap_limit(st, p, s) > floor:
        s = _arm_gct(st, p, s, now, out)
    return _put(st, p, s)


def _nrt(st: NodeState, p: str, now: int, out: Out) -> NodeState:
    """Repeat unsatisfied nacks with exponential backoff [GD §3.1, §3.2]."""
    ctx = st.ctx
    s = evolve(_stream(st, p), nrt_armed=False)
    left = R.clip(R.subtract(s.nacked, _known(s)), s.fin + 1, 1 << 62)
    if not left:
        s = evolve(s, nacked=(), nack_at=None, repeated=False, rto_cur=s.rto_est)
        return _put(st, p, s)
    if ctx.policy.repeat_nacks:
        _send_nacks(ctx, st, s, p, left, True, out)
        rto = min(s.rto_cur * 2, ctx.config.backoff_cap_us)
        out.append(SetTimer(key=_timer(st, "nrt", p), at=now + rto))
        s = evolve(s, nacked=left, repeated=True, rto_cur=rto, nrt_armed=True)
    return _put(st, p, s)


def on_link_changed(state: NodeState, inp: LinkChanged, now: int) -> Step:
    """A link to ``inp.neighbour`` went down or came back [GD §3.1]."""
    n = inp.neighbour
    if n not in state.ctx.neighbours:
        return state, ()
    if inp.up:
        if n not in state.links_down:
            return state, ()
        return evolve(state, links_down=state.links_down.remove(n)), ()
    if n in state.links_down:
        return state, ()
    st = evolve(state, links_down=state.links_down.add(n), status=state.status.discard(n))
    if any(s.last_sender == n for s in st.streams):
        streams = tuple(
            evolve(s, last_sender=None) if s.last_sender == n else s for s in st.streams
        )
        st = evolve(st, streams=streams)
    return st, ()


def on_connect(state: NodeState, inp: Connect, now: int) -> Step:
    """A subscriber connects to this SHB (a new connection [GD §2.3]); it receives the matching
    messages above the current doubt horizon."""
    ctx = state.ctx
    if ctx.role != "SHB":
        raise ProtocolMisuse(
            f"on_connect: {state.name!r} is a {ctx.role}; allowed: subscribers connect to an SHB"
        )
    try:
        f = parse_filter(inp.filter)
    except FilterSyntaxError as err:
        return state, (Rejected(reason=f"bad filter: {err}", input=inp),)
    st = _drop_subscriber(state, inp.subscriber)
    g = ctx.sub_groups.get(inp.subscriber)
    if g is not None and g in st.groups:
        gs = st.groups[g]
        st = evolve(st, groups=st.groups.set(g, evolve(gs, index=gs.index.add(inp.subscriber, f))))
    else:
        st = evolve(st, index=st.index.add(inp.subscriber, f))
    st = evolve(st, connections=st.connections.set(inp.subscriber, inp.connection))
    return st, ()


def _drop_subscriber(st: NodeState, sub: str) -> NodeState:
    if sub not in st.connections:
        return st
    groups = st.groups
    for g in sorted(groups):
        gs = groups[g]
        if sub in gs.index.filters:
            groups = groups.set(g, evolve(gs, index=gs.index.remove(sub)))
    return evolve(
        st, index=st.index.remove(sub), groups=groups, connections=st.connections.remove(sub)
    )


def on_disconnect(state: NodeState, inp: Disconnect, now: int) -> Step:
    """A subscriber disconnects; its connection ends."""
    st = _drop_subscriber(state, inp.subscriber)
    return (state, ()) if st is state else (st, ())


def on_restart(state: NodeState, inp: Restart, now: int) -> Step:
    """Boot (at time 0) or restart after a crash: soft state starts empty, the pubend's stream is
    rebuilt from its log [GD §3.2, §4.2]."""
    if state.up and state.epoch > 0:
        return state, ()
    ctx = state.ctx
    cfg = ctx.config
    st = NodeState(ctx=ctx, up=True, epoch=state.epoch + 1, log=state.log)
    out: Out = []
    streams = {p: _fresh(ctx, p) for p in ctx.pubends}
    if cfg.best_effort:
        return evolve(st, streams=tuple(streams.values())), ()
    assigned = {}
    if ctx.role == "PHB":
        for p in ctx.hosted:
            log = st.log.get(p) or PubendLog()
            top = max(now - 1, log.reserved, log.entries[-1][0] if log.entries else -1)
            silent = R.subtract(((log.floor + 1, top),), tuple((t, t) for t, _ in log.entries))
            fin = log.floor
            while silent and silent[0][0] <= fin + 1:
                fin = max(fin, silent[0][1])
                silent = silent[1:]
            streams[p] = _fresh(ctx, p, fin=fin, silent=silent, data=log.entries)
            assigned[p] = top
        st = evolve(st, streams=tuple(streams.values()), assigned=FMap(assigned))
        for p in ctx.hosted:
            entries = st.log.get(p, PubendLog()).entries
            if entries:
                _phb_ack_expected(st, p, entries[-1][0], out)
        out.append(SetTimer(key=_timer(st, "silence"), at=now + cfg.silence_period_us))
        out.append(SetTimer(key=_timer(st, "aet"), at=now + cfg.ack_expected_period_us))
    elif ctx.role == "SHB":
        start = now - 1
        for p in ctx.pubends:
            streams[p] = _fresh(
                ctx, p, fin=start, acked_sent=-1, rto_est=cfg.nrt_us, rto_cur=cfg.nrt_us
            )
        groups = {g: GroupState(merged=start + 1) for g in ctx.groups}
        st = evolve(st, streams=tuple(streams.values()), groups=FMap(groups))
    else:
        st = evolve(st, streams=tuple(streams.values()))
    out.append(SetTimer(key=_timer(st, "status"), at=now + cfg.link_status_period_us))
    return st, tuple(out)


_HANDLERS: Final[dict[type, Callable[[Any, Any, int], Step]]] = {
    Receive: on_receive,
    TimerFired: on_timer_fired,
    Persisted: on_persisted,
    LinkChanged: on_link_changed,
    Publish: on_publish,
    Connect: on_connect,
    Disconnect: on_disconnect,
}
