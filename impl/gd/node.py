"""A GD broker as the world drives it: the dispatch table, one step, a crash [GD §2-4].

Theory of operation
-------------------
Every physical broker is one state value whose *type is its role*
(:mod:`gapless.impl.gd.state`): a pubend hosting broker (:mod:`gapless.impl.gd.pubend`,
[GD §2.2, §3.2, §4.2]), an intermediate broker (:mod:`gapless.impl.gd.broker`, [GD §3.1]), a
subscriber hosting broker (:mod:`gapless.impl.gd.subend`, [GD §2.3, §3.2, §4.1]), or one of
the best-effort roles (:mod:`gapless.impl.gd.best_effort`, [GD §4.1]). :func:`handle` feeds a
broker one input and returns the new state and the effects. Which rule runs is looked up,
as h11 keeps its transitions, in three tables:

* :data:`ON_INPUT` — ``(role, input type)`` -> handler ``(state, input, step) -> state``;
* :data:`ON_MESSAGE` — ``(role, message type)`` -> handler
  ``(state, sender, message, step) -> state``, for a ``Receive`` from a neighbour;
* :data:`ON_TIMER` — ``(role, timer kind)`` -> handler ``(state, args, step) -> state``, for a
  ``TimerFired`` whose key is ``("gd", epoch, kind, *args)``.

A missing key is an input the role does not accept. A network message or a world event
(timer, log completion, link change) then becomes a ``Rejected`` effect naming the role, the
input and what the role accepts — network input never raises; a caller's misuse (``Publish``
at a broker that hosts no pubend, ``Connect`` at a broker that is no SHB, an input that is not
an input) raises :class:`~gapless.impl.errors.ProtocolMisuse` saying the same. ``spec/gd.md``'s
map of rules to code is rendered from these tables (:mod:`gapless.impl.gd.rulemap`).

What a role may assume: inputs come from the world in virtual-time order, ``now`` never
decreases, every node gets ``Restart()`` once at boot (time 0) and after each crash, a crashed
node gets nothing until its ``Restart()`` (if it does, it ignores it). A timer armed before a
crash is ignored. What it never assumes: that links are reliable, ordered or up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd import best_effort, broker, istream, pubend, routing, subend
from gapless.impl.gd.messages import Ack, AckExpected, Knowledge, LinkStatus, Nack
from gapless.impl.gd.state import (
    ROLE_TYPES,
    BestEffortIB,
    BestEffortPHB,
    BestEffortSHB,
    IBState,
    NodeState,
    PHBState,
    SHBState,
)
from gapless.impl.gd.step import TIMER, Step, finish
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

__all__ = [
    "CALLER_INPUTS",
    "ON_INPUT",
    "ON_MESSAGE",
    "ON_TIMER",
    "TIMER_ARGS",
    "Transition",
    "accepts",
    "crash",
    "dispatch",
    "handle",
    "on_connect",
    "on_disconnect",
    "on_link_changed",
    "on_persisted",
    "on_publish",
    "on_receive",
    "on_restart",
    "on_timer_fired",
]

#: What a step returns: the new state (the same object when nothing changed) and the effects.
Transition = tuple[Any, tuple[Any, ...]]
InputHandler = Callable[[Any, Any, Step], Any]
MessageHandler = Callable[[Any, str, Any, Step], Any]
TimerHandler = Callable[[Any, tuple[Any, ...], Step], Any]

#: (role, input type) -> handler. ``Receive`` and ``TimerFired`` go through the two tables
#: below.
ON_INPUT: Final[Mapping[tuple[type, type], InputHandler]] = MappingProxyType(
    {
        (PHBState, Restart): pubend.on_restart,
        (PHBState, Publish): pubend.on_publish,
        (PHBState, Persisted): pubend.on_persisted,
        (PHBState, LinkChanged): istream.on_link_changed,
        (IBState, Restart): broker.on_restart,
        (IBState, LinkChanged): istream.on_link_changed,
        (SHBState, Restart): subend.on_restart,
        (SHBState, LinkChanged): istream.on_link_changed,
        (SHBState, Connect): subend.on_connect,
        (SHBState, Disconnect): subend.on_disconnect,
        (BestEffortPHB, Restart): best_effort.phb_on_restart,
        (BestEffortPHB, Publish): best_effort.phb_on_publish,
        (BestEffortPHB, LinkChanged): routing.on_link_changed,
        (BestEffortIB, Restart): best_effort.ib_on_restart,
        (BestEffortIB, LinkChanged): routing.on_link_changed,
        (BestEffortSHB, Restart): best_effort.shb_on_restart,
        (BestEffortSHB, LinkChanged): routing.on_link_changed,
        (BestEffortSHB, Connect): best_effort.shb_on_connect,
        (BestEffortSHB, Disconnect): best_effort.shb_on_disconnect,
    }
)

#: (role, message type) -> handler of a message received from a neighbour.
ON_MESSAGE: Final[Mapping[tuple[type, type], MessageHandler]] = MappingProxyType(
    {
        (PHBState, LinkStatus): routing.on_link_status,
        (PHBState, Nack): pubend.on_nack,
        (PHBState, Ack): pubend.on_ack,
        (IBState, LinkStatus): routing.on_link_status,
        (IBState, Knowledge): broker.on_knowledge,
        (IBState, Nack): broker.on_nack,
        (IBState, Ack): broker.on_ack,
        (IBState, AckExpected): broker.on_ack_expected,
        (SHBState, LinkStatus): routing.on_link_status,
        (SHBState, Knowledge): subend.on_knowledge,
        (SHBState, AckExpected): subend.on_ack_expected,
        (BestEffortPHB, LinkStatus): routing.on_link_status,
        (BestEffortIB, LinkStatus): routing.on_link_status,
        (BestEffortIB, Knowledge): best_effort.ib_on_knowledge,
        (BestEffortSHB, LinkStatus): routing.on_link_status,
        (BestEffortSHB, Knowledge): best_effort.shb_on_knowledge,
    }
)

#: (role, timer kind) -> handler of a timer of the node's current incarnation.
ON_TIMER: Final[Mapping[tuple[type, str], TimerHandler]] = MappingProxyType(
    {
        (PHBState, "status"): routing.on_status_timer,
        (PHBState, "silence"): pubend.on_silence_timer,
        (PHBState, "aet"): pubend.on_aet_timer,
        (IBState, "status"): routing.on_status_timer,
        (IBState, "forget"): broker.on_forget_timer,
        (IBState, "ack"): broker.on_ack_timer,
        (SHBState, "status"): subend.on_status_timer,
        (SHBState, "ack"): subend.on_ack_timer,
        (SHBState, "gct"): subend.on_gct_timer,
        (SHBState, "nrt"): subend.on_nrt_timer,
    }
)

#: timer kind -> how many arguments follow it in the key (the periodic timers and the node's
#: one ack timer have none, the per-pubend timers name the pubend).
TIMER_ARGS: Final[Mapping[str, int]] = MappingProxyType(
    {"status": 0, "silence": 0, "aet": 0, "forget": 1, "ack": 0, "gct": 1, "nrt": 1}
)

#: Inputs only a local caller gives (a client publishing, a subscriber connecting): one a
#: role does not accept is the caller's misuse and raises.
CALLER_INPUTS: Final = (Publish, Connect, Disconnect)
#: Every input type, in the order the rule map lists them.
INPUT_TYPES: Final = (
    Restart,
    Receive,
    TimerFired,
    Persisted,
    LinkChanged,
    Publish,
    Connect,
    Disconnect,
)
_KNOWN_MESSAGES: Final = (Knowledge, Ack, Nack, AckExpected)


def accepts(role: type) -> tuple[str, ...]:
    """What ``role`` accepts, for messages: input types, ``Receive(<message>)`` and
    ``TimerFired(<kind>)``, in table order."""
    got = [t.__name__ for (r, t) in ON_INPUT if r is role]
    got += [f"Receive({t.__name__})" for (r, t) in ON_MESSAGE if r is role]
    got += [f"TimerFired({k})" for (r, k) in ON_TIMER if r is role]
    return tuple(got)


def _role_of(state: Any, where: str) -> type:
    role = type(state)
    if role not in ROLE_TYPES:
        raise ProtocolMisuse(
            f"{where}: {state!r} is not a GD node state; allowed: "
            f"{', '.join(t.__name__ for t in ROLE_TYPES)}"
        )
    return role


def _refusal(state: NodeState, what: str) -> str:
    role = type(state)
    return (
        f"{role.TITLE} {state.name!r} ({role.ROLE}) does not accept {what}; "
        f"it accepts: {', '.join(accepts(role))}"
    )


def _misuse(state: NodeState, inp: Input) -> ProtocolMisuse:
    """A caller input at a role that does not take it (see :data:`CALLER_INPUTS`)."""
    if isinstance(inp, Publish):
        why = f"node {state.name!r} does not host pubend {inp.pubend!r}"
        allowed = "Publish at the PHB hosting the pubend"
    else:
        why = f"node {state.name!r} is not an SHB"
        allowed = "subscribers connect to an SHB"
    return ProtocolMisuse(
        f"handle: {why}: {_refusal(state, type(inp).__name__)}; allowed: {allowed}"
    )


def handle(state: NodeState, inp: Input, now: int) -> Transition:
    """One step of a broker: look ``inp`` up in the dispatch table of the broker's role and run
    its handler [GD §2-4]. ``Restart()`` boots a node that is down (once at time 0, then after
    each :func:`crash`); a node that is down ignores everything else. An input that changes
    nothing returns the same state object and ``()``."""
    role = _role_of(state, "handle")
    if not state.up and type(inp) is not Restart:
        return state, ()
    return dispatch(role, state, inp, now)


def dispatch(role: type, state: Any, inp: Any, now: int) -> Transition:
    """Run the handler of ``(role, type(inp))`` (see the module doc). A ``Restart`` of a
    node that is up and booted changes nothing."""
    t = type(inp)
    if t is Restart and state.up and state.epoch > 0:
        return state, ()
    step = Step(now=now, input=inp)
    if t is Receive:
        new = _receive(role, state, inp, step)
    elif t is TimerFired:
        new = _timer(role, state, inp, step)
    else:
        handler = ON_INPUT.get((role, t))
        if handler is None:
            if t in CALLER_INPUTS:
                raise _misuse(state, inp)
            if t not in INPUT_TYPES:
                raise ProtocolMisuse(
                    f"handle: node {state.name!r} got {inp!r}; allowed: "
                    f"{', '.join(i.__name__ for i in INPUT_TYPES)}"
                )
            step.reject(_refusal(state, t.__name__))
            new = state
        else:
            new = handler(state, inp, step)
    return finish(state, new, step, state.ctx.config.coverage)


def _receive(role: type, state: Any, inp: Receive, step: Step) -> Any:
    """A message from a neighbour [GD §3.1]: from a non-neighbour, not a GD message or of a
    pubend unknown here, it is rejected; else the ``(role, message type)`` handler runs."""
    msg = inp.msg
    sender = inp.sender
    ctx = state.ctx
    if sender not in ctx.neighbours:
        step.reject(f"message from {sender!r}, not a neighbour")
        return state
    t = type(msg)
    if t is not LinkStatus:
        p = getattr(msg, "pubend", None)
        if not isinstance(msg, _KNOWN_MESSAGES) or p not in ctx.pubends:
            step.reject(f"unexpected message {t.__name__} for {p!r}")
            return state
    handler = ON_MESSAGE.get((role, t))
    if handler is None:
        step.reject(_refusal(state, f"Receive({t.__name__}) from {sender!r}"))
        return state
    return handler(state, sender, msg, step)


def _timer(role: type, state: Any, inp: TimerFired, step: Step) -> Any:
    """A timer fired; one armed before a crash (another epoch) is ignored [GD §3.2]."""
    key = inp.key
    if not (isinstance(key, tuple) and len(key) >= 3 and key[0] == TIMER and key[1] == state.epoch):
        return state
    kind = key[2]
    handler = ON_TIMER.get((role, kind))
    if handler is None or TIMER_ARGS.get(kind) != len(key) - 3:
        step.reject(_refusal(state, f"TimerFired({kind!r}) with key {key!r}"))
        return state
    return handler(state, key[3:], step)


def crash(state: NodeState) -> NodeState:
    """The broker crashes [GD §2.1]: all soft state is lost, a pubend's stable log is kept.
    The node ignores every input until ``Restart()``."""
    role = _role_of(state, "crash")
    if isinstance(state, PHBState):
        return PHBState(ctx=state.ctx, up=False, epoch=state.epoch, log=state.log)
    return role(ctx=state.ctx, up=False, epoch=state.epoch)  # type: ignore[no-any-return]


def _entry(name: str, kind: type) -> Callable[[Any, Any, int], Transition]:
    def entry(state: Any, inp: Any, now: int) -> Transition:
        if type(inp) is not kind:
            raise ProtocolMisuse(f"{name}: {inp!r} is not a {kind.__name__}")
        return dispatch(_role_of(state, name), state, inp, now)

    entry.__name__ = entry.__qualname__ = name
    entry.__doc__ = (
        f"Run ``{kind.__name__}`` through the dispatch table of the broker's role (as "
        f":func:`handle` does, without the up/down check) [GD §2-4]."
    )
    return entry


on_receive = _entry("on_receive", Receive)
on_timer_fired = _entry("on_timer_fired", TimerFired)
on_persisted = _entry("on_persisted", Persisted)
on_link_changed = _entry("on_link_changed", LinkChanged)
on_publish = _entry("on_publish", Publish)
on_connect = _entry("on_connect", Connect)
on_disconnect = _entry("on_disconnect", Disconnect)
on_restart = _entry("on_restart", Restart)
