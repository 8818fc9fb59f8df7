"""The subscriber hosting broker (SHB): doubt horizon, delivery, total-order merges, gap
curiosity, nack repetition and acks [GD §2.3, §2.4, §3.2, §4.1].

Theory of operation
-------------------
One stream per pubend serves every subscriber at the SHB (subend state consolidated per SHB
[GD §4.1]). Its doubt horizon ``t_D`` is the first Q tick above the delivered prefix
(policy ``doubt_horizon`` [GD §2.3]); when it advances, the D ticks below it are delivered in
tick order to every subscriber whose filter matches (an index: equality subscriptions by
lookup), then become F. A total-order group delivers the merged stream below the least
horizon of its members (policy ``merge_horizon`` [GD §2.4]). The delivered prefix is acked
(policy ``ack_point`` [GD §2.1.1]) at most every ``ack_delay_us``.

Liveness [GD §3.2]: a gap (Q ticks below a known tick) is nacked after GCT; unsatisfied nacks
are repeated with an RTO estimated from nack round trips (initial NRT, floor
``min_repetition_us``, exponential backoff capped at ``backoff_cap_us``, policy
``repeat_nacks``); ranges are chopped into ``nack_chunk_us`` pieces; ``AckExpected(T)`` nacks
every Q tick up to T at once (policy ``answer_ack_expected``); with a finite DCT a horizon
lagging now by more than DCT is nacked. A stream starts at the boot time: ticks before it
belong to no connection. Subscribers connect and disconnect here (GD is non-durable: a crash
ends every connection).

The common case of a knowledge message — the next D in order, nothing pending — has a
shortcut (:func:`in_order_fin`, :func:`shb_in_order`) with the same effects, state and
coverage labels as the general rules (``GDConfig.fast_paths``).
"""

from __future__ import annotations

from typing import Any, Final

from gapless.impl import ticksets as R
from gapless.impl.effects import Deliver, DeliverCohort, SetTimer
from gapless.impl.filters import FilterIndex, FilterSyntaxError, parse_filter
from gapless.impl.fmap import FMap
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.forwarding import arm_ack, from_upstream
from gapless.impl.gd.istream import accumulate, fresh, highest, known, put, stream
from gapless.impl.gd.messages import Ack, AckExpected, Data, Knowledge
from gapless.impl.gd.policy import paper_doubt_horizon
from gapless.impl.gd.routing import rearm_status, send_nacks, send_status, send_up
from gapless.impl.gd.state import (
    BestEffortSHB,
    GroupState,
    NodeCtx,
    SHBState,
    Stream,
    evolve,
)
from gapless.impl.gd.step import NO_END, Step, timer_key
from gapless.impl.inputs import Connect, Disconnect, Restart
from gapless.impl.streams import KnowledgeStream

__all__ = [
    "deliver",
    "drop_subscriber",
    "in_order_fin",
    "on_ack_expected",
    "on_ack_timer",
    "on_connect",
    "on_disconnect",
    "on_gct_timer",
    "on_knowledge",
    "on_nrt_timer",
    "on_restart",
    "on_status_timer",
    "shb_in_order",
]

#: How many connection maps, and cohorts per map, :func:`deliver` remembers (a memo).
COHORT_MAPS: Final = 64
COHORTS_PER_MAP: Final = 65_536


def _ack_point(ctx: NodeCtx, st: SHBState, p: str, s: Stream) -> int:
    """What the SHB acks for ``p``: the prefix delivered to every subscriber [GD §2.1.1] —
    for a pubend in a total-order group, the group's merged prefix too."""
    delivered = s.fin
    for g in ctx.groups_of.get(p, ()):
        gs = st.groups.get(g)
        if gs is not None:
            delivered = min(delivered, gs.merged - 1)
    return ctx.policy.ack_point(delivered, highest(s))


def _ack(st: SHBState, p: str, s: Stream, step: Step, force: bool) -> Stream:
    """Ack the delivered prefix upstream [GD §2.1.1, §3.1]: at most once per
    ``ack_delay_us`` (a timer), or at once when ``force`` (an answer to AckExpected)."""
    ctx = st.ctx
    point = _ack_point(ctx, st, p, s)
    if point < 0 or (point <= s.acked_sent and not force):
        return s
    if ctx.config.ack_delay_us and not force:
        return s if s.ack_armed else arm_ack(st, s, step)
    send_up(st, s, Ack(pubend=p, upto=point, retransmission=force), step)
    return evolve(s, acked_sent=max(point, s.acked_sent))


def deliver(st: SHBState | BestEffortSHB, index: FilterIndex, p: str, d: Data, step: Step) -> None:
    """Hand ``d`` to every subscriber of ``index`` whose filter matches [GD §2.3]."""
    conns = st.connections
    subs = index.match(d.attributes)
    if len(subs) == 1:
        sub = subs[0]
        step.out.append(
            Deliver(subscriber=sub, pubend=p, tick=d.tick, payload=d, connection=conns[sub])
        )
    elif subs:
        to = _cohort(subs, conns, st.ctx.memo["cohorts"])
        step.out.append(DeliverCohort(pubend=p, tick=d.tick, payload=d, to=to))


# Cohorts built for each connections map: a transparent memo in the SHB's context (one run;
# same inputs, same value), so the SHB reuses one ``to`` tuple per set of matching subscribers
# while their connections stay the same, and readers can memoise by identity.


def _cohort(subs: tuple[str, ...], conns: Any, memo: dict[Any, Any]) -> tuple[tuple[str, int], ...]:
    hit = memo.get(id(conns))
    if hit is None or hit[0] is not conns:
        if len(memo) >= COHORT_MAPS:
            memo.clear()
        hit = memo[id(conns)] = (conns, {})
    table: dict[tuple[str, ...], tuple[tuple[str, int], ...]] = hit[1]
    to = table.get(subs)
    if to is None:
        to = tuple([(sub, conns[sub]) for sub in subs])
        if len(table) >= COHORTS_PER_MAP:
            table.clear()
        table[subs] = to
    return to


def _advance(st: SHBState, p: str, s: Stream, step: Step) -> tuple[SHBState, Stream]:
    """Advance the doubt horizon and deliver [GD §2.3]; then the total-order merges. The
    returned state holds the returned stream only when ``p`` is merged (else the caller puts
    it)."""
    ctx = st.ctx
    in_groups = ctx.groups_of.get(p, ())
    k = s.knowledge
    h = ctx.policy.doubt_horizon(k.fin, known(s))
    if h > k.fin + 1:
        ready = k.data(k.final_prefix, h - 1)
        if ready:
            step.labels.append("K:D->F")
            for _t, _last, d in ready:
                deliver(st, st.index, p, d, step)
            if in_groups:
                groups = st.groups
                rows = tuple((t, p, d) for t, _last, d in ready)
                for g in in_groups:
                    gs = groups[g]
                    groups = groups.set(g, evolve(gs, buffer=(*gs.buffer, *rows)))
                st = evolve(st, groups=groups)
        s = evolve(
            s,
            knowledge=k.acknowledge(h - 1),
            nacked=R.clip(s.nacked, h, NO_END) if s.nacked else s.nacked,
        )
    if in_groups:
        st = put(st, p, s)
        for g in in_groups:
            st = _merge(st, g, step)
    return st, s


def _merge(st: SHBState, g: str, step: Step) -> SHBState:
    """Deliver a total-order group's merged stream below the merge horizon [GD §2.3, §2.4]."""
    ctx = st.ctx
    gs = st.groups[g]
    members = ctx.groups[g]
    merged = ctx.policy.merge_horizon([stream(st, m).fin + 1 for m in members])
    merged = max(merged, gs.merged)
    if not gs.buffer and merged == gs.merged:
        return st
    buffer = sorted(gs.buffer, key=_first)
    ready = [e for e in buffer if e[0] < merged]
    for _t, p, d in ready:
        deliver(st, gs.index, p, d, step)
    rest = tuple(e for e in buffer if e[0] >= merged)
    return evolve(st, groups=st.groups.set(g, evolve(gs, merged=merged, buffer=rest)))


def _first(e: tuple[int, str, Data]) -> int:
    return e[0]


def _gap_limit(st: SHBState, p: str, s: Stream) -> int:
    """The highest tick known of ``p`` or, for a merged pubend, settled at a fellow member:
    Q ticks below it are a gap [GD §2.4, §3.2]."""
    hi = highest(s)
    ctx = st.ctx
    for g in ctx.groups_of.get(p, ()):
        for m in ctx.groups[g]:
            if m != p:
                hi = max(hi, stream(st, m).fin)
    return hi


def _arm_gct(st: SHBState, p: str, s: Stream, step: Step) -> Stream:
    """Start the GCT timer for the Q ticks of a gap [GD §3.2] (unless one runs for a gap that
    is still open)."""
    if s.gct_mark is not None and s.gct_mark > s.fin:
        return s
    hi = _gap_limit(st, p, s)
    if hi <= s.fin:
        return s
    step.out.append(SetTimer(key=timer_key(st.epoch, "gct", p), at=step.now + st.ctx.config.gct_us))
    return evolve(s, gct_mark=hi)


def _nack(st: SHBState, p: str, s: Stream, rs: R.TickSet, step: Step) -> Stream:
    """Send fresh nacks for ``rs`` and arm the repetition timer [GD §3.2]."""
    if not rs:
        return s
    step.labels.append("C:N->C")
    send_nacks(st, s, p, rs, False, step)
    s = evolve(
        s,
        nacked=st.ctx.policy.remember_nacked(s.nacked, rs),
        nack_at=step.now if s.nack_at is None else s.nack_at,
    )
    if not s.nrt_armed:
        step.out.append(SetTimer(key=timer_key(st.epoch, "nrt", p), at=step.now + s.rto_cur))
        s = evolve(s, nrt_armed=True)
    return s


def _rtt_sample(cfg: GDConfig, s: Stream, now: int) -> Stream:
    """A nack round trip measured: update SRTT, RTTVAR and the RTO estimate (Jacobson, with
    Karn's rule: no sample from repeated nacks) [GD §3.2]."""
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


def on_knowledge(state: SHBState, sender: str, msg: Knowledge, step: Step) -> SHBState:
    """Knowledge from upstream: accumulate it [GD §2.1], settle nacked ticks (an RTT sample),
    advance the doubt horizon and deliver [GD §2.3], ack, and watch for gaps [GD §3.2]."""
    ctx = state.ctx
    p = msg.pubend
    if p not in ctx.pubends or not from_upstream(ctx, sender, p, "knowledge of", step):
        return state
    s0 = stream(state, p)
    if ctx.config.fast_paths:
        fin = in_order_fin(ctx, s0, msg)
        if fin is not None:
            return shb_in_order(state, sender, msg, s0, fin, step)
    s, _new, changed = accumulate(s0, msg, step)
    if s.last_sender != sender:
        s = evolve(s, last_sender=sender)
    if not changed:
        return put(state, p, s)
    if s.nacked:
        left = R.clip(R.subtract(s.nacked, known(s)), s.fin + 1, NO_END)
        if left != s.nacked:
            s = _rtt_sample(ctx.config, s, step.now)
            s = evolve(s, nacked=left)
            if not left:
                s = evolve(s, nack_at=None, repeated=False, rto_cur=s.rto_est)
    st, s = _advance(state, p, s, step)
    s = _ack(st, p, s, step, False)
    s = _arm_gct(st, p, s, step)
    st = put(st, p, s)
    for g in ctx.groups_of.get(p, ()):
        for m in ctx.groups[g]:
            if m != p:
                sm = _ack(st, m, stream(st, m), step, False)
                st = put(st, m, _arm_gct(st, m, sm, step))
    return st


def in_order_fin(ctx: NodeCtx, s: Stream, msg: Knowledge) -> int | None:
    """The common case at an SHB, recognised in O(1): the stream holds no pending knowledge
    or curiosity above ``fin`` (every tick up to ``fin`` delivered), ``msg`` carries the next D
    and exactly the silence between ``fin`` and it (a first-time message in order [GD §3.1]),
    the pubend is in no total-order group here and the doubt horizon is the paper's. Returns
    the tick below which ``msg`` makes the stream final before its D (``None``: not this
    case). Then accumulating ``msg`` and advancing the doubt horizon amount to: deliver the D,
    everything up to it is F (see :func:`shb_in_order`)."""
    d = msg.data
    k = s.knowledge
    if d is None or k.run_count or s.nacked or s.ledger.upstream:
        return None
    t = d.tick
    fin = k.fin
    if t <= fin or msg.prefix >= t or ctx.groups_of.get(p := msg.pubend):
        return None
    if ctx.policy.doubt_horizon is not paper_doubt_horizon or p not in ctx.index:
        return None
    lo = max(fin, msg.prefix) + 1  # first tick neither final here nor in msg's prefix
    sil = msg.silence
    if not sil:
        return fin if lo == t else None
    if len(sil) == 1 and sil[0][0] <= lo <= sil[0][1] == t - 1:
        return fin
    return None


def shb_in_order(
    st: SHBState, sender: str, msg: Knowledge, s: Stream, fin: int, step: Step
) -> SHBState:
    """:func:`on_knowledge` for the case :func:`in_order_fin` recognised: the same effects,
    state and coverage labels as accumulating ``msg`` [GD §2.1] and advancing the doubt
    horizon [GD §2.3] by the general rules, without building the intermediate streams (the
    differential test compares both on fault-injected runs)."""
    d = msg.data
    assert d is not None
    p = msg.pubend
    labels = step.labels
    if msg.prefix > fin or msg.silence:
        labels.append("K:Q->F")  # ticks fin+1 .. t-1 were Q here
    labels.append("K:Q->D")
    labels.append("K:D->F")  # the D is delivered and becomes F at once
    deliver(st, st.index, p, d, step)
    s = evolve(s, knowledge=s.knowledge.acknowledge(d.tick), last_sender=sender)
    if not (s.ack_armed and st.ctx.config.ack_delay_us):
        # (an armed ack timer makes _ack return the stream unchanged, effect-free; policy
        # ack_in_order False, the zoo's ack-waits-for-ack-expected, skips it while a delay is set)
        acks = st.ctx.policy.ack_in_order or not st.ctx.config.ack_delay_us
        s = _ack(st, p, s, step, False) if acks else s
    # _arm_gct has nothing to do: nothing is known above the new fin (no gap), and p is in no
    # total-order group
    i = st.ctx.index[p]
    return evolve(st, streams=(*st.streams[:i], s, *st.streams[i + 1 :]))


def on_ack_expected(state: SHBState, sender: str, msg: AckExpected, step: Step) -> SHBState:
    """``AckExpected(T)`` from upstream: nack every Q tick up to T at once and ack the
    delivered prefix (policy ``answer_ack_expected``) [GD §3.2]."""
    ctx = state.ctx
    p = msg.pubend
    if p not in ctx.pubends or not from_upstream(ctx, sender, p, "AckExpected for", step):
        return state
    if not ctx.policy.answer_ack_expected:
        return state
    s = stream(state, p)
    if s.last_sender != sender:
        # AckExpected is a downstream message of the pubend: acks follow it [GD §3.1]
        s = evolve(s, last_sender=sender)
    if msg.upto > s.fin:
        q = R.subtract(((s.fin + 1, msg.upto),), known(s))
        if not ctx.policy.repeat_nacks:
            q = R.subtract(q, s.nacked)  # a tick once nacked is never asked for again
        s = _nack(state, p, s, q, step)
    s = _ack(state, p, s, step, True)
    return put(state, p, s)


def on_status_timer(state: SHBState, args: tuple[Any, ...], step: Step) -> SHBState:
    """The link-status period expired: send the link status [GD §3.1]; with a finite DCT,
    nack every Q tick of a stream whose horizon lags now by more than DCT [GD §3.2]."""
    ctx = state.ctx
    send_status(state, step)
    st = state
    dct = ctx.config.dct_us
    if dct is not None:
        upto = step.now - dct
        for p in ctx.pubends:
            s = stream(st, p)
            if upto > s.fin:
                q = R.subtract(R.subtract(((s.fin + 1, upto),), known(s)), s.nacked)
                if q:
                    st = put(st, p, _nack(st, p, s, q, step))
    rearm_status(st, step)
    return st


def on_ack_timer(state: SHBState, args: tuple[Any, ...], step: Step) -> SHBState:
    """The node's ack delay expired: each pubend waiting for it acks its delivered prefix if
    it grew, in the order of ``NodeCtx.pubends`` [GD §2.1.1, §3.1]."""
    st = state
    for p in state.ctx.pubends:
        s = stream(state, p)
        if not s.ack_armed:
            continue
        s = evolve(s, ack_armed=False)
        point = _ack_point(state.ctx, state, p, s)
        if point > s.acked_sent:
            send_up(state, s, Ack(pubend=p, upto=point), step)
            s = evolve(s, acked_sent=point)
        st = put(st, p, s)
    return st


def on_gct_timer(state: SHBState, args: tuple[Any, ...], step: Step) -> SHBState:
    """The gap curiosity threshold expired: nack the gap's Q ticks [GD §3.2]."""
    (p,) = args
    s = stream(state, p)
    mark = s.gct_mark
    s = evolve(s, gct_mark=None)
    if mark is not None and mark > s.fin:
        q = R.subtract(R.subtract(((s.fin + 1, mark),), known(s)), s.nacked)
        s = _nack(state, p, s, q, step)
    floor = s.fin if mark is None else max(mark, s.fin)
    if _gap_limit(state, p, s) > floor:
        s = _arm_gct(state, p, s, step)
    return put(state, p, s)


def on_nrt_timer(state: SHBState, args: tuple[Any, ...], step: Step) -> SHBState:
    """Repeat unsatisfied nacks with exponential backoff (policy ``repeat_nacks``)
    [GD §3.1, §3.2]."""
    (p,) = args
    ctx = state.ctx
    s = evolve(stream(state, p), nrt_armed=False)
    left = R.clip(R.subtract(s.nacked, known(s)), s.fin + 1, NO_END)
    if not left:
        s = evolve(s, nacked=(), nack_at=None, repeated=False, rto_cur=s.rto_est)
        return put(state, p, s)
    if ctx.policy.repeat_nacks:
        send_nacks(state, s, p, left, True, step)
        rto = min(s.rto_cur * 2, ctx.config.backoff_cap_us)
        step.out.append(SetTimer(key=timer_key(state.epoch, "nrt", p), at=step.now + rto))
        s = evolve(s, nacked=left, repeated=True, rto_cur=rto, nrt_armed=True)
    return put(state, p, s)


def on_connect(state: SHBState, inp: Connect, step: Step) -> SHBState:
    """A subscriber connects to this SHB (a new connection [GD §2.3]); it receives the
    matching messages above the current doubt horizon. A bad filter is rejected."""
    try:
        f = parse_filter(inp.filter)
    except FilterSyntaxError as err:
        step.reject(f"bad filter: {err}")
        return state
    st = drop_subscriber(state, inp.subscriber)
    g = st.ctx.sub_groups.get(inp.subscriber)
    if g is not None and g in st.groups:
        gs = st.groups[g]
        st = evolve(st, groups=st.groups.set(g, evolve(gs, index=gs.index.add(inp.subscriber, f))))
    else:
        st = evolve(st, index=st.index.add(inp.subscriber, f))
    return evolve(st, connections=st.connections.set(inp.subscriber, inp.connection))


def drop_subscriber(st: SHBState, sub: str) -> SHBState:
    """``st`` without subscriber ``sub`` (its connection ends)."""
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


def on_disconnect(state: SHBState, inp: Disconnect, step: Step) -> SHBState:
    """A subscriber disconnects; its connection ends (GD is non-durable [GD §2.3])."""
    return drop_subscriber(state, inp.subscriber)


def on_restart(state: SHBState, inp: Restart, step: Step) -> SHBState:
    """Boot or restart: every stream starts at the boot time (``fin = now - 1``) with the
    initial RTO, no subscriber is connected, merges start empty [GD §2.3, §3.2, §4.2]."""
    ctx = state.ctx
    cfg = ctx.config
    start = step.now - 1
    boot = KnowledgeStream().acknowledge(start) if start >= 0 else KnowledgeStream()
    st = SHBState(
        ctx=ctx,
        up=True,
        epoch=state.epoch + 1,
        streams=tuple(
            fresh(ctx, p, knowledge=boot, acked_sent=-1, rto_est=cfg.nrt_us, rto_cur=cfg.nrt_us)
            for p in ctx.pubends
        ),
        groups=FMap({g: GroupState(merged=start + 1) for g in ctx.groups}),
    )
    rearm_status(st, step)
    return st
