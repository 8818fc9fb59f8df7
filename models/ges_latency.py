"""``ges-latency``: the paper's latency experiment — latency and its variance against the
matching rate, GES routing beside flooding [GES "Results", Figure 7, Table 2].

Theory of operation
-------------------
The paper's setting, on our two 22-node topologies (:mod:`gapless.models.ges_topology`; its
Figure 6 is not in our copy): one publisher at node ``n22``, one measuring subscriber
(``n10.m``, profile ``true``) at node ``n10``, and 100 subscribers, 5 on each other node.
Latency depends on load only where capacity is finite, so the world's optional capacity
model is on (:meth:`gapless.models.world.World._occupy`): every broker spends
:data:`SERVICE_US` per event message it sends, one at a time, and every link direction
carries :data:`LINK_BYTES_PER_S`, one message at a time; an event's bytes are its attributes,
padded to the event size (:meth:`gapless.models.ges_binding.GESBinding.message_cost`).

Matching rate ``R`` percent: event ``i`` carries ``k = 37 i mod 100`` (every value once per
100 events) and subscriber ``j`` (0..99, five per node in node order) has the profile "``k``
in the window ``[j, j + R)`` modulo 100", so every event matches exactly ``R`` of the 100
subscribers, on ``R / 5`` to ``R / 5 + 1`` consecutive nodes, and every subscriber matches ``R``
percent of the events. GES routes an event only toward the nodes of its matching subscribers
[GES "The problem of event delivery"]; the ``flooding`` variant (the paper's strawman: "route
all events to all clients") routes every event to every node, whatever ``R``.

Each run publishes a Poisson stream for :data:`DURATION_US` (longer at a low rate: about
:data:`MIN_EVENTS` events, :func:`duration_us`) and drains; the latency of an event is the
time from its publication to its delivery to ``n10.m``. Every run is judged online by every
invariant (flooding by all but ``selective_routing``, the one it breaks). The publish rate is
a parameter of every run (:func:`measure`, :func:`latency_workload`).
:func:`latency_figures` runs every matching rate in :data:`MATCHING_RATES` for GES and for
flooding at the load point (:data:`RATE`, :data:`SIZE`) on ``ges-dense`` (the JSON's
``latency_ms``), the same on ``ges-sparse`` (``latency_ms_by_topology``), the same on
``ges-dense`` at every publish rate of :data:`RATES`, 1 to 1,000 events/s
(``latency_ms_by_rate``: rate -> ``ges``/``flooding`` -> matching rate -> {p50, p99, stdev};
``by_rate_p50_ms`` is its p50 at 100% and 10%), the p50 against the event size for 100% and
10% (``by_size_p50_ms``), and each topology's clustering coefficient.
"""

from __future__ import annotations

import itertools
import random
import statistics
from typing import Any, Final

import networkx as nx
from pyrsistent import pmap

from gapless.impl.effects import deliveries
from gapless.impl.ges import PAPER_POLICY
from gapless.impl.ges.config import GESConfig
from gapless.impl.ges.variants import VARIANTS
from gapless.impl.trace import Published, TraceRecord, percentile
from gapless.invariants.ges import INVARIANTS, GESChecker, GESContext
from gapless.models.faults import FaultSchedule, derive_seed
from gapless.models.ges_binding import GESBinding
from gapless.models.ges_topology import GES_TOPOLOGIES, clustering_coefficient
from gapless.models.workload import PublishEvent, Subscription, Workload
from gapless.models.world import World
from gapless.spec.filters import reference_matcher

__all__ = [
    "GRANULARITY",
    "LINK_BYTES_PER_S",
    "MATCHING_RATES",
    "SERVICE_US",
    "latency_checker",
    "latency_figures",
    "latency_pass_marks",
    "latency_topology",
    "latency_workload",
    "measure",
]

SERVICE_US: Final = 400
"""A broker's service time per event message it sends (2,500 event messages/s)."""
LINK_BYTES_PER_S: Final = 1_250_000
"""Every link's bandwidth, each direction (10 Mbit/s)."""
MATCHING_RATES: Final = (100, 75, 50, 25, 10)
RATE: Final = 300
"""Events per second at the scenario's load point."""
SIZE: Final = 500
"""Event size in bytes at the scenario's load point."""
RATES: Final = (1, 10, 100, RATE, 1000)
"""Publish rates swept on ``ges-dense`` at every matching rate (the paper: "from 1
Event/Sec to around 1000 Events/second")."""
MIN_EVENTS: Final = 40
"""A run at a low rate publishes for long enough to publish about this many events."""
BY_SIZE: Final = (30,)
"""Event sizes measured besides :data:`SIZE` (p50 against the size)."""
DURATION_US: Final = 1_000_000
_DRAIN_US: Final = 3_000_000
GRANULARITY: Final = "super-cluster"
"""The latency runs keep one storage per super-cluster (no cluster tier): Figure 7 measures
routing, and its figures were measured so; the default granularity (one storage per cluster
under them) adds only storage-to-storage messages, which carry no event service time."""
_PUBLISHER: Final = "n22"
_MEASURED: Final = "n10"
MEASURING: Final = "n10.m"
_PER_NODE: Final = 5


def latency_topology(name: str) -> nx.Graph:
    """Topology ``name`` with one publisher (``P0`` at ``n22``) and finite capacity."""
    g = GES_TOPOLOGIES[name]()
    g.graph["pubends"] = (("P0", _PUBLISHER),)
    g.graph["service_us"] = SERVICE_US
    for a, b in g.edges:
        g.edges[a, b]["bytes_per_s"] = LINK_BYTES_PER_S
    return g


def _window(j: int, matching: int) -> str:
    if matching >= 100:
        return "true"
    end = j + matching
    if end <= 100:
        return f"k >= {j} and k < {end}"
    return f"k >= {j} or k < {end - 100}"


def latency_workload(
    graph: nx.Graph, *, matching: int, rate: int, size: int, duration_us: int, seed: int = 0
) -> Workload:
    """The paper's clients (see module doc): events of ``size`` bytes published as a Poisson
    process of ``rate`` per second (seeded), each matching ``matching`` percent of the 100
    subscribers."""
    others = sorted(
        (n for n in graph.nodes if n not in (_PUBLISHER, _MEASURED)),
        key=lambda n: graph.nodes[n]["address"],
    )
    subs = [Subscription(name=MEASURING, shb=_MEASURED, filter="true")]
    for j in range(_PER_NODE * len(others)):
        node = others[j // _PER_NODE]
        subs.append(
            Subscription(name=f"{node}.u{j % _PER_NODE}", shb=node, filter=_window(j, matching))
        )
    rng = random.Random(derive_seed(seed, "ges-latency", rate))
    pad = "x" * max(0, size - 12)
    pubs: list[PublishEvent] = []
    at = 0
    while True:
        at += max(1, round(rng.expovariate(rate) * 1_000_000))
        if at >= duration_us:
            break
        i = len(pubs)
        attributes = pmap({"n": i, "k": (37 * i) % 100, "pad": pad})
        pubs.append(PublishEvent(at_us=at, pubend="P0", index=i, attributes=attributes, size=size))
    return Workload(publishes=tuple(pubs), subscriptions=tuple(sorted(subs, key=lambda s: s.name)))


def duration_us(rate: int) -> int:
    """How long a run at ``rate`` events/s publishes: :data:`DURATION_US`, or long enough for
    about :data:`MIN_EVENTS` events at a low rate (40 s at 1 event/s)."""
    return max(DURATION_US, -(-MIN_EVENTS * 1_000_000 // rate))


def measure(
    topology: str, *, matching: int, flooding: bool, rate: int = RATE, size: int = SIZE
) -> dict[str, Any]:
    """One run: the measuring subscriber's latency (ms) {p50, p99, stdev, mean, n} and the
    event messages sent."""
    graph = latency_topology(topology)
    publishing = duration_us(rate)
    wl = latency_workload(graph, matching=matching, rate=rate, size=size, duration_us=publishing)
    policy = VARIANTS["flooding"].policy if flooding else PAPER_POLICY
    binding = GESBinding(graph, wl, GESConfig(), policy, granularity=GRANULARITY)
    published: dict[int, int] = {}
    got: list[int] = []
    sent = [0]
    checker = latency_checker(graph, wl, binding, flooding)

    def observe(r: TraceRecord) -> bool:
        checker.observe(r)
        k = r.kind
        if k == "deliver":
            for d in deliveries(r.detail):
                if d.subscriber == MEASURING:
                    got.append(r.time - published[d.payload["n"]])
        elif k == "publish":
            p: Published = r.detail
            published[p.index] = r.time
        elif k == "send" and r.detail.wire.kind == "event":
            sent[0] += 1
        return False

    world = World(
        graph=graph,
        workload=wl,
        schedule=FaultSchedule(seed=0),
        seed=0,
        binding=binding,
        observer=observe,
        max_events=20_000_000,
    )
    world.run(duration_us=publishing, drain_us=_DRAIN_US)
    end = TraceRecord(seq=world._rseq, time=world.now, node="-", kind="fault", detail="end")
    violation = checker.violation or checker.finish(end)
    got.sort()
    return {
        "verdict": "pass" if violation is None and not world.timed_out else "violation",
        "invariant": None if violation is None else violation.invariant,
        "p50": _ms(percentile(got, 0.5)),
        "p99": _ms(percentile(got, 0.99)),
        "stdev": round(statistics.pstdev(got) / 1000.0, 3) if got else None,
        "mean": round(statistics.fmean(got) / 1000.0, 3) if got else None,
        "n": len(got),
        "published": len(published),
        "event_messages": sent[0],
    }


def latency_checker(
    graph: nx.Graph, wl: Workload, binding: GESBinding, flooding: bool
) -> GESChecker:
    """Every invariant, online; flooding is judged on all but ``selective_routing`` (the one
    it breaks by design)."""
    ctx = GESContext(
        profiles={s.name: s.filter for s in wl.subscriptions},
        storage_of_pubend=dict(binding.storage_of_pubend),
        links=tuple(sorted((min(a, b), max(a, b)) for a, b in graph.edges)),
        matches=reference_matcher(),
        logged=binding.logged,
        durable=binding.durable,
    )
    names = tuple(n for n in INVARIANTS if not (flooding and n == "selective_routing"))
    return GESChecker(ctx, names)


def _ms(us: int | None) -> float | None:
    return None if us is None else round(us / 1000.0, 3)


def _sweep(topology: str, rate: int = RATE) -> dict[str, dict[int, dict[str, Any]]]:
    return {
        kind: {
            m: measure(topology, matching=m, flooding=kind == "flooding", rate=rate)
            for m in MATCHING_RATES
        }
        for kind in ("ges", "flooding")
    }


def latency_figures(rates: tuple[int, ...] = RATES) -> dict[str, Any]:
    """Every figure of the scenario (see module doc); ``rates``: the publish rates swept on
    ``ges-dense`` at every matching rate (:data:`RATE` is always measured)."""
    dense = _sweep("ges-dense")
    sparse = _sweep("ges-sparse")
    by_rate_runs = {r: dense if r == RATE else _sweep("ges-dense", r) for r in sorted(rates)}
    extra: list[dict[str, Any]] = []
    by_size: dict[str, dict[int, dict[int, float | None]]] = {}
    for kind, runs in dense.items():
        by_size[kind] = {}
        for m in (100, 10):
            flood = kind == "flooding"
            sizes = {z: measure("ges-dense", matching=m, flooding=flood, size=z) for z in BY_SIZE}
            extra += sizes.values()
            sizes[SIZE] = runs[m]
            by_size[kind][m] = {z: sizes[z]["p50"] for z in sorted(sizes)}
    by_rate = {
        kind: {m: {r: by_rate_runs[r][kind][m]["p50"] for r in by_rate_runs} for m in (100, 10)}
        for kind in ("ges", "flooding")
    }
    sweeps = (dense, sparse, *(v for r, v in by_rate_runs.items() if r != RATE))
    verdicts = [v["verdict"] for sw in sweeps for s in sw.values() for v in s.values()]
    verdicts += [v["verdict"] for v in extra]
    return {
        "topology": "ges-dense",
        "load": {"events_per_s": RATE, "event_bytes": SIZE, "duration_s": DURATION_US / 1e6},
        "capacity": {"service_us_per_event": SERVICE_US, "link_bytes_per_s": LINK_BYTES_PER_S},
        "latency_ms": _strip(dense),
        "latency_ms_by_topology": {"ges-dense": _strip(dense), "ges-sparse": _strip(sparse)},
        "latency_ms_by_rate": {r: _strip(v) for r, v in by_rate_runs.items()},
        "by_rate_p50_ms": by_rate,
        "by_size_p50_ms": by_size,
        "event_messages": {
            k: {m: v["event_messages"] for m, v in s.items()} for k, s in dense.items()
        },
        "received": {k: {m: v["n"] for m, v in s.items()} for k, s in dense.items()},
        "received_by_rate": {
            r: {k: {m: x["n"] for m, x in s.items()} for k, s in v.items()}
            for r, v in by_rate_runs.items()
        },
        "published_by_rate": {r: v["ges"][100]["published"] for r, v in by_rate_runs.items()},
        "published": dense["ges"][100]["published"],
        "runs": len(verdicts),
        "runs_passed": verdicts.count("pass"),
        "clustering_coefficient": {
            t: clustering_coefficient(GES_TOPOLOGIES[t]()) for t in ("ges-dense", "ges-sparse")
        },
    }


def latency_pass_marks(m: dict[str, Any]) -> dict[str, bool]:
    """The paper's Figure 7 claims on the figures: lower matching rate, lower latency with
    GES routing; flooding flat; GES never slower than flooding; every event received by the
    measuring subscriber; every run passed its invariants."""
    marks: dict[str, bool] = {"every run passed its invariants": m["runs_passed"] == m["runs"]}
    for topo, lat in m["latency_ms_by_topology"].items():
        ges = [lat["ges"][r]["p50"] for r in MATCHING_RATES]
        flood = [lat["flooding"][r]["p50"] for r in MATCHING_RATES]
        marks[f"{topo}: GES p50 falls with the matching rate"] = (
            all(a >= b for a, b in itertools.pairwise(ges)) and ges[-1] < ges[0]
        )
        marks[f"{topo}: flooding p50 flat (within 2%)"] = max(flood) <= 1.02 * min(flood)
        marks[f"{topo}: GES p50 <= flooding p50 at every matching rate"] = all(
            a <= b for a, b in zip(ges, flood, strict=True)
        )
    marks["measuring subscriber got every event"] = all(
        n == m["published"] for s in m["received"].values() for n in s.values()
    )
    for rate, runs in m.get("received_by_rate", {}).items():
        marks[f"{rate} events/s: measuring subscriber got every event"] = all(
            n == m["published_by_rate"][rate] for s in runs.values() for n in s.values()
        )
    return marks


def _strip(sweep: dict[str, dict[int, dict[str, Any]]]) -> dict[str, dict[int, dict[str, Any]]]:
    keep = ("p50", "p99", "stdev")
    return {k: {m: {f: v[f] for f in keep} for m, v in s.items()} for k, s in sweep.items()}
