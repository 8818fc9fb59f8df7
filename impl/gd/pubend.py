"""The pubend hosting broker (PHB): ticks, stable storage, silence, AckExpected
[GD §2.2, §3.2, §4.2].

Theory of operation
-------------------
A ``Publish`` gets the next tick on the pubend's residue (tick ``t`` with
``t % tick_modulus == number``, so merged pubends never share a tick), the ticks since the
previous one become F, and the message is written to stable storage (``Persist``, completing
``logging_delay_us`` later) [GD §2.2]. Only when ``Persisted`` arrives is the tick D and the
message published: it is forwarded first-time with the silence since the previous D
(:mod:`gapless.impl.gd.forwarding`). An idle pubend advances silence (Q -> F up to now) every
``silence_period_us``; every ``ack_expected_period_us`` it sends ``AckExpected(now - AET)``
down every path that has not acked that far [GD §3.2]; after a restart it rebuilds its
stream from the log (every unlogged tick is silence) and at once sends
``AckExpected(last logged tick)`` [GD §4.2]. Nacks are answered from the stream (the log).
Acked ticks are released from the log. For total order, each D pre-assigns F to the next
``preassign_us`` ticks [GD §2.2]: the data message carries them (``D F*``), so a merge
downstream never waits on a quiet pubend for longer than that; the reservation is logged
with the message so a restart never reuses it.

With ``GDConfig.group_commit`` the pubend writes in batches, as a disk-backed broker at
thousands of messages per second must [GD §4.1]: a message published while no write is in
flight is written at once; those published while one is in flight wait, and when it completes
they are written together (one ``Persist`` of a ``LogBatch``). A completed batch publishes
its messages in tick order, each exactly as a per-message completion would.

The common case of ``Persisted`` — the logged tick above everything the stream knows, no
downstream broker curious — has a shortcut (:func:`publish_in_order`) with the same effects,
state and coverage labels as the general rules (``GDConfig.fast_paths``).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from gapless.impl import ticksets as R
from gapless.impl.effects import Persist, Send, SetTimer
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.fmap import FMap
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.forwarding import (
    Outgoing,
    answer_nack,
    forward,
    grow_a_prefix,
    nack_cell,
    take_ack,
)
from gapless.impl.gd.istream import fresh, put, stream
from gapless.impl.gd.messages import Ack, AckExpected, Data, Knowledge, Nack
from gapless.impl.gd.policy import GDPolicy, paper_filter_transfer, paper_first_time_silence
from gapless.impl.gd.routing import rearm_status, route
from gapless.impl.gd.state import (
    BestEffortPHB,
    LogBatch,
    LogRecord,
    PHBState,
    PubendLog,
    Rows,
    Stream,
    data_above,
    data_get,
    data_put,
    data_remove,
    evolve,
)
from gapless.impl.gd.step import FILTERED, LOG_KEY, Step, timer_key
from gapless.impl.inputs import Persisted, Publish, Restart
from gapless.impl.knowledge import D as KD
from gapless.impl.knowledge import F
from gapless.impl.streams import KnowledgeStream

__all__ = [
    "advance_silence",
    "check_hosted",
    "fast_policy",
    "on_ack",
    "on_aet_timer",
    "on_nack",
    "on_persisted",
    "on_publish",
    "on_restart",
    "on_silence_timer",
    "publish_in_order",
    "send_ack_expected",
    "tick_for",
]


def tick_for(st: PHBState | BestEffortPHB, p: str, now: int) -> int:
    """The tick of a message published now through ``p`` [GD §2.2]: at or after ``now``,
    after every tick assigned so far, on the pubend's residue modulo ``tick_modulus``."""
    m = st.ctx.config.tick_modulus
    base = max(now, st.assigned.get(p, -1) + 1)
    return base + ((st.ctx.numbers[p] - base) % m)


def check_hosted(st: PHBState | BestEffortPHB, p: str) -> None:
    """Raise :class:`ProtocolMisuse` unless this PHB hosts pubend ``p`` (caller misuse)."""
    if p not in st.ctx.hosted:
        raise ProtocolMisuse(
            f"on_publish: node {st.name!r} does not host pubend {p!r}; "
            f"allowed: {list(st.ctx.hosted)}"
        )


def advance_silence(st: PHBState, p: str, s: Stream, now: int) -> tuple[Stream, PHBState]:
    """An idle pubend turns Q ticks up to ``now - 1`` into F [GD §2.2]."""
    last = st.assigned.get(p, -1)
    if now - 1 <= last:
        return s, st
    s = evolve(s, knowledge=s.knowledge.accumulate(last + 1, now - 1, F))
    st = put(st, p, s, assigned=st.assigned.set(p, now - 1))
    return s, st


def on_publish(state: PHBState, inp: Publish, step: Step) -> PHBState:
    """A client publishes through pubend ``inp.pubend``: the message gets its tick, the ticks
    since the previous one become F, and it is logged [GD §2.2]."""
    ctx = state.ctx
    p = inp.pubend
    check_hosted(state, p)
    cfg = ctx.config
    now = step.now
    last = state.assigned.get(p, -1)
    t = tick_for(state, p, now)
    d = Data(pubend=p, tick=t, attributes=inp.attributes, size=inp.size, published_at=now)
    s = stream(state, p)
    if last + 1 <= t - 1:
        s = evolve(s, knowledge=s.knowledge.accumulate(last + 1, t - 1, F))
        step.labels.append("K:Q->F")
    reserved = t + cfg.preassign_us
    pending = data_put(state.pending.get(p, ()), d)
    st = put(
        state,
        p,
        s,
        assigned=state.assigned.set(p, reserved),
        pending=state.pending.set(p, pending),
    )
    if not cfg.group_commit:
        step.out.append(
            Persist(
                key=(LOG_KEY, p, t),
                value=LogRecord(data=d, reserved=reserved),
                delay=cfg.logging_delay_us,
            )
        )
    elif p not in st.writing:
        st = _write_batch(st, p, pending, step)
    # else: group commit, and a write is in flight: d waits in ``pending`` for the next batch
    if ctx.policy.publish_before_logged:
        st = _publish_logged(st, p, d, reserved, step)
    return st


def _release(st: PHBState, p: str, s: Stream, log: PubendLog | None = None) -> PubendLog | None:
    """The log with the acknowledged prefix released [GD §3.1] (None when unchanged)."""
    if log is None:
        if p not in st.log:
            return None
        log = st.log[p]
    fin = s.knowledge.fin
    if fin > log.floor:
        return evolve(log, floor=fin, entries=data_above(log.entries, fin))
    return None


def _put_released(st: PHBState, p: str, s: Stream) -> PHBState:
    """``st`` with stream ``s`` of ``p`` (its A prefix grown) and the log released below it."""
    log = _release(st, p, s)
    if log is not None:
        return put(st, p, s, log=st.log.set(p, log))
    return put(st, p, s)


def _publish_logged(st: PHBState, p: str, d: Data, reserved: int, step: Step) -> PHBState:
    """The tick is D from now on: forward the message first-time [GD §2.2, §3.1]."""
    ctx = st.ctx
    s = stream(st, p)
    k = s.knowledge
    if d.tick <= k.fin or k.payload_at(d.tick) is not None:
        return st
    step.labels.append("K:Q->D")
    k = k.accumulate(d.tick, d.tick, KD(d))
    if reserved > d.tick:
        k = k.accumulate(d.tick + 1, reserved, F)
    s = evolve(s, knowledge=k)
    finals: R.TickSet = ((d.tick + 1, reserved),) if reserved > d.tick else ()
    s = forward(st, s, Outgoing(pubend=p, finals=finals, data=(d,), new_data=(d,)), step)
    s = grow_a_prefix(ctx, s, step)
    return _put_released(st, p, s)


def _write_batch(st: PHBState, p: str, rows: Rows, step: Step) -> PHBState:
    """Group commit: write every message of ``rows`` (those waiting in ``pending``) in one
    ``Persist`` keyed ``(LOG_KEY, p, lowest tick, highest tick)``; the write is in flight
    until its ``Persisted`` [GD §2.2, §4.1]."""
    cfg = st.ctx.config
    lo, hi = rows[0][0], rows[-1][0]
    batch = LogBatch(
        records=tuple(LogRecord(data=d, reserved=t + cfg.preassign_us) for t, d in rows)
    )
    step.out.append(Persist(key=(LOG_KEY, p, lo, hi), value=batch, delay=cfg.logging_delay_us))
    return evolve(st, writing=st.writing.set(p, hi))


def _batch_written(state: PHBState, p: str, hi: int, step: Step) -> PHBState:
    """Group commit: the write in flight of ``p`` completed. Each message it held is
    published, in tick order, exactly as a per-message ``Persisted`` would publish it; the
    messages that arrived meanwhile go out in the next write [GD §2.2, §4.1]. A completion
    that is not the write in flight (one issued before a crash) changes nothing."""
    if state.writing.get(p) != hi:
        return state
    pend = state.pending.get(p, ())
    n = bisect_left(pend, (hi + 1,))  # the rows of the batch: ticks <= hi
    # The batch leaves ``pending`` in one copy, not one per message: each message is
    # published from a pending row of its own, and the rows that arrived meanwhile come
    # back for the next write (the same states and effects, differentially tested).
    st = evolve(state, writing=state.writing.remove(p), pending=state.pending.discard(p))
    for row in pend[:n]:
        st = _logged(st, p, row[0], row[1], step, (row,))
    rest = pend[n:]
    if rest:
        st = _write_batch(evolve(st, pending=st.pending.set(p, rest)), p, rest, step)
    return st


def on_persisted(state: PHBState, inp: Persisted, step: Step) -> PHBState:
    """The log write of a message completed: it is published [GD §2.2]. With group commit
    the write was a batch (key ``(LOG_KEY, p, lo, hi)``): see :func:`_batch_written`."""
    key = inp.key
    if not (isinstance(key, tuple) and key and key[0] == LOG_KEY):
        return state
    if len(key) == 4 and state.ctx.config.group_commit:
        return _batch_written(state, key[1], key[3], step)
    if len(key) != 3:
        return state
    _, p, t = key
    d = data_get(state.pending.get(p, ()), t)
    if d is None:
        return state
    return _logged(state, p, t, d, step)


def _logged(
    state: PHBState, p: str, t: int, d: Data, step: Step, pend: Rows | None = None
) -> PHBState:
    """Message ``d`` at tick ``t`` (waiting in ``pending``, or in ``pend`` when given: the
    rows it is taken from) is durably logged: it joins the log and is published [GD §2.2]."""
    if pend is None:
        pend = state.pending.get(p, ())
    ctx = state.ctx
    if ctx.fast_publish:
        got = publish_in_order(state, p, t, d, pend, step)
        if got is not None:
            return got
    reserved = t + ctx.config.preassign_us
    log = state.log.get(p) or PubendLog()
    log = evolve(log, entries=data_put(log.entries, d), reserved=max(log.reserved, reserved))
    rest = data_remove(pend, t)
    st = evolve(
        state,
        log=state.log.set(p, log),
        pending=state.pending.set(p, rest) if rest else state.pending.discard(p),
    )
    return _publish_logged(st, p, d, reserved, step)


def fast_policy(config: GDConfig, pol: GDPolicy) -> bool:
    """The rules :func:`publish_in_order` builds in are the paper's."""
    return (
        config.preassign_us == 0
        and pol.filter_transfer is paper_filter_transfer
        and pol.first_time_silence is paper_first_time_silence
        and not pol.publish_before_logged
    )


def publish_in_order(
    state: PHBState, p: str, t: int, d: Data, pend: Rows, step: Step
) -> PHBState | None:
    """:func:`on_persisted` in the common case — the logged tick is still Q here (above the
    acknowledged prefix and not D yet, which :func:`_publish_logged` requires too; F
    pre-assigned by later publications may lie above it) and no downstream broker is
    curious — with the same effects, state and coverage labels as the general rules
    (:func:`_publish_logged`, :func:`gapless.impl.gd.forwarding.forward`), in one pass over
    the downstream cells and one copy of the stream (:meth:`KnowledgeStream.fill`)
    [GD §2.2, §3.1]. ``None``: not this case (the caller applies the general rules); then
    nothing was emitted."""
    ctx = state.ctx
    s = stream(state, p)
    k = s.knowledge
    # the tick is D from now on, when it is Q here (pending): not D already, not acked
    known = k.fill(t, KD(d))
    if known is k:
        return None
    ledger = s.ledger
    if ledger.any_broker_curious():
        return None
    cells = ledger.cells
    labels = step.labels
    labels.append("K:Q->D")
    fin = k.fin
    attributes = d.attributes
    sent: dict[tuple[int, R.TickSet], Knowledge] = {}
    for ci, c in enumerate(ctx.children.get(p, ())):
        o = cells[ci]
        if t <= o.acked:
            continue
        if ctx.filters[(p, c)].matches(attributes):
            # first-time D with the F ticks known here since the last one sent [GD §3.1]
            lo = max(o.sent_upto, fin) + 1
            bracket = k.finals(lo, t - 1) if lo < t else ()
            if o.filtered:
                bracket = R.union(bracket, R.clip(o.filtered, lo, t - 1))
            got = route(state, p, c)
            if got is not None:
                to, for_cell = got
                msg = sent.get((t, bracket)) if for_cell is None else None
                if msg is None:
                    msg = Knowledge(
                        pubend=p, prefix=fin, silence=bracket, data=d, for_cell=for_cell
                    )
                    if for_cell is None:
                        sent[(t, bracket)] = msg
                step.out.append(Send(to=to, msg=msg))
            o = o.sent(t)
        else:
            # the edge filter turns the D into F, acked at once [GD §2.4, §3.1]; first-time
            # silence goes nowhere, as no broker is curious (a tick filtered already: no news)
            filtered = o.filter_tick(t)
            if filtered is o:
                continue
            o = filtered
            labels.append(FILTERED)
            labels.append("C:N->A")
        cells = (*cells[:ci], o, *cells[ci + 1 :])
    s = evolve(s, knowledge=known, ledger=ledger.with_cells(cells))
    log = state.log.get(p) or PubendLog()
    log = evolve(log, entries=data_put(log.entries, d), reserved=max(log.reserved, t))
    s = grow_a_prefix(ctx, s, step)
    released = _release(state, p, s, log)
    rest = data_remove(pend, t)
    i = ctx.index[p]
    return evolve(
        state,
        log=state.log.set(p, released or log),
        pending=state.pending.set(p, rest) if rest else state.pending.discard(p),
        streams=(*state.streams[:i], s, *state.streams[i + 1 :]),
    )


def on_silence_timer(state: PHBState, args: tuple[Any, ...], step: Step) -> PHBState:
    """The silence period expired: every hosted pubend that has been idle turns the ticks up
    to now into F and forwards that silence where it is wanted [GD §2.2, §3.1]."""
    st = state
    for p in st.ctx.hosted:
        st = _silence_tick(st, p, step)
    step.out.append(
        SetTimer(key=timer_key(st.epoch, "silence"), at=step.now + st.ctx.config.silence_period_us)
    )
    return st


def _silence_tick(st: PHBState, p: str, step: Step) -> PHBState:
    s0 = stream(st, p)
    last = st.assigned.get(p, -1)
    s, st = advance_silence(st, p, s0, step.now)
    if s is s0:
        return st
    step.labels.append("K:Q->F")
    finals: R.TickSet = ((last + 1, step.now - 1),)
    s = forward(st, s, Outgoing(pubend=p, finals=finals), step)
    s = grow_a_prefix(st.ctx, s, step)
    return _put_released(st, p, s)


def on_aet_timer(state: PHBState, args: tuple[Any, ...], step: Step) -> PHBState:
    """The AckExpected period expired: a pubend with ticks older than ``now - AET`` not acked
    sends ``AckExpected(now - AET)`` down the paths that have not acked them [GD §3.2]."""
    cfg = state.ctx.config
    pol = state.ctx.policy
    upto = pol.ack_expected_point(step.now, cfg.aet_us)
    if upto >= 0 and pol.periodic_ack_expected:
        for p in state.ctx.hosted:
            s = stream(state, p)
            if s.fin < upto and (s.knowledge.has_data(s.fin + 1) or p in state.pending):
                send_ack_expected(state, p, upto, step)
    step.out.append(
        SetTimer(key=timer_key(state.epoch, "aet"), at=step.now + cfg.ack_expected_period_us)
    )
    return state


def _from_log(log: PubendLog, top: int) -> KnowledgeStream:
    """The pubend's knowledge rebuilt from its log [GD §3.2]: ticks ``0..floor`` acknowledged,
    each logged message D, every other tick up to ``top`` F."""
    k = KnowledgeStream()
    if log.floor >= 0:
        k = k.acknowledge(log.floor)
    nxt = log.floor + 1
    for t, d in log.entries:
        if nxt <= t - 1:
            k = k.accumulate(nxt, t - 1, F)
        k = k.accumulate(t, t, KD(d))
        nxt = t + 1
    if nxt <= top:
        k = k.accumulate(nxt, top, F)
    return k


def send_ack_expected(st: PHBState, p: str, upto: int, step: Step) -> None:
    """``AckExpected(upto)`` to each downstream cell that has not acked ``upto`` [GD §3.2]."""
    ctx = st.ctx
    s = stream(st, p)
    for c, o in zip(ctx.children.get(p, ()), s.ledger.cells, strict=True):
        if o.acked < upto:
            got = route(st, p, c)
            if got is not None and got[1] is None:
                step.out.append(Send(to=got[0], msg=AckExpected(pubend=p, upto=upto)))


def on_nack(state: PHBState, sender: str, msg: Nack, step: Step) -> PHBState:
    """A nack from downstream is answered from the stream — the log [GD §3.1, §3.2]; idle
    silence is brought up to date first so the pubend never leaves a tick Q that it knows."""
    ctx = state.ctx
    c = nack_cell(ctx, sender, msg, step)
    if c is None:
        return state
    p = msg.pubend
    s = stream(state, p)
    st = state
    if p in ctx.hosted:
        s, st = advance_silence(st, p, s, step.now)
    s, _ = answer_nack(ctx, s, c, sender, msg, step)
    return put(st, p, s)


def on_ack(state: PHBState, sender: str, msg: Ack, step: Step) -> PHBState:
    """An ack from downstream: the acked ticks are A there; the pubend's A prefix grows and
    the log is released below it [GD §3.1, §3.2]."""
    s = take_ack(state, sender, msg, step)
    if s is None:
        return state
    s = grow_a_prefix(state.ctx, s, step)
    return _put_released(state, msg.pubend, s)


def on_restart(state: PHBState, inp: Restart, step: Step) -> PHBState:
    """Boot or restart: the stream is rebuilt from the log — every unlogged tick up to the
    highest reserved one is F — and ``AckExpected(last logged tick)`` goes down at once
    [GD §3.2, §4.2]."""
    ctx = state.ctx
    cfg = ctx.config
    now = step.now
    streams = {p: fresh(ctx, p) for p in ctx.pubends}
    assigned = {}
    for p in ctx.hosted:
        log = state.log.get(p) or PubendLog()
        top = max(now - 1, log.reserved, log.entries[-1][0] if log.entries else -1)
        streams[p] = fresh(ctx, p, knowledge=_from_log(log, top))
        assigned[p] = top
    st = PHBState(
        ctx=ctx,
        up=True,
        epoch=state.epoch + 1,
        log=state.log,
        streams=tuple(streams.values()),
        assigned=FMap(assigned),
    )
    for p in ctx.hosted:
        entries = st.log.get(p, PubendLog()).entries
        if entries:
            send_ack_expected(st, p, entries[-1][0], step)
    step.out.append(SetTimer(key=timer_key(st.epoch, "silence"), at=now + cfg.silence_period_us))
    step.out.append(SetTimer(key=timer_key(st.epoch, "aet"), at=now + cfg.ack_expected_period_us))
    rearm_status(st, step)
    return st
