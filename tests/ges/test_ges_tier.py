"""The finer tier of GES stable storages (``granularity = "cluster"``) [GES "Stable storages",
"Epochs"]: a system storage releases an event only once every client and every cluster
storage it was destined to confirmed it, one decrement per unit however often a unit confirms;
a cluster storage added later retrieves what it lacks with the system storage's epochs; the
correct protocol passes whole runs with the tier on (cluster storages crashing included); the
release invariant catches a release before a cluster storage held the event."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import attrs
import pytest
from _ges_harness import Trace, file_verdict, judge, passing_trace, reseq, same_verdict
from _runs import MIXED, fault, run, spec
from pyrsistent import pmap

from gapless.impl.effects import Persist, Send
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.ges import PAPER_POLICY, GESConfig, Network, handle, initial_state
from gapless.impl.ges.messages import Recover, Recovered, Replicate, Replicated, Routed
from gapless.impl.ges.storage import StorageState, confirm, confirm_unit, handoff, store
from gapless.impl.ges.tier import add_unit, owed
from gapless.impl.ges.variants import VARIANTS
from gapless.impl.inputs import Persisted, Receive
from gapless.invariants.ges import INVARIANTS
from gapless.models.faults import DEFAULT_RATES, FaultProfile
from gapless.models.ges_binding import network
from gapless.models.ges_topology import ges_small
from gapless.models.run import simulate
from gapless.models.runner import generate_schedule
from gapless.models.runspec import RunSpecError

CLUSTER = {"config": {"granularity": "cluster"}}
FINE_CRASHES = (
    fault("crash", 1.0, 0.8, "n3", 1),
    fault("crash", 1.3, 0.5, "n8", 2),
    fault("disconnect", 0.9, 0.3, "n4.u0", 3),
)
"""Two cluster storages crash while events destined to their clusters are delivered, and a
client roams."""


def _net() -> Network:
    return network(ges_small(), "cluster")


def _storage_with_two_clients() -> StorageState:
    """System storage n2 of ges-small with clients at n4 (cluster of n3) and n6 (cluster of
    n5), both interested in everything."""
    net = _net()
    st = StorageState(name="n2", fine_of=net.fine_of)
    for name, node in (("a", "n4"), ("b", "n6")):
        st, _rec, _ = handoff(st, name, 0, node, None, "true", PAPER_POLICY)
    return st


def _stored() -> tuple[StorageState, int]:
    st = _storage_with_two_clients()
    st, ev = store(st, "P1", 0, pmap({"k": 1}), _net().brokers, PAPER_POLICY)
    assert ev is not None
    return st, ev.epoch


# ------------------------------------------------------------------ the network


def test_cluster_granularity_gives_every_cluster_a_storage_inside_it() -> None:
    net = _net()
    h = net.hierarchy
    assert len(net.fine_storages) == 4  # ges-small: four clusters
    for node, fine in net.fine_of.items():
        assert h.unit(node, 1) == h.unit(fine, 1)
    assert network(ges_small()).fine_of == net.fine_of  # the default: cluster (issue 16)
    assert network(ges_small(), "super-cluster").fine_of == pmap()  # no finer tier


def test_a_cluster_storage_outside_its_cluster_and_an_unknown_granularity_are_refused() -> None:
    net = _net()
    with pytest.raises(ProtocolMisuse, match="cluster storage must be a node of the cluster"):
        attrs.evolve(net, fine_of=net.fine_of.set("n4", "n8"))
    with pytest.raises(RunSpecError, match="granularity = 'node'; allowed: super-cluster"):
        network(ges_small(), "node")


# ------------------------------------------------------------------ predicate counts


def test_an_event_is_released_only_after_every_client_and_every_unit_confirmed() -> None:
    st, e = _stored()
    ev = st.events[e]
    assert ev.units == {"n3", "n5"}
    assert ev.remaining == 4
    for client in ("a", "b"):
        st, gone = confirm(st, e, client, PAPER_POLICY)
        assert gone is None
    st, gone = confirm_unit(st, e, "n3", PAPER_POLICY)
    assert gone is None
    assert st.events[e].remaining == 1
    st, gone = confirm_unit(st, e, "n5", PAPER_POLICY)
    assert gone is not None
    assert gone.remaining == 0
    assert e not in st.events


def test_a_unit_confirming_twice_decrements_once_and_counts_never_go_negative() -> None:
    st, e = _stored()
    st, _ = confirm_unit(st, e, "n3", PAPER_POLICY)
    again, gone = confirm_unit(st, e, "n3", PAPER_POLICY)
    assert again is st
    assert gone is None
    st, _ = confirm(st, e, "a", PAPER_POLICY)
    st, _ = confirm(st, e, "b", PAPER_POLICY)
    st, gone = confirm_unit(st, e, "n5", PAPER_POLICY)
    assert gone is not None
    assert gone.remaining == 0
    after, nothing = confirm_unit(st, e, "n5", PAPER_POLICY)  # a late repeat: released already
    assert after is st
    assert nothing is None


def test_the_planted_bug_releases_while_a_unit_has_not_confirmed() -> None:
    bug = VARIANTS["release-before-units"].policy
    st = _storage_with_two_clients()
    st, ev = store(st, "P1", 0, pmap({"k": 1}), _net().brokers, bug)
    assert ev is not None
    st, _ = confirm(st, ev.epoch, "a", bug)
    st, gone = confirm(st, ev.epoch, "b", bug)
    assert gone is not None
    assert gone.units_pending == {"n3", "n5"}


# ------------------------------------------------------------------ storage addition


def test_a_unit_added_later_retrieves_what_it_lacks_with_the_system_epochs() -> None:
    net = _net()
    st = _storage_with_two_clients()
    coarse = attrs.evolve(st, fine_of=pmap({n: f for n, f in net.fine_of.items() if f != "n3"}))
    epochs = []
    for seq in range(3):
        coarse, ev = store(coarse, "P1", seq, pmap({"k": seq}), net.brokers, PAPER_POLICY)
        assert ev is not None
        assert "n3" not in ev.units
        epochs.append(ev.epoch)
    coarse, _ = confirm(coarse, epochs[0], "a", PAPER_POLICY)
    coarse, _ = confirm(coarse, epochs[0], "b", PAPER_POLICY)
    coarse, _ = confirm_unit(coarse, epochs[0], "n5", PAPER_POLICY)
    assert epochs[0] not in coarse.events  # released before n3 existed: nothing owed
    added = add_unit(coarse, net.hierarchy, "n3", PAPER_POLICY)
    assert add_unit(added, net.hierarchy, "n3", PAPER_POLICY) is added  # known: unchanged
    got = owed(added, "n3")
    assert [ev.epoch for ev in got] == epochs[1:]  # the storage's own epochs, kept
    for ev in got:
        assert ev.remaining == coarse.events[ev.epoch].remaining + 1
    _later, ev = store(added, "P1", 3, pmap({"k": 3}), net.brokers, PAPER_POLICY)
    assert ev is not None
    assert "n3" in ev.units


def test_a_cluster_storage_confirms_only_once_the_replica_is_durable() -> None:
    net = _net()
    s = initial_state("n3", net, GESConfig(), PAPER_POLICY)
    r = Replicate(storage="n3", source="n2", epoch=7, pubend="P1", attributes=pmap({"k": 1}))
    msg = Routed(dest="n3", visited=frozenset({"n1"}), body=r)
    s, effects = handle(s, Receive(sender="n4", msg=msg), 10)
    assert [type(e) for e in effects] == [Persist]
    key = effects[0].key
    assert key == ("replica", "n3", "n2", 7)  # kept under the system storage's epoch
    s2, none = handle(s, Receive(sender="n4", msg=msg), 11)
    assert none == ()
    assert s2 is s
    s, effects = handle(s, Persisted(key=key), 12)
    sends = [e for e in effects if type(e) is Send]
    assert sends
    assert all(type(e.msg) is Routed for e in sends)
    assert sends[0].msg.body == Replicated(storage="n2", unit="n3", epoch=7)
    s, again = handle(s, Receive(sender="n4", msg=msg), 13)  # held: confirmed again, no write
    assert [e.msg.body for e in again if type(e) is Send] == [sends[0].msg.body]
    assert not [e for e in again if type(e) is Persist]


# ------------------------------------------------------------------ whole runs


@pytest.mark.parametrize("events", [MIXED, FINE_CRASHES], ids=["mixed", "fine-crashes"])
def test_the_correct_protocol_passes_with_the_finer_tier(events: tuple) -> None:
    done = {r.detail.key for r in passing_trace(events, **CLUSTER) if r.kind == "persisted"}
    logs = {k[2] for k in done if k[0] == "log"}
    released = {k[2] for k in done if k[0] == "release"}
    replicas = {k for k in done if k[0] == "replica"}
    assert logs
    assert released == logs
    assert replicas


@cache
def _tier_trace() -> Trace:
    return passing_trace(FINE_CRASHES, **CLUSTER)


def _judge(trace: Trace, name: str) -> str | None:
    return judge(trace, name, **CLUSTER)


@pytest.mark.parametrize("name", INVARIANTS)
def test_a_tier_trace_passes_every_invariant(name: str) -> None:
    assert _judge(_tier_trace(), name) is None


def test_a_release_before_a_unit_held_the_event_is_caught() -> None:
    """Non-vacuity: the same trace without the completion of one cluster storage's replica
    write of an event that was released."""
    trace = _tier_trace()
    released = {
        (r.node, r.detail.key[2])
        for r in trace
        if r.kind == "persisted" and r.detail.key[0] == "release"
    }
    i = next(
        i
        for i, r in enumerate(trace)
        if r.kind == "persisted"
        and r.detail.key[0] == "replica"
        and (r.detail.key[2], r.detail.key[3]) in released
    )
    got = _judge(reseq(trace[:i] + trace[i + 1 :]), "release_after_confirm")
    assert got is not None
    assert "before cluster storage" in got


@pytest.mark.parametrize("variant", ["none", "release-before-units"])
def test_a_tier_trace_file_gets_the_online_verdict_offline(tmp_path: Path, variant: str) -> None:
    """Replica writes and the units of a release travel in the trace file."""
    out, violation = file_verdict(tmp_path, variant, FINE_CRASHES, Replicate, **CLUSTER)
    assert "before cluster storage" in (out.explanation or "") or variant == "none"
    same_verdict(out, violation, variant, "release_after_confirm")


# ------------------------------------------------------------------ recovery from the cluster


ROAMS = tuple(
    fault("disconnect", 0.6 + 0.3 * i, 0.2, f"n{1 + i % 8}.u{i % 2}", 10 + i) for i in range(8)
)


def test_a_cluster_storage_answers_a_recover_with_the_replicas_it_holds() -> None:
    net = _net()
    s = initial_state("n3", net, GESConfig(), PAPER_POLICY)
    r = Replicate(storage="n3", source="n2", epoch=7, pubend="P1", attributes=pmap({"k": 1}))
    s = attrs.evolve(s, disk=s.disk.set(("replica", "n3", "n2", 7), r))
    ask = Recover(storage="n3", source="n2", client="a", broker="n6", items=((7, 4), (9, 7)))
    s, effects = handle(
        s, Receive(sender="n1", msg=Routed(dest="n3", visited=frozenset(), body=ask)), 5
    )
    (send,) = effects
    assert type(send) is Send
    assert type(send.msg) is Routed
    assert send.msg.dest == "n6"
    out = send.msg.body
    assert type(out) is Recovered
    assert (out.storage, out.unit, out.client) == ("n2", "n3", "a")
    assert [(q.epoch, q.prev, q.pubend) for q in out.queue] == [(7, 4, "P1")]  # 9: not held


def test_roaming_clients_recover_from_the_storage_of_the_cluster_they_left() -> None:
    out = run("none", ROAMS, record=True, **CLUSTER)
    assert out.verdict == "pass", out.explanation
    assert out.trace is not None
    from_units = [
        r.detail.wire
        for r in out.trace
        if r.kind == "send"
        and r.detail.wire.kind == "recovered"
        and r.detail.wire.unit != r.detail.wire.storage
        and r.node == r.detail.wire.unit
    ]
    assert from_units
    assert sum(len(w.queue) for w in from_units) > 0


def test_a_queue_asked_of_a_cluster_storage_that_fails_still_arrives() -> None:
    """Regression (a fuzz schedule, ges-small seed 200): a client's queue was asked of its old
    cluster's storage, which failed for good; the system storage resends it itself."""
    rates = {**DEFAULT_RATES, "fail": 0.2, "disconnect": 2.0, "crash": 0.3, "link_fail": 0.5}
    s = spec(
        faults=FaultProfile(rates=tuple(sorted(rates.items())), max_duration_us=1_500_000),
        duration_us=4_000_000,
        drain_us=5_000_000,
        config=(("granularity", "cluster"),),
    )
    schedule = generate_schedule(s, 200)
    assert any(e.kind == "fail" and e.target == "n3" for e in schedule.events)
    out = simulate(s, schedule, 200)
    assert out.verdict == "pass", out.explanation
