"""A lost ``Unreplicate`` is made up [GES "Stable storages"]: every tick a cluster storage
tells each system storage which replicas it still holds (``Held``); the system storage
answers ``Unreplicate`` again for each one that is due (the event was released, or every
client it was destined to confirmed it and the unit holds it)."""

from __future__ import annotations

from functools import cache

import attrs
from _runs import fault, run
from pyrsistent import pmap

from gapless.impl.ges import PAPER_POLICY, GESConfig, handle, initial_state
from gapless.impl.ges.messages import Held, Replicate, Routed, Unreplicate
from gapless.impl.ges.node import Release
from gapless.impl.inputs import Receive, TimerFired
from gapless.models.ges_binding import network
from gapless.models.ges_topology import ges_small
from gapless.models.runspec import RunOutcome

NET = network(ges_small(), "cluster")
UNIT, SYSTEM = "n1", "n2"  # the cluster storage of (0, 0) and its system storage


def _bodies(effects: tuple[object, ...], kind: type) -> list[object]:
    out = []
    for e in effects:
        msg = getattr(e, "msg", None)
        if type(msg) is Routed and type(msg.body) is kind:
            out.append(msg.body)
    return out


def test_a_cluster_storage_reports_its_replicas_every_tick() -> None:
    assert UNIT in NET.fine_storages
    s = initial_state(UNIT, NET, GESConfig(), PAPER_POLICY)
    assert _bodies(handle(s, TimerFired(key=("ges", "tick")), 0)[1], Held) == []
    rep = Replicate(storage=UNIT, source=SYSTEM, epoch=3, pubend="P", attributes=pmap())
    s = attrs.evolve(s, disk=s.disk.set(("replica", UNIT, SYSTEM, 3), rep))
    held = _bodies(handle(s, TimerFired(key=("ges", "tick")), 0)[1], Held)
    assert held == [Held(storage=SYSTEM, unit=UNIT, epochs=(3,))]
    plain = initial_state("n4", NET, GESConfig(), PAPER_POLICY)  # not a cluster storage
    assert _bodies(handle(plain, TimerFired(key=("ges", "tick")), 0)[1], Held) == []


def _at_system(body: Held) -> Receive:
    return Receive(sender=UNIT, msg=Routed(dest=SYSTEM, visited=frozenset({UNIT}), body=body))


def test_the_system_storage_answers_a_released_replica_again_and_nothing_else() -> None:
    s = initial_state(SYSTEM, NET, GESConfig(), PAPER_POLICY)
    rel = Release(storage=SYSTEM, epoch=3, remaining=0, targets=("n1.u0",), units=(UNIT,))
    s = attrs.evolve(s, disk=s.disk.set(("release", SYSTEM, 3), rel))
    got = _bodies(
        handle(s, _at_system(Held(storage=SYSTEM, unit=UNIT, epochs=(3, 4))), 0)[1], Unreplicate
    )
    assert got == [Unreplicate(storage=UNIT, source=SYSTEM, epoch=3, targets=("n1.u0",))]
    other = Held(storage="n7", unit=UNIT, epochs=(3,))  # not this system storage's
    assert handle(s, _at_system(other), 0) == (s, ())


@cache
def _lossy() -> RunOutcome:
    """The finer tier with a quarter of the messages lost on the links between two cluster
    storages and their system storages for 2.5 s."""
    events = (
        fault("drop", 0.2, 2.5, "n1|n2", 1, probability=0.25),
        fault("drop", 0.2, 2.5, "n7|n8", 2, probability=0.25),
    )
    out = run("none", events, record=True, config=(("granularity", "cluster"),))
    assert out.trace is not None
    return out


def test_lost_unreplicates_are_made_up_and_no_replica_outlives_its_release() -> None:
    """Some ``Unreplicate`` sent at (after) the event's release is lost; the event is
    released once, so only the answer to a later ``Held`` can have released the replica."""
    out = _lossy()
    assert out.verdict == "pass", out.explanation
    asked: dict[tuple[str, object], object] = {}
    replicas, unreplicated = set(), set()
    released: dict[tuple[str, int], int] = {}
    made_up = 0
    for r in out.trace or ():
        if r.kind == "persist":
            asked[(r.node, r.detail.key)] = r.detail
        elif r.kind == "persisted" and (r.node, r.detail.key) in asked:
            k = r.detail.key
            if k[0] == "replica":
                replicas.add(k[1:])
            elif k[0] == "unreplicated":
                unreplicated.add(k[1:])
            elif k[0] == "release":
                released[k[1:]] = r.time
        elif r.kind == "drop" and r.detail.wire.kind == "unreplicate":
            w = r.detail.wire
            if (w.storage, w.epoch) in released:  # lost after the release: never sent again
                made_up += 1
                assert (w.unit, w.storage, w.epoch) in unreplicated or _later_unreplicated(
                    out, (w.unit, w.storage, w.epoch)
                )
    assert made_up, "the schedule loses some Unreplicate sent at a release"
    left = {x for x in replicas if (x[1], x[2]) in released and x not in unreplicated}
    assert left == set()


def _later_unreplicated(out: RunOutcome, held_at: tuple[str, str, int]) -> bool:
    return any(
        r.kind == "persisted" and r.detail.key == ("unreplicated", *held_at)
        for r in out.trace or ()
    )
