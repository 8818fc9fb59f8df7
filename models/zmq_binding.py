"""ZeroMQ subscription forwarding (``gapless.impl.zmq``) bound to the world [ZMQ].

Theory of operation
-------------------
The world's brokers are ZeroMQ nodes: the publisher host (``role="phb"``) runs an XPUB
endpoint whose pubend is named after it; every other broker runs a forwarding device, its
XSUB towards its parent in the topology's tree (``cell_tree``), its XPUB towards its children.
A subscriber of the workload is a SUB socket *hosted* by the device it connects to
(``role="shb"``): :class:`HostState` keeps it beside the device and passes their messages
to each other at once (a connection on the same machine), so only messages between brokers
cross the world's links.

* ``Connect(subscriber, connection)`` is the SUB connecting: it subscribes to its prefix
  (:func:`subscription_of`: a deterministic choice among :data:`SUBSCRIPTIONS` by name and
  connection number — mostly prefixes, a few suffixes, a kind the devices do not know — so
  100 subscribers hold "random" prefixes and a reconnecting one changes its subscription),
  then the device sees it connect and it resends;
  ``Disconnect`` is the SUB going away (its subscription removed as if unsubscribed).
* ``Publish(pubend, attributes)`` becomes ``Post(payload, seq=index + 1)`` with the payload
  :func:`payload_of` the attributes (``b"NY3:17"``: location, priority, index), so
  prefixes select by location and priority.
* ``Restart`` (boot, and after a crash) tells the role every neighbour is up; a crashed
  device has lost every subscription (``gapless.impl.zmq.device.restart``); the world
  reconnects the subscribers it hosts.
* Options and aggregations come from :class:`ZmqConfig` (``RunSpec.config``), the rules from
  the run's variant (``gapless.impl.zmq.variants``).

The invariants read the world's trace through
:class:`~gapless.invariants.zmq.WorldReader` with the context :func:`check_context` builds.
"""

from __future__ import annotations

import functools
import hashlib
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final, final

import attrs
import networkx as nx
from pyrsistent import PMap, pmap

from gapless.impl.effects import Deliver, Effect, Persist
from gapless.impl.inputs import Connect, Disconnect, LinkChanged, Publish, Receive, Restart
from gapless.impl.zmq import NodeState, handle
from gapless.impl.zmq.device import DeviceState, restart
from gapless.impl.zmq.messages import Notify, Post, Subscribe, ZmqWire, wire
from gapless.impl.zmq.policy import XpubOptions, ZmqPolicy
from gapless.impl.zmq.pub import PubState
from gapless.impl.zmq.records import Edge, ZmqTopology
from gapless.impl.zmq.sub import SubState
from gapless.impl.zmq.variants import policy_named
from gapless.impl.zmq.xpub import XpubHalf
from gapless.invariants.zmq import ZmqCheckContext
from gapless.models.binding import Binding
from gapless.models.runspec import RunSpecError
from gapless.models.workload import LOCS, PublishEvent, Workload

__all__ = [
    "FAN_OUT",
    "PREFIXES",
    "SUBSCRIPTIONS",
    "SUFFIXES",
    "TOPOLOGIES",
    "HostState",
    "ZmqBinding",
    "ZmqConfig",
    "check_context",
    "make_binding",
    "payload_of",
    "run_salt",
    "subscription_of",
    "tree_edges",
]

PREFIXES: Final = (
    b"",
    *(loc.encode() for loc in LOCS),
    *(f"{loc}{p}".encode() for loc in LOCS for p in range(5)),
)
"""The prefixes subscribers pick from: everything, a location, a location and priority."""


SUFFIXES: Final = tuple(str(d).encode() for d in range(10))
"""Suffix subscriptions (a message index ending in a digit): a matching kind the devices do
not know, so they treat it as "send me everything" [ZMQ "Different Matching Algorithms"]."""

SUBSCRIPTIONS: Final = (
    *(("prefix", p) for p in PREFIXES),
    *(("suffix", s) for s in SUFFIXES),
)
"""Every subscription a subscriber may hold."""


def subscription_of(subscriber: str, connection: int, salt: int = 0) -> tuple[str, bytes]:
    """The ``(kind, topic)`` ``subscriber`` subscribes to on its ``connection``-th connection:
    deterministic from the name and the number; one in eight is a suffix, the rest a prefix
    of :data:`PREFIXES`, chosen evenly. A reconnecting subscriber changes its mind: the
    subscribe/unsubscribe churn of a run. ``salt`` (:func:`run_salt`) varies the choice
    from run to run."""
    key = f"{subscriber}#{connection}#{salt}".encode()
    h = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    if h % 8 == 0:
        return ("suffix", SUFFIXES[(h // 8) % len(SUFFIXES)])
    return ("prefix", PREFIXES[(h // 8) % len(PREFIXES)])


def run_salt(workload: Workload) -> int:
    """A number that differs between runs of different seeds (the first messages' jittered
    publish times), so each run's subscribers pick different subscriptions."""
    return sum(e.at_us for e in workload.publishes[:4])


def payload_of(attributes: Mapping[str, Any]) -> bytes:
    """A workload message's payload: ``b"<loc><p>:<n>"``."""
    return (
        f"{attributes.get('loc', '')}{attributes.get('p', '')}:{attributes.get('n', '')}".encode()
    )


@final
@attrs.frozen(kw_only=True)
class ZmqConfig:
    """A run's ZeroMQ settings (``RunSpec.config`` keys): the devices' XPUB options and the
    aggregation policies (both off by default, as in libzmq)."""

    verbose: bool = False
    verboser: bool = False
    manual: bool = False
    welcome: str | None = None
    subsumption: bool = False
    fallback_limit: int | None = None

    def options(self) -> XpubOptions:
        welcome = None if self.welcome is None else self.welcome.encode()
        return XpubOptions(
            verbose=self.verbose, verboser=self.verboser, manual=self.manual, welcome=welcome
        )


def _graph(name: str, roles: Mapping[str, str], tree: list[tuple[str, str]]) -> nx.Graph:
    pub = next(n for n, r in roles.items() if r == "phb")
    g = nx.Graph(name=name, pubends=((pub, pub),), cell_tree=tuple(sorted(tree)), order="publisher")
    for n in sorted(roles):
        g.add_node(n, role=roles[n], cell=n)
    for up, down in sorted(tree):
        g.add_edge(up, down, kind="tree")
    return g


def zmq_tree() -> nx.Graph:
    """Three levels of devices under publisher ``p``: ``d1``; ``d2a``, ``d2b``; and the four
    subscriber-hosting devices ``d3a``–``d3d``."""
    roles = {"p": "phb", "d1": "ib", "d2a": "ib", "d2b": "ib"}
    roles |= {f"d3{c}": "shb" for c in "abcd"}
    tree = [("p", "d1"), ("d1", "d2a"), ("d1", "d2b")]
    tree += [("d2a", "d3a"), ("d2a", "d3b"), ("d2b", "d3c"), ("d2b", "d3d")]
    return _graph("zmq-tree", roles, tree)


def zmq_small() -> nx.Graph:
    """Publisher ``p``, device ``d1``, subscriber-hosting devices ``s1`` and ``s2``."""
    roles = {"p": "phb", "d1": "ib", "s1": "shb", "s2": "shb"}
    return _graph("zmq-small", roles, [("p", "d1"), ("d1", "s1"), ("d1", "s2")])


FAN_OUT: Final = 16
"""Subscriber-hosting devices under ``zmq-fan``'s device."""


def zmq_fan() -> nx.Graph:
    """Publisher ``p``, device ``d1`` and :data:`FAN_OUT` subscriber-hosting devices
    ``s1``... under it: with one subscriber each choosing among 19 prefixes, two of ``d1``'s
    peers usually share a prefix, which is what reference counting is for [ZMQ "Subscription
    Aggregation"] (the zoo runs the refcount bugs here)."""
    roles = {"p": "phb", "d1": "ib"} | {f"s{i}": "shb" for i in range(1, FAN_OUT + 1)}
    tree = [("p", "d1")] + [("d1", f"s{i}") for i in range(1, FAN_OUT + 1)]
    return _graph("zmq-fan", roles, tree)


TOPOLOGIES: Final[dict[str, Callable[[], nx.Graph]]] = {
    "zmq-tree": zmq_tree,
    "zmq-small": zmq_small,
    "zmq-fan": zmq_fan,
}


def tree_edges(graph: nx.Graph) -> tuple[tuple[str, str], ...]:
    """The graph's links oriented from the publisher down, sorted."""
    return tuple(sorted(tuple(e) for e in graph.graph["cell_tree"]))


@final
@attrs.frozen(kw_only=True)
class HostState:
    """A broker: its ZeroMQ ``role`` and, for a device, the SUBs it hosts (``subs``) with
    their connection numbers (``conns``)."""

    name: str
    role: NodeState
    neighbours: tuple[str, ...]
    subs: PMap[str, SubState] = attrs.field(factory=pmap)
    conns: PMap[str, int] = attrs.field(factory=pmap)


_Step = tuple[str | None, object]  # (hosted SUB's name, or None for the role; its input)


@final
class ZmqBinding:
    """ZeroMQ roles as the world drives them (see module doc)."""

    def __init__(
        self, graph: nx.Graph, workload: Workload, policy: ZmqPolicy, config: ZmqConfig
    ) -> None:
        self.graph = graph
        self.workload = workload
        self.policy = policy
        self.config = config
        self.status_period_us = 0
        self.min_repetition_us = 0
        self.margin_us = 0
        self.salt = run_salt(workload)
        self.edges = tree_edges(graph)

    def _role(self, name: str) -> NodeState:
        half = XpubHalf(options=self.config.options())
        if self.graph.nodes[name]["role"] == "phb":
            return PubState(name=name, half=XpubHalf(), notify_app=False, policy=self.policy)
        ups = tuple(u for u, d in self.edges if d == name)
        return DeviceState(name=name, upstream=ups, half=half, policy=self.policy)

    def initial_states(self) -> dict[str, Any]:
        return {
            n: HostState(name=n, role=self._role(n), neighbours=tuple(sorted(self.graph[n])))
            for n in sorted(self.graph.nodes)
        }

    def crash(self, state: HostState) -> HostState:
        role = state.role
        fresh = restart(role) if isinstance(role, DeviceState) else self._role(state.name)
        return HostState(
            name=state.name, role=fresh, neighbours=state.neighbours, conns=state.conns
        )

    def publish_input(self, event: PublishEvent) -> Publish:
        return Publish(pubend=event.pubend, attributes=event.attributes, size=event.size)  # type: ignore[arg-type]

    def handle(self, state: HostState, inp: Any, now: int) -> tuple[HostState, tuple[Effect, ...]]:
        steps: deque[_Step] = deque()
        if isinstance(inp, Restart):
            steps.extend((None, LinkChanged(neighbour=nb, up=True)) for nb in state.neighbours)
        elif isinstance(inp, Connect):
            state = self._connect(state, inp)
            steps.append((None, LinkChanged(neighbour=inp.subscriber, up=True)))
            steps.append((inp.subscriber, LinkChanged(neighbour=state.name, up=True)))
        elif isinstance(inp, Disconnect):
            if inp.subscriber not in state.subs:
                return state, ()
            state = attrs.evolve(state, subs=state.subs.remove(inp.subscriber))
            steps.append((None, LinkChanged(neighbour=inp.subscriber, up=False)))
        elif isinstance(inp, Publish):
            n = int(inp.attributes.get("n", 0))
            steps.append((None, Post(payload=payload_of(inp.attributes), seq=n + 1)))
        else:
            steps.append((None, inp))
        return self._run(state, steps, now)

    def _connect(self, state: HostState, inp: Connect) -> HostState:
        sub = SubState(name=inp.subscriber, upstream=(state.name,), policy=self.policy)
        kind, topic = subscription_of(inp.subscriber, inp.connection, self.salt)
        sub, _ = handle(sub, Subscribe(topic=topic, kind=kind), 0)
        assert isinstance(sub, SubState)
        return attrs.evolve(
            state,
            subs=state.subs.set(inp.subscriber, sub),
            conns=state.conns.set(inp.subscriber, inp.connection),
        )

    def _run(
        self, state: HostState, steps: deque[_Step], now: int
    ) -> tuple[HostState, tuple[Effect, ...]]:
        """Process ``steps`` and what they cause inside the host (a SUB and its device
        talk directly); effects towards other brokers and deliveries come out, in order."""
        out: list[Effect] = []
        while steps:
            who, inp = steps.popleft()
            if who is None:
                role, effects = handle(state.role, inp, now)
                if role is not state.role:
                    state = attrs.evolve(state, role=role)
            else:
                sub = state.subs.get(who)
                if sub is None:
                    continue  # the SUB went away meanwhile
                new, effects = handle(sub, inp, now)
                if new is not sub:
                    state = attrs.evolve(state, subs=state.subs.set(who, new))  # type: ignore[arg-type]
            for eff in effects:
                self._route(state, who, eff, steps, out)
        return state, tuple(out)

    def _route(
        self, state: HostState, who: str | None, eff: Any, steps: deque[_Step], out: list[Effect]
    ) -> None:
        if isinstance(eff, Notify):
            return  # a PUB's application keeps them to itself
        send_to = getattr(eff, "to", None)
        if who is None and send_to in state.subs:
            steps.append((send_to, Receive(sender=state.name, msg=eff.msg)))
        elif who is not None and send_to == state.name:
            steps.append((None, Receive(sender=who, msg=eff.msg)))
        elif isinstance(eff, Deliver) and who is not None:
            out.append(attrs.evolve(eff, connection=state.conns.get(who, 0)))
        else:
            out.append(eff)

    def wire(self, msg: Any) -> ZmqWire:
        return wire(msg)

    def logged(self, persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        return None

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        return None


def make_binding(spec: Any, graph: nx.Graph, workload: Workload) -> ZmqBinding:
    """The binding of ``spec`` (a ``RunSpec``): its variant's policy with the config's
    aggregations, its config's options."""
    try:
        config = ZmqConfig(**dict(spec.config))
    except TypeError as exc:
        fields = ", ".join(a.name for a in attrs.fields(ZmqConfig))
        raise RunSpecError(f"RunSpec.config: {exc}; allowed keys: {fields}") from exc
    policy = attrs.evolve(
        policy_named(spec.variant),
        subsumption=config.subsumption,
        fallback_limit=config.fallback_limit,
    )
    binding = ZmqBinding(graph, workload, policy, config)
    binding.margin_us = int(spec.link_delay_us) + int(spec.link_jitter_us) + 1
    return binding


def check_context(
    graph: nx.Graph, workload: Workload, binding: Binding, matches: Callable[[str, Any], bool]
) -> ZmqCheckContext:
    """What the ZeroMQ invariants know of a run besides its trace (``matches``, the content
    filter evaluator, is not used: subscriptions here are prefixes)."""
    assert isinstance(binding, ZmqBinding)
    edges = tree_edges(graph)
    subs = tuple(s.name for s in workload.subscriptions)
    hosted = tuple(Edge(up=s.shb, down=s.name) for s in workload.subscriptions)
    pubs = tuple(sorted(h for _, h in graph.graph["pubends"]))
    topo = ZmqTopology(
        edges=(*(Edge(up=u, down=d) for u, d in edges), *hosted),
        subscribers=subs,
        publishers=pubs,
        devices=tuple(sorted(n for n in graph.nodes if n not in pubs)),
        hosted=True,
        subsumption=binding.config.subsumption,
        fallback_limit=binding.config.fallback_limit,
    )
    return ZmqCheckContext(
        topology=topo,
        subscription_of=functools.partial(subscription_of, salt=binding.salt),
        payload_of=payload_of,
        graph_edges=edges,
        margin_us=binding.margin_us,
    )
