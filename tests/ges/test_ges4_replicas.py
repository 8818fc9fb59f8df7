"""Replica release at the finer tier (``granularity = "cluster"``) [GES "Stable storages"]: a
cluster storage releases its replica of an event once every client the event was destined to
has confirmed it — the system storage tells it (``Unreplicate``) at the event's release, or
when the cluster storage confirms holding it after the clients all did — and not before:
``release_after_confirm`` judges the cluster storage's ``replica_release`` writes, and catches
the planted ``replica-released-early``."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from _ges_harness import at, bodies, file_verdict, passing_trace, same_verdict
from _runs import MIXED
from pyrsistent import pmap

from gapless.impl.effects import Persist
from gapless.impl.ges import PAPER_POLICY, GESConfig, handle, initial_state
from gapless.impl.ges.messages import (
    Recover,
    Recovered,
    Replicate,
    Replicated,
    Unreplicate,
)
from gapless.impl.ges.node import NodeState
from gapless.impl.ges.storage import confirm, handoff, store
from gapless.impl.inputs import Persisted
from gapless.models.ges_binding import network
from gapless.models.ges_topology import ges_small

CLUSTER = {"config": {"granularity": "cluster"}}


def _cluster_storage_with_replica() -> NodeState:
    net = network(ges_small(), "cluster")
    s = initial_state("n3", net, GESConfig(), PAPER_POLICY)
    r = Replicate(storage="n3", source="n2", epoch=7, pubend="P1", attributes=pmap({"k": 1}))
    s, effects = handle(s, at("n3", r), 1)
    (p,) = effects
    assert type(p) is Persist
    s, _ = handle(s, Persisted(key=p.key), 3)
    assert ("replica", "n3", "n2", 7) in s.disk
    return s


def test_a_cluster_storage_releases_its_replica_durably_when_told() -> None:
    s = _cluster_storage_with_replica()
    u = Unreplicate(storage="n3", source="n2", epoch=7, targets=("a",))
    s, effects = handle(s, at("n3", u), 10)
    (p,) = effects
    assert type(p) is Persist
    assert p.key == ("unreplicated", "n3", "n2", 7)
    assert ("replica", "n3", "n2", 7) in s.disk  # not gone before the write completed
    same, again = handle(s, at("n3", u), 11)  # asked again meanwhile: one write
    assert same is s
    assert again == ()
    s, _ = handle(s, Persisted(key=p.key), 12)
    assert ("replica", "n3", "n2", 7) not in s.disk
    assert p.key not in s.disk
    ask = Recover(storage="n3", source="n2", client="a", broker="n6", items=((7, 4),))
    _s, effects = handle(s, at("n3", ask), 13)
    assert bodies(effects, Recovered) == []  # the system storage resends what it still owes


def test_an_unreplicate_for_a_replica_not_held_is_ignored() -> None:
    net = network(ges_small(), "cluster")
    s = initial_state("n3", net, GESConfig(), PAPER_POLICY)
    u = Unreplicate(storage="n3", source="n2", epoch=9, targets=())
    same, effects = handle(s, at("n3", u), 1)
    assert same is s
    assert effects == ()


def _system_storage(pending_clients: bool) -> tuple[NodeState, int]:
    """n2 with one event destined to client a at n4 (cluster storage n3) and b at n6
    (cluster storage n5); both clients have confirmed it unless ``pending_clients``."""
    net = network(ges_small(), "cluster")
    s = initial_state("n2", net, GESConfig(), PAPER_POLICY)
    assert s.store is not None
    st = s.store
    for c, node in (("a", "n4"), ("b", "n6")):
        st, _rec, _ = handoff(st, c, 0, node, None, "true", PAPER_POLICY)
    st, ev = store(st, "P1", 0, pmap({"k": 1}), net.brokers, PAPER_POLICY)
    assert ev is not None
    assert ev.units == {"n3", "n5"}
    if not pending_clients:
        for c in ("a", "b"):
            st, gone = confirm(st, ev.epoch, c, PAPER_POLICY)
            assert gone is None  # the cluster storages have not confirmed yet
    return attrs.evolve(s, store=st), ev.epoch


def _replicated(s: NodeState, unit: str, epoch: int) -> tuple[NodeState, tuple[object, ...]]:
    return handle(s, at("n2", Replicated(storage="n2", unit=unit, epoch=epoch)), 5)


def test_no_unreplicate_while_a_client_has_not_confirmed() -> None:
    s, epoch = _system_storage(pending_clients=True)
    s, effects = _replicated(s, "n3", epoch)
    assert bodies(effects, Unreplicate) == []
    assert s.store is not None
    assert epoch in s.store.events


def test_a_unit_confirming_after_every_client_did_may_release_at_once() -> None:
    s, epoch = _system_storage(pending_clients=False)
    s, effects = _replicated(s, "n3", epoch)
    assert bodies(effects, Unreplicate) == [
        Unreplicate(storage="n3", source="n2", epoch=epoch, targets=("a", "b"))
    ]
    assert s.store is not None
    assert epoch in s.store.events  # the event still waits for n5


def test_the_release_tells_every_cluster_storage_its_replica_may_go() -> None:
    s, epoch = _system_storage(pending_clients=False)
    s, _ = _replicated(s, "n3", epoch)
    s, effects = _replicated(s, "n5", epoch)
    (p,) = [e for e in effects if type(e) is Persist]
    assert p.key == ("release", "n2", epoch)
    _s, effects = handle(s, Persisted(key=p.key), 7)
    # both (n3 again: a lost Unreplicate is made up once)
    assert sorted(u.storage for u in bodies(effects, Unreplicate)) == ["n3", "n5"]


def test_whole_runs_release_every_replica_and_pass() -> None:
    trace = passing_trace(MIXED, **CLUSTER)
    done = [r.detail.key for r in trace if r.kind == "persisted"]
    replicas = {k[1:] for k in done if k[0] == "replica"}
    released = {k[1:] for k in done if k[0] == "unreplicated"}
    assert replicas
    assert released == replicas


@pytest.mark.parametrize("variant", ["none", "replica-released-early"])
def test_a_replica_release_travels_in_the_trace_file(tmp_path: Path, variant: str) -> None:
    out, violation = file_verdict(tmp_path, variant, MIXED, Unreplicate, **CLUSTER)
    v = same_verdict(out, violation, variant, "release_after_confirm")
    assert v is None or "replica of epoch" in v.message
