"""The plug-in seam of the checker: a registry per protocol, a shared ledger, plug-ins that a
protocol brings without editing the checker, and GD's plug-ins behind the twelve-plus-one
invariant names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import pytest

from gapless.impl.effects import Deliver, DeliverCohort, Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Connect, Persisted
from gapless.impl.trace import Published, TraceRecord
from gapless.invariants import INVARIANTS, gd
from gapless.invariants import plugin as plugin_mod
from gapless.invariants.checker import CheckContext, Checker, SubscriptionInfo, check_trace
from gapless.invariants.plugin import (
    Conn,
    Ledger,
    Plugin,
    Report,
    SharedTicks,
    invariant_names,
)
from gapless.models.faults import FaultProfile
from gapless.models.gd_protocol import ENTRY as GD_ENTRY
from gapless.models.run import Run, run_context
from gapless.models.runner import RunSpec, generate_schedule
from gapless.models.workload import WorkloadSpec


def _ctx() -> CheckContext:
    return CheckContext(
        subscriptions=(
            SubscriptionInfo(name="u1", shb="s1", filter="true"),
            SubscriptionInfo(name="u3", shb="s1", filter="true"),
        ),
        cell_of={"p1": "p1", "s1": "s1"},
        cell_tree=(("p1", "s1"),),
        pubend_host={"P1": "p1"},
        merged=(),
        roles={"p1": "phb", "s1": "shb"},
        min_repetition_us=300_000,
        matches=lambda flt, a: flt == "true",
        logged=lambda p: p.value,
        payload_attributes=lambda payload: payload,
    )


def _records(*extra: tuple[int, str, str, Any]) -> list[TraceRecord]:
    a = {"n": 0, "size": 10}
    base: list[tuple[int, str, str, Any]] = [
        (0, "s1", "connect", Connect(subscriber="u1", filter="true", connection=0)),
        (0, "s1", "connect", Connect(subscriber="u3", filter="true", connection=0)),
        (10, "p1", "publish", Published(pubend="P1", index=0, attributes=a)),
        (10, "p1", "persist", Persist(key=("P1", 7), value=("P1", 7, a))),
        (110, "p1", "persisted", Persisted(key=("P1", 7))),
        *extra,
    ]
    return [
        TraceRecord(seq=i, time=t, node=n, kind=k, detail=d) for i, (t, n, k, d) in enumerate(base)
    ]


def test_gd_registers_its_plugins_under_the_invariant_names() -> None:
    assert invariant_names(gd.PLUGINS) == INVARIANTS == GD_ENTRY.invariants
    assert "minimal_traffic" in INVARIANTS


def test_misuse_is_typed_and_names_what_is_allowed() -> None:
    with pytest.raises(ProtocolMisuse, match=r"no-such.*allowed: safety"):
        Checker(_ctx(), ("no-such",))

    class Twin(Plugin):
        names: ClassVar[tuple[str, ...]] = ("safety",)

    with pytest.raises(ProtocolMisuse, match="two plug-ins"):
        Checker(_ctx(), plugins=(*gd.PLUGINS, Twin))

    class Recorder(Plugin):
        names: ClassVar[tuple[str, ...]] = ("recorder",)
        records_deliveries: ClassVar[bool] = True

    with pytest.raises(ProtocolMisuse, match="record deliveries"):
        Checker(_ctx(), plugins=(gd.GDDelivery, Recorder))


class SmallPayloads(Plugin):
    """A protocol's own invariant: delivered payloads stay under a size, judged with the
    ledger's connections (which the ledger keeps up to date itself)."""

    names: ClassVar[tuple[str, ...]] = ("small_payloads",)
    kinds: ClassVar[frozenset[str]] = frozenset({"deliver"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.judged: list[tuple[str, int]] = []

    def observe(self, r: TraceRecord) -> bool:
        d = r.detail
        c = self.ledger.conns[d.subscriber]
        # judged before the ledger adds it: this delivery is not yet in c.seen
        self.judged.append((d.subscriber, len(c.seen.get(d.pubend, ()))))
        size = d.payload.get("size", 0)
        return size > 50 and self.report.fail(
            "small_payloads", d.subscriber, f"payload of {size} bytes", r, tick=d.tick
        )


def _deliver(sub: str, size: int) -> tuple[int, str, str, Any]:
    payload = {"n": 0, "size": size}
    return (
        300,
        "s1",
        "deliver",
        Deliver(subscriber=sub, pubend="P1", tick=7, payload=payload, connection=0),
    )


def test_a_protocol_brings_its_own_plugin_without_touching_the_checker() -> None:
    checker = Checker(_ctx(), plugins=(SmallPayloads,))
    for r in _records(_deliver("u1", 10), _deliver("u3", 10)):
        assert not checker.observe(r)
    (plugin,) = checker.plugins
    assert isinstance(plugin, SmallPayloads)
    assert plugin.judged == [("u1", 0), ("u3", 0)]
    # no plug-in records deliveries here, so the ledger did
    assert checker.ledger.conns["u1"].seen == {"P1": {7}}
    assert checker.ledger.conns["u1"].last == {"P1": 7}
    v = check_trace(_ctx(), _records(_deliver("u1", 99)), plugins=(SmallPayloads,))
    assert v is not None
    assert (v.invariant, v.subject, v.tick) == ("small_payloads", "u1", 7)
    # GD's invariants and a protocol's own run side by side
    both = (*gd.PLUGINS, SmallPayloads)
    assert check_trace(_ctx(), _records(_deliver("u1", 10)), plugins=both, live_end=False) is None


def test_a_cohort_naming_a_subscriber_twice_delivers_twice() -> None:
    cohort = DeliverCohort(pubend="P1", tick=7, payload={"n": 0, "size": 10}, to=(("u1", 0),) * 2)
    v = check_trace(_ctx(), _records((300, "s1", "deliver", cohort)), live_end=False)
    assert v is not None
    assert (v.invariant, v.subject) == ("exactly_once", "u1")


def _state(conns: Mapping[str, Conn]) -> dict[str, Any]:
    return {
        s: (c.n, c.live, c.last_any, dict(c.last), {p: set(t) for p, t in c.seen.items() if t})
        for s, c in conns.items()
    }


def test_the_ledger_sees_the_same_deliveries_whoever_records_them() -> None:
    """GD's delivery plug-in adds deliveries itself (its cohort fast path); without it the
    ledger adds them. Both give the same ledger after a faulty run with selective filters."""
    spec = RunSpec(
        workload=WorkloadSpec(rate_per_pubend=10.0, filters="mixed", subscribers_per_shb=2),
        faults=FaultProfile(rates=(("crash", 0.5), ("drop", 1.0), ("disconnect", 0.5))),
        duration_us=3_000_000,
        drain_us=11_000_000,
        invariants=("safety",),
    )
    seed = 1  # a crash, a disconnect, losses and retransmissions
    r = Run(spec, generate_schedule(spec, seed), seed, record_trace=True)
    r.world.run(duration_us=spec.duration_us, drain_us=spec.drain_us)
    records = r.outcome().trace
    assert records is not None
    ctx = run_context(spec, seed)
    with_plugin = Checker(ctx)
    without = Checker(ctx, ("ack_consolidation", "nack_consolidation"))
    assert not any(type(p) is gd.GDDelivery for p in without.plugins)
    for rec in records:
        assert not with_plugin.observe(rec)
        assert not without.observe(rec)
    assert _state(with_plugin.ledger.conns) == _state(without.ledger.conns)
    assert any(c.seen for c in without.ledger.conns.values())
    assert any(not c.live for c in without.ledger.all_conns)


def _cohort_then_singles(*singles: tuple[str, int]) -> list[TraceRecord]:
    """u1 and u3 connect at s1; ticks 7 and 8 of P1 are published and logged; a cohort of both
    delivers tick 7, then each ``(subscriber, tick)`` of ``singles`` is a delivery alone."""
    a = {"n": 0, "size": 10}
    recs: list[tuple[int, str, str, Any]] = [
        (0, "s1", "connect", Connect(subscriber="u1", filter="true", connection=0)),
        (0, "s1", "connect", Connect(subscriber="u3", filter="true", connection=0)),
    ]
    for i, t in enumerate((7, 8)):
        recs += [
            (10 + i, "p1", "publish", Published(pubend="P1", index=i, attributes=a)),
            (10 + i, "p1", "persist", Persist(key=("P1", t), value=("P1", t, a))),
            (110 + i, "p1", "persisted", Persisted(key=("P1", t))),
        ]
    to = (("u1", 0), ("u3", 0))
    recs.append((300, "s1", "deliver", DeliverCohort(pubend="P1", tick=7, payload=a, to=to)))
    for sub, t in singles:
        d = Deliver(subscriber=sub, pubend="P1", tick=t, payload=a, connection=0)
        recs.append((400, "s1", "deliver", d))
    return [
        TraceRecord(seq=i, time=t, node=n, kind=k, detail=d) for i, (t, n, k, d) in enumerate(recs)
    ]


def test_a_cohort_shares_its_delivered_ticks_until_a_member_delivers_alone() -> None:
    """The delivery plug-in adds a cohort's tick once, to one set its members share
    (``SharedTicks``); a member that then delivers on its own takes a private copy, so the
    others' ticks stay theirs: u1 alone getting tick 8 does not make u3's tick 8 a duplicate,
    while u3 getting tick 7 again is one."""
    checker = Checker(_ctx())
    for r in _cohort_then_singles():
        assert not checker.observe(r)
    u1, u3 = checker.ledger.conns["u1"], checker.ledger.conns["u3"]
    shared = u1.seen["P1"]
    assert type(shared) is SharedTicks
    assert shared is u3.seen["P1"]
    assert shared.holders == 2
    checker = Checker(_ctx())
    for r in _cohort_then_singles(("u1", 8), ("u3", 8)):
        assert not checker.observe(r), checker.violation
    u1, u3 = checker.ledger.conns["u1"], checker.ledger.conns["u3"]
    assert u1.seen["P1"] == u3.seen["P1"] == {7, 8}
    assert u1.seen["P1"] is not u3.seen["P1"]
    assert {type(u1.seen["P1"]), type(u3.seen["P1"])} == {set}
    v = check_trace(_ctx(), _cohort_then_singles(("u1", 8), ("u3", 7)), live_end=False)
    assert v is not None
    assert (v.invariant, v.subject, v.tick) == ("exactly_once", "u3", 7)


def test_a_shared_set_written_in_place_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-vacuity of the test above: an ``own_ticks`` that adds to the shared set in place
    (no copy) makes u1's tick 8 u3's too, and u3's own tick 8 a false duplicate."""

    def in_place(c: Conn, pubend: str) -> set[int]:
        return c.seen.setdefault(pubend, set())

    monkeypatch.setattr(plugin_mod, "own_ticks", in_place)
    v = check_trace(_ctx(), _cohort_then_singles(("u1", 8), ("u3", 8)), live_end=False)
    assert v is not None
    assert (v.invariant, v.subject, v.tick) == ("exactly_once", "u3", 8)


def test_members_judged_one_by_one_copy_a_shared_set_first() -> None:
    """A cohort whose members disagree is judged member by member (``_deliver_members``): u1
    and u3 share ticks 7 and 8 (two cohorts), then tick 9 goes to them and to u4, which
    connected later (its last tick differs). u1 and u3 each take a private copy before
    adding 9: the shared set itself stays {7, 8} (written in place, u4's tick would not
    matter, but u1's 9 would be u3's before u3 got it)."""
    ctx = attrs.evolve(
        _ctx(),
        subscriptions=(*_ctx().subscriptions, SubscriptionInfo(name="u4", shb="s1", filter="true")),
    )
    a = {"n": 0, "size": 10}
    recs = _cohort_then_singles()
    extra: list[tuple[int, str, str, Any]] = [
        (200, "s1", "connect", Connect(subscriber="u4", filter="true", connection=0)),
        (250, "p1", "publish", Published(pubend="P1", index=2, attributes=a)),
        (250, "p1", "persist", Persist(key=("P1", 9), value=("P1", 9, a))),
        (260, "p1", "persisted", Persisted(key=("P1", 9))),
        (
            300,
            "s1",
            "deliver",
            DeliverCohort(pubend="P1", tick=8, payload=a, to=(("u1", 0), ("u3", 0))),
        ),
    ]
    checker = Checker(ctx)
    for r in recs:
        assert not checker.observe(r), checker.violation
    for i, (t, n, k, d) in enumerate(extra):
        r = TraceRecord(seq=len(recs) + i, time=t, node=n, kind=k, detail=d)
        assert not checker.observe(r), checker.violation
    conns = checker.ledger.conns
    shared = conns["u1"].seen["P1"]
    assert type(shared) is SharedTicks
    assert shared is conns["u3"].seen["P1"]
    assert shared == {7, 8}
    to = (("u1", 0), ("u3", 0), ("u4", 0))
    cohort = DeliverCohort(pubend="P1", tick=9, payload=a, to=to)
    r = TraceRecord(seq=99, time=400, node="s1", kind="deliver", detail=cohort)
    assert not checker.observe(r), checker.violation
    assert shared == {7, 8}
    assert conns["u1"].seen["P1"] == conns["u3"].seen["P1"] == {7, 8, 9}
    assert conns["u1"].seen["P1"] is not conns["u3"].seen["P1"]
    assert conns["u4"].seen["P1"] == {9}
