"""Durable subscriptions' scenarios [DUR §5] (``gapless simulate --scenario NAME --json``).

Theory of operation
-------------------
Each scenario is a run of the ``durable`` protocol on ``dur-line`` (one PHB with four pubends,
one intermediate broker, one SHB), judged online by the four durable invariants, and read from
its trace (the ``dur_*`` records the binding carries, read back by
:func:`~gapless.invariants.durable.online.durable_record`) — online, record by record, by
:class:`DurableFold` (the scenarios' ``fold``: ``gapless simulate`` holds no trace unless
``--trace`` asks for it), or from a recorded trace by :func:`durable_figures`; both give the
same figures:

* ``lost`` — matching events after the CT each subscriber started from, outside the ranges its
  gaps announced, never delivered; ``duplicates`` — event messages delivered twice;
* ``gaps_delivered`` (per subscriber in ``gaps_by_subscriber``), ``gap_ticks`` (the ticks the
  gap messages cover, ``t - t0`` summed: a catchup stream reading the PFS sends a gap over each
  *matched* tick that was released, with silences between, so this is also the number of
  matching events lost to early release, and equals ``gaps_delivered`` there), ``gap_span_ticks``
  (per subscriber and pubend, from its first gap's ``t0`` to its last gap's ``t``: the stretch
  the gaps are spread over, to compare with ``early_released_ticks``) and
  ``gap_ticks_not_early_released`` (gap ticks above what that subscriber acknowledged that the
  pubend had not released early: 0 by the rules);
* ``catchup_s`` {p50, p99, mean, n} — from a reconnection to the last switchover of its
  catchup streams [DUR §4.1];
* ``latest_delivered_rate`` / ``released_rate`` — ticks per second the SHB's
  ``latestDelivered(p)`` / ``released(p)`` advanced over the run, mean over pubends (a tick is
  a µs: 1e6 means keeping pace with the pubends' clocks).

Scenarios:

* ``dur-early-release`` — maxRetain 10 s; subscriber ``shb1.u0`` disconnected from 10 s to 40 s
  of a 60 s run: it gets gaps exactly over the ticks released early above its CT; nobody else
  gets any [DUR §3, "PHB Controlled Policy"];
* ``dur-disconnect`` — [DUR §5.1]: 800 events/s over 4 pubends, 40 subscribers at 200 events/s
  each (filter ``k == i % 4``), each disconnected for 5 s every 300 s, staggered, 600 s;
  ``dur-disconnect-short`` — the same rates, 20 s, each subscriber disconnected once for 5 s
  (staggered over 12 s): the version ``make test`` runs;
* ``dur-shb-crash`` — [DUR §5.3, Figure 7]: 40 subscribers; the SHB down 25 s (20 s to 45 s);
  the subscribers reconnect 10 s after it restarts, once the constream has caught up, and all
  catch up at once (the paper measured 116 s on average), so the run lasts 240 s. Extra
  figures: ``latest_delivered_flat_s``, ``catchup_slope_ratio`` (latestDelivered's slope from
  the restart until the constream caught up, over its slope before the crash: bounded by the
  SHB's capacity), ``constream_catchup_s``, ``released_flat_until_reconnect``.

Capacity: every scenario runs on ``dur-line-capacity`` (:func:`dur_line_capacity`), whose
brokers handle what they receive one message at a time and spend :data:`SERVICE_US` (50 µs:
the paper's 20,000 events/s for one SHB [DUR §5.1]) per event received and per delivery to a
client (the world's local-work model, :mod:`gapless.models.world`). The constream asks for
its next nack window as soon as an answer lands (:mod:`gapless.impl.durable.shb`), and each
catchup stream has at most :data:`CATCHUP_WINDOW` matched ticks asked beyond its position:
how fast the SHB recovers and catches up is bounded by its spare capacity, the timer only
retrying. ``capacity`` in the figures says what was modelled; ``constream_catchup_s`` (the
crash scenario) how long the constream took to catch up after the restart.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, Final, final

import networkx as nx

from gapless.impl.durable.messages import EventMessage, GapMessage
from gapless.impl.filters import parse_filter
from gapless.impl.trace import TraceRecord
from gapless.invariants.durable.online import durable_record
from gapless.models.durable_binding import dur_line
from gapless.models.faults import FaultEvent
from gapless.models.registry import Scenario
from gapless.models.runspec import RunSpec
from gapless.models.workload import WorkloadSpec

__all__ = [
    "CAPACITY_TOPOLOGIES",
    "SCENARIOS",
    "SERVICE_US",
    "DurableFold",
    "dur_line_capacity",
    "durable_figures",
    "durable_pass_marks",
    "report_series",
    "run_marks",
]

_S: Final = 1_000_000

SERVICE_US: Final = 50
"""A broker's service time per event it handles, µs: each delivery to a local client and
each event it receives. 50 µs is 20,000 events/s, the single SHB's capacity [DUR §5.1:
"20K events/s for 1 SHB"]."""

CATCHUP_WINDOW: Final = 64
"""A catchup stream reads and nacks at most this many matched ticks beyond its position at
a time (the flow control of catchup nacks [DUR §4.1]; the pubend's answer window)."""


def dur_line_capacity() -> nx.Graph:
    """``dur-line`` with the world's local-work capacity model (:mod:`gapless.models.world`):
    every broker spends :data:`SERVICE_US` per event received and per delivery, handling what
    it receives one message at a time."""
    g = dur_line()
    g.graph["name"] = "dur-line-capacity"
    g.graph["deliver_us"] = SERVICE_US
    g.graph["receive_us"] = SERVICE_US
    return g


CAPACITY_TOPOLOGIES: Final = {"dur-line-capacity": dur_line_capacity}
"""The durable scenarios' topology with a finite broker capacity."""


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _slope(points: list[tuple[int, int]]) -> float | None:
    """Ticks per second between the first and last point ``(time µs, value)``."""
    if len(points) < 2 or points[-1][0] == points[0][0]:
        return None
    return (points[-1][1] - points[0][1]) * _S / (points[-1][0] - points[0][0])


class _Reader:
    """The facts of a durable trace the figures need (see the module doc), gathered one record
    at a time (:meth:`add`): what the subscribers were delivered is kept per subscriber and
    pubend as a set of ticks and a count, not as the records themselves."""

    def __init__(self, trace: Iterable[TraceRecord] = ()) -> None:
        self.events: dict[str, dict[int, Any]] = {}
        self.start: dict[str, dict[str, int]] = {}
        self.filters: dict[str, str] = {}
        self.delivered: dict[str, dict[str, set[int]]] = {}
        self.deliveries = 0
        self.gaps: dict[str, list[tuple[str, int, int, int]]] = {}
        self.acked: dict[str, dict[str, int]] = {}
        self.early: dict[str, list[tuple[int, int]]] = {}
        self.through: dict[str, int] = {}
        self.reports: dict[str, list[tuple[int, int, int]]] = {}
        self.connects: list[tuple[str, int, frozenset[str]]] = []
        self.switch: dict[str, list[int]] = {}
        for r in trace:
            self.add(r)

    def add(self, record: TraceRecord) -> TraceRecord | None:
        """Read one record of the trace; the ``dur_*`` record it carried, if any."""
        d = durable_record(record)
        if d is not None:
            self._add(d)
        return d

    def _add(self, r: TraceRecord) -> None:
        k, d = r.kind, r.detail
        if k == "dur_event":
            self.events.setdefault(d.pubend, {})[d.tick] = d.attributes
        elif k == "dur_join":
            self.start[d.subscriber] = d.ct.as_dict()
            self.filters[d.subscriber] = d.filter
            self.acked[d.subscriber] = d.ct.as_dict()
        elif k == "dur_connect":
            self.connects.append((d.subscriber, r.time, frozenset(d.catchup)))
        elif k == "dur_switchover":
            self.switch.setdefault(d.subscriber, []).append(r.time)
        elif k == "dur_ack":
            got = self.acked.setdefault(d.subscriber, {})
            for p, t in d.ct.entries.items():
                got[p] = max(got.get(p, -1), t)
        elif k == "dur_message":
            m = d.message
            if type(m) is EventMessage:
                self.delivered.setdefault(d.subscriber, {}).setdefault(m.pubend, set()).add(m.t)
                self.deliveries += 1
            elif type(m) is GapMessage:
                acked = self.acked.get(d.subscriber, {}).get(m.pubend, -1)
                self.gaps.setdefault(d.subscriber, []).append((m.pubend, m.t0, m.t, acked))
        elif k == "dur_release":
            lo = max(self.through.get(d.pubend, -1), d.tr) + 1
            if d.through >= lo:
                self.early.setdefault(d.pubend, []).append((lo, d.through))
            self.through[d.pubend] = max(self.through.get(d.pubend, -1), d.through)
        elif k == "dur_report" and r.node.startswith("shb"):
            self.reports.setdefault(d.pubend, []).append((r.time, d.released, d.delivered))

    def distinct(self) -> int:
        """Event messages delivered, each (subscriber, pubend, tick) counted once."""
        return sum(len(ts) for per in self.delivered.values() for ts in per.values())

    def lost(self) -> int:
        n = 0
        for sub, start in self.start.items():
            flt = parse_filter(self.filters[sub])
            mine = self.delivered.get(sub, {})
            gaps = self.gaps.get(sub, ())
            for p, evs in self.events.items():
                got = mine.get(p, set())
                for t, a in evs.items():
                    if t <= start.get(p, -1) or not flt.matches(a) or t in got:
                        continue
                    if any(g[0] == p and g[1] < t <= g[2] for g in gaps):
                        continue
                    n += 1
        return n

    def not_early(self) -> int:
        """Gap ticks above the subscriber's acknowledged CT outside every early release."""
        n = 0
        for gaps in self.gaps.values():
            for p, t0, t, acked in gaps:
                lo = max(t0, acked) + 1
                for tick_lo, tick_hi in ((lo, t),):
                    covered = sum(
                        max(0, min(tick_hi, b) - max(tick_lo, a) + 1)
                        for a, b in self.early.get(p, ())
                    )
                    n += max(0, tick_hi - tick_lo + 1) - covered
        return n

    def catchups(self) -> list[float]:
        out: list[float] = []
        for sub, at, catchup in self.connects:
            if not catchup:
                continue
            after = [t for t in self.switch.get(sub, ()) if t >= at]
            if len(after) >= len(catchup):
                out.append((sorted(after)[len(catchup) - 1] - at) / _S)
        return out


def _gap_span(gaps: dict[str, list[tuple[str, int, int, int]]]) -> int:
    """Per subscriber and pubend, the ticks from its first gap's ``t0`` to its last gap's
    ``t`` (the stretch its gaps are spread over), summed."""
    span: dict[tuple[str, str], tuple[int, int]] = {}
    for sub, gs in gaps.items():
        for p, t0, t, _a in gs:
            lo, hi = span.get((sub, p), (t0, t))
            span[sub, p] = (min(lo, t0), max(hi, t))
    return sum(hi - lo for lo, hi in span.values())


def durable_figures(scenario: Scenario, outcome: Any, brokers: tuple[str, ...]) -> dict[str, Any]:
    """The figures of a durable scenario (see the module doc), read from its recorded trace."""
    return _figures(scenario, outcome, _Reader(outcome.trace or ()))


@final
class DurableFold:
    """The figures of a durable scenario computed online [DUR §5]: fed every trace record as
    the run emits it (:meth:`add`, the scenario's ``fold``, :func:`~gapless.models.runner.
    run_scenario`), it keeps what the figures need (:class:`_Reader`: the published events'
    attributes, per subscriber and pubend the ticks it was delivered, the gaps, the SHBs'
    reports...) and, for ``--plot``, the few records :func:`report_series` and
    :func:`run_marks` read (:meth:`kept`), so a long run need not hold its whole trace in
    memory (``spec/durable.md`` section 10). :meth:`figures` equals :func:`durable_figures`
    on the whole trace (``tests/durable/test_dur7_fold.py``)."""

    def __init__(self) -> None:
        self.reader = _Reader()
        self._kept: list[TraceRecord] = []

    def add(self, record: TraceRecord) -> None:
        """Read one record as the run emits it."""
        d = self.reader.add(record)
        if d is not None:
            if d.kind == "dur_switchover" or (d.kind == "dur_report" and d.node.startswith("shb")):
                self._kept.append(record)
        elif record.kind == "fault" or (record.kind == "connect" and record.detail.connection > 0):
            self._kept.append(record)

    def kept(self) -> tuple[TraceRecord, ...]:
        """The records ``--plot`` reads, in trace order."""
        return tuple(self._kept)

    def figures(self, scenario: Scenario, outcome: Any, brokers: tuple[str, ...]) -> dict[str, Any]:
        """The scenario's figures from what was folded (as :func:`durable_figures`)."""
        return _figures(scenario, outcome, self.reader)


def _figures(scenario: Scenario, outcome: Any, rd: _Reader) -> dict[str, Any]:
    deliveries = rd.deliveries
    distinct = rd.distinct()
    cu = rd.catchups()
    ld = [_slope([(t, d) for t, _r, d in pts]) for pts in rd.reports.values()]
    rl = [_slope([(t, r) for t, r, _d in pts if r >= 0]) for pts in rd.reports.values()]
    ldv = [x for x in ld if x is not None]
    rlv = [x for x in rl if x is not None]
    figures: dict[str, Any] = {
        "scenario": scenario.name,
        "verdict": outcome.verdict,
        "invariant": outcome.invariant,
        "explanation": outcome.explanation,
        "published": outcome.counters.published,
        "events_delivered": deliveries,
        "lost": rd.lost(),
        "duplicates": deliveries - distinct,
        "gaps_delivered": sum(len(g) for g in rd.gaps.values()),
        "gaps_by_subscriber": {s: len(g) for s, g in sorted(rd.gaps.items())},
        "gap_ticks": sum(t - t0 for gs in rd.gaps.values() for _p, t0, t, _a in gs),
        "gap_span_ticks": _gap_span(rd.gaps),
        "gap_ticks_not_early_released": rd.not_early(),
        "early_released_ticks": sum(b - a + 1 for rs in rd.early.values() for a, b in rs),
        "catchup_s": {
            "n": len(cu),
            "p50": _pct(cu, 0.5),
            "p99": _pct(cu, 0.99),
            "mean": sum(cu) / len(cu) if cu else None,
        },
        "latest_delivered_rate": sum(ldv) / len(ldv) if ldv else None,
        "released_rate": sum(rlv) / len(rlv) if rlv else None,
        "simulated_s": outcome.end_time_us / _S,
    }
    graph = outcome_graph(scenario)
    if graph.get("deliver_us"):
        figures["capacity"] = {
            "deliver_us": graph["deliver_us"],
            "receive_us": graph.get("receive_us", 0),
            "events_per_s": _S // graph["deliver_us"],
        }
    crash = [e for e in scenario.events if e.kind == "crash"]
    if crash:
        away = [e.at_us + e.duration_us for e in scenario.events if e.kind == "disconnect"]
        down, up = crash[0].at_us, crash[0].at_us + crash[0].duration_us
        figures.update(_crash_figures(rd, down, up, max(away, default=up)))
    return figures


def _caught_up(pairs: list[tuple[int, int]], down: int, up: int) -> int | None:
    """When the constream had caught up after the restart at ``up``: the first report at
    which latestDelivered lags the clock by no more than it did, at worst, before the crash
    (plus one SHB tick of slack); None if it never did."""
    before = [t - d for t, d in pairs if t < down]
    if not before:
        return None
    lag = max(before) + 100_000
    return next((t for t, d in pairs if t > up and t - d <= lag), None)


def outcome_graph(scenario: Scenario) -> dict[str, Any]:
    """The graph attributes of the scenario's topology (its capacity model, if any)."""
    build = CAPACITY_TOPOLOGIES.get(scenario.spec.topology)
    return dict(build().graph) if build is not None else {}


def _recovery_slope(pairs: list[tuple[int, int]], up: int, end: int | None) -> float | None:
    """latestDelivered's slope while the constream recovers: from the last report after the
    restart at ``up`` that still shows it where it stood (the constream's first nack waits for
    the SHB's first tick) to the last report before it had caught up at ``end`` (the interval
    ending at ``end`` is partly at the normal pace), or to ``end`` if no report lies between."""
    after = [p for p in pairs if up < p[0] <= (end if end is not None else up)]
    if end is None or not after:
        return None
    start = max(p for p in after if p[1] == after[0][1])
    climb = [p for p in after if start[0] < p[0] < end] or [after[-1]]
    return _slope([start, climb[-1]])


def _crash_figures(rd: _Reader, down: int, up: int, back: int) -> dict[str, Any]:
    """Figure 7's readings [DUR §5.3] from the SHB's reports around its crash: down at
    ``down``, restarted at ``up``, its subscribers reconnected at ``back`` (µs).
    ``catchup_slope_ratio``: latestDelivered's slope from the restart until the constream
    caught up (:func:`_recovery_slope`; ``constream_catchup_s`` long, :func:`_caught_up`) over
    its slope before the crash."""
    flat: list[float] = []
    ratio: list[float] = []
    caught: list[float] = []
    released_flat = True
    for pts in rd.reports.values():
        # latestDelivered is flat while the SHB is down: the longest stretch of consecutive
        # report intervals over which it advanced at less than half the clock's pace
        pairs = [(t, d) for t, _r, d in pts]
        best = run = 0
        for (t0, d0), (t1, d1) in itertools.pairwise(pairs):
            run = run + (t1 - t0) if 2 * (d1 - d0) < t1 - t0 else 0
            best = max(best, run)
        flat.append(best / _S)
        normal = _slope([p for p in pairs if p[0] < down])
        end = _caught_up(pairs, down, up)
        if end is not None:
            caught.append((end - up) / _S)
        s = _recovery_slope(pairs, up, end)
        if normal and s:
            ratio.append(s / normal)
        rel = [r for t, r, _d in pts if down <= t < back]
        released_flat = released_flat and len(set(rel)) <= 1
    return {
        "shb_down_s": (up - down) / _S,
        "latest_delivered_flat_s": max(flat) if flat else None,
        "catchup_slope_ratio": sum(ratio) / len(ratio) if ratio else None,
        "constream_catchup_s": max(caught) if caught else None,
        "released_flat_until_reconnect": released_flat,
    }


def report_series(trace: Iterable[TraceRecord]) -> dict[str, list[tuple[int, int, int]]]:
    """Per pubend, the SHBs' release reports ``(time µs, released(p), latestDelivered(p))``
    in trace order (what ``--plot`` draws)."""
    return _Reader(trace).reports


def run_marks(trace: Iterable[TraceRecord]) -> dict[str, Any]:
    """What ``--plot`` marks, in seconds: ``shb_down`` (start, end) per SHB crash,
    ``reconnect`` (the times at which subscribers reconnected after a crash or a
    disconnection, at most one per second), ``catchup_done`` (the last switchover)."""
    down: list[tuple[float, float]] = []
    start: dict[str, float] = {}
    back: list[float] = []
    rd = _Reader()
    for r in trace:
        rd.add(r)
        if r.kind == "fault" and r.detail.kind == "crash" and r.node.startswith("shb"):
            if r.detail.phase == "start":
                start[r.detail.target] = r.time / _S
            elif r.detail.target in start:
                down.append((start.pop(r.detail.target), r.time / _S))
        elif r.kind == "connect" and r.detail.connection > 0:
            t = r.time / _S
            if not back or t - back[-1] >= 1.0:
                back.append(t)
    switch = [t for ts in rd.switch.values() for t in ts]
    return {
        "shb_down": down,
        "reconnect": back,
        "catchup_done": max(switch) / _S if switch else None,
    }


def durable_pass_marks(name: str, f: dict[str, Any]) -> dict[str, bool]:
    """The claims each scenario must meet (see the module doc)."""
    marks = {
        "invariants hold": f["verdict"] == "pass",
        "no loss": f["lost"] == 0,
        "no duplicate": f["duplicates"] == 0,
        "gaps only over early-released ticks": f["gap_ticks_not_early_released"] == 0,
    }
    if name == "dur-early-release":
        marks["the disconnected subscriber got gaps"] = (
            set(f["gaps_by_subscriber"]) == {"shb1.u0"} and f["gap_ticks"] > 0
        )
    else:
        marks["no gap with early release off"] = f["gaps_delivered"] == 0
        marks["every reconnection caught up"] = f["catchup_s"]["n"] > 0
        rate = f["latest_delivered_rate"]
        marks["latestDelivered keeps pace"] = rate is not None and rate > 0.9 * _S
    if "latest_delivered_flat_s" in f:
        flat = f["latest_delivered_flat_s"]
        marks["latestDelivered flat about as long as the SHB was down"] = (
            flat is not None and f["shb_down_s"] <= flat <= f["shb_down_s"] + 2
        )
        marks["released flat until reconnect"] = bool(f["released_flat_until_reconnect"])
        ratio = f["catchup_slope_ratio"]
        marks["catchup slope above normal"] = ratio is not None and ratio > 2
    return marks


# ------------------------------------------------------------------------------ specs


def _spec(
    duration_s: int,
    *,
    subs: int,
    rate: float,
    config: tuple[tuple[str, Any], ...] = (),
    drain_s: int = 5,
) -> RunSpec:
    return RunSpec(
        protocol="durable",
        topology="dur-line-capacity",
        workload=WorkloadSpec(
            rate_per_pubend=rate, subscribers_per_shb=subs, filters="keys", keys=4, size=418
        ),
        duration_us=duration_s * _S,
        drain_us=drain_s * _S,
        config=(("catchup_window", CATCHUP_WINDOW), *config),
        max_events=50_000_000,
    )


def _disconnects(subs: int, every_s: int, span_s: float, duration_s: int) -> tuple[FaultEvent, ...]:
    """Subscriber ``shb1.u{k}`` disconnects for 5 s at ``5 + k * span / subs`` s and every
    ``every_s`` after, while the run lasts."""
    out = []
    for k in range(subs):
        at = 5 * _S + round(k * span_s * _S / subs)
        while at + 5 * _S < duration_s * _S:
            out.append(
                FaultEvent(
                    kind="disconnect", at_us=at, duration_us=5 * _S, target=f"shb1.u{k}", stream=k
                )
            )
            at += every_s * _S
    return tuple(sorted(out, key=lambda e: (e.at_us, e.target)))


_CRASH_AT: Final = 20 * _S
_RESTART_AT: Final = 45 * _S
_RECONNECT_AT: Final = 55 * _S


def _crash_events(subs: int) -> tuple[FaultEvent, ...]:
    crash = FaultEvent(
        kind="crash", at_us=_CRASH_AT, duration_us=_RESTART_AT - _CRASH_AT, target="shb1", stream=0
    )
    away = tuple(
        FaultEvent(
            kind="disconnect",
            at_us=_CRASH_AT - 1,
            duration_us=_RECONNECT_AT - _CRASH_AT + 1,
            target=f"shb1.u{k}",
            stream=1 + k,
        )
        for k in range(subs)
    )
    return (*away, crash)


def _scenario(
    name: str, description: str, spec: RunSpec, events: tuple[FaultEvent, ...]
) -> Scenario:
    return Scenario(
        name=name,
        protocol="durable",
        description=description,
        spec=spec,
        events=events,
        figures=durable_figures,
        pass_marks=durable_pass_marks,
        plot="durable",
        fold=DurableFold,
    )


SCENARIOS: Final[dict[str, Scenario]] = {
    s.name: s
    for s in (
        _scenario(
            "dur-early-release",
            "maxRetain 10 s; one of 4 subscribers disconnected 30 s: gaps exactly over the "
            'early-released ticks, for it alone [DUR §3, "PHB Controlled Policy"]',
            _spec(60, subs=4, rate=10.0, config=(("max_retain_us", 10 * _S),)),
            (
                FaultEvent(
                    kind="disconnect",
                    at_us=10 * _S,
                    duration_us=30 * _S,
                    target="shb1.u0",
                    stream=0,
                ),
            ),
        ),
        _scenario(
            "dur-disconnect",
            "800 events/s over 4 pubends, 40 subscribers at 200 events/s, each disconnected "
            "5 s every 300 s (staggered), 600 s [DUR §5.1] (long: about 17 min of CPU)",
            _spec(600, subs=40, rate=200.0),
            _disconnects(40, 300, 300.0, 600),
        ),
        _scenario(
            "dur-disconnect-short",
            "dur-disconnect's rates for 20 s, each of 40 subscribers disconnected once for 5 s "
            "(staggered over 12 s) [DUR §5.1]",
            _spec(20, subs=40, rate=200.0),
            _disconnects(40, 300, 12.0, 20),
        ),
        _scenario(
            "dur-disconnect-60",
            "dur-disconnect's rates for 60 s, each of 40 subscribers disconnected once for 5 s "
            "(staggered over 50 s) [DUR §5.1]: the 60 s version `make test` runs",
            _spec(60, subs=40, rate=200.0),
            _disconnects(40, 300, 50.0, 60),
        ),
        _scenario(
            "dur-shb-crash",
            "40 subscribers; the SHB down 25 s; subscribers reconnect 10 s after its restart, "
            "once the constream caught up, and catch up together at the SHB's capacity "
            "[DUR §5.3, Figure 7] (long: 24 CPU min measured, about 1 GB)",
            _spec(240, subs=40, rate=200.0, drain_s=10),
            _crash_events(40),
        ),
    )
}
"""Durable subscriptions' scenarios, by name."""
