"""Trace records: canonical encoding, digest stability, counters."""

from __future__ import annotations

import pytest
from pyrsistent import pmap, pset

from gapless.impl.effects import Deliver
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.trace import (
    Counters,
    Fault,
    Published,
    Sent,
    TraceDigest,
    TraceRecord,
    Wire,
    canonical,
    count,
    percentile,
    trace_digest,
)
from gapless.models.topology import topology
from gapless.models.workload import WorkloadSpec, generate_workload


def _r(seq: int, time: int, kind: str, detail: object, node: str = "p1") -> TraceRecord:
    return TraceRecord(seq=seq, time=time, node=node, kind=kind, detail=detail)


def test_canonical_is_order_independent_for_maps_and_sets() -> None:
    a = pmap({"loc": "NY", "p": 3, "n": 1})
    b = pmap({"n": 1, "p": 3, "loc": "NY"})
    assert canonical(a) == canonical(b)
    assert canonical(pset(["x", "y", "z"])) == canonical(frozenset(["z", "y", "x"]))
    assert canonical({"a": 1}) != canonical({"a": 2})
    assert canonical((1, "1")) != canonical(("1", 1))
    assert canonical(True) != canonical(1)
    assert canonical(0.1) == "f0.1;"


def test_canonical_refuses_address_dependent_values() -> None:
    with pytest.raises(ProtocolMisuse, match="cannot encode object"):
        canonical(object())


def test_digest_is_incremental_and_sensitive() -> None:
    recs = [
        _r(0, 0, "fault", Fault(kind="crash", target="b1")),
        _r(1, 5, "publish", Published(pubend="P0", index=0, attributes={"loc": "NY"})),
    ]
    d = TraceDigest()
    for r in recs:
        d.add(r)
    assert d.hexdigest() == trace_digest(recs)
    assert d.records == 2
    changed = [recs[0], _r(1, 6, "publish", recs[1].detail)]
    assert trace_digest(changed) != trace_digest(recs)
    # a pinned digest: the encoding must not drift silently between versions
    assert trace_digest([recs[0]]) == (
        "496e21317c746a8aac67196147fec024800f801ef5225642bfd8df5b02fe7223"
    )


def test_counters_and_percentiles() -> None:
    assert percentile([5], 0.99) == 5
    assert percentile(list(range(1, 101)), 0.99) == 99
    assert percentile(list(range(1, 101)), 0.5) == 50
    with pytest.raises(ProtocolMisuse):
        percentile([1], 0)
    recs = [
        _r(0, 0, "publish", Published(pubend="P0", index=0)),
        _r(
            1,
            10,
            "send",
            Sent(
                to="b1",
                msg=None,
                wire=Wire(kind="nack", pubend="P0", nack_ranges=((5, 9), (20, 20))),
            ),
        ),
        _r(
            2,
            11,
            "send",
            Sent(to="s1", msg=None, wire=Wire(kind="data", pubend="P0", retransmission=True)),
        ),
        _r(3, 300, "deliver", Deliver(subscriber="u", pubend="P0", tick=1, payload=None)),
    ]
    c = count(recs, lambda d: 100)
    assert c == Counters(
        published=1,
        delivered=1,
        nacks=1,
        nack_range_us=6,
        retransmissions=1,
        latency_p50_us=200,
        latency_p99_us=200,
        latency_max_us=200,
    )


def test_workload_is_periodic_phase_shifted_and_capped() -> None:
    g = topology("fig3")
    wl = generate_workload(WorkloadSpec(), g, duration_us=1_000_000, seed=1)
    per = {}
    for p in wl.publishes:
        per.setdefault(p.pubend, []).append(p)
    assert sorted(per) == ["P0", "P1", "P2", "P3"]
    assert all(len(v) == 25 for v in per.values())
    assert [p.index for p in per["P0"]] == list(range(25))
    assert len({p.attributes["n"] for p in per["P2"]}) == 25
    capped = generate_workload(WorkloadSpec(max_messages=3), g, duration_us=1_000_000, seed=1)
    assert len(capped.publishes) == 12
    assert [s.name for s in wl.subscriptions] == ["s1.u0", "s2.u0", "s3.u0", "s4.u0", "s5.u0"]


def test_hot_record_shortcuts_give_the_canonical_text() -> None:
    """The digest builds the text of its hottest records (deliveries, cohorts, log writes)
    inline; it must be exactly the canonical encoding the other records get."""
    import hashlib

    from gapless.impl.effects import DeliverCohort, Persist
    from gapless.impl.gd.messages import Data
    from gapless.impl.gd.state import LogRecord
    from gapless.impl.inputs import Persisted

    data = Data(pubend="P0", tick=64, attributes={"loc": "NY", "p": 3}, size=100)
    details = [
        Deliver(subscriber="s1-0", pubend="P0", tick=64, payload=data, connection=2),
        DeliverCohort(pubend="P0", tick=64, payload=data, to=(("s1-0", 0), ("s1-1", 3))),
        Persist(key=("gd-log", "P0", 64), value=LogRecord(data=data, reserved=64), delay=7),
        Persist(key=("other", 1), value=None, delay=0),  # not a log key: the generic path
        Persisted(key=("gd-log", "P0", 64)),
        Persisted(key="k"),
    ]
    for i, detail in enumerate(details):
        d = TraceDigest()
        d.add(_r(i, 10 * i, "x", detail))
        line = f"{i}|{10 * i}|p1|x|{canonical(detail)}\n"
        assert d.hexdigest() == hashlib.sha256(line.encode("utf-8")).hexdigest(), detail


def test_publish_keeps_the_callers_attribute_map() -> None:
    from pyrsistent import pmap

    from gapless.impl.inputs import Publish

    a = pmap({"loc": "NY"})
    # the same object, so the trace encodes a message's attributes once (memoised by identity)
    assert Publish(pubend="P0", attributes=a).attributes is a
    assert Publish(pubend="P0", attributes={"loc": "NY"}).attributes == a
