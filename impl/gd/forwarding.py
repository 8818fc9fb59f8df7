"""Forwarding knowledge downstream and curiosity upstream at a PHB or IB [GD §2.4, §3.1].

Theory of operation
-------------------
New knowledge of pubend ``P`` at a broker goes to each downstream cell ``c`` through the edge
filter of ``c`` [GD §2.4]: a matching D passes, a non-matching D becomes F for ``c`` — A at
once, recorded in ``ostream[P, c].filtered`` [GD §3.1]. Then (:func:`forward`):

* *first-time* data goes along the routed link of ``c`` (:func:`gapless.impl.gd.routing.route`)
  with the F ticks known here since the last tick sent to ``c`` first-time (and any F the
  pubend pre-assigned after the D [GD §2.2]); first-time *silence* goes only to downstream
  brokers whose ostream holds an overlapping C (policy ``first_time_silence``);
* *retransmitted* knowledge goes only to brokers curious for some of its ticks, with D ticks
  they are not curious for removed (policy ``retransmit_to_nackers_only``);
* a broker curious for ticks this knowledge settles is served and its C cleared.

A nack from downstream (:func:`answer_nack`) is first satisfied from the stream (a
retransmission to the nacker); the rest becomes C in ``ostream[P, c]`` for that broker, and
at an IB the ticks *newly* C in the istream go upstream (nack consolidation, in
:mod:`gapless.impl.gd.broker`). An ack from downstream (:func:`take_ack`) makes ticks A in
its ostream; the istream's A prefix grows where every ostream is A or the tick is F
(:func:`grow_a_prefix`, policy ``ack_all_downstream``) — an IB acks it upstream
(:func:`ack_upstream`), a PHB releases its log below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, final

import attrs

from gapless.impl import ticksets as R
from gapless.impl.effects import Send, SetTimer
from gapless.impl.gd.istream import G, ostream, raise_fin, stream, with_ostream
from gapless.impl.gd.messages import Ack, Data, Knowledge, Nack
from gapless.impl.gd.routing import route, send_up
from gapless.impl.gd.state import IBState, NodeCtx, PHBState, SHBState, Stream, evolve
from gapless.impl.gd.step import FILTERED, NO_END, Step, timer_key
from gapless.impl.knowledge import D as KD
from gapless.impl.knowledge import Kind
from gapless.impl.ledger import CellLedger

__all__ = [
    "Outgoing",
    "ack_upstream",
    "answer_nack",
    "arm_ack",
    "downstream_cell",
    "emit",
    "forward",
    "from_upstream",
    "grow_a_prefix",
    "message_finals",
    "nack_cell",
    "take_ack",
]

#: The D value handed to ``policy.filter_transfer``: the rule judges the kind, the match is
#: computed by the edge filter (a payload-free stand-in avoids hashing the message).
DATA: Final = KD("data")


@final
@attrs.frozen(kw_only=True)
class Outgoing:
    """Knowledge of ``pubend`` new at this broker, to forward [GD §3.1]: the F ranges
    ``finals`` and D messages ``data`` it carries, which of those D are new here
    (``new_data``; only they go first-time), whether it is a retransmission, and — for a
    sideways message — the one downstream cell it is for."""

    pubend: str
    finals: R.TickSet
    data: Sequence[Data] = ()
    new_data: Sequence[Data] = ()
    retransmission: bool = False
    only_cell: str | None = None


def message_finals(msg: Knowledge) -> R.TickSet:
    """The F ticks a knowledge message carries: its final prefix and its silence."""
    rs = R.normalize(msg.silence)
    if msg.prefix >= 0:
        rs = R.union(rs, ((0, msg.prefix),))
    return rs


def _tick_of(d: Data) -> int:
    return d.tick


def emit(
    step: Step,
    to: str,
    p: str,
    prefix: int,
    finals: R.TickSet,
    datas: Sequence[Data],
    retrans: bool,
    for_cell: str | None = None,
) -> R.TickSet:
    """Send knowledge (``finals`` and ``datas``) to ``to`` as one message per D (the first
    carrying the silence) [GD §3.1]; returns the ticks sent."""
    out = step.out
    sent = finals
    if not datas:
        if finals:
            msg = Knowledge(
                pubend=p, prefix=prefix, silence=finals, retransmission=retrans, for_cell=for_cell
            )
            out.append(Send(to=to, msg=msg))
        return sent
    for i, d in enumerate(sorted(datas, key=_tick_of)):
        msg = Knowledge(
            pubend=p,
            prefix=prefix,
            silence=finals if i == 0 else (),
            data=d,
            retransmission=retrans,
            for_cell=for_cell,
        )
        out.append(Send(to=to, msg=msg))
        sent = R.add(sent, d.tick, d.tick)
    return sent


@final
@attrs.frozen(kw_only=True)
class _Forwarding:
    """One :func:`forward` call: the broker, its stream, what it forwards, the step, and the
    first-time messages built so far (one per D and bracket, shared by the cells routed to the
    same broker)."""

    st: PHBState | IBState
    s: Stream
    what: Outgoing
    step: Step
    sent: dict[tuple[int, R.TickSet], Knowledge] = attrs.field(factory=dict)


def _send_route(fw: _Forwarding, c: str, finals: R.TickSet, datas: Sequence[Data]) -> None:
    """Send knowledge along the routed link towards cell ``c`` [GD §3.1]."""
    what = fw.what
    got = route(fw.st, what.pubend, c, came_sideways=what.only_cell is not None)
    if got is not None:
        to, for_cell = got
        emit(fw.step, to, what.pubend, fw.s.fin, finals, datas, what.retransmission, for_cell)


def forward(st: PHBState | IBState, s: Stream, what: Outgoing, step: Step) -> Stream:
    """Propagate new knowledge to the downstream cells by the rules of [GD §2.4, §3.1]."""
    fw = _Forwarding(st=st, s=s, what=what, step=step)
    cells = s.ledger.cells
    for ci, c in enumerate(st.ctx.children.get(what.pubend, ())):
        if what.only_cell is not None and c != what.only_cell:
            continue
        o0 = cells[ci]
        o = _forward_to_cell(fw, c, o0)
        if o is not o0:
            cells = (*cells[:ci], o, *cells[ci + 1 :])
    if cells is not s.ledger.cells:
        s = evolve(s, ledger=s.ledger.with_cells(cells))
    return s


def _forward_to_cell(fw: _Forwarding, c: str, o: CellLedger) -> CellLedger:
    """:func:`forward` for one downstream cell ``c``; returns its new ostream."""
    policy = fw.st.ctx.policy
    finals_c, passing, o = _through_filter(fw, c, o)
    served: dict[str, R.TickSet] = {}
    if not fw.what.retransmission:
        o = _first_time(fw, c, o, finals_c, passing, served)
        if not passing and finals_c and policy.first_time_silence(False):
            _send_route(fw, c, finals_c, ())
    elif not policy.retransmit_to_nackers_only and (finals_c or passing):
        _send_route(fw, c, finals_c, passing)
    if o.curious:
        o = _serve_curious(fw, o, finals_c, passing, served)
    return o


def _through_filter(
    fw: _Forwarding, c: str, o: CellLedger
) -> tuple[R.TickSet, list[Data], CellLedger]:
    """The F ranges and passing D for cell ``c`` (above its ack) and the ostream with its new
    F: the edge filter turns a non-matching D into F, A at once [GD §2.4, §3.1]."""
    ctx = fw.st.ctx
    what = fw.what
    filt = ctx.filters[(what.pubend, c)]
    finals_c = what.finals
    if finals_c and finals_c[0][0] <= o.acked:
        finals_c = R.clip(what.finals, o.acked + 1, NO_END)
    passing: list[Data] = []
    for d in what.data:
        if d.tick <= o.acked:
            continue
        v = ctx.policy.filter_transfer(DATA, filt.matches(d.attributes))
        if v.kind is Kind.D:
            passing.append(d)
        elif v.kind is Kind.F:
            finals_c = R.add(finals_c, d.tick, d.tick)
            o2 = o.filter_tick(d.tick)
            if o2 is not o:
                o = o2
                fw.step.labels.append(FILTERED)
                fw.step.labels.append("C:N->A")
        # any other value (a planted bug): the tick stays Q downstream
    return finals_c, passing, o


def _first_time(
    fw: _Forwarding,
    c: str,
    o: CellLedger,
    finals_c: R.TickSet,
    passing: list[Data],
    served: dict[str, R.TickSet],
) -> CellLedger:
    """Send each new passing D first-time along the routed link of ``c`` with the F ticks
    known here since the last one sent there ("D F*") [GD §2.2, §3.1]; ``served`` collects
    what each curious broker got."""
    st, s, p = fw.st, fw.s, fw.what.pubend
    curious = o.curious
    for d in passing:
        if d not in fw.what.new_data:
            continue
        lo = max(o.sent_upto, s.fin) + 1
        # the F ticks known here between the last sent and this D: clipping each set
        # first (bisection) equals clipping their union, without merging whole sets
        bracket = s.knowledge.finals(lo, d.tick - 1) if lo < d.tick else ()
        if o.filtered:
            bracket = R.union(bracket, R.clip(o.filtered, lo, d.tick - 1))
        # "D F*": the F after the D (pre-assigned by the pubend [GD §2.2]) goes along
        if finals_c and finals_c[-1][1] > d.tick:
            bracket = R.union(bracket, R.clip(finals_c, d.tick + 1, NO_END))
        got = route(st, p, c, came_sideways=fw.what.only_cell is not None)
        if got is not None:
            to, for_cell = got
            key = (d.tick, bracket)
            msg = fw.sent.get(key) if for_cell is None else None
            if msg is None:
                msg = Knowledge(pubend=p, prefix=s.fin, silence=bracket, data=d, for_cell=for_cell)
                if for_cell is None:
                    fw.sent[key] = msg
            fw.step.out.append(Send(to=to, msg=msg))
            if for_cell is None and curious:
                served[to] = R.add(R.union(served.get(to, ()), bracket), d.tick, d.tick)
        o = o.sent(d.tick)
    return o


def _serve_curious(
    fw: _Forwarding,
    o: CellLedger,
    finals_c: R.TickSet,
    passing: list[Data],
    served: dict[str, R.TickSet],
) -> CellLedger:
    """Send each curious downstream broker the ticks of this knowledge it is curious for
    and clear its C there [GD §3.1]; returns the cell ledger with the remaining C. A broker
    whose link is known down is skipped and keeps its C: its nack repetition asks again over
    a link that is up [GD §3.1] (sending would lose the message on the down link)."""
    retrans = fw.what.retransmission
    policy = fw.st.ctx.policy
    first_time_silence = policy.first_time_silence
    down = fw.st.links_down if policy.route_around_down_links else ()
    for x in sorted(o.curious):
        if x in down:
            continue
        if x in served:
            o = o.serve(x, served[x])
        cx = o.curious.get(x, ())
        over_f = R.intersect(finals_c, cx)
        over_d = [d for d in passing if R.contains(cx, d.tick)]
        if (over_f or over_d) and (retrans or first_time_silence(True)):
            got = emit(fw.step, x, fw.what.pubend, fw.s.fin, over_f, over_d, retrans)
            o = o.serve(x, got)
    return o


def _a_end(ctx: NodeCtx, s: Stream, t: int) -> int | None:
    """Last tick of the run of istream-A ticks starting at ``t`` (None if ``t`` is not A)
    [GD §2.4, §3.1]."""
    e = s.knowledge.final_run_end(t)
    if e is not None:
        return e
    cells = s.ledger.cells
    if not cells:
        return None
    ends = [o.a_end(t) for o in cells]
    if ctx.policy.ack_all_downstream:
        if any(e is None for e in ends):
            return None
        return min(e for e in ends if e is not None)
    present = [e for e in ends if e is not None]
    return max(present) if present else None


def grow_a_prefix(ctx: NodeCtx, s: Stream, step: Step) -> Stream:
    """Grow the istream's A prefix [GD §3.1]: it is A where every ostream is A or the
    istream is F; ticks of the prefix become F (D* -> F), and the ledger lets go of every C
    and per-cell F there. A prefix that grew from upstream F alone (``K:Q->F``, after the
    step forwarded it and served the C it answers) is released here too."""
    fin = s.knowledge.fin
    cur = fin + 1
    end = _a_end(ctx, s, cur)
    while end is not None:
        cur = end + 1
        end = _a_end(ctx, s, cur)
    prefix = cur - 1
    if prefix > fin:
        return raise_fin(s, prefix, step)
    led = s.ledger
    released = led.release(fin)
    if released is not led:
        s = evolve(s, ledger=released)
    return s


def ack_upstream(st: IBState, s: Stream, p: str, step: Step, send: bool = True) -> Stream:
    """Grow the A prefix and ack it upstream when ``send`` (a downstream ack or a filter
    made ticks A — silence the upstream itself sent needs no ack), at most once per
    ``ack_delay_us`` (ack consolidation [GD §3.1])."""
    ctx = st.ctx
    s = grow_a_prefix(ctx, s, step)
    prefix = s.fin
    if ctx.parent.get(p) is not None and send and prefix > s.acked_sent:
        delay = ctx.config.ack_delay_us
        if not delay:
            send_up(st, s, Ack(pubend=p, upto=prefix), step)
            s = evolve(s, acked_sent=prefix)
        elif not s.ack_armed:
            # consolidated acks go up at most once per ack_delay_us
            s = arm_ack(st, s, step)
    return s


def arm_ack(st: IBState | SHBState, s: Stream, step: Step) -> Stream:
    """Stream ``s`` (not waiting yet) waits for the node's ack timer, which is armed
    ``ack_delay_us`` from now unless another stream of the node already waits for it: one ack
    timer per node, not per pubend (issue 17). When it fires, every waiting stream acks
    (:func:`gapless.impl.gd.broker.on_ack_timer`, :func:`gapless.impl.gd.subend.on_ack_timer`);
    each pubend's timed acks still go up at most once per ``ack_delay_us``, since the timer is
    armed again only after it fired [GD §3.1]."""
    if not any(o.ack_armed for o in st.streams):
        at = step.now + st.ctx.config.ack_delay_us
        step.out.append(SetTimer(key=timer_key(st.epoch, "ack"), at=at))
    return evolve(s, ack_armed=True)


def downstream_cell(ctx: NodeCtx, sender: str, p: str, what: str, step: Step) -> str | None:
    """The downstream cell of ``sender`` for pubend ``p``, or None after recording a Rejected
    effect: acks and nacks are only accepted from a cell downstream of us [GD §3.1]."""
    c = ctx.broker_cells.get(sender)
    if c is None or c not in ctx.children.get(p, ()):
        step.reject(f"{what} for {p} from {sender}, not downstream")
        return None
    return c


def from_upstream(ctx: NodeCtx, sender: str, p: str, what: str, step: Step) -> bool:
    """True if ``sender`` is in our upstream cell for pubend ``p``; otherwise record a Rejected
    effect: knowledge and AckExpected only flow downstream [GD §3.1, §3.2]."""
    if ctx.broker_cells.get(sender) == ctx.parent.get(p):
        return True
    step.reject(f"{what} {p} from {sender}, not upstream")
    return False


def nack_cell(ctx: NodeCtx, sender: str, msg: Nack, step: Step) -> str | None:
    """The downstream cell a nack comes from, or None after a Rejected effect (a nack from
    elsewhere, or an empty range) [GD §3.1]."""
    c = downstream_cell(ctx, sender, msg.pubend, "nack", step)
    if c is None:
        return None
    if msg.end < msg.start or msg.start < 0:
        step.reject(f"nack range [{msg.start}, {msg.end}] is empty")
        return None
    return c


def answer_nack(
    ctx: NodeCtx, s: Stream, c: str, sender: str, msg: Nack, step: Step
) -> tuple[Stream, R.TickSet]:
    """[GD §3.1] Satisfy a nack from the stream (a retransmission to ``sender``); the rest
    becomes C in ``ostream[P, c]`` for ``sender``. Returns the stream and the unsatisfied
    ticks."""
    p = msg.pubend
    o = ostream(ctx, s, p, c)
    want: R.TickSet = ((msg.start, msg.end),)
    finals = R.union(s.knowledge.finals(msg.start, msg.end), R.clip(o.filtered, msg.start, msg.end))
    top = max(s.fin, o.acked)
    if top >= msg.start:
        finals = R.add(finals, msg.start, min(top, msg.end))
    filt = ctx.filters[(p, c)]
    datas: list[Data] = []
    lo = max(msg.start, top + 1)
    for t, _last, d in s.knowledge.data(lo, msg.end) if lo <= msg.end else ():
        v = ctx.policy.filter_transfer(DATA, filt.matches(d.attributes))
        if v.kind is Kind.D:
            datas.append(d)
        elif v.kind is Kind.F:
            finals = R.add(finals, t, t)
    satisfied = finals
    if finals or datas:
        satisfied = emit(step, sender, p, s.fin, finals, datas, True)
    unsatisfied = R.subtract(want, satisfied)
    # a D tick a buggy filter turned into Q is neither sent nor curious-able: it stays C
    if unsatisfied:
        step.labels.append("C:N->C")
        s = with_ostream(ctx, s, p, c, o.want(sender, unsatisfied))
    return s, unsatisfied


def take_ack(st: G, sender: str, msg: Ack, step: Step) -> Stream | None:
    """An ack from downstream cell ``c`` makes ``0..upto`` A in ``ostream[P, c]`` [GD §3.1];
    the new stream (its A prefix not grown yet), or None when nothing changes (a stale ack,
    or one from elsewhere, rejected)."""
    ctx = st.ctx
    p = msg.pubend
    c = downstream_cell(ctx, sender, p, "ack", step)
    if c is None:
        return None
    s = stream(st, p)
    o = ostream(ctx, s, p, c)
    if msg.upto <= o.acked:
        return None
    return with_ostream(ctx, s, p, c, o.ack(msg.upto))
