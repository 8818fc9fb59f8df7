"""Plumbing shared by the durable SHB state machines (``test_dur_shb.py``: one SHB;
``test_durshb2_move.py``: two SHBs under a node): a scripted pubend, the online judge, and
carrying out an SHB's effects.

* :class:`ScriptedPubend` — one pubend name: its release state (``PubendRelease`` of
  ``impl/durable/release.py``) and its events; it publishes, announces a silent tick, answers
  a nack (L for released ticks, the data, silence up to T(p)) and takes a report through the
  release rule [DUR §3];
* :class:`Judge` — a ``Checker`` with the durable plug-ins over records numbered in order;
  the first violation raises ``AssertionError`` with its explanation;
* :func:`carry_out` — one SHB's effects: ``dur_*`` records to the judge (and each delivered
  message to a callback), sends to a callback, storage effects to its
  :class:`~gapless.models.durable_store.MemoryStore` (which refuses a wrong order),
  ``Rejected`` returned;
* :func:`expected_events` — what exactly-once promises a connection: the matching events
  after the CT it presented, minus the ranges its gaps announced;
* :func:`small_shb_crash` — ``dur-shb-crash`` cut to a few seconds (Figure 7's shape on a
  budget: ``test_dur4a_figure7.py``, ``test_dur7_fold.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from gapless.impl.durable import release as rl
from gapless.impl.durable.messages import EventMessage, GapMessage
from gapless.impl.durable.records import DurEvent, DurRelease
from gapless.impl.durable.shb import Emit, Lost
from gapless.impl.durable.storage import (
    DropSubscriber,
    Flush,
    PfsAppend,
    PfsChop,
    PfsSync,
    PutCheckpoint,
    PutLatestDelivered,
    PutMove,
    PutPfsMeta,
    PutReleased,
)
from gapless.impl.effects import Rejected, Send
from gapless.impl.filters import parse_filter
from gapless.impl.gd.messages import Data, Knowledge
from gapless.impl.trace import TraceRecord
from gapless.invariants.checker import Checker
from gapless.invariants.durable import PLUGINS
from gapless.invariants.plugin import CheckContext
from gapless.models.durable_store import MemoryStore
from gapless.models.faults import FaultEvent
from gapless.models.protocols import scenario
from gapless.models.registry import Scenario

__all__ = [
    "STORAGE",
    "Judge",
    "ScriptedPubend",
    "carry_out",
    "context",
    "expected_events",
]

STORAGE = (
    DropSubscriber,
    Flush,
    PfsAppend,
    PfsChop,
    PfsSync,
    PutCheckpoint,
    PutLatestDelivered,
    PutMove,
    PutPfsMeta,
    PutReleased,
)
"""Every storage effect an SHB emits (``impl/durable/storage.py``)."""


def context(
    pubends: Iterable[str],
    roles: Mapping[str, str],
    *,
    cell_of: Mapping[str, str] | None = None,
    cell_tree: tuple[tuple[str, str], ...] = (),
) -> CheckContext:
    """The judge's context: every pubend at ``phb``, the nodes' ``roles``, filters parsed by
    the kit's filter language."""
    return CheckContext(
        subscriptions=(),
        cell_of=dict(cell_of or {}),
        cell_tree=cell_tree,
        pubend_host=dict.fromkeys(pubends, "phb"),
        merged=(),
        roles=dict(roles),
        min_repetition_us=0,
        matches=lambda flt, attributes: parse_filter(flt).matches(attributes),
        logged=lambda _p: None,
        payload_attributes=lambda _x: None,
    )


class Judge:
    """The durable invariants online over records numbered in order (module doc)."""

    def __init__(self, ctx: CheckContext) -> None:
        self.checker = Checker(ctx, plugins=PLUGINS)
        self.seq = 0

    def record(self, node: str, kind: str, detail: object) -> None:
        r = TraceRecord(seq=self.seq, time=self.seq, node=node, kind=kind, detail=detail)
        self.seq += 1
        self.checker.observe(r)
        v = self.checker.violation
        if v is not None:
            raise AssertionError(v.explain())

    def finish(self) -> None:
        """Liveness after the drain: every matching event reached every subscriber."""
        if self.checker.violation is not None:
            return
        end = TraceRecord(seq=self.seq, time=self.seq, node="-", kind="fault", detail="end")
        v = self.checker.finish(end)
        assert v is None, v.explain()


class ScriptedPubend:
    """One pubend name: its release state and its events (module doc)."""

    def __init__(self, name: str, max_retain: int | None = None) -> None:
        self.rel = rl.PubendRelease(pubend=name, max_retain=max_retain)
        self.events: dict[int, Data] = {}

    @property
    def name(self) -> str:
        return self.rel.pubend

    def publish(self, judge: Judge, k: str, skip: int) -> Knowledge:
        """An event with attribute ``k`` after ``skip`` silent ticks: recorded (``dur_event``)
        and returned as the knowledge message that announces it."""
        tick = self.rel.clock + 1 + skip
        data = Data(pubend=self.name, tick=tick, attributes={"k": k})
        silence = ((self.rel.clock + 1, tick - 1),) if skip else ()
        self.rel = rl.pubend_publish(self.rel, tick, data)
        self.events[tick] = data
        judge.record("phb", "dur_event", DurEvent(pubend=self.name, tick=tick, attributes={"k": k}))
        return Knowledge(pubend=self.name, silence=silence, data=data)

    def heartbeat(self) -> Knowledge:
        """T(p) advances by a silent tick, announced downstream."""
        t = self.rel.clock + 1
        self.rel = rl.pubend_clock(self.rel, t)
        return Knowledge(pubend=self.name, silence=((t, t),))

    def answer(self, start: int, end: int) -> list[Any]:
        """A nack's answer: L for released ticks, data, silence up to T(p)."""
        out: list[Any] = []
        rt, name = self.rel.released_through, self.name
        if start <= rt:
            out.append(Lost(pubend=name, start=start, end=min(end, rt)))
            start = rt + 1
        silence: list[tuple[int, int]] = []
        for t in range(start, min(end, self.rel.clock) + 1):
            if t in self.events:
                out.append(Knowledge(pubend=name, data=self.events[t], retransmission=True))
            elif silence and silence[-1][1] + 1 == t:
                silence[-1] = (silence[-1][0], t)
            else:
                silence.append((t, t))
        if silence:
            out.append(Knowledge(pubend=name, silence=tuple(silence), retransmission=True))
        return out

    def hear(self, judge: Judge, report: rl.ReleaseReport, children: tuple[str, ...]) -> None:
        """The pubend takes a report from its child and releases what the rule allows,
        recording the ``dur_release`` when L moves [DUR §3]."""
        self.rel, rej = rl.pubend_on_report(self.rel, report, children)
        assert not rej, rej
        new = rl.pubend_release_step(self.rel)
        if new.released_through != self.rel.released_through:
            d = DurRelease(
                pubend=self.name,
                through=new.released_through,
                tr=new.tr,
                td=new.td,
                clock=new.clock,
                max_retain=new.max_retain,
            )
            judge.record("phb", "dur_release", d)
        self.rel = new


def carry_out(
    node: str,
    effects: Iterable[Any],
    *,
    judge: Judge,
    store: MemoryStore,
    message: Callable[[str, Any], None],
    send: Callable[[Send], None],
    emitted: Callable[[Emit], None] | None = None,
) -> list[Rejected]:
    """Carry out SHB ``node``'s effects in order (module doc); returns what it rejected.
    ``emitted`` sees every record after the judge."""
    rejected: list[Rejected] = []
    for e in effects:
        if isinstance(e, Emit):
            judge.record(node, e.kind, e.detail)
            if emitted is not None:
                emitted(e)
            if e.kind == "dur_message":
                message(e.detail.subscriber, e.detail.message)
        elif isinstance(e, Send):
            send(e)
        elif isinstance(e, STORAGE):
            store.apply([e])
        else:
            assert isinstance(e, Rejected), e
            rejected.append(e)
    return rejected


def expected_events(
    events: Mapping[int, Data], presented: int, flt: str, log: Iterable[Any], pubend: str
) -> tuple[list[int], list[int]]:
    """``(got, want)`` for one connection's ``log`` of ``pubend``: the event ticks it was
    delivered, and the matching events after ``presented`` outside its gaps' ranges."""
    msgs = [m for m in log if m.pubend == pubend]
    gaps = [(m.t0, m.t) for m in msgs if isinstance(m, GapMessage)]
    match = parse_filter(flt)
    want = [
        t
        for t, d in sorted(events.items())
        if t > presented and match.matches(d.attributes) and not any(a < t <= b for a, b in gaps)
    ]
    got = [m.t for m in msgs if isinstance(m, EventMessage)]
    return got, want


def small_shb_crash(
    *,
    subscribers: int = 2,
    rate: float = 20.0,
    crash_s: int = 2,
    down_s: int = 2,
    back_after_restart_s: int = 1,
    duration_s: int = 8,
    drain_s: int = 2,
) -> Scenario:
    """``dur-shb-crash`` made small [DUR §5.1, Figure 7]. By default 2 subscribers, 20 events/s
    per pubend, 8 s, the SHB down from 2 s to 4 s and its subscribers away from just before the
    crash until 1 s after the restart; every number can be given."""
    sc = scenario("dur-shb-crash")
    s = 1_000_000
    spec = attrs.evolve(
        sc.spec,
        workload=attrs.evolve(
            sc.spec.workload, subscribers_per_shb=subscribers, rate_per_pubend=rate
        ),
        duration_us=duration_s * s,
        drain_us=drain_s * s,
    )
    crash = FaultEvent(
        kind="crash", at_us=crash_s * s, duration_us=down_s * s, target="shb1", stream=0
    )
    away = tuple(
        FaultEvent(
            kind="disconnect",
            at_us=crash_s * s - 1,
            duration_us=(down_s + back_after_restart_s) * s + 1,
            target=f"shb1.u{k}",
            stream=1 + k,
        )
        for k in range(subscribers)
    )
    return attrs.evolve(sc, spec=spec, events=(*away, crash))
