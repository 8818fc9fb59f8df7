"""Storage addition while a run goes, and a lost ``Retrieve`` resent [GES "Stable storages":
a finer-grained storage added later "should access the coarser grained storage ... and
retrieve the events", whose "epochs ... should however remain unchanged"]. The run config key
``storage_joins = "n3@1.5"`` adds cluster storage n3 1.5 s in: until then no system storage
knows it; from its first tick after that it sends every system storage a ``Retrieve`` and
resends it every tick until each answers ``Retrieved`` (after its durable ``unit`` write)."""

from __future__ import annotations

from functools import cache

import pytest
from _runs import fault, run, spec
from pyrsistent import pmap

from gapless.impl.effects import Persist, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.ges import PAPER_POLICY, GESConfig, Network, handle, initial_state
from gapless.impl.ges.messages import Retrieve, Retrieved, Routed
from gapless.impl.inputs import Persisted, Receive, Restart, TimerFired
from gapless.impl.trace import TraceRecord
from gapless.models.ges_binding import network, parse_joins
from gapless.models.ges_topology import ges_small
from gapless.models.run import build
from gapless.models.runspec import RunSpecError

JOIN = {"config": {"granularity": "cluster", "storage_joins": "n3@1.5"}}
AWAY = (fault("disconnect", 0.8, 1.2, "n4.u0", 1), fault("disconnect", 1.0, 1.0, "n3.u1", 2))
"""Two clients of n3's cluster are away while n3 joins: what they missed is still stored."""
CUT_OFF = tuple(
    fault("drop", 1.45, 0.3, link, i, probability=1.0)
    for i, link in enumerate(("n2|n3", "n3|n4", "n3|n5"), 1)
)
"""Every link of n3 loses everything from 1.45 s to 1.75 s: its first Retrieves are lost."""
Trace = tuple[TraceRecord, ...]
TICK = ("ges", "tick")


def _net() -> Network:
    return network(ges_small(), "cluster", joins={"n3": 1_500_000})


# ------------------------------------------------------------------ configuration


def test_storage_joins_parses_and_refuses_what_is_not_node_at_seconds() -> None:
    assert parse_joins("n3@1.5, n8@0") == {"n3": 1_500_000, "n8": 0}
    assert parse_joins("") == {}
    for bad in ("n3", "n3@soon", "@1", "n3@-1"):
        with pytest.raises(RunSpecError, match="node@seconds"):
            parse_joins(bad)


def test_only_a_cluster_storage_can_join() -> None:
    with pytest.raises(ProtocolMisuse, match="only a cluster storage"):
        Network(**{**_fields(_net()), "joins": pmap({"n4": 1})})
    with pytest.raises(RunSpecError, match="cluster storages: none"):
        build(spec(config={"granularity": "super-cluster", "storage_joins": "n3@1"}), 1)
    with pytest.raises(RunSpecError, match="expected a string"):
        build(spec(config={"granularity": "cluster", "storage_joins": 3}), 1)


def _fields(net: Network) -> dict[str, object]:
    return {
        "hierarchy": net.hierarchy,
        "storages": net.storages,
        "storage_of": net.storage_of,
        "brokers": net.brokers,
        "fine_of": net.fine_of,
    }


def test_system_storages_do_not_know_a_storage_before_it_joins() -> None:
    net = _net()
    st = initial_state("n2", net, GESConfig(), PAPER_POLICY).store
    assert st is not None
    assert "n3" not in set(st.fine_of.values())
    assert {"n1", "n5", "n8"} <= set(st.fine_of.values())


# ------------------------------------------------------------------ the roles


def _retrieves(effects: tuple[object, ...]) -> list[str]:
    return sorted(
        e.msg.body.storage
        for e in effects
        if type(e) is Send and type(e.msg) is Routed and type(e.msg.body) is Retrieve
    )


def test_a_joining_storage_retrieves_from_its_join_on_and_until_answered() -> None:
    s = initial_state("n3", _net(), GESConfig(), PAPER_POLICY)
    s, effects = handle(s, Restart(), 0)
    assert _retrieves(effects) == []  # not joined yet
    s, effects = handle(s, TimerFired(key=TICK), 1_200_000)
    assert _retrieves(effects) == []
    s, effects = handle(s, TimerFired(key=TICK), 1_500_000)
    assert _retrieves(effects) == ["n2", "n7"]
    answer = Retrieved(storage="n3", source="n2")
    s, _ = handle(
        s, Receive(sender="n2", msg=Routed(dest="n3", visited=frozenset(), body=answer)), 1
    )
    s, effects = handle(s, TimerFired(key=TICK), 1_800_000)
    assert _retrieves(effects) == ["n7"]  # n7's answer was lost, or its Retrieve: resent
    answer = Retrieved(storage="n3", source="n7")
    s, _ = handle(
        s, Receive(sender="n4", msg=Routed(dest="n3", visited=frozenset(), body=answer)), 2
    )
    same, effects = handle(
        s, Receive(sender="n4", msg=Routed(dest="n3", visited=frozenset(), body=answer)), 3
    )
    assert same is s
    assert effects == ()
    s, effects = handle(s, TimerFired(key=TICK), 2_100_000)
    assert _retrieves(effects) == []


def test_a_system_storage_answers_a_retrieve_once_it_recorded_the_storage() -> None:
    s = initial_state("n2", _net(), GESConfig(), PAPER_POLICY)
    ask = Routed(dest="n2", visited=frozenset(), body=Retrieve(storage="n2", unit="n3"))
    s, effects = handle(s, Receive(sender="n3", msg=ask), 10)
    (p,) = effects
    assert type(p) is Persist
    assert p.key == ("unit", "n2", "n3")
    s, effects = handle(s, Persisted(key=p.key), 12)
    assert [e.msg.body for e in effects if type(e) is Send] == [
        Retrieved(storage="n3", source="n2")
    ]
    assert s.store is not None
    assert s.store.fine_of["n4"] == "n3"
    # asked again (its answer was lost): it knows n3 already and answers at once
    _s, effects = handle(s, Receive(sender="n3", msg=ask), 20)
    assert [e.msg.body for e in effects if type(e) is Send] == [
        Retrieved(storage="n3", source="n2")
    ]


# ------------------------------------------------------------------ whole runs


@cache
def _join_trace() -> Trace:
    out = run("none", AWAY, record=True, **JOIN)
    assert out.verdict == "pass", out.explanation
    assert out.trace is not None
    return out.trace


def test_a_storage_added_while_the_run_goes_gets_what_it_lacks_with_epochs_kept() -> None:
    trace = _join_trace()
    units = {(r.node, r.time) for r in trace if r.kind == "persisted" and r.detail.key[0] == "unit"}
    assert {n for n, _t in units} == {"n2", "n7"}
    assert all(t >= 1_500_000 for _n, t in units)
    logged_before = {
        r.detail.key[2]
        for r in trace
        if r.kind == "persisted" and r.detail.key[:2] == ("log", "n2") and r.time < 1_500_000
    }
    replicas = {
        r.detail.key[3]
        for r in trace
        if r.kind == "persisted" and r.detail.key[:3] == ("replica", "n3", "n2")
    }
    # n3 holds events n2 stored before n3 existed, under n2's epochs
    assert replicas & logged_before
    assert not any(
        r.kind == "persisted" and r.detail.key[:2] == ("replica", "n3") and r.time < 1_500_000
        for r in trace
    )


def test_clients_of_the_new_storages_cluster_recover_from_it() -> None:
    trace = _join_trace()
    from_n3 = [
        r.detail.wire
        for r in trace
        if r.kind == "send" and r.node == "n3" and r.detail.wire.kind == "recovered"
    ]
    assert from_n3
    assert all(w.unit == "n3" for w in from_n3)


def test_a_lost_retrieve_is_resent_and_the_storage_still_joins() -> None:
    out = run("none", CUT_OFF, record=True, **JOIN)
    assert out.verdict == "pass", out.explanation
    assert out.trace is not None
    sent = [
        r.time
        for r in out.trace
        if r.kind == "send"
        and r.node == "n3"
        and r.detail.wire.kind == "retrieve"
        and r.detail.wire.unit == "n3"
    ]
    assert min(sent) == 1_500_000
    assert len(sent) > 2  # resent
    units = {
        r.node: r.time for r in out.trace if r.kind == "persisted" and r.detail.key[0] == "unit"
    }
    assert set(units) == {"n2", "n7"}
    assert min(units.values()) > 1_750_000  # only a resent Retrieve got through
