"""The Grid Event Service (``gapless.impl.ges``) bound to the world [GES].

Theory of operation
-------------------
:class:`GESBinding` adapts the GES node role to :class:`~gapless.models.binding.Binding`:

* the topology graph (:mod:`gapless.models.ges_topology`) becomes the roles'
  :class:`~gapless.impl.ges.config.Network`: node addresses and links as a
  :class:`~gapless.impl.ges.addressing.Hierarchy`, the storages, and for every node the storage
  of its top-level unit; at the run's config key ``granularity = "cluster"`` (the default;
  ``"super-cluster"`` has no finer tier) also the storage of its cluster (:func:`fine_storages`,
  :mod:`gapless.impl.ges.tier`);
* configuration: :class:`~gapless.impl.ges.config.GESConfig` with the run's overrides; policy:
  the variant's (``"none"`` is the paper's);
* seams: ``resume_token`` — a reconnecting client presents, per storage, the epoch of the
  last event it received from it (the highest tick delivered to it from a publisher that
  storage serves: a storage's epochs are the ticks of its events) [GES "Recovering clients",
  items (a) and (b)]; ``roam`` — a client's first connection attaches to its home node, every
  later one to a node drawn from the client's name and connection number among the nodes
  alive then (clients roam "to any broker"); ``profile`` — the profile a client presents at
  each connection: its workload filter at the first, and at a reconnection, for one in two
  (drawn from the client's name and connection number), another of the workload's filters: a
  profile change, which takes effect at each storage at the cut of the handoff that brings it
  [GES "Epochs"] (the run's config key ``profile_changes = false`` turns this off); the run's
  config key ``system_links = true`` turns on the system-level sequence numbers and
  acknowledgements between system storages (:mod:`gapless.impl.ges.syslink`), and
  ``storage_joins = "n3@1.5"`` adds cluster storage n3 while the run goes, 1.5 s in (at
  ``cluster`` granularity: until then no system storage knows it; it retrieves what it lacks,
  epochs kept); ``may_disconnect`` — a client whose connection presented another profile
  than its previous one waits, before a ``disconnect`` fault may take it away, until every
  storage's ``HandoffAck`` reached its node: its epoch notification [GES "Epochs"] (the
  run's config key ``notification_wait = false`` lets it leave at once), and so does a
  client that changed its profile within its connection, for the answers to that change;
  ``reprofile`` — a ``reprofile`` fault's new profile for a connected client: another of the
  workload's filters (a profile change within the connection, with its own epoch at each
  storage and its own notification; off with ``profile_changes = false``);
  ``message_cost`` — an event message's service
  time and bytes for the world's optional capacity model (``ges-latency``); ``durable`` —
  which write makes what durable (``outbox``, ``log``, ``registration``, ``release``, and
  for the finer tier ``replica``, ``unit`` and ``replica_release``, for the system-level
  links ``sysin``);
* decoders: a ``log`` write logs ``(pubend, epoch, attributes)``; a delivered payload is the
  event's attributes; :func:`gapless.impl.ges.messages.wire` summarises messages
  (:class:`~gapless.impl.ges.messages.GesWire`).

Brokers that fail forever are the world's ``fail`` fault (no restart, ever); a stable storage
recovers within finite time, so the fault budget (:func:`within_budget`) excludes a ``fail``
of a storage node or one that disconnects the live nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, final

import attrs
import networkx as nx
from pyrsistent import pmap

from gapless.impl import ges
from gapless.impl.effects import Persist
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.ges.addressing import Hierarchy
from gapless.impl.ges.config import GESConfig, Network
from gapless.impl.ges.messages import EventMsg, Routed, Store, wire
from gapless.impl.ges.session import notified
from gapless.impl.ges.variants import VARIANTS
from gapless.impl.inputs import Publish
from gapless.impl.variants import resolve
from gapless.models.faults import FaultEvent, derive_seed
from gapless.models.runspec import RunSpecError
from gapless.models.workload import PublishEvent, Workload

__all__ = ["GESBinding", "make_binding", "network", "within_budget"]

_HEADER_BYTES: Final = 40

_DURABLE = {
    "outbox": "outbox",
    "log": "log",
    "client": "registration",
    "release": "release",
    "replica": "replica",
    "unit": "unit",
    "sysin": "sysin",
    "unreplicated": "replica_release",
}
GRANULARITIES: Final = ("super-cluster", "cluster")
"""The replication granularities (run config key ``granularity``)."""
DEFAULT_GRANULARITY: Final = "cluster"
"""The default: one storage per cluster under one per super-cluster, as issue 16 asks [GES
"Stable storages"]."""


def fine_storages(graph: nx.Graph) -> dict[str, str]:
    """Per node, the storage of its cluster at ``cluster`` granularity: the cluster's first
    node by name that is not a system storage (the system storage itself in a cluster of one)."""
    clusters: dict[tuple[int, ...], list[str]] = {}
    for n, d in graph.nodes(data=True):
        clusters.setdefault(tuple(d["address"][:-1]), []).append(n)
    system = set(graph.graph["storages"])
    out: dict[str, str] = {}
    for members in clusters.values():
        members.sort(key=lambda n: (n in system, len(n), n))
        out.update(dict.fromkeys(members, members[0]))
    return out


def parse_joins(text: str) -> dict[str, int]:
    """The run config value ``storage_joins``: ``"node@seconds"`` items separated by commas
    (``"n3@1.5"``: cluster storage n3 joins 1.5 s into the run), as node -> µs."""
    out: dict[str, int] = {}
    for item in (x.strip() for x in text.split(",") if x.strip()):
        node, _, at = item.partition("@")
        try:
            seconds = float(at)
        except ValueError:
            seconds = -1.0
        if not node or seconds < 0:
            raise RunSpecError(
                f"RunSpec.config: storage_joins item {item!r} is not node@seconds "
                '(e.g. "n3@1.5", seconds >= 0)'
            )
        out[node] = int(seconds * 1_000_000)
    return out


def network(
    graph: nx.Graph,
    granularity: str = DEFAULT_GRANULARITY,
    system_links: bool = False,
    joins: Mapping[str, int] | None = None,
) -> Network:
    """The roles' static network for ``graph`` at ``granularity`` (with the system-level
    links between system storages when ``system_links``; ``joins``: cluster storages added
    while the run goes, node -> µs)."""
    if granularity not in GRANULARITIES:
        raise RunSpecError(
            f"RunSpec.config: granularity = {granularity!r}; allowed: {', '.join(GRANULARITIES)}"
        )
    h = Hierarchy.build(
        {n: tuple(d["address"]) for n, d in graph.nodes(data=True)},
        [tuple(e) for e in graph.edges],
    )
    storages = tuple(graph.graph["storages"])
    storage_of = {}
    for n in graph.nodes:
        top = h.unit(n, h.depth)
        storage_of[n] = next(s for s in storages if h.unit(s, h.depth) == top)
    brokers = tuple(sorted(n for n, d in graph.nodes(data=True) if d["role"] == "shb"))
    fine_of = pmap(fine_storages(graph)) if granularity == "cluster" else pmap()
    try:
        return Network(
            hierarchy=h,
            storages=storages,
            storage_of=pmap(storage_of),
            brokers=brokers,
            fine_of=fine_of,
            system_links=system_links,
            joins=pmap(joins or {}),
        )
    except ProtocolMisuse as exc:
        raise RunSpecError(f"RunSpec.config: storage_joins: {exc}") from exc


@final
class GESBinding:
    """GES nodes as the world drives them (see module doc)."""

    status_period_us = 0
    min_repetition_us = 0

    def __init__(
        self,
        graph: nx.Graph,
        workload: Workload,
        config: GESConfig,
        policy: Any,
        *,
        profile_changes: bool = True,
        notification_wait: bool = True,
        granularity: str = DEFAULT_GRANULARITY,
        system_links: bool = False,
        joins: Mapping[str, int] | None = None,
    ):
        self.net = network(graph, granularity, system_links, joins)
        self.config = config
        self.policy = policy
        self.handle = ges.handle
        self.crash = ges.crash
        self.wire = wire
        self.home = {s.name: s.shb for s in workload.subscriptions}
        self.filters = {s.name: s.filter for s in workload.subscriptions}
        self.menu = tuple(sorted(set(self.filters.values()))) if profile_changes else ()
        self.notification_wait = notification_wait
        hosts = dict(graph.graph["pubends"])
        self.storage_of_pubend = {p: self.net.storage_of[h] for p, h in hosts.items()}

    def initial_states(self) -> dict[str, Any]:
        return {
            n: ges.initial_state(n, self.net, self.config, self.policy)
            for n in sorted(self.net.hierarchy.nodes)
        }

    def publish_input(self, event: PublishEvent) -> Publish:
        return Publish(pubend=event.pubend, attributes=event.attributes, size=event.size)

    def logged(self, persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        key = persist.key
        if type(key) is tuple and key[0] == "log":
            ev = persist.value[0]
            return ev.pubend, ev.epoch, ev.attributes
        return None

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        return payload if isinstance(payload, Mapping) else None

    def durable(self, persist: Persist) -> str | None:
        key = persist.key
        return _DURABLE.get(key[0]) if type(key) is tuple else None

    def resume_token(self, subscriber: str, consumed: dict[str, int]) -> Any:
        epochs: dict[str, int] = {}
        for pubend, tick in consumed.items():
            s = self.storage_of_pubend[pubend]
            epochs[s] = max(epochs.get(s, tick), tick)
        return tuple(sorted(epochs.items()))

    def message_cost(self, msg: Any) -> tuple[int, int]:
        """The world's optional capacity model: ``(events, bytes)`` of ``msg``. An event
        (``EventMsg``, or a publisher's ``Store``) counts as one event of broker service time
        and its bytes are its attributes (a latency workload pads them to the event's size)
        plus a fixed header; every other message is control: no event, a header."""
        body = msg.body if type(msg) is Routed else msg
        t = type(body)
        if t is EventMsg or t is Store:
            return 1, _HEADER_BYTES + _attribute_bytes(body.attributes)
        return 0, _HEADER_BYTES

    def profile(self, subscriber: str, connection: int) -> str:
        """The profile ``subscriber`` presents at ``connection`` (see module doc)."""
        own = self.filters[subscriber]
        draw = derive_seed(subscriber, connection, "profile")
        if connection == 0 or len(self.menu) < 2 or draw % 2:
            return own
        return self.menu[(draw // 2) % len(self.menu)]

    def changed_profile(self, subscriber: str, connection: int) -> bool:
        """Whether ``subscriber`` presents another profile at ``connection`` than at the
        connection before (a profile change, notified by every storage's answer)."""
        if connection == 0:
            return False
        return self.profile(subscriber, connection) != self.profile(subscriber, connection - 1)

    def may_disconnect(self, subscriber: str, state: Any) -> bool:
        """The world's seam: a client whose connection changed its profile waits, before it
        may disconnect, until every storage has answered its handoff — the epoch notification
        of the change [GES "Epochs", "Profiles and the profile graph"]; it then knows where
        its change took effect (:func:`gapless.impl.ges.session.notified`). The run config key
        ``notification_wait = false`` lets it leave at once."""
        sess = state.sessions.get(subscriber)
        if not self.notification_wait or sess is None:
            return True
        if not sess.change and not self.changed_profile(subscriber, sess.connection):
            return True
        return notified(sess, self.net.storages)

    def reprofile(self, subscriber: str, state: Any) -> str | None:
        """The world's seam for a ``reprofile`` fault: the profile a connected client changes
        to within its connection — another of the workload's filters, drawn from the client's
        name, connection and change number (None when profile changes are off or the client
        has no session at its node) [GES "Epochs"]."""
        sess = state.sessions.get(subscriber)
        if sess is None or len(self.menu) < 2:
            return None
        others = [p for p in self.menu if p != sess.profile]
        draw = derive_seed(subscriber, sess.connection, sess.change + 1, "reprofile")
        return others[draw % len(others)]

    def roam(self, subscriber: str, connection: int, alive: tuple[str, ...]) -> str:
        home = self.home[subscriber]
        if connection == 0 and home in alive:
            return home
        options = [n for n in alive if n in self.net.brokers] or list(alive)
        return options[derive_seed(subscriber, connection, "roam") % len(options)]


def _attribute_bytes(attributes: Mapping[str, Any]) -> int:
    return sum(len(k) + len(str(v)) for k, v in attributes.items())


def make_binding(spec: Any, graph: nx.Graph, workload: Workload) -> GESBinding:
    """The binding of ``spec`` (a ``RunSpec``): its variant's policy, its config overrides."""
    overrides = dict(spec.config)
    changes = overrides.pop("profile_changes", True)
    wait = overrides.pop("notification_wait", True)
    granularity = overrides.pop("granularity", DEFAULT_GRANULARITY)
    links = overrides.pop("system_links", False)
    joins = overrides.pop("storage_joins", "")
    if not isinstance(joins, str):
        raise RunSpecError(f"RunSpec.config: storage_joins = {joins!r}; expected a string")
    flags = (("profile_changes", changes), ("system_links", links), ("notification_wait", wait))
    for key, flag in flags:
        if not isinstance(flag, bool):
            raise RunSpecError(f"RunSpec.config: {key} = {flag!r}; expected a bool")
    fields = [a.name for a in attrs.fields(GESConfig)]
    unknown = sorted(k for k in overrides if k not in fields)
    if unknown:
        raise RunSpecError(
            f"RunSpec.config: unknown key {unknown[0]!r}; allowed keys: {', '.join(fields)}, "
            "profile_changes, granularity, system_links, storage_joins, notification_wait"
        )
    try:
        config = GESConfig(**overrides)
    except TypeError as exc:
        raise RunSpecError(f"RunSpec.config: {exc}") from exc
    policy = resolve("ges", spec.variant, ges.PAPER_POLICY, VARIANTS)
    return GESBinding(
        graph,
        workload,
        config,
        policy,
        profile_changes=changes,
        notification_wait=wait,
        granularity=granularity,
        system_links=links,
        joins=parse_joins(joins),
    )


def within_budget(graph: nx.Graph, active: tuple[FaultEvent, ...]) -> bool:
    """GES's failure model [GES "Reliable delivery", "Conclusion"]: any broker, or a whole
    unit (``fail_unit``: every broker of a cluster or super-cluster, written as ``fail``
    events), may fail forever, but not a system stable storage (it recovers within finite
    time: a unit holding one cannot fail for good within the promise; a cluster storage of the
    finer tier may, the system storage above it holding every event), and the nodes left must
    stay connected (an event reaches every live interested unit only while a path to it
    exists)."""
    failed = {e.target for e in active if e.kind == "fail"}
    if not failed:
        return True
    if failed & set(graph.graph["storages"]):
        return False
    alive = graph.subgraph(n for n in graph.nodes if n not in failed)
    return bool(nx.is_connected(alive))
