"""Reconnect-anywhere and leaving at the durable SHB [DUR §1 item 5, §3], pure handlers over
:class:`~gapless.impl.durable.shb_core.ShbState` (re-exported by
:mod:`gapless.impl.durable.shb`).

Theory of operation
-------------------
The paper says only that a subscriber reconnecting to another SHB recovers by refiltering
events retrieved from the PHB or intermediate caches. ``spec/durable.md`` ("Reconnect-anywhere")
designs the release side, proved step by step in ``spec/durable_proofs.py``
(``release_move_register``, ``release_activate``, ``release_move_unregister``); here is the
SHB side of it:

1. :func:`on_move_in` — the new SHB registers the subscriber as a *pending* record at the CT it
   presents (:func:`~gapless.impl.durable.release.shb_register_moved`; pending records do not
   count in ``released(p)`` and have no ``released(s, p)`` row), gives it a PFS number, and puts
   it in catchup for every pubend from that CT. The move itself is written (:class:`PutMove`:
   name, filter, previous SHB, generation, the CT presented, ``refilter_upto``) and flushed,
   so that a crash before activation recovers the record still pending
   (:func:`~gapless.impl.durable.shb.shb_recover`'s ``pending``). The PFS here names it in no
   record written before, so its catchup streams *refilter* every tick up to the
   ``latestDelivered(p)`` of the registration (``Subscription.refilter_upto``): they nack them
   upstream and filter the answers, as for chopped ticks. From then on the constream filters
   it like any subscriber.
2. The old SHB keeps its record, which still holds ``Tr(p)`` at or below what the subscriber
   acknowledged there.
3. On the timer, :func:`~gapless.impl.durable.release.shb_activate` (inside the report step)
   activates the record once its ``released(s, p)`` (raised by acks here) is at or above what
   this SHB already reported; :func:`activations` writes it to the tables and flushes.
4. Once it is active for every pubend, the new SHB sends :class:`Unregister` to the old one
   (again on every timer until :class:`Unregistered` confirms); the old SHB drops the record
   (:func:`drop`, the proved ``leave`` step) and answers. Messages may be late: the subscriber
   numbers its moves (``MoveIn.generation``), each record remembers the move that made it,
   and a request from a move no later than the record's own drops nothing (the subscriber has
   moved back since: that record is the newer one).

So at every moment an active record at or below the subscriber's acknowledged CT holds
``Tr(p)`` down.

**In ack mode SHB** [DUR §5.2] the subscriber has no CT to present: it is in the old SHB's
database. Step 1 is then preceded by a fetch (``spec/durable.md``, "Moves in the second
acknowledgement mode"): :func:`on_move_in` with no CT keeps the move in ``fetching`` and sends
:class:`CheckpointQuery` to the old SHB (again on every timer, :func:`fetch_retries`, until it
is answered). The old SHB answers (:func:`on_checkpoint_query`) with its committed CT — its
record's ``released(s, p)``, which is the CT it keeps — only while the subscriber is not
connected there (no ack can raise it after the answer) and its record there is active (a
pending record's acks are not committed); otherwise it stays silent and is asked again.
:func:`on_checkpoint_answer` then does step 1 at that CT (or keeps it while the CT lies beyond
latestDelivered here, retrying on the timer). The registered CT is the old record's
``released(s, p)``, at or below what the subscriber acknowledged: the proved
``release_move_fetch`` step.

:func:`drop` is also what :func:`~gapless.impl.durable.shb.on_unsubscribe` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from pyrsistent import pmap

from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.records import DurConnect, DurDisconnect
from gapless.impl.durable.release import AckMode, shb_leave, shb_register_moved
from gapless.impl.durable.shb_core import (
    NEVER,
    Effects,
    Session,
    ShbState,
    Subscription,
    reject,
    release_moved,
    step_catchup,
)
from gapless.impl.durable.shb_inputs import (
    CheckpointAnswer,
    CheckpointQuery,
    Emit,
    MoveIn,
    Unregister,
    Unregistered,
)
from gapless.impl.durable.storage import (
    DropSubscriber,
    Flush,
    PutCheckpoint,
    PutMove,
    PutReleased,
)
from gapless.impl.effects import Send
from gapless.impl.filters import FilterSyntaxError, parse_filter

__all__ = [
    "activations",
    "drop",
    "drop_fetching",
    "fetch_retries",
    "move_row",
    "on_checkpoint_answer",
    "on_checkpoint_query",
    "on_move_in",
    "on_unregister",
    "on_unregistered",
]


def drop(state: ShbState, name: str) -> tuple[ShbState, list[Any]]:
    """Remove hosted subscriber ``name``: its record from every pubend's release state (the
    proved ``leave`` step), its rows from the tables (:class:`DropSubscriber`, flushed), its
    filter (no new PFS record names it), its session (a ``dur_disconnect`` if connected);
    then chop what the risen ``released(p)`` allows."""
    sub = state.subs[name]
    views = state.views
    before = {p: v.released() for p, v in views.items()}
    for p, view in state.views.items():
        views = views.set(p, attrs.evolve(view, release=shb_leave(view.release, name)))
    effects: list[Any] = []
    if name in state.sessions:
        detail = DurDisconnect(subscriber=name, shb=state.config.shb)
        effects.append(Emit(kind="dur_disconnect", detail=detail))
    effects.extend((DropSubscriber(subscriber=sub.number), Flush()))
    state = attrs.evolve(
        state,
        subs=state.subs.remove(name),
        index=state.index.remove(name),
        sessions=state.sessions.discard(name),
        catching=state.catching.discard(name),
        moving=state.moving.discard(name),
        views=views,
    )
    for p in state.config.pubends:
        state, fx = release_moved(state, p, before[p])
        effects.extend(fx)
    return state, effects


def on_move_in(state: ShbState, inp: MoveIn, now: int) -> tuple[ShbState, Effects]:
    """Step 1 (module doc): register ``inp.subscriber`` pending at ``inp.ct``, in catchup
    from it, refiltering what the PFS here cannot know. A CT above ``latestDelivered(p)``
    is refused (the constream here has not reached it yet: the subscriber retries)."""
    name, shb = inp.subscriber, state.config.shb
    if name in state.subs:
        return state, reject(f"move to {shb!r}: {name!r} is already hosted here", inp)
    fetch = inp.ct is None and state.config.ack_mode is AckMode.SHB
    if not (fetch or isinstance(inp.ct, CheckpointToken)) or inp.previous == shb:
        why = "needs a checkpoint token (none only in ack mode SHB) and another SHB"
        return state, reject(f"move to {shb!r}: {why}", inp)
    try:
        flt = parse_filter(inp.filter)
    except FilterSyntaxError as err:
        return state, reject(f"move to {shb!r}: bad filter: {err}", inp)
    ct = inp.ct
    if ct is None:  # ack mode SHB: ask the previous SHB for the CT it keeps
        if state.fetching.get(name) == inp:
            return state, ()  # already asking
        state = attrs.evolve(state, fetching=state.fetching.set(name, inp))
        return state, (_query(state, inp),)
    start = {p: ct.at(p) for p in state.config.pubends}
    for p, t in start.items():
        if t > state.latest_delivered(p):
            why = f"CT {t} for {p} beyond latestDelivered {state.latest_delivered(p)}; retry"
            return state, reject(f"move to {shb!r}: {why}", inp)
    views = state.views
    for p, view in state.views.items():
        rel = shb_register_moved(view.release, name, start[p])
        views = views.set(p, attrs.evolve(view, release=rel))
    upto = pmap({p: state.latest_delivered(p) for p in state.config.pubends})
    sub = Subscription(
        name=name,
        number=state.next_number,
        filter=flt,
        refilter_upto=upto,
        previous=inp.previous,
        generation=inp.generation,
    )
    pubends = state.config.pubends
    sess = Session(
        connection=inp.connection,
        position=pmap(start),
        catchup=pmap(dict.fromkeys(pubends, NEVER)),
    )
    state = attrs.evolve(
        state,
        subs=state.subs.set(name, sub),
        index=state.index.add(name, flt),
        next_number=state.next_number + 1,
        sessions=state.sessions.set(name, sess),
        catching=state.catching.add(name),
        moving=state.moving.add(name),
        views=views,
    )
    ct = CheckpointToken.of(start)
    detail = DurConnect(subscriber=name, shb=shb, ct=ct, catchup=frozenset(pubends))
    effects: list[Any] = [Emit(kind="dur_connect", detail=detail), move_row(sub, start), Flush()]
    for p in pubends:
        state, fx = step_catchup(state, name, p)
        effects.extend(fx)
    return state, tuple(effects)


def move_row(sub: Subscription, start: Mapping[str, int]) -> PutMove:
    """The table row of moved subscriber ``sub`` (its pending record at ``start``)."""
    return PutMove(
        subscriber=sub.number,
        name=sub.name,
        filter=sub.filter.text,
        previous=sub.previous,
        generation=sub.generation,
        start=tuple(sorted(start.items())),
        refilter_upto=tuple(sorted(sub.refilter_upto.items())),
    )


def activations(before: ShbState, after: ShbState) -> tuple[list[Any], list[Any]]:
    """Steps 3 and 4 (module doc), after the timer's report step took ``before`` to
    ``after``: the table puts (then a flush) of the records it activated, and an
    :class:`Unregister` to the previous SHB of each moved subscriber active everywhere."""
    puts: list[Any] = []
    for p, view in after.views.items():
        for name in before.views[p].release.pending - view.release.pending:
            number, t = after.subs[name].number, view.release.records[name].released
            puts.append(PutReleased(subscriber=number, pubend=p, timestamp=t))
            if after.config.ack_mode is AckMode.SHB:
                puts.append(PutCheckpoint(subscriber=number, pubend=p, timestamp=t))
    if puts:
        puts.append(Flush())
    sends: list[Any] = []
    for name in sorted(after.moving):
        previous = after.subs[name].previous
        pending = any(name in v.release.pending for v in after.views.values())
        if previous is not None and not pending:
            gen = after.subs[name].generation
            msg = Unregister(subscriber=name, by=after.config.shb, generation=gen)
            sends.append(Send(to=previous, msg=msg))
    return puts, sends


def on_unregister(state: ShbState, msg: Unregister, now: int) -> tuple[ShbState, Effects]:
    """Step 4 at the old SHB: the subscriber's record is active at ``msg.by``; drop ours and
    confirm. A repeated request finds nothing to drop, and a late one from an earlier move
    (its ``generation`` not above that of our record: the subscriber has moved here since)
    drops nothing; both are confirmed again."""
    reply = Send(to=msg.by, msg=Unregistered(subscriber=msg.subscriber, shb=state.config.shb))
    sub = state.subs.get(msg.subscriber)
    if sub is None or sub.generation >= msg.generation:
        return state, (reply,)
    state, effects = drop(state, msg.subscriber)
    return state, (*effects, reply)


def on_unregistered(state: ShbState, msg: Unregistered, now: int) -> tuple[ShbState, Effects]:
    """The old SHB confirmed: stop asking it."""
    name = msg.subscriber if isinstance(msg, Unregistered) else None
    if name is None or name not in state.moving:
        return state, ()
    sub = attrs.evolve(state.subs[name], previous=None)
    state = attrs.evolve(state, moving=state.moving.remove(name), subs=state.subs.set(name, sub))
    # the row forgets the previous SHB (its start no longer matters: the record is active)
    row = move_row(sub, {})
    return state, (row, Flush())


# ------------------------------------------------------------------------------ ack mode SHB


def _query(state: ShbState, move: MoveIn) -> Send:
    msg = CheckpointQuery(
        subscriber=move.subscriber, by=state.config.shb, generation=move.generation
    )
    return Send(to=move.previous, msg=msg)


def on_checkpoint_query(
    state: ShbState, msg: CheckpointQuery, now: int
) -> tuple[ShbState, Effects]:
    """At the old SHB (module doc): answer with the CT kept of ``msg.subscriber`` — its
    committed ``released(s, p)`` — unless it is still connected here or its record is pending
    (then stay silent: asked again on the new SHB's timer), or the query is from an earlier
    move (the subscriber has moved here since). The state never changes."""
    shb, name = state.config.shb, msg.subscriber
    sub = state.subs.get(name)
    if sub is None or state.config.ack_mode is not AckMode.SHB:
        why = "not hosted here" if sub is None else "this SHB keeps no CT (ack mode subscriber)"
        return state, reject(f"checkpoint query at {shb!r}: {name!r} {why}", msg)
    if sub.generation >= msg.generation or name in state.sessions:
        return state, ()
    if any(name in v.release.pending for v in state.views.values()):
        return state, ()
    ct = CheckpointToken.of({p: v.release.records[name].released for p, v in state.views.items()})
    answer = CheckpointAnswer(subscriber=name, shb=shb, ct=ct, generation=msg.generation)
    return state, (Send(to=msg.by, msg=answer),)


def _register_fetched(state: ShbState, move: MoveIn, now: int) -> tuple[ShbState, Effects]:
    """Step 1 at the fetched CT; while it lies beyond latestDelivered here, keep it."""
    name = move.subscriber
    rest = attrs.evolve(state, fetching=state.fetching.remove(name))
    if name in state.subs:
        return rest, ()
    new, fx = on_move_in(rest, move, now)
    if new is rest:  # refused: the constream here has not reached the CT yet
        if state.fetching[name] == move:
            return state, ()
        return attrs.evolve(state, fetching=state.fetching.set(name, move)), ()
    return new, fx


def on_checkpoint_answer(
    state: ShbState, msg: CheckpointAnswer, now: int
) -> tuple[ShbState, Effects]:
    """At the new SHB: the CT the old SHB keeps arrived; register the move at it (module
    doc). An answer nobody here waits for (late, repeated, of another move) is ignored."""
    name = msg.subscriber if isinstance(msg, CheckpointAnswer) else None
    move = state.fetching.get(name) if name is not None else None
    if move is None or move.ct is not None or move.generation != msg.generation:
        return state, ()
    if not isinstance(msg.ct, CheckpointToken) or msg.shb != move.previous:
        return state, reject(f"checkpoint answer at {state.config.shb!r}: malformed", msg)
    return _register_fetched(state, attrs.evolve(move, ct=msg.ct), now)


def fetch_retries(state: ShbState, now: int) -> tuple[ShbState, Effects]:
    """On the timer: ask again for every CT not yet answered; try again to register every
    fetched one."""
    effects: list[Any] = []
    for name in sorted(state.fetching):
        move = state.fetching[name]
        if move.ct is None:
            effects.append(_query(state, move))
        else:
            state, fx = _register_fetched(state, move, now)
            effects.extend(fx)
    return state, tuple(effects)


def drop_fetching(state: ShbState, name: str) -> ShbState:
    """The subscriber disconnected while its CT was being fetched: the move is abandoned
    here (nothing was registered); it moves again when it reconnects."""
    return attrs.evolve(state, fetching=state.fetching.discard(name))
