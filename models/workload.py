"""Workloads: pubend rates, message attributes, subscribers and their filters [GD §4].

Theory of operation
-------------------
A :class:`WorkloadSpec` is plain data (cattrs-serialisable). :func:`generate_workload` turns
it, a topology and a seed into a :class:`Workload`: the publish events (time, pubend, the
pubend's message index, attributes, size) and the subscriptions (subscriber name, hosting
SHB, filter expression, order). Everything is a pure function of its arguments.

Each pubend publishes periodically at ``rate_per_pubend`` messages per simulated second
(the paper's 25 msgs/s [GD §4.2]), pubends phase-shifted evenly within one period, each
message jittered by up to ``jitter_us`` drawn from the pubend's own stream. Attributes are
``n`` (the pubend's message index — it makes every message distinct, so two pubends never
publish the same payload), ``loc`` (one of ``LOCS``), ``p`` (0–9) and ``k`` (0..keys-1, for
equality-filter workloads [GD §4.1]).

Filter profiles: ``"all"`` (every subscriber matches everything, the paper's §4.2 setting),
``"mixed"`` (a rotation of content filters over ``loc`` and ``p``), ``"keys"`` (subscriber
``i`` filters ``k == i % keys``, the §4.1 equality workload) and ``"rich"`` (the campaigns'
profile: messages also carry a boolean ``hot``, a signed integer ``delta`` (-5..5) and a
fraction ``p99`` (0.00..0.99), and the rotation :data:`RICH_FILTERS` uses every kind of
comparison and literal the filter language has — booleans, decimals, signed numbers, numbers
written from their point, names with digits, numbers inside a conjunction, values of
different types, which are unequal and unordered — so a mistake in any of them is seen by the
reference evaluator that judges delivery).
"""

from __future__ import annotations

import random
from typing import Any, Final, final

import attrs
import networkx as nx
from pyrsistent import PMap, pmap

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.trace import as_pmap
from gapless.models.faults import derive_seed
from gapless.models.topology import pubends, shbs

__all__ = [
    "FILTER_PROFILES",
    "LOCS",
    "MATCH_ALL",
    "MIXED_FILTERS",
    "RICH_FILTERS",
    "PublishEvent",
    "Subscription",
    "Workload",
    "WorkloadSpec",
    "generate_workload",
]

LOCS: Final = ("NY", "LN", "TK")
MATCH_ALL: Final = "true"
MIXED_FILTERS: Final = (
    MATCH_ALL,
    'loc == "NY"',
    "p > 3",
    'loc == "NY" and p > 3',
    'not loc == "LN"',
    'loc == "TK" or p <= 1',
)
RICH_FILTERS: Final = (
    MATCH_ALL,
    'hot == true or loc == "NY" or delta <= -4',
    "p > 3 and hot != false and p99 < .8",
    'p != "3" and loc != 7 and p >= 2.5 and delta < +3',
    'p == "3" or loc < 5 or loc == "TK" or p99 >= 0.9 and delta > -2',
    "not hot == false or p <= 1",
    'hot != true and not loc == "LN"',
)
"""The ``rich`` profile's filters (in rotation; the first five are Figure 3's five SHBs' with
one subscriber each): booleans (``==``, ``!=``), a decimal, numbers followed by
more of the filter, comparisons across types (``p != "3"`` is true, ``p == "3"`` and
``loc < 5`` false), signed numbers (``-4``, ``+3``), a number written from its point
(``.8``) and an attribute name with digits in it (``p99``, a latency percentile in seconds)
— the literals a user writes for a signed change or a fraction, each in one of the five
filters a Figure 3 campaign subscribes with [GD §2: content-based subscriptions]."""
FILTER_PROFILES: Final = ("all", "mixed", "keys", "rich")


@final
@attrs.frozen(kw_only=True)
class WorkloadSpec:
    """What the clients do: ``rate_per_pubend`` msgs/s, ``size`` bytes, ``subscribers_per_shb``,
    the ``filters`` profile, ``keys`` distinct values of attribute ``k``, per-message jitter,
    and an optional cap ``max_messages`` per pubend (a shrink knob)."""

    rate_per_pubend: float = 25.0
    size: int = 100
    subscribers_per_shb: int = 1
    filters: str = "all"
    keys: int = 10
    jitter_us: int = 1_000
    max_messages: int | None = None

    def __attrs_post_init__(self) -> None:
        if not self.rate_per_pubend > 0:
            raise ProtocolMisuse(
                f"WorkloadSpec: rate_per_pubend must be > 0, got {self.rate_per_pubend!r}"
            )
        if self.filters not in FILTER_PROFILES:
            raise ProtocolMisuse(
                f"WorkloadSpec: filters {self.filters!r} is unknown; allowed: "
                f"{', '.join(FILTER_PROFILES)}"
            )
        if self.subscribers_per_shb < 0 or self.size < 0 or self.keys < 1 or self.jitter_us < 0:
            raise ProtocolMisuse(
                "WorkloadSpec: need subscribers_per_shb >= 0, size >= 0, keys >= 1, "
                f"jitter_us >= 0; got {self.subscribers_per_shb}, {self.size}, {self.keys}, "
                f"{self.jitter_us}"
            )
        if self.max_messages is not None and self.max_messages < 0:
            raise ProtocolMisuse(
                f"WorkloadSpec: max_messages must be >= 0, got {self.max_messages}"
            )


@final
@attrs.frozen(kw_only=True)
class PublishEvent:
    """A client hands ``pubend`` its ``index``-th message at ``at_us``."""

    at_us: int
    pubend: str
    index: int
    attributes: PMap[str, Any] = attrs.field(factory=pmap, converter=as_pmap)
    size: int = 100


@final
@attrs.frozen(kw_only=True)
class Subscription:
    """Subscriber ``name`` at SHB ``shb`` with ``filter`` (a ``gapless.impl.filters`` expression);
    ``order`` is ``"publisher"`` or ``"total"`` [GD §2.3]; it connects at ``arrives_us``."""

    name: str
    shb: str
    filter: str
    order: str = "publisher"
    #: When the subscriber first connects (µs; 0: at the start of the run). A scripted
    #: workload uses it for a subscriber that arrives during a run [DFT §I].
    arrives_us: int = 0


@final
@attrs.frozen(kw_only=True)
class Workload:
    """The publish events (by time, then pubend) and the subscriptions (by name)."""

    publishes: tuple[PublishEvent, ...]
    subscriptions: tuple[Subscription, ...]


def _filter_for(spec: WorkloadSpec, i: int) -> str:
    if spec.filters == "all":
        return MATCH_ALL
    if spec.filters == "mixed":
        return MIXED_FILTERS[i % len(MIXED_FILTERS)]
    if spec.filters == "rich":
        return RICH_FILTERS[i % len(RICH_FILTERS)]
    return f"k == {i % spec.keys}"


def generate_workload(
    spec: WorkloadSpec, graph: nx.Graph, *, duration_us: int, seed: int
) -> Workload:
    """The workload of ``spec`` on ``graph`` for ``duration_us`` of publishing; a topology
    that carries a scripted workload (``graph.graph["script"]``, a :class:`Workload`: a
    paper's scenario spelled out event by event) gets that instead."""
    script = graph.graph.get("script")
    if isinstance(script, Workload):
        return script
    pubs = pubends(graph)
    period = round(1_000_000 / spec.rate_per_pubend)
    events: list[PublishEvent] = []
    for j, (pubend, _host) in enumerate(pubs):
        rng = random.Random(derive_seed(seed, "workload", pubend))
        base = (period * j) // max(1, len(pubs))
        i = 0
        while True:
            if spec.max_messages is not None and i >= spec.max_messages:
                break
            at = base + i * period + (rng.randint(0, spec.jitter_us) if spec.jitter_us else 0)
            if at >= duration_us:
                break
            attrs_: dict[str, Any] = {
                "n": i,
                "loc": LOCS[rng.randrange(len(LOCS))],
                "p": rng.randrange(10),
                "k": rng.randrange(spec.keys),
            }
            if spec.filters == "rich":  # drawn only here: the other profiles' draws unchanged
                attrs_["hot"] = rng.random() < 0.5
                attrs_["delta"] = rng.randrange(-5, 6)  # a signed change
                attrs_["p99"] = rng.randrange(100) / 100  # a fraction of a second
            events.append(
                PublishEvent(
                    at_us=at,
                    pubend=pubend,
                    index=i,
                    attributes=pmap(attrs_),  # type: ignore[arg-type]  # converter=pmap
                    size=spec.size,
                )
            )
            i += 1
    events.sort(key=lambda e: (e.at_us, e.pubend, e.index))
    order = "total" if graph.graph.get("order") == "total" else "publisher"
    subs: list[Subscription] = []
    n = 0
    for shb in shbs(graph):
        for k in range(spec.subscribers_per_shb):
            subs.append(
                Subscription(name=f"{shb}.u{k}", shb=shb, filter=_filter_for(spec, n), order=order)
            )
            n += 1
    return Workload(publishes=tuple(events), subscriptions=tuple(subs))
