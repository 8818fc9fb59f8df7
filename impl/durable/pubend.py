"""The durable pubend at its publisher hosting broker (PHB) as a pure role [DUR §1, §3].

Theory of operation
-------------------
A PHB hosts one or more pubends. For each it owns the proved release state
(:class:`~gapless.impl.durable.release.PubendRelease`: ``Tr(p)``, ``Td(p)``, ``T(p)``,
``maxRetain(p)`` and the knowledge stream, whose prefix ``[0, released_through]`` is L) and its
own view of its downstream children (:class:`~gapless.impl.durable.release.NodeRelease`), and
composes them, copying neither:

* **publish** [DUR §1 item 1, §2]: an event is logged once, here, at tick ``max(now, T(p) +
  1)`` (ticks are the virtual clock in µs, as GD's [GD §2.2]); it goes downstream to every
  child as GD :class:`~gapless.impl.gd.messages.Knowledge` (the silence since the last
  announcement, then the data tick), and a ``dur_event`` record is emitted;
* **heartbeat** (the role's timer): ``T(p)`` advances to ``now``; the silence up to it goes
  downstream (so that SHBs' doubt horizons move while nothing is published), and the L step
  runs (early release depends on ``T(p)`` [DUR §3, "PHB Controlled Policy"]);
* **release reports** [DUR §3]: a child's ``(released, delivered)`` pair rises in the view;
  ``Tr(p)``/``Td(p)`` rise to the view's minima; the L step turns every tick the L rule allows
  into L (:func:`~gapless.impl.durable.release.pubend_release_step`) and emits ``dur_release``;
* **nacks** [DUR §4.1]: the pubend answers from its stream: :class:`Lost` for released ticks,
  one Knowledge per event (at most ``answer_window`` of them per nack) and the silence between,
  up to ``T(p)``.

Stable storage: the event log and the release state survive a crash (they are the pubend's
log [GD §2.2]); the view of the children is soft and restarts empty (reports are merged by
maximum, so a child's next report restores it, and ``Tr``/``Td`` never move down).

The policy (:class:`PubendPolicy`) is the paper's by default; a planted bug is another value.
Network input never raises (a :class:`~gapless.impl.effects.Rejected` effect); an ignored
input returns the same state and ``()``.
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.durable.records import DurEvent, DurRelease
from gapless.impl.durable.release import (
    NONE,
    NodeRelease,
    PubendRelease,
    ReleaseReport,
    l_bound,
    node_on_report,
    pubend_clock,
    pubend_on_report,
    pubend_publish,
    pubend_release_step,
)
from gapless.impl.durable.shb_inputs import Emit, Lost
from gapless.impl.effects import Rejected, Send, SetTimer
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd.messages import Data, Knowledge, Nack
from gapless.impl.inputs import Publish

__all__ = [
    "HEARTBEAT",
    "DurPubendConfig",
    "DurPubendState",
    "PubendPolicy",
    "pubend_crash",
    "pubend_heartbeat",
    "pubend_on_nack",
    "pubend_on_publish",
    "pubend_on_release_report",
    "pubend_restart",
    "pubend_start",
]

HEARTBEAT: Final = "dur-heartbeat"
"""The timer key of the pubend's heartbeat."""

Effects = tuple[Any, ...]


@final
@attrs.frozen(kw_only=True)
class PubendPolicy:
    """The pubend's rules; the default is the paper's. ``l_slack`` ticks are added to the L
    rule's bound at each L step (0: the paper's rule [DUR §3]; more: a planted bug that puts
    L above what the rule allows, above ``Td(p)`` when ``Tr(p) = Td(p)``)."""

    l_slack: int = 0

    def l_through(self, state: PubendRelease) -> int:
        """The last tick the L step may make L now (never past ``T(p)``)."""
        bound = l_bound(state.tr, state.td, state.clock, state.max_retain)
        if self.l_slack and bound > NONE:
            bound += self.l_slack
        return min(bound, state.clock)


@final
@attrs.frozen(kw_only=True)
class DurPubendConfig:
    """``node`` (the PHB), the ``pubends`` it hosts, its downstream ``children``, the
    ``max_retain`` of its pubends in ticks (None: infinite, early release off [DUR §3]), the
    ``heartbeat`` period (µs), at most ``answer_window`` events per nack answer, the
    ``policy``."""

    node: str
    pubends: tuple[str, ...]
    children: tuple[str, ...]
    max_retain: int | None = None
    heartbeat: int = 100_000
    answer_window: int = 64
    policy: PubendPolicy = PubendPolicy()

    def __attrs_post_init__(self) -> None:
        if not self.pubends or not self.children:
            raise ProtocolMisuse(
                f"DurPubendConfig {self.node!r}: pubends {self.pubends!r}, children "
                f"{self.children!r}; allowed: at least one of each"
            )
        if self.heartbeat < 1 or self.answer_window < 1:
            raise ProtocolMisuse(
                f"DurPubendConfig {self.node!r}: heartbeat {self.heartbeat}, answer_window "
                f"{self.answer_window}; allowed: ints >= 1"
            )
        if self.max_retain is not None and self.max_retain < 0:
            raise ProtocolMisuse(
                f"DurPubendConfig {self.node!r}: max_retain {self.max_retain}; allowed: None "
                "or an int >= 0"
            )


@final
@attrs.frozen(kw_only=True)
class DurPubendState:
    """The PHB (module doc): per pubend its ``release`` state, its ``view`` of the children
    and ``sent``, the highest tick announced downstream."""

    config: DurPubendConfig
    release: PMap[str, PubendRelease]
    view: PMap[str, NodeRelease]
    sent: PMap[str, int]


def _view(config: DurPubendConfig, p: str) -> NodeRelease:
    return NodeRelease.over(config.node, p, config.children)


def pubend_start(config: DurPubendConfig) -> DurPubendState:
    """A fresh PHB: nothing published, nothing released."""
    return DurPubendState(
        config=config,
        release=pmap(
            {p: PubendRelease(pubend=p, max_retain=config.max_retain) for p in config.pubends}
        ),
        view=pmap({p: _view(config, p) for p in config.pubends}),
        sent=pmap(dict.fromkeys(config.pubends, NONE)),
    )


def pubend_crash(state: DurPubendState) -> DurPubendState:
    """A crash: the log and the release state are stable; the view of the children is soft."""
    fresh = pmap({p: _view(state.config, p) for p in state.config.pubends})
    return attrs.evolve(state, view=fresh)


def pubend_restart(state: DurPubendState, now: int) -> tuple[DurPubendState, Effects]:
    """Boot or restart: arm the heartbeat."""
    return state, (SetTimer(key=HEARTBEAT, at=now + state.config.heartbeat),)


def _down(state: DurPubendState, msg: Any) -> list[Any]:
    return [Send(to=c, msg=msg) for c in state.config.children]


def _release(state: DurPubendState, p: str) -> tuple[DurPubendState, Effects]:
    """The L step of pubend ``p`` [DUR §3], under the policy; ``dur_release`` when it moved."""
    rel = state.release[p]
    through = state.config.policy.l_through(rel)
    if through <= rel.released_through:
        return state, ()
    if state.config.policy.l_slack:  # the planted bug: past the rule, by hand
        new = attrs.evolve(
            rel,
            released_through=through,
            knowledge=rel.knowledge.release(rel.released_through + 1, through),
        )
    else:
        new = pubend_release_step(rel)
    detail = DurRelease(
        pubend=p,
        through=new.released_through,
        tr=new.tr,
        td=new.td,
        clock=new.clock,
        max_retain=new.max_retain,
    )
    state = attrs.evolve(state, release=state.release.set(p, new))
    return state, (Emit(kind="dur_release", detail=detail),)


def pubend_on_publish(
    state: DurPubendState, inp: Publish, now: int
) -> tuple[DurPubendState, Effects]:
    """Log the event at its tick and send it downstream (module doc)."""
    p = inp.pubend
    rel = state.release.get(p)
    if rel is None:
        return state, (
            Rejected(reason=f"publish at {state.config.node!r}: unknown pubend", input=inp),
        )
    tick = max(now, rel.clock + 1)
    data = Data(pubend=p, tick=tick, attributes=inp.attributes, size=inp.size, published_at=now)
    rel = pubend_publish(rel, tick, data)
    sent = state.sent[p]
    silence = ((sent + 1, tick - 1),) if tick - 1 > sent else ()
    state = attrs.evolve(state, release=state.release.set(p, rel), sent=state.sent.set(p, tick))
    effects: list[Any] = [
        Emit(kind="dur_event", detail=DurEvent(pubend=p, tick=tick, attributes=inp.attributes))
    ]
    effects.extend(_down(state, Knowledge(pubend=p, silence=silence, data=data)))
    return state, tuple(effects)


def pubend_heartbeat(state: DurPubendState, now: int) -> tuple[DurPubendState, Effects]:
    """``T(p)`` advances to ``now``; the silence since the last announcement goes downstream;
    the L step runs; the timer is re-armed."""
    effects: list[Any] = []
    for p in state.config.pubends:
        rel = pubend_clock(state.release[p], now)
        sent = state.sent[p]
        state = attrs.evolve(state, release=state.release.set(p, rel))
        if rel.clock > sent:
            effects.extend(_down(state, Knowledge(pubend=p, silence=((sent + 1, rel.clock),))))
            state = attrs.evolve(state, sent=state.sent.set(p, rel.clock))
        state, fx = _release(state, p)
        effects.extend(fx)
    effects.append(SetTimer(key=HEARTBEAT, at=now + state.config.heartbeat))
    return state, tuple(effects)


def pubend_on_release_report(
    state: DurPubendState, rep: ReleaseReport, now: int
) -> tuple[DurPubendState, Effects]:
    """A child's report [DUR §3]: the view rises, ``Tr``/``Td`` rise to its minima, the L
    step runs."""
    p = getattr(rep, "pubend", None)
    view = state.view.get(p) if isinstance(p, str) else None
    if view is None:
        why = f"release report at {state.config.node!r}: unknown pubend {p!r}"
        return state, (Rejected(reason=why, input=rep),)
    view2, rej = node_on_report(view, rep)
    if rej or view2 is view:
        return state, rej
    assert isinstance(p, str)
    rel, rej = pubend_on_report(state.release[p], view2.report(), (view2.node,))
    state = attrs.evolve(state, view=state.view.set(p, view2), release=state.release.set(p, rel))
    state, fx = _release(state, p)
    return state, (*rej, *fx)


def _answer(state: DurPubendState, p: str, start: int, end: int) -> list[Any]:
    """A nack's answer from the stream (module doc)."""
    rel = state.release[p]
    out: list[Any] = []
    if start <= rel.released_through:
        out.append(Lost(pubend=p, start=start, end=min(end, rel.released_through)))
        start = rel.released_through + 1
    end = min(end, rel.clock)
    if start > end:
        return out
    silence: list[tuple[int, int]] = []
    at = start
    for n, (first, _last, payload) in enumerate(rel.knowledge.data(start, end)):
        if n == state.config.answer_window:
            end = first - 1
            break
        if first > at:
            silence.append((at, first - 1))
        out.append(Knowledge(pubend=p, data=payload, retransmission=True))
        at = first + 1
    if at <= end:
        silence.append((at, end))
    if silence:
        out.append(Knowledge(pubend=p, silence=tuple(silence), retransmission=True))
    return out


def pubend_on_nack(
    state: DurPubendState, nack: Nack, sender: str, now: int
) -> tuple[DurPubendState, Effects]:
    """Answer a nack to ``sender`` from the stream: L, data, silence (module doc)."""
    p = nack.pubend
    if p not in state.release or nack.start < 0 or nack.end < nack.start:
        why = f"nack at {state.config.node!r}: unknown pubend or malformed range"
        return state, (Rejected(reason=why, input=nack),)
    return state, tuple(Send(to=sender, msg=m) for m in _answer(state, p, nack.start, nack.end))
