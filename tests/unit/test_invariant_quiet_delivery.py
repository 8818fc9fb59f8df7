"""``quiet_delivery`` (issue 18): what is published while nothing has failed is delivered, by
best effort too [GD §4.1]. A best-effort pubend that boots down (the one-constant mutant
``up=True`` -> ``up=False`` of ``impl/gd/best_effort.py``'s PHB restart, killed by the tests,
passed the demo's best-effort schedules: no other invariant of that setup sees it) is caught;
a message published too close to the first fault is not judged."""

from __future__ import annotations

from pathlib import Path

import attrs
from _staged_mutant import mutant, run_seed_staged

from gapless.impl.effects import Deliver, DeliverCohort
from gapless.impl.inputs import Connect
from gapless.impl.trace import Fault, Published, TraceRecord
from gapless.invariants.checker import check_trace
from gapless.invariants.gd.quiet import SETTLE_US
from gapless.invariants.plugin import CheckContext, SubscriptionInfo
from gapless.models.topology import fig3
from gapless.spark_fuzz.config import canonical_json, config_for_seed, load_config, setup_of_seed
from gapless.spark_fuzz.execute import run_seed

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "campaigns" / "demo.toml"
MUTANT = "impl/gd/best_effort.py:120:bool constant#22"


def _best_effort_seed() -> int:
    config = load_config(DEMO)
    return next(s for s in config.seeds() if setup_of_seed(config, s) == "best-effort")


def test_a_best_effort_pubend_that_boots_down_is_caught(tmp_path: Path) -> None:
    m = mutant(MUTANT)
    assert "up=False" in m.diff
    row = run_seed_staged(tmp_path, m, DEMO, _best_effort_seed(), 2.0)
    assert row["verdict"] == "violation", row["explanation"]
    assert row["invariant"] == "quiet_delivery"


def test_the_correct_best_effort_roles_pass_it() -> None:
    config = load_config(DEMO, {"duration_s": 2.0})
    seed = _best_effort_seed()
    assert "quiet_delivery" in config_for_seed(config, seed).invariants
    row = run_seed(canonical_json(config.to_data()), seed).row
    assert row["verdict"] == "pass", row["explanation"]
    assert row["delivered"] > 0


def _trace(fault_at: int | None) -> list[TraceRecord]:
    recs: list[TraceRecord] = []

    def add(t: int, node: str, kind: str, detail: object) -> None:
        recs.append(TraceRecord(seq=len(recs), time=t, node=node, kind=kind, detail=detail))

    add(0, "s1", "connect", Connect(subscriber="u1", filter="true", connection=0))
    add(1_000_000, "p1", "publish", Published(pubend="P1", index=0, attributes={"n": 0}))
    if fault_at is not None:
        add(fault_at, "b1", "fault", Fault(kind="crash", target="b1"))
    add(5_000_000, "s2", "connect", Connect(subscriber="u9", filter="true", connection=0))
    return recs


def ctx() -> CheckContext:
    g = fig3()
    return CheckContext(
        subscriptions=(SubscriptionInfo(name="u1", shb="s1", filter="true"),),
        cell_of={n: d["cell"] for n, d in g.nodes(data=True)},
        cell_tree=g.graph["cell_tree"],
        pubend_host=dict(g.graph["pubends"]),
        merged=(),
        roles={n: d["role"] for n, d in g.nodes(data=True)},
        min_repetition_us=300_000,
        matches=lambda flt, a: flt == "true",
        logged=lambda p: p.value,
        payload_attributes=lambda payload: payload,
        links=tuple(sorted((min(a, b), max(a, b)) for a, b in g.edges)),
    )


def test_a_message_published_near_the_first_fault_is_not_judged() -> None:
    names = ("quiet_delivery",)
    assert check_trace(ctx(), _trace(None), names, live_end=True) is not None
    near = 1_000_000 + SETTLE_US - 1
    assert check_trace(ctx(), _trace(near), names, live_end=True) is None
    far = 1_000_000 + SETTLE_US + 1
    assert check_trace(ctx(), _trace(far), names, live_end=True) is not None


def _cohort_trace(*deliveries: object) -> list[TraceRecord]:
    """u1, u2, u3 connected at s1 before message 0 of P1; then ``deliveries`` at s1."""
    recs: list[TraceRecord] = []

    def add(t: int, node: str, kind: str, detail: object) -> None:
        recs.append(TraceRecord(seq=len(recs), time=t, node=node, kind=kind, detail=detail))

    for u in ("u1", "u2", "u3"):
        add(0, "s1", "connect", Connect(subscriber=u, filter="true", connection=0))
    add(1_000_000, "p1", "publish", Published(pubend="P1", index=0, attributes={"n": 0}))
    for d in deliveries:
        add(1_100_000, "s1", "deliver", d)
    return recs


def _cohort_ctx() -> CheckContext:
    subs = tuple(SubscriptionInfo(name=u, shb="s1", filter="true") for u in ("u1", "u2", "u3"))
    return attrs.evolve(ctx(), subscriptions=subs)


def test_cohorts_and_single_deliveries_together_settle_a_message() -> None:
    """A message is settled by the union of its cohorts and single deliveries; one owed
    connection missing from all of them is caught and named (issue 17: the plug-in keeps a
    cohort as its member set, never expanding it per member)."""
    names = ("quiet_delivery",)
    payload = {"n": 0}
    both = DeliverCohort(pubend="P1", tick=5, payload=payload, to=(("u1", 0), ("u2", 0)))
    u3 = Deliver(subscriber="u3", pubend="P1", tick=5, payload=payload)
    u3_cohort = DeliverCohort(pubend="P1", tick=5, payload=payload, to=(("u3", 0), ("u2", 0)))
    assert check_trace(_cohort_ctx(), _cohort_trace(both, u3), names, live_end=True) is None
    assert check_trace(_cohort_ctx(), _cohort_trace(both, u3_cohort), names, live_end=True) is None
    missing = check_trace(_cohort_ctx(), _cohort_trace(both), names, live_end=True)
    assert missing is not None
    assert missing.invariant == "quiet_delivery"
    assert missing.subject == "u3"
    # a delivery on another connection number does not count for connection 0
    other = Deliver(subscriber="u3", pubend="P1", tick=5, payload=payload, connection=1)
    late = check_trace(_cohort_ctx(), _cohort_trace(both, other), names, live_end=True)
    assert late is not None
    assert late.subject == "u3"


#: a broker that never forwards first-time knowledge to its downstream cells (``and`` ->
#: ``or`` in ``forward``'s cell loop): every subscriber still gets everything by the end,
#: through AckExpected and nacks, so only the "at once" of quiet_delivery sees it
FORWARD_MUTANT = "impl/gd/forwarding.py:155:boolop And#51"


def test_a_broker_that_stops_forwarding_first_time_is_caught(tmp_path: Path) -> None:
    m = mutant(FORWARD_MUTANT)
    assert "what.only_cell is not None or c != what.only_cell" in m.diff
    config = load_config(DEMO)
    seed = 6  # a demo seed on the default setup whose first fault comes late (1.45 s)
    assert setup_of_seed(config, seed) == ""
    row = run_seed_staged(tmp_path, m, DEMO, seed, 5.0)
    assert row["verdict"] == "violation", row["explanation"]
    assert row["invariant"] == "quiet_delivery"
    assert "before the first fault" in row["explanation"]
    # the correct protocol passes the same seed
    correct = run_seed(canonical_json(load_config(DEMO, {"duration_s": 5.0}).to_data()), seed)
    assert correct.row["verdict"] == "pass", correct.row["explanation"]


def test_a_delivery_after_the_first_fault_does_not_count() -> None:
    names = ("quiet_delivery",)
    late = 1_000_000 + SETTLE_US + 1
    recs = _trace(late)
    got = Deliver(subscriber="u1", connection=0, pubend="P1", tick=7, payload={"n": 0})
    before = [*recs[:2], TraceRecord(seq=2, time=1_100_000, node="s1", kind="deliver", detail=got)]
    before += [attrs.evolve(r, seq=r.seq + 1) for r in recs[2:]]
    assert check_trace(ctx(), before, names, live_end=True) is None
    late_got = TraceRecord(seq=len(recs), time=late + 1, node="s1", kind="deliver", detail=got)
    after = [*recs, late_got]
    v = check_trace(ctx(), after, names, live_end=True)
    assert v is not None
    assert f"before the first fault at {late}µs" in v.message
