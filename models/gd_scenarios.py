"""The paper's failure experiments [GD §4.2] as named, deterministic scenarios.

Theory of operation
-------------------
Each :class:`Scenario` is GD Figure 3 at the paper's settings — four pubends at p1, 25 msgs/s
each, 100-byte messages, GCT=200 ms, NRT=600 ms, AET=10 s, DCT=infinity, filters passing
everything (one subscriber per SHB) — plus one fault, as fault-schedule data:

* ``gd-link-b1-s1`` — link b1–s1 stalled 2.5 s, then failed for 10 s (Figure 6);
* ``gd-crash-b1`` — b1 stalled 2.5 s, then crashed, restarted 30 s later (Figure 7);
* ``gd-crash-p1`` — p1 crashed, restarted 20 s later (Figure 8). As for the other two, the
  paper's revised injection stalls the broker first ("accepted data but did not forward it",
  about 2–3 s) so that messages are logged but never sent: after the restart the pubends'
  AckExpected makes the subends nack them [GD §3.2, §4.2].

The first fault comes at 10 s so the 10 s before it measure the steady state. The run is
judged by every invariant, and :func:`metrics` computes the figures of issue 3 §6 from the
recorded trace alone (wire summaries, deliveries, publishes): ``lost``, ``duplicates``,
``out_of_order``, ``nacks``, ``nack_range_ms``, ``nack_targets``,
``nack_consolidation_ratio`` (:func:`consolidation`), ``nacks_while_down``, ``logged`` beside
``published``, ``ack_expected_sent``, ``latency_ms``,
``latency_p50_before_ms``, ``latency_p50_after_ms``; :func:`pass_marks` applies the paper's
claims to them.
"""

from __future__ import annotations

from typing import Any, Final

from gapless.impl.effects import deliveries
from gapless.impl.trace import TraceRecord, percentile
from gapless.models.faults import FaultEvent
from gapless.models.gd_binding import logged_batch
from gapless.models.registry import Scenario
from gapless.models.runspec import RunOutcome, RunSpec
from gapless.models.workload import WorkloadSpec

__all__ = ["SCENARIOS", "metrics", "pass_marks"]

_S: Final = 1_000_000
FIRST_FAULT_US: Final = 10 * _S


def _spec(duration_s: int) -> RunSpec:
    return RunSpec(
        topology="fig3",
        workload=WorkloadSpec(rate_per_pubend=25.0, size=100, subscribers_per_shb=1),
        duration_us=duration_s * _S,
        drain_us=20 * _S,
    )


def _ms(us: int | None) -> float | None:
    return None if us is None else round(us / 1000.0, 3)


def _down_intervals(trace: tuple[TraceRecord, ...], broker: str) -> list[tuple[int, int]]:
    """When ``broker`` was crashed (from its crash to its restart)."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for r in trace:
        if r.kind != "fault" or not hasattr(r.detail, "target") or r.detail.target != broker:
            continue
        k, ph = r.detail.kind, r.detail.phase
        if (k == "crash" and ph == "start") or (k == "stall_broker" and ph == "fail"):
            start = r.time
        elif k in ("crash", "stall_broker") and ph == "end" and start is not None:
            out.append((start, r.time))
            start = None
    if start is not None:
        out.append((start, trace[-1].time if trace else start))
    return out


def consolidation(
    nack_range: dict[str, int], nack_targets: dict[str, set[str]]
) -> tuple[float | None, dict[str, float]]:
    """The nack consolidation ratio of a run [GD §3.1], defined from its nacks alone: the
    *nacking brokers* are those that sent nacks and received none (the subscriber brokers that
    first missed ticks); the brokers *one hop above* are the ones they nacked. The ratio is
    the nack range the hop above sent upstream over the nacking brokers' total — 1/k when k
    downstream nacks for the same ticks are consolidated into one. Also per group of nacking
    brokers with the same targets (``"b1,b2 <- s1,s2"``)."""
    targeted = {t for ts in nack_targets.values() for t in ts}
    nacking = sorted(b for b, v in nack_range.items() if v > 0 and b not in targeted)
    groups: dict[tuple[str, ...], list[str]] = {}
    for b in nacking:
        groups.setdefault(tuple(sorted(nack_targets.get(b, ()))), []).append(b)

    def ratio(below: list[str], above: tuple[str, ...]) -> float | None:
        total = sum(nack_range[b] for b in below)
        return None if total == 0 else round(sum(nack_range.get(a, 0) for a in above) / total, 4)

    above_all = tuple(sorted({a for b in nacking for a in nack_targets.get(b, ())}))
    by_group = {
        f"{','.join(above)} <- {','.join(below)}": ratio(below, above)
        for above, below in sorted(groups.items())
    }
    return ratio(nacking, above_all), {k: v for k, v in by_group.items() if v is not None}


_UNLOGGED_NOTE: Final = (
    "{n} published message(s) whose log write had not completed when their pubend crashed: "
    "never durable, so never delivered and not lost (only logged messages are guaranteed "
    "[GD §3.2]); 'lost' counts logged messages only"
)


def metrics(scenario: Scenario, outcome: RunOutcome, brokers: tuple[str, ...]) -> dict[str, Any]:
    """The JSON figures of issue 3 §6, computed from ``outcome.trace``."""
    trace = outcome.trace or ()
    spec = scenario.spec
    published_at: dict[tuple[str, int], int] = {}
    persist_keys: dict[tuple[str, Any], tuple[tuple[str, int], ...]] = {}
    logged: dict[str, dict[int, int]] = {}
    conn_start: dict[tuple[str, int], int] = {}
    delivered: dict[tuple[str, int, str], list[int]] = {}
    nacks = dict.fromkeys(brokers, 0)
    nack_range = dict.fromkeys(brokers, 0)
    nack_targets: dict[str, set[str]] = {b: set() for b in brokers}
    nack_times: list[int] = []
    ack_expected = 0
    lat: list[tuple[int, int]] = []  # (publish time, latency)
    for r in trace:
        k = r.kind
        if k == "publish":
            published_at[(r.detail.pubend, r.detail.index)] = r.time
        elif k == "persist":
            lts = logged_batch(r.detail)
            if lts:
                persist_keys[(r.node, r.detail.key)] = tuple((lt[0], lt[1]) for lt in lts)
        elif k == "persisted":
            for pt in persist_keys.get((r.node, r.detail.key), ()):
                logged.setdefault(pt[0], {})[pt[1]] = r.time
        elif k == "connect":
            conn_start[(r.detail.subscriber, r.detail.connection)] = r.time
        elif k == "deliver":
            for d in deliveries(r.detail):
                delivered.setdefault((d.subscriber, d.connection, d.pubend), []).append(d.tick)
                t0 = getattr(d.payload, "published_at", None)
                if t0 is not None:
                    lat.append((t0, r.time - t0))
        elif k == "send":
            w = r.detail.wire
            if w.kind == "nack":
                nacks[r.node] = nacks.get(r.node, 0) + 1
                nack_range[r.node] = nack_range.get(r.node, 0) + sum(
                    hi - lo + 1 for lo, hi in w.nack_ranges
                )
                nack_targets.setdefault(r.node, set()).add(r.detail.to)
                nack_times.append(r.time)
            elif w.kind == "ack_expected":
                ack_expected += 1
    # lost / duplicates / out of order, per connection that lasted to the end
    lost = duplicates = out_of_order = 0
    latest: dict[str, int] = {}
    for (sub, conn), _t in conn_start.items():
        latest[sub] = max(latest.get(sub, -1), conn)
    for ticks in delivered.values():
        seen: set[int] = set()
        last = -1
        for t in ticks:
            if t in seen:
                duplicates += 1
            elif t < last:
                out_of_order += 1
            seen.add(t)
            last = max(last, t)
    for sub, conn in sorted(latest.items()):
        start = conn_start[(sub, conn)]
        for pubend, logged_at in sorted(logged.items()):
            have = set(delivered.get((sub, conn, pubend), ()))
            lost += sum(1 for t in logged_at if t not in have and t >= start)
    lat.sort()
    lats = sorted(v for _, v in lat)
    first = FIRST_FAULT_US
    before = sorted(v for t, v in lat if first - 10 * _S <= t < first)
    after = sorted(v for t, v in lat if spec.duration_us - 10 * _S <= t < spec.duration_us)
    ratio, by_group = consolidation(nack_range, nack_targets)
    n_logged = sum(len(v) for v in logged.values())
    unlogged = outcome.counters.published - n_logged
    while_down: int | None = None
    after_restart: int | None = None
    if scenario.crashed is not None:
        downs = _down_intervals(trace, scenario.crashed)
        while_down = sum(1 for t in nack_times if any(a <= t < b for a, b in downs))
        if downs:
            after_restart = sum(1 for t in nack_times if t >= downs[-1][1])
    return {
        "scenario": scenario.name,
        "verdict": outcome.verdict,
        "invariant": outcome.invariant,
        "lost": lost,
        "duplicates": duplicates,
        "out_of_order": out_of_order,
        "published": outcome.counters.published,
        "logged": n_logged,
        "published_not_logged": unlogged,
        "published_not_logged_note": _UNLOGGED_NOTE.format(n=unlogged) if unlogged else None,
        "delivered": outcome.counters.delivered,
        "nacks": dict(sorted(nacks.items())),
        "nack_range_ms": {b: _ms(v) for b, v in sorted(nack_range.items())},
        "nack_targets": {b: sorted(v) for b, v in sorted(nack_targets.items())},
        "nack_consolidation_ratio": ratio,
        "nack_consolidation_by_group": by_group,
        "nacks_while_down": while_down,
        "nacks_after_restart": after_restart,
        "ack_expected_sent": ack_expected,
        "latency_ms": {
            "p50": _ms(percentile(lats, 0.5)),
            "p99": _ms(percentile(lats, 0.99)),
            "max": _ms(lats[-1] if lats else None),
        },
        "latency_p50_before_ms": _ms(percentile(before, 0.5)),
        "latency_p50_after_ms": _ms(percentile(after, 0.5)),
    }


def pass_marks(name: str, m: dict[str, Any]) -> dict[str, bool]:
    """The paper's claims for scenario ``name`` applied to its metrics (issue 3 §6)."""
    marks = {
        "invariants hold": m["verdict"] == "pass",
        "nothing lost": m["lost"] == 0,
        "no duplicates": m["duplicates"] == 0,
        "nothing out of order": m["out_of_order"] == 0,
    }
    before, after = m["latency_p50_before_ms"], m["latency_p50_after_ms"]
    marks["latency after within 20% of before"] = (
        before is not None and after is not None and abs(after - before) <= 0.2 * before
    )
    if name == "gd-link-b1-s1":
        marks["s1's nacks go to b2"] = m["nack_targets"].get("s1") == ["b2"]
    elif name == "gd-crash-b1":
        r = m["nack_consolidation_ratio"]
        marks["b2's nack range is about half of s1's and s2's (0.4-0.6)"] = (
            r is not None and 0.4 <= r <= 0.6
        )
    elif name == "gd-crash-p1":
        marks["no nacks while p1 is down"] = m["nacks_while_down"] == 0
        marks["AckExpected sent after restart"] = m["ack_expected_sent"] > 0
        marks["nacks after the restart"] = m["nacks_after_restart"] > 0
    return marks


def _scenario(**fields: Any) -> Scenario:
    return Scenario(protocol="gd", figures=metrics, pass_marks=pass_marks, **fields)


SCENARIOS: Final[dict[str, Scenario]] = {
    s.name: s
    for s in (
        _scenario(
            name="gd-link-b1-s1",
            description="link b1-s1 stalled 2.5 s, then failed for 10 s [GD §4.2, Figure 6]",
            spec=_spec(40),
            events=(
                FaultEvent(
                    kind="stall_link",
                    at_us=FIRST_FAULT_US,
                    stall_us=2_500_000,
                    duration_us=10 * _S,
                    target="b1|s1",
                    stream=1,
                ),
            ),
        ),
        _scenario(
            name="gd-crash-b1",
            description="b1 stalled 2.5 s, then crashed, restarted 30 s later [GD §4.2, Figure 7]",
            spec=_spec(60),
            events=(
                FaultEvent(
                    kind="stall_broker",
                    at_us=FIRST_FAULT_US,
                    stall_us=2_500_000,
                    duration_us=30 * _S,
                    target="b1",
                    stream=1,
                ),
            ),
            crashed="b1",
        ),
        _scenario(
            name="gd-crash-p1",
            description=(
                "p1 stalled 2.5 s (logging, not sending), then crashed, restarted 20 s later "
                "[GD §4.2, Figure 8]"
            ),
            spec=_spec(50),
            events=(
                FaultEvent(
                    kind="stall_broker",
                    at_us=FIRST_FAULT_US,
                    stall_us=2_500_000,
                    duration_us=20 * _S,
                    target="p1",
                    stream=1,
                ),
            ),
            crashed="p1",
        ),
    )
}
