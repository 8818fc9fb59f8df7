"""The δ-fault-tolerant protocol (``gapless.impl.dft``) bound to the world [DFT §II-VII].

Theory of operation
-------------------
The world sends only over the edges of its graph and tells a node ``LinkChanged`` about its
graph neighbours. A DFT broker opens sessions to every broker of its Δ-neighbourhood
[DFT §I], so a DFT topology's graph is the *overlay*: every pair of brokers within
:data:`MAX_RADIUS` primary links (the largest Δ the configurations here use) is an edge, and
the primary tree itself rides along as ``graph.graph["dft_joins"]`` (who joined whom, in
order). A crashed broker is then reported unreachable by every broker of its neighbourhood,
a failed edge by its two ends — the failure detector of [DFT §II]. A broker ignores reports
about brokers outside its own Δ-neighbourhood.

A topology may name brokers that join during the run, ``graph.graph["dft_late"]``
(``(broker, attach_to)``, each under a broker of the initial tree, so each is a leaf and
the joins may come in any order) and ``graph.graph["joiners"]`` (their names, what the
fault generator's ``join`` kind draws from): they are in the graph and the primary tree the
invariants read from the start; in the world they are absent until a ``join`` fault names
them (:attr:`DFTBinding.joiners`, the world's seam): their role is
:class:`~gapless.impl.dft.joins.Unjoined` until :meth:`DFTBinding.join` makes it the
newcomer [DFT §I, §II] (:data:`JOIN_EVENTS`, topology ``dft-join``; topology
``dft-tree13-join``, whose joins the campaigns draw).

Pubends are named after the brokers that host them (a publication's source is its broker
[DFT §V-VI]); subscribers sit at the nodes whose role is ``"shb"``.

:class:`DFTBinding` adapts :mod:`gapless.impl.dft.role`: initial states from the tree, the
configuration (:class:`~gapless.impl.dft.config.DFTConfig`, overrides from
``RunSpec.config``), the variant's policy, the wire summary
(:class:`~gapless.impl.dft.messages.DFTWire`). :func:`check_context` builds the invariants'
:class:`~gapless.invariants.dft.DFTContext`; :func:`within_budget` is the fault budget.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, final

import attrs
import networkx as nx

from gapless.impl.dft.config import PAPER_POLICY, DFTConfig
from gapless.impl.dft.messages import DFTWire, wire
from gapless.impl.dft.role import Role, crash, handle, join, new_role, unjoined
from gapless.impl.dft.tree import PrimaryTree, complete_tree
from gapless.impl.dft.variants import VARIANTS
from gapless.impl.effects import Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.inputs import Publish
from gapless.impl.variants import resolve
from gapless.invariants.dft import DFTContext, pair_within_budget
from gapless.models.binding import Binding
from gapless.models.faults import FaultEvent
from gapless.models.runspec import RunSpecError
from gapless.models.workload import PublishEvent, Subscription, Workload

__all__ = [
    "GAP_S1_AFTER_HEAL_US",
    "GAP_S1_HEAL_US",
    "GAP_S1_LINK_FAIL_US",
    "JOIN_EVENTS",
    "JOIN_FAIL_US",
    "MAX_RADIUS",
    "TOPOLOGIES",
    "TREE13_LATE",
    "DFTBinding",
    "check_context",
    "fig10",
    "gap_s1",
    "join_topology",
    "make_binding",
    "overlay",
    "slow_branch",
    "tree13_join",
    "with_late",
    "within_budget",
]

MAX_RADIUS: Final = 4
"""Overlay edges join brokers within this many primary links: Δ = δ + 1 for δ <= 3."""

_OTHER: Final = DFTWire(kind="other", key=None)


def overlay(
    tree: PrimaryTree, publishers: Iterable[str], shbs: Iterable[str], delta: int = 1
) -> nx.Graph:
    """The world's graph of ``tree``: overlay edges within :data:`MAX_RADIUS`, pubends at
    ``publishers``, subscribers at ``shbs``, and ``delta`` (the budget's default δ)."""
    g = nx.Graph()
    hosts = set(shbs)
    for b in tree.order:
        g.add_node(b, role="shb" if b in hosts else "broker", cell=b)
    for b in tree.order:
        for x in sorted(tree.neighbourhood(b, MAX_RADIUS)):
            g.add_edge(b, x)
    g.graph["dft_joins"] = tuple((b, tree.parent[b]) for b in tree.order)
    g.graph["pubends"] = tuple((p, p) for p in sorted(publishers))
    g.graph["dft_delta"] = delta
    return g


def fig1() -> nx.Graph:
    """Figure 1: P at B1; B1-B2; B2-B3 (S1); B2-B4 (S2) [DFT §I]."""
    tree = PrimaryTree.build([("B1", None), ("B2", "B1"), ("B3", "B2"), ("B4", "B2")])
    return overlay(tree, ["B1"], ["B3", "B4"])


def chain6() -> nx.Graph:
    """A chain of six brokers, publishers and subscribers at both ends and in the middle."""
    tree = PrimaryTree.build([(f"C{i}", f"C{i - 1}" if i else None) for i in range(6)])
    return overlay(tree, ["C0", "C5"], ["C0", "C2", "C5"])


def tree13() -> nx.Graph:
    """The complete tree of 13 brokers, fanout 3 (the §IX construction, small)."""
    return overlay(complete_tree(13, 3), ["B0", "B5", "B12"], ["B4", "B7", "B9", "B12"])


def with_late(
    tree: PrimaryTree,
    late: Iterable[tuple[str, str]],
    publishers: Iterable[str],
    shbs: Iterable[str],
) -> nx.Graph:
    """The world's graph of ``tree`` grown by the ``late`` joins (``(broker, attach_to)``,
    each under a broker of ``tree``), those brokers named as joiners (module doc)."""
    late = tuple(late)
    for b, a in late:
        if a not in tree:
            raise ProtocolMisuse(
                f"with_late: {b!r} joins under {a!r}, not a broker of the initial tree; "
                f"allowed: one of {', '.join(tree.order)}"
            )
        tree = tree.join(b, a)
    g = overlay(tree, publishers, shbs)
    g.graph["dft_late"] = late
    g.graph["joiners"] = tuple(b for b, _ in late)
    return g


TREE13_LATE: Final = (("J13", "B4"), ("J14", "B9"), ("J15", "B12"))
"""The joiners of ``dft-tree13-join``: one leaf under each of B0's branches."""


def tree13_join() -> nx.Graph:
    """:func:`tree13` with three brokers that may join during the run (:data:`TREE13_LATE`;
    a campaign's ``join`` faults decide whether and when): J13 publishes, J14 hosts a
    subscriber, J15 both [DFT §I, §II]."""
    return with_late(
        complete_tree(13, 3),
        TREE13_LATE,
        ["B0", "B5", "B12", "J13", "J15"],
        ["B4", "B7", "B9", "B12", "J14", "J15"],
    )


def slow_branch() -> nx.Graph:
    """A hub H with a leaf L, a subscriber's broker S, and a chain C1..C12 to a publisher at
    C12: a subscription issued at S is confirmed by L (4 link delays) long before it reaches
    C12 (13): the window in which a broker that accepts on its first confirmation
    [Figure 5 line 16] has accepted while the publisher still filters its publications out."""
    joins: list[tuple[str, str | None]] = [("H", None), ("L", "H"), ("S", "H"), ("C1", "H")]
    joins += [(f"C{i}", f"C{i - 1}") for i in range(2, 13)]
    return overlay(PrimaryTree.build(joins), ["C12"], ["S"])


GAP_S1_LINK_FAIL_US: Final = 100_000
GAP_S1_AFTER_HEAL_US: Final = 1_300_000
GAP_S1_HEAL_US: Final = 1_000_000


def gap_s1() -> nx.Graph:
    """Figure 1's network with the §I sequence as a scripted workload [DFT §I, "Challenge of
    dealing with link failures"]: S1 at B3 (``loc == "USA"``) subscribes at the start; link
    B1-B2 fails at 0.1 s (the scenario's fault, healed at 1 s); S2 at B4 (everything)
    arrives at 0.2 s; P at B1 publishes p1 (USA), p2 (UK), p3 (USA) at 0.3, 0.4, 0.5 s —
    all match s2, only p1 and p3 match s1 — and, after the heal, p4 (UK) and p5 (USA) at
    1.3 and 1.4 s (what partition recovery owes S2 [DFT §VIII-A])."""
    g = fig1()
    times = (300_000, 400_000, 500_000, GAP_S1_AFTER_HEAL_US, GAP_S1_AFTER_HEAL_US + 100_000)
    g.graph["script"] = Workload(
        publishes=tuple(
            PublishEvent(at_us=t, pubend="B1", index=i, attributes={"loc": loc})
            for i, (t, loc) in enumerate(zip(times, ("USA", "UK", "USA", "UK", "USA"), strict=True))
        ),
        subscriptions=(
            Subscription(name="S1", shb="B3", filter='loc == "USA"'),
            Subscription(name="S2", shb="B4", filter="true", arrives_us=200_000),
        ),
    )
    return g


#: ``dft-join``: J13 joins under B4 at 0.3 s, J14 under B9 at 0.5 s; link B1-B4 (J13's
#: way up) fails from 0.8 s to 1.2 s.
JOIN_AT_US: Final = (("J13", "B4", 300_000), ("J14", "B9", 500_000))
JOIN_FAIL_US: Final = (800_000, 1_200_000)
JOIN_EVENTS: Final = (
    *(
        FaultEvent(kind="join", at_us=at, duration_us=0, target=b, stream=0)
        for b, _, at in JOIN_AT_US
    ),
    FaultEvent(
        kind="link_fail",
        at_us=JOIN_FAIL_US[0],
        duration_us=JOIN_FAIL_US[1] - JOIN_FAIL_US[0],
        target="B1|B4",
        stream=0,
    ),
)
"""The faults of scenario ``dft-join``: the two joins, then the link failure."""


def join_topology() -> nx.Graph:
    """The 13-broker complete tree (fanout 3) and two brokers joining during the run, J13
    under B4 and J14 under B9 (:data:`JOIN_AT_US`) [DFT §I, §II], with a scripted workload:
    S7 at B7 and S12 at B12 (``x == 1``) from the start, SJ13 at J13 and SJ14 at J14 as
    their brokers join; B0 publishes before the joins, then B0, B12, J13 and J14 publish
    every 0.2 s from 0.6 s to 1.8 s (through the failure of link B1-B4 and after its heal);
    every publication has ``x == 1``."""
    pubs = ["B0", "B12", "J13", "J14"]
    late = tuple((b, a) for b, a, _ in JOIN_AT_US)
    g = with_late(complete_tree(13, 3), late, pubs, ["B7", "B12", "J13", "J14"])
    events = [PublishEvent(at_us=100_000, pubend="B0", index=0, attributes={"x": 1})]
    for k, t in enumerate(range(600_000, 1_900_000, 200_000)):
        events += [
            PublishEvent(at_us=t + i, pubend=p, index=k + (p == "B0"), attributes={"x": 1})
            for i, p in enumerate(pubs)
        ]
    g.graph["script"] = Workload(
        publishes=tuple(events),
        subscriptions=(
            Subscription(name="S7", shb="B7", filter="true"),
            Subscription(name="S12", shb="B12", filter="x == 1"),
            Subscription(name="SJ13", shb="J13", filter="true"),
            Subscription(name="SJ14", shb="J14", filter="true"),
        ),
    )
    return g


def fig10(n: int, fanout: int = 3, publishers: int = 10, seed: int = 0) -> nx.Graph:
    """The §IX-B network, our setup (the paper gives none): the complete tree of ``n``
    brokers, a subscriber at every broker, ``publishers`` pubends at brokers drawn with
    ``seed`` [DFT §IX-B]."""
    tree = complete_tree(n, fanout)
    hosts = random.Random(f"dft-fig10/{n}/{seed}").sample(list(tree.order), publishers)
    return overlay(tree, hosts, tree.order)


TOPOLOGIES: Final[Mapping[str, Callable[[], nx.Graph]]] = {
    "dft-fig1": fig1,
    "dft-gap-s1": gap_s1,
    "dft-join": join_topology,
    "dft-slow-branch": slow_branch,
    "dft-chain6": chain6,
    "dft-tree13": tree13,
    "dft-tree13-join": tree13_join,
    "dft-fig10-100": lambda: fig10(100),
    "dft-fig10-200": lambda: fig10(200),  # the cost's growth with n (spec/dft.md, dft8)
    "dft-fig10-500": lambda: fig10(500),
}


def tree_of(graph: nx.Graph) -> PrimaryTree:
    """The primary tree a DFT topology carries."""
    return PrimaryTree.build(graph.graph["dft_joins"])


@final
class DFTBinding:
    """DFT roles as the world drives them (see module doc)."""

    def __init__(self, graph: nx.Graph, config: DFTConfig, policy: Any) -> None:
        self.late: tuple[tuple[str, str], ...] = tuple(graph.graph.get("dft_late", ()))
        self.joiners: dict[str, str] = dict(self.late)
        """The brokers the world starts absent, until their ``join`` fault, and the broker
        each joins under (world seam)."""
        gone = set(self.joiners)
        self.tree = PrimaryTree.build(j for j in graph.graph["dft_joins"] if j[0] not in gone)
        self.config = config
        self.policy = policy
        self.handle = handle
        self.crash = crash
        self.link_delay_us = 1_000
        self.link_jitter_us = 200
        self.status_period_us = 0  # the world reports failures and heals as they happen
        self.min_repetition_us = 1  # no nacks in DFT

    def initial_states(self) -> dict[str, Any]:
        states: dict[str, Any] = {
            b: new_role(b, self.tree, self.config, self.policy) for b in self.tree.order
        }
        for b, a in self.late:
            states[b] = unjoined(b, a, self.tree, self.config, self.policy)
        return states

    def join(self, broker: str, state: Role) -> Role:
        """The world's join seam: ``broker``'s state at its join, the newcomer
        (:func:`gapless.impl.dft.role.join`) [DFT §I, §II]."""
        return join(state)

    def publish_input(self, event: PublishEvent) -> Publish:
        return Publish(pubend=event.pubend, attributes=event.attributes, size=event.size)

    def wire(self, msg: Any) -> DFTWire:
        return wire(msg) or _OTHER

    def logged(self, persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        return None  # DFT logs no publications

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        return payload if isinstance(payload, Mapping) else None


def make_binding(spec: Any, graph: nx.Graph, workload: Workload) -> DFTBinding:
    """The binding of ``spec`` (a ``RunSpec``): its variant's policy, its config overrides.
    The run's δ is written into ``graph.graph["dft_delta"]`` for the fault budget."""
    try:
        config = DFTConfig(**dict(spec.config))
    except TypeError as exc:
        fields = ", ".join(a.name for a in attrs.fields(DFTConfig))
        raise RunSpecError(f"RunSpec.config: {exc}; allowed keys: {fields}") from exc
    policy = resolve("dft", spec.variant, PAPER_POLICY, VARIANTS)
    graph.graph["dft_delta"] = config.delta
    return DFTBinding(graph, config, policy)


def check_context(
    graph: nx.Graph, workload: Workload, binding: Binding, matches: Callable[[str, Any], bool]
) -> DFTContext:
    """The DFT invariants' context: the tree, δ, the reference evaluator; publications
    younger than 100 link delays at a heal are judged at the end instead."""
    naive = getattr(getattr(binding, "policy", None), "forwarding", "dft") == "naive"
    return DFTContext(
        tree=tree_of(graph),
        delta=int(graph.graph.get("dft_delta", 1)),
        matches=matches,
        grace=100 * binding.link_delay_us,
        reports_acceptance=not naive,
        late=frozenset(b for b, _ in graph.graph.get("dft_late", ())),
    )


def within_budget(graph: nx.Graph, active: tuple[FaultEvent, ...]) -> bool:
    """Is every (pubend host, subscriber host) pair within δ failures [DFT §II] under the
    ``active`` faults? A late broker's absence before its join is no failure: it is not in
    the system yet, and the world ignores a crash of it then (a crash that stands across
    its join counts, a conservative reading)."""
    late = {b for b, _ in graph.graph.get("dft_late", ())}
    joined = {e.target for e in active if e.kind == "join"}
    crashed = {
        e.target
        for e in active
        if e.kind in ("crash", "stall_broker", "fail")
        and (e.target not in late or e.target in joined)
    }
    failed = {
        frozenset(e.target.split("|")) for e in active if e.kind in ("link_fail", "stall_link")
    }
    tree, delta = tree_of(graph), int(graph.graph.get("dft_delta", 1))
    hosts = [h for _, h in graph.graph["pubends"]]
    shbs = [n for n, d in graph.nodes(data=True) if d["role"] == "shb"]
    return all(
        pair_within_budget(tree, delta, crashed, failed, p, s)
        for p in hosts
        for s in shbs
        if p != s
    )
