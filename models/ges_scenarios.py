"""GES scenarios: roaming clients recovered exactly once while a unit fails for good and a
stable storage fails and recovers [GES "Reliable delivery", "Recovering clients"].

Theory of operation
-------------------
``ges-latency``: the paper's Figure 7 experiment, :mod:`gapless.models.ges_latency` (a sweep of
runs with finite broker and link capacity); the scenario's own run is a short ``ges-dense``
run judged by every invariant.

``ges-roam``: the 22-node ``ges-dense`` topology, 10 clients per node (220 clients, mixed
profiles), publishers ``P0`` (n22) and ``P1`` (n1) at 5 events/s each for 20 s. Every client
roams every 4 s (disconnects for 0.5 s, then reconnects at a node drawn among the live
ones), staggered over the clients; at 6 s the cluster ``n12``–``n15`` fails for good (the
world's ``fail``: never restarted); at 10 s the storage node ``n17`` crashes and recovers 2 s
later. Judged by every invariant.

:func:`roam_figures` reads the recorded trace alone: ``lost`` (a client connected at the end
never received an event logged after its registration epoch that matches its profile in
force when the event was published: clients change profiles at some of their reconnections,
see :mod:`gapless.models.ges_binding`),
``duplicates``, ``out_of_order`` (per client and publisher), ``roams`` (reconnections),
``recovery_events`` {p50, p99} (events in the recovery queues that storages sent: in the
handoff's answer, plus, with the finer tier, the part a system storage asked the storage of the
client's old cluster to send, :class:`~gapless.impl.ges.messages.Recover`) and
``recovery_ms`` {p50, p99} (from a reconnection to the first live event on it: one after the
cut of its storage).
"""

from __future__ import annotations

from typing import Any, Final

from gapless.impl.effects import deliveries
from gapless.impl.ges.messages import GesWire
from gapless.impl.trace import TraceRecord, percentile
from gapless.models.faults import FaultEvent
from gapless.models.ges_binding import network
from gapless.models.ges_latency import latency_figures, latency_pass_marks
from gapless.models.ges_news import news_figures
from gapless.models.ges_topology import GES_TOPOLOGIES, ges_dense
from gapless.models.registry import Scenario
from gapless.models.runspec import RunOutcome, RunSpec
from gapless.models.workload import WorkloadSpec, generate_workload
from gapless.spec.filters import reference_matcher

__all__ = [
    "SCENARIOS",
    "latency_scenario_figures",
    "latency_scenario_marks",
    "roam_figures",
    "roam_pass_marks",
]

_S: Final = 1_000_000
_CLIENTS_PER_NODE: Final = 10
_ROAM_EVERY_US: Final = 4 * _S
_FAILED_UNIT: Final = ("n12", "n13", "n14", "n15")


def _roam_spec() -> RunSpec:
    return RunSpec(
        protocol="ges",
        topology="ges-dense",
        workload=WorkloadSpec(
            rate_per_pubend=5.0, filters="mixed", subscribers_per_shb=_CLIENTS_PER_NODE
        ),
        duration_us=20 * _S,
        drain_us=10 * _S,
        max_events=20_000_000,
    )


def _roam_events() -> tuple[FaultEvent, ...]:
    spec = _roam_spec()
    subs = generate_workload(spec.workload, ges_dense(), duration_us=1, seed=0).subscriptions
    events: list[FaultEvent] = []
    for i, s in enumerate(subs):
        at = _S + (i * _ROAM_EVERY_US) // len(subs)
        k = 0
        while at < spec.duration_us - _S:
            events.append(
                FaultEvent(
                    kind="disconnect",
                    at_us=at,
                    duration_us=_S // 2,
                    target=s.name,
                    stream=i * 100 + k,
                )
            )
            at += _ROAM_EVERY_US
            k += 1
    for j, n in enumerate(reversed(_FAILED_UNIT)):  # inner nodes first: the rest stay connected
        events.append(
            FaultEvent(
                kind="fail", at_us=6 * _S + j, duration_us=_S // 2, target=n, stream=90_000 + j
            )
        )
    events.append(
        FaultEvent(kind="crash", at_us=10 * _S, duration_us=2 * _S, target="n17", stream=99_999)
    )
    events.sort(key=lambda e: (e.at_us, e.kind, e.target))
    return tuple(events)


def _ledger(trace: tuple[TraceRecord, ...]) -> dict[str, Any]:
    """What the figures need from the trace: completed logs and registrations, deliveries,
    connects, the acks' cuts and queues."""
    writes: dict[tuple[str, Any], Any] = {}
    logged: dict[tuple[str, int], Any] = {}
    start: dict[tuple[str, str], int] = {}
    regs: dict[tuple[str, str], list[tuple[int, str]]] = {}
    delivered: list[tuple[int, str, str, int, int]] = []
    connects: dict[tuple[str, int], int] = {}
    connected: dict[str, bool] = {}
    cuts: dict[tuple[str, int], int] = {}
    acks: dict[tuple[str, int, str], int] = {}
    recovers: dict[tuple[str, int, str], int] = {}
    conn: dict[str, int] = {}
    for r in trace:
        k = r.kind
        if k == "persist":
            writes[(r.node, r.detail.key)] = r.detail.value
        elif k == "persisted":
            key = r.detail.key
            value = writes.pop((r.node, key), None)
            if key[0] == "log":
                logged[(r.node, key[2])] = value[0]
            elif key[0] == "client":
                start.setdefault((value.client, value.storage), value.record.start)
                regs.setdefault((value.client, value.storage), []).append(
                    (value.record.cut, value.record.profile)
                )
        elif k == "deliver":
            for d in deliveries(r.detail):
                delivered.append((r.time, d.subscriber, d.pubend, d.tick, d.connection))
        elif k == "connect":
            connects.setdefault((r.detail.subscriber, r.detail.connection), r.time)
            conn[r.detail.subscriber] = r.detail.connection
            connected[r.detail.subscriber] = True
        elif k == "disconnect":
            connected[r.detail.subscriber] = False
        elif k == "send" and type(r.detail.wire) is GesWire and r.detail.wire.kind == "handoff_ack":
            w = r.detail.wire
            cuts.setdefault((w.client, w.connection or 0), w.cut or 0)
            if not w.fresh:  # one ack per reconnection and storage, not per hop it crosses
                acks.setdefault((w.client, w.connection or 0, w.storage), len(w.queue))
        elif k == "send" and type(r.detail.wire) is GesWire and r.detail.wire.kind == "recover":
            w = r.detail.wire  # the part of the queue the old cluster's storage holds
            recovers.setdefault((w.client, conn.get(w.client, 0), w.storage), len(w.queue))
    return {
        "logged": logged,
        "start": start,
        "regs": regs,
        "delivered": delivered,
        "connects": connects,
        "connected": connected,
        "cuts": cuts,
        "queues": [n + recovers.get(key, 0) for key, n in acks.items()],
    }


def roam_figures(sc: Scenario, outcome: RunOutcome, brokers: tuple[str, ...]) -> dict[str, Any]:
    """The figures of ``ges-roam`` from the recorded trace (see module doc)."""
    trace = outcome.trace or ()
    graph = GES_TOPOLOGIES[sc.spec.topology]()
    net = network(graph)
    storage_of = {p: net.storage_of[h] for p, h in graph.graph["pubends"]}
    subs = generate_workload(sc.spec.workload, graph, duration_us=1, seed=0).subscriptions
    profile = {s.name: s.filter for s in subs}
    led = _ledger(trace)
    seen: set[tuple[str, str, int]] = set()
    last: dict[tuple[str, str], int] = {}
    dups = out_of_order = 0
    first_live: dict[tuple[str, int], int] = {}
    for t, c, pubend, tick, conn in led["delivered"]:
        key = (c, storage_of[pubend], tick)
        if key in seen:
            dups += 1
        seen.add(key)
        if tick < last.get((c, pubend), -1):
            out_of_order += 1
        last[(c, pubend)] = max(last.get((c, pubend), -1), tick)
        if tick > led["cuts"].get((c, conn), tick) and (c, conn) not in first_live:
            first_live[(c, conn)] = t
    matches = reference_matcher()
    lost = 0
    for c, on in sorted(led["connected"].items()):
        for (s, e), ev in led["logged"].items():
            st = led["start"].get((c, s))
            if on and st is not None and e > st and (c, s, e) not in seen:
                had = [p for cut, p in led["regs"].get((c, s), ()) if cut < e]
                lost += int(matches(had[-1] if had else profile[c], ev.attributes))
    rec = sorted(
        first_live[k] - t0 for k, t0 in led["connects"].items() if k[1] > 0 and k in first_live
    )
    qs = sorted(led["queues"])
    return {
        "verdict": outcome.verdict,
        "invariant": outcome.invariant,
        "clients": len(subs),
        "published": outcome.counters.published,
        "delivered": outcome.counters.delivered,
        "lost": lost,
        "duplicates": dups,
        "out_of_order": out_of_order,
        "roams": sum(1 for k in led["connects"] if k[1] > 0),
        "recovery_events": {"p50": percentile(qs, 0.5), "p99": percentile(qs, 0.99)},
        "recovery_ms": {
            "p50": _ms(percentile(rec, 0.5)),
            "p99": _ms(percentile(rec, 0.99)),
        },
        "failed_forever": list(_FAILED_UNIT),
        "events": outcome.events,
    }


def _ms(us: int | None) -> float | None:
    return None if us is None else round(us / 1000.0, 3)


def roam_pass_marks(name: str, m: dict[str, Any]) -> dict[str, bool]:
    """The paper's promise: every event exactly once across roams and failures."""
    return {
        "verdict pass": m["verdict"] == "pass",
        "no event lost": m["lost"] == 0,
        "no duplicate": m["duplicates"] == 0,
        "publisher order": m["out_of_order"] == 0,
        "clients roamed": m["roams"] > 0,
    }


def _latency_spec() -> RunSpec:
    """The scenario's own judged run (a short ``ges-dense`` run with mixed profiles); the
    figures come from the sweep of :mod:`gapless.models.ges_latency`."""
    return RunSpec(
        protocol="ges",
        topology="ges-dense",
        workload=WorkloadSpec(rate_per_pubend=5.0, filters="mixed", subscribers_per_shb=2),
        duration_us=2 * _S,
        drain_us=3 * _S,
    )


def latency_scenario_figures(
    sc: Scenario, outcome: RunOutcome, brokers: tuple[str, ...]
) -> dict[str, Any]:
    """The figures of ``ges-latency`` (:func:`gapless.models.ges_latency.latency_figures`),
    beside the verdict of the scenario's own short run, and what scoping connection news by
    level, and rewriting it into aggregated entries at the gatekeepers, save on both
    topologies (``link_news``, :func:`gapless.models.ges_news.news_figures`)."""
    return {
        "verdict": outcome.verdict,
        "invariant": outcome.invariant,
        **latency_figures(),
        "link_news": news_figures(),
    }


def latency_scenario_marks(name: str, m: dict[str, Any]) -> dict[str, bool]:
    """The paper's Figure 7 claims (:func:`gapless.models.ges_latency.latency_pass_marks`),
    and, when measured, that scoped connection news saves messages and the aggregated news
    entries, with every run judged correct and the deliveries unchanged."""
    marks = {"verdict pass": m["verdict"] == "pass", **latency_pass_marks(m)}
    for topo, n in sorted(m.get("link_news", {}).items()):
        runs = (n["aggregated"], n["scoped"], n["flooded"])
        marks[f"{topo}: link news runs pass"] = all(r["verdict"] == "pass" for r in runs)
        marks[f"{topo}: scoped and aggregated news, same deliveries"] = (
            len({r["delivered"] for r in runs}) == 1
        )
        marks[f"{topo}: scoped news saves >= 50% of news messages"] = n["messages_saved"] >= 0.5
        marks[f"{topo}: aggregated news carries fewer entries"] = n["aggregation_entries_saved"] > 0
    return marks


SCENARIOS: Final[dict[str, Scenario]] = {
    "ges-latency": Scenario(
        name="ges-latency",
        protocol="ges",
        description="one publisher (n22), a measuring subscriber (n10) and 100 clients; latency "
        "and its variance against the matching rate (100% to 10%), GES routing beside flooding, "
        "on two 22-node topologies with finite broker and link capacity "
        '[GES "Results", Figure 7]',
        spec=_latency_spec(),
        events=(),
        figures=latency_scenario_figures,
        pass_marks=latency_scenario_marks,
        plot="ges",
    ),
    "ges-roam": Scenario(
        name="ges-roam",
        protocol="ges",
        description="220 clients roam every 4 s; cluster n12-n15 fails for good at 6 s; "
        'storage n17 crashes at 10 s, recovers 2 s later [GES "Recovering clients"]',
        spec=_roam_spec(),
        events=_roam_events(),
        figures=roam_figures,
        pass_marks=roam_pass_marks,
        plot="ges",
    ),
}
