"""The intermediate broker (IB): istream accumulation, forwarding, nack and ack
consolidation [GD §3.1, §3.2].

Theory of operation
-------------------
An IB accumulates knowledge messages from its upstream cell into ``istream[P]``
(:func:`gapless.impl.gd.istream.accumulate`) and forwards what is new
(:func:`gapless.impl.gd.forwarding.forward`): first-time data to the downstream cells whose
edge filter matches (a non-matching D is F for that cell — acked at once), first-time silence
only to downstream brokers whose ostream holds an overlapping C, retransmitted knowledge only
to brokers curious for some of its ticks [GD §3.1]. A message routed *sideways* by a cell
neighbour (``for_cell``) is forwarded only towards that cell, and its silence is F for that
cell only [GD §3.1, link bundles].

A nack is first satisfied from the streams (a retransmission to the nacker); the rest becomes
C in the ostream and in the istream, and only ticks *newly* C in the istream go upstream (nack
consolidation). istream C is forgotten after ``min_repetition_us`` so a repeated nack looks
fresh. The istream is A where every ostream is A or the istream is F; its A prefix is acked
upstream at most once per ``ack_delay_us`` (ack consolidation). ``AckExpected`` is answered
with an ack when the istream is acked that far, else forwarded to the cells that are not
[GD §3.2].
"""

from __future__ import annotations

from typing import Any

from gapless.impl import ticksets as R
from gapless.impl.effects import Send, SetTimer
from gapless.impl.gd.forwarding import (
    Outgoing,
    ack_upstream,
    answer_nack,
    from_upstream,
    message_finals,
    nack_cell,
    take_ack,
)
from gapless.impl.gd.forwarding import forward as _forward_all
from gapless.impl.gd.istream import accumulate, fresh, ostream, put, stream, with_ostream
from gapless.impl.gd.messages import Ack, AckExpected, Knowledge, Nack
from gapless.impl.gd.routing import rearm_status, route, send_nacks, send_up
from gapless.impl.gd.state import IBState, NodeCtx, Stream, evolve
from gapless.impl.gd.step import FILTERED, NO_END, Step, timer_key
from gapless.impl.inputs import Restart

__all__ = [
    "knowledge_cell",
    "on_ack",
    "on_ack_expected",
    "on_ack_timer",
    "on_forget_timer",
    "on_knowledge",
    "on_nack",
    "on_restart",
]


def knowledge_cell(
    ctx: NodeCtx, sender: str, msg: Knowledge, step: Step
) -> tuple[bool, str | None]:
    """Whether an IB accepts knowledge from ``sender`` and, for a sideways message, the one
    downstream cell it is for [GD §3.1]: knowledge comes from the upstream cell, or sideways
    from a cell neighbour for a cell downstream of us; anything else is rejected."""
    p = msg.pubend
    sender_cell = ctx.broker_cells.get(sender)
    if sender_cell == ctx.cell and msg.for_cell is not None:
        if msg.for_cell not in ctx.children.get(p, ()):
            step.reject(f"sideways message for a cell not downstream: {msg.for_cell}")
            return False, None
        if not ctx.policy.take_detours:
            return False, msg.for_cell  # the zoo's drop-detours: accepted, then dropped unsaid
        return True, msg.for_cell
    if sender_cell != ctx.parent.get(p):
        step.reject(f"knowledge of {p} from {sender}, not upstream")
        return False, None
    return True, None


def on_knowledge(state: IBState, sender: str, msg: Knowledge, step: Step) -> IBState:
    """Knowledge from upstream (or sideways): accumulate it into ``istream[P]`` [GD §2.1] and
    forward what is new [GD §3.1]; a filter that made ticks A may advance the ack."""
    ctx = state.ctx
    ok, only_cell = knowledge_cell(ctx, sender, msg, step)
    if not ok:
        return state
    p = msg.pubend
    s0 = stream(state, p)
    if only_cell is None:
        s, new_data, _changed = accumulate(s0, msg, step)
        if s.last_sender != sender:
            s = evolve(s, last_sender=sender)
    else:
        # A sideways message carries what one cell needs: its silence may cover D ticks that
        # cell's filter removed, so it is F for that cell only (its ostream), never istream F.
        core = Knowledge(pubend=p, prefix=msg.prefix, data=msg.data)
        s, new_data, _changed = accumulate(s0, core, step)
        s = _cell_finals(ctx, s, p, only_cell, msg.silence)
    what = Outgoing(
        pubend=p,
        finals=message_finals(msg),
        data=(msg.data,) if msg.data is not None else (),
        new_data=new_data,
        retransmission=msg.retransmission,
        only_cell=only_cell,
    )
    n_labels = len(step.labels)
    s = _forward_all(state, s, what, step)
    s = ack_upstream(state, s, p, step, FILTERED in step.labels[n_labels:])
    return put(state, p, s)


def _cell_finals(ctx: NodeCtx, s: Stream, p: str, cell: str, finals: R.TickSet) -> Stream:
    """Record ticks known F for one downstream cell only (A there, [GD §2.1.1])."""
    o = ostream(ctx, s, p, cell)
    add = R.clip(R.normalize(finals), max(s.fin, o.acked) + 1, NO_END)
    data = s.knowledge.data(s.fin + 1)
    if data:
        add = R.subtract(add, tuple((t, e) for t, e, _ in data))
    if not add:
        return s
    return with_ostream(ctx, s, p, cell, o.filter(add))


def on_ack_expected(state: IBState, sender: str, msg: AckExpected, step: Step) -> IBState:
    """[GD §3.2] Answer AckExpected(T) with an ack if acked that far, else pass it down the
    paths that have not acked T."""
    ctx = state.ctx
    p = msg.pubend
    if not from_upstream(ctx, sender, p, "AckExpected for", step):
        return state
    s = stream(state, p)
    if s.last_sender != sender:
        # AckExpected is a downstream message of the pubend: acks follow it [GD §3.1]
        s = evolve(s, last_sender=sender)
    if s.fin >= 0:
        send_up(state, s, Ack(pubend=p, upto=s.fin, retransmission=True), step)
    if s.fin < msg.upto:
        for c, o in zip(ctx.children.get(p, ()), s.ledger.cells, strict=True):
            if o.acked < msg.upto:
                got = route(state, p, c)
                if got is not None and got[1] is None:
                    step.out.append(Send(to=got[0], msg=msg))
    if s.fin > s.acked_sent:
        s = evolve(s, acked_sent=s.fin)
    return put(state, p, s)


def on_nack(state: IBState, sender: str, msg: Nack, step: Step) -> IBState:
    """[GD §3.1] Satisfy a nack from the streams; the rest becomes C; only ticks newly C in
    the istream go upstream (nack consolidation, policy ``nack_upstream``); istream C is
    forgotten after the minimum repetition interval (policy ``forget_curiosity``)."""
    ctx = state.ctx
    c = nack_cell(ctx, sender, msg, step)
    if c is None:
        return state
    p = msg.pubend
    s, unsatisfied = answer_nack(ctx, stream(state, p), c, sender, msg, step)
    if unsatisfied and ctx.parent.get(p) is not None:
        now = step.now
        ledger, newly = s.ledger.nack(unsatisfied, now)
        up = ctx.policy.nack_upstream(newly, unsatisfied)
        if ledger is not s.ledger:
            s = evolve(s, ledger=ledger)
        if up:
            send_nacks(state, s, p, up, False, step)
        if ctx.policy.forget_curiosity and newly and not s.forget_armed:
            step.out.append(
                SetTimer(
                    key=timer_key(state.epoch, "forget", p),
                    at=now + ctx.config.min_repetition_us,
                )
            )
            s = evolve(s, forget_armed=True)
    return put(state, p, s)


def on_ack(state: IBState, sender: str, msg: Ack, step: Step) -> IBState:
    """An ack from a downstream cell: its ticks are A in that ostream; the istream's A prefix
    grows and is acked upstream (ack consolidation [GD §3.1])."""
    s = take_ack(state, sender, msg, step)
    if s is None:
        return state
    return put(state, msg.pubend, ack_upstream(state, s, msg.pubend, step))


def on_forget_timer(state: IBState, args: tuple[Any, ...], step: Step) -> IBState:
    """[GD §3.1] istream C older than the minimum repetition interval is forgotten, so a
    repeated nack looks fresh and goes upstream again."""
    (p,) = args
    s = stream(state, p)
    limit = step.now - state.ctx.config.min_repetition_us
    got = s.ledger.forget(limit)
    if got.forgot:
        step.labels.append("C:C->N")
    if got.earliest is not None:
        step.out.append(
            SetTimer(
                key=timer_key(state.epoch, "forget", p),
                at=got.earliest + state.ctx.config.min_repetition_us,
            )
        )
    s = evolve(s, ledger=got.ledger, forget_armed=got.earliest is not None)
    return put(state, p, s)


def on_ack_timer(state: IBState, args: tuple[Any, ...], step: Step) -> IBState:
    """The node's ack delay expired: each istream waiting for it acks its A prefix upstream
    if it grew, in the order of ``NodeCtx.pubends`` (ack consolidation [GD §3.1])."""
    st = state
    for p in state.ctx.pubends:
        s = stream(state, p)
        if not s.ack_armed:
            continue
        s = evolve(s, ack_armed=False)
        if s.fin > s.acked_sent:
            send_up(state, s, Ack(pubend=p, upto=s.fin), step)
            s = evolve(s, acked_sent=s.fin)
        st = put(st, p, s)
    return st


def on_restart(state: IBState, inp: Restart, step: Step) -> IBState:
    """Boot or restart: soft state starts empty — an istream per pubend, nothing known
    [GD §3.1, §4.2]; the link-status timer is armed."""
    ctx = state.ctx
    st = IBState(
        ctx=ctx,
        up=True,
        epoch=state.epoch + 1,
        streams=tuple(fresh(ctx, p) for p in ctx.pubends),
    )
    rearm_status(st, step)
    return st
