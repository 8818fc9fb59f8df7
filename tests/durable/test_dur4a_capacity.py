"""The world's local-work capacity model (``deliver_us``, ``receive_us``; off by default): a
broker handles what it receives one message at a time, each delivery to a local client and
each event received costing service time [DUR §5.1]."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import networkx as nx
import pytest

from gapless.impl.effects import Deliver, Persist, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Publish, Receive
from gapless.impl.trace import TraceRecord, Wire
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.workload import PublishEvent, Subscription, Workload
from gapless.models.world import World

N = 10


class _Toy:
    """Broker ``a`` forwards each published message to ``b``; ``b`` hands it to its two
    clients. ``message_cost``: every forwarded message is one event."""

    status_period_us = 0
    min_repetition_us = 0

    def __init__(self, *, cost: bool = True) -> None:
        if cost:
            self.message_cost = lambda msg: (1, 0)

    def initial_states(self) -> dict[str, Any]:
        return {"a": "a", "b": "b"}

    def handle(self, state: Any, inp: Any, now: int) -> tuple[Any, tuple[Any, ...]]:
        if state == "a" and type(inp) is Publish:
            return state, (Send(to="b", msg=inp.attributes["i"]),)
        if state == "b" and type(inp) is Receive:
            return state, tuple(
                Deliver(subscriber=s, pubend="p", tick=inp.msg, payload=inp.msg)
                for s in ("s0", "s1")
            )
        return state, ()

    def crash(self, state: Any) -> Any:
        return state

    def publish_input(self, event: PublishEvent) -> Publish:
        return Publish(pubend=event.pubend, attributes=event.attributes, size=event.size)

    def wire(self, msg: Any) -> Wire:
        return Wire(kind="knowledge", pubend="p", data_ticks=(msg,))

    def logged(self, persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        return None

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        return None


def _world(
    graph_attrs: dict[str, int], *, faults: tuple[FaultEvent, ...] = (), cost: bool = True
) -> World:
    g = nx.Graph(pubends=(("p", "a"),), **graph_attrs)
    g.add_edge("a", "b")
    wl = Workload(
        publishes=tuple(
            PublishEvent(at_us=0, pubend="p", index=i, attributes={"i": i}) for i in range(N)
        ),
        subscriptions=tuple(Subscription(name=s, shb="b", filter="true") for s in ("s0", "s1")),
    )
    w = World(
        graph=g,
        workload=wl,
        schedule=FaultSchedule(seed=0, events=faults),
        seed=0,
        binding=_Toy(cost=cost),  # type: ignore[arg-type]
        record=True,
    )
    w.run(duration_us=1_000_000, drain_us=1_000_000)
    return w


def _deliveries(w: World) -> list[TraceRecord]:
    return [r for r in w.records if r.kind == "deliver"]


def test_off_by_default_zero_knobs_change_nothing() -> None:
    plain = _world({})
    zero = _world({"deliver_us": 0, "receive_us": 0})
    assert zero.digest.hexdigest() == plain.digest.hexdigest()
    assert plain.busy == {}
    assert plain.inbox == {}
    times = [r.time for r in _deliveries(plain)]
    assert len(times) == 2 * N
    assert max(times) - min(times) <= 1_000  # all within the link's jitter: no queueing


@pytest.mark.parametrize(("deliver_us", "receive_us"), [(1_000, 0), (1_000, 500), (0, 700)])
def test_one_message_at_a_time_each_costing_its_deliveries_and_events(
    deliver_us: int, receive_us: int
) -> None:
    w = _world({"deliver_us": deliver_us, "receive_us": receive_us})
    per_message = 2 * deliver_us + receive_us
    firsts = [r.time for r in _deliveries(w) if r.detail.subscriber == "s0"]
    assert [r.detail.tick for r in _deliveries(w) if r.detail.subscriber == "s0"] == list(range(N))
    gaps = [b - a for a, b in itertools.pairwise(firsts)]
    # the messages arrive within ~1 ms of each other; each waits for the one before it
    assert min(gaps) >= per_message
    assert max(gaps) == per_message
    assert w.busy["b"] == firsts[0] + N * per_message
    assert not w.inbox["b"]  # drained


def test_a_busy_broker_sends_once_it_is_free() -> None:
    w = _world({"deliver_us": 3_000})
    sends = [r for r in w.records if r.kind == "send"]
    assert len(sends) == N  # a delivers nothing: its sends are not delayed
    first = min(r.time for r in _deliveries(w))
    assert first <= 1_400  # the first message is handled on arrival
    # b is busy 6 ms per message (two deliveries): the last waited for nine before it
    assert max(r.time for r in _deliveries(w)) >= first + 9 * 6_000


def test_a_crash_loses_the_inbox_and_says_so() -> None:
    crash = FaultEvent(kind="crash", at_us=10_000, duration_us=5_000, target="b", stream=0)
    w = _world({"deliver_us": 3_000}, faults=(crash,))
    inbox = [r for r in w.records if r.kind == "drop" and r.detail.reason == "inbox"]
    delivered = {r.detail.tick for r in _deliveries(w)}
    assert inbox, "messages queued at the crash are dropped"
    assert delivered.isdisjoint({r.detail.msg for r in inbox})
    assert len(delivered) + len(inbox) == N


def test_receive_cost_needs_the_binding_seam() -> None:
    with pytest.raises(ProtocolMisuse, match="message_cost"):
        _world({"receive_us": 100}, cost=False)
    assert _world({"deliver_us": 100}, cost=False).busy["b"] > 0  # deliveries need no seam


class _Echo(_Toy):
    """As :class:`_Toy`, and ``b`` also answers each message to ``a``, which hands the answer
    to its client ``back`` (so the answer's arrival is on record)."""

    def handle(self, state: Any, inp: Any, now: int) -> tuple[Any, tuple[Any, ...]]:
        if state == "a" and type(inp) is Receive:
            return state, (Deliver(subscriber="back", pubend="p", tick=inp.msg, payload=0),)
        state, effects = super().handle(state, inp, now)
        if state == "b" and type(inp) is Receive:
            effects = (*effects, Send(to="a", msg=inp.msg))
        return state, effects


@pytest.mark.parametrize("cost", [True, False])
def test_an_answer_leaves_once_its_deliveries_are_done(cost: bool) -> None:
    """With local work on, a send caused by handling a message leaves when the broker is free,
    whether or not the binding has ``message_cost`` (the world's fast send path must not skip
    the wait when only ``deliver_us`` is set)."""
    g = nx.Graph(pubends=(("p", "a"),), deliver_us=3_000)
    g.add_edge("a", "b")
    wl = Workload(
        publishes=tuple(
            PublishEvent(at_us=0, pubend="p", index=i, attributes={"i": i}) for i in range(N)
        ),
        subscriptions=(
            *(Subscription(name=s, shb="b", filter="true") for s in ("s0", "s1")),
            Subscription(name="back", shb="a", filter="true"),
        ),
    )
    w = World(
        graph=g,
        workload=wl,
        schedule=FaultSchedule(seed=0, events=()),
        seed=0,
        binding=_Echo(cost=cost),  # type: ignore[arg-type]
        record=True,
    )
    w.run(duration_us=1_000_000, drain_us=1_000_000)
    handled = {r.detail.tick: r.time for r in _deliveries(w) if r.detail.subscriber == "s0"}
    answers = [r for r in _deliveries(w) if r.detail.subscriber == "back"]
    assert len(answers) == N
    for r in answers:
        assert r.time >= handled[r.detail.tick] + 2 * 3_000, (r, handled[r.detail.tick])
