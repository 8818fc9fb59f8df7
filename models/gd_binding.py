"""The guaranteed-delivery protocol (``gapless.impl.gd``) bound to the world [GD §2–4].

Theory of operation
-------------------
:class:`GDBinding` adapts the GD roles to :class:`~gapless.models.binding.Binding`:

* the networkx topology (:mod:`gapless.models.topology`) and the workload's subscriptions
  become a :class:`~gapless.impl.gd.topology.GDTopology` (:func:`to_gd_topology`): roles
  upper-cased, cells and links as they are, pubends with their hosts, the cell tree as cell
  edges, subscribers with their filters and — for a total-order topology — the merge group
  ``"total"`` of the merged pubends [GD §2.3, Figure 1];
* configuration: :class:`~gapless.impl.gd.config.GDConfig` with the run's overrides
  (``RunSpec.config``); its minimum repetition interval drives the nack-consolidation
  invariant (link delay and jitter are the world's, from the run spec);
* policy: the variant's policy (``RunSpec.variant``; ``"none"`` is the paper's);
* decoders: a ``Persist`` whose value carries a ``data`` (:class:`~gapless.impl.gd.messages.Data`)
  logs that message; a delivered payload is a ``Data`` whose ``attributes`` the invariants
  compare with the logged ones; :func:`gapless.impl.gd.messages.wire` summarises messages;
* coverage: ``Observe`` effects (emitted when ``GDConfig.coverage`` is on) name lattice
  transitions; the world counts them. Each input that changes a role's state also counts the
  rule of the dispatch table that took it (:func:`rule_label`, e.g. ``"R:IB Receive(Nack)"``,
  the rows of ``spec/gd.md``'s map) and, with each lattice label that step emitted, the pair
  (``"R:IB Receive(Nack) C:N->C"``): the per-transition coverage a campaign reports and a
  guided campaign feeds back (:mod:`gapless.spark_fuzz.transitions`). The world asks for the
  rule (``coverage``) right after the step and for the lattice labels (``effect_labels``) as
  it handles the step's effects, so the binding pairs them with the rule it last named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, final

import attrs
import networkx as nx
from pyrsistent import pmap

from gapless.impl import gd
from gapless.impl.effects import Effect, Persist
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.messages import wire
from gapless.impl.gd.topology import GDTopology, SubscriberSpec
from gapless.impl.gd.variants import VARIANTS
from gapless.impl.inputs import Publish, Receive, TimerFired
from gapless.impl.trace import Wire
from gapless.impl.variants import resolve
from gapless.invariants.checker import CheckContext, SubscriptionInfo
from gapless.invariants.gd.forms import malformed
from gapless.models.binding import Binding
from gapless.models.runspec import RunSpecError
from gapless.models.workload import PublishEvent, Workload

_PMAP = type(pmap())

__all__ = [
    "GDBinding",
    "check_context",
    "logged_batch",
    "logged_tick",
    "make_binding",
    "rule_label",
    "to_gd_topology",
]


def to_gd_topology(graph: nx.Graph, workload: Workload) -> GDTopology:
    """The roles' ``GDTopology`` for ``graph`` with the workload's subscribers."""
    merged = tuple(graph.graph.get("merged", ()))
    subs = {
        s.name: SubscriberSpec(
            shb=s.shb, filter=s.filter, group="total" if (s.order == "total" and merged) else None
        )
        for s in workload.subscriptions
    }
    return GDTopology(
        brokers={
            n: (str(d["role"]).upper(), str(d["cell"])) for n, d in sorted(graph.nodes(data=True))
        },
        links=sorted(tuple(sorted(e)) for e in graph.edges),
        pubends=dict(graph.graph["pubends"]),
        cell_edges=list(graph.graph["cell_tree"]),
        subscribers=subs,
        groups={"total": merged} if merged else {},
    )


def logged_tick(persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
    """``(pubend, tick, attributes)`` of the message a pubend's ``Persist`` logs, else None
    (``gapless.impl.gd.logged``)."""
    return gd.logged(persist)


def rule_label(state: Any, inp: Any) -> str:
    """The coverage label of the dispatch-table rule that took ``inp`` at ``state``'s role:
    ``"R:<role> <input>"``, the input read as the rule map reads it (``Publish``,
    ``Receive(Nack)``, ``TimerFired(gct)``) [GD §2-4]."""
    t = type(inp)
    if t is Receive:
        what = f"Receive({type(inp.msg).__name__})"
    elif t is TimerFired:
        key = inp.key
        what = f"TimerFired({key[2] if isinstance(key, tuple) and len(key) > 2 else '?'})"
    else:
        what = t.__name__
    return f"R:{getattr(type(state), 'ROLE', type(state).__name__)} {what}"


def logged_batch(persist: Persist) -> tuple[tuple[str, int, Mapping[str, Any]], ...]:
    """``(pubend, tick, attributes)`` of every message a pubend's ``Persist`` logs: one, or
    a group-commit batch's (``gapless.impl.gd.logged_batch``)."""
    return gd.logged_batch(persist)


@final
class GDBinding:
    """GD roles as the world drives them (see module doc)."""

    def __init__(self, topology: Any, config: Any, policy: Any) -> None:
        self.topology = topology
        self.config = config
        self.policy = policy
        self.handle = gd.handle
        self.crash = gd.crash
        #: the first stream a step left out of canonical form (``canonical_state``)
        self.malformed = malformed
        self._observe = getattr(gd, "Observe", None)
        # the roles exchange LinkStatus messages on their own timer [GD §3.1]; the world only
        # reports link failures and heals
        self.status_period_us = 0
        self.min_repetition_us = int(config.min_repetition_us)
        self.aet_us = int(config.aet_us)
        self.ack_expected_period_us = int(config.ack_expected_period_us)
        self.ack_delay_us = int(config.ack_delay_us)
        self._wire_msg: Any = None
        self._wire_last: Wire | None = None
        #: the rule of the step whose effects the world is handling (see the module doc)
        self._rule = ""
        self._rules: dict[tuple[Any, ...], tuple[str]] = {}
        self._pairs: dict[tuple[str, Any], tuple[str, ...]] = {}

    def initial_states(self) -> dict[str, Any]:
        states: dict[str, Any] = dict(gd.initial_states(self.topology, self.config, self.policy))
        return states

    def publish_input(self, event: PublishEvent) -> Publish:
        return Publish(
            pubend=event.pubend,
            attributes=event.attributes,  # type: ignore[arg-type]  # attrs converter=pmap
            size=event.size,
        )

    def logged(self, persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
        return logged_tick(persist)

    def logged_batch(self, persist: Persist) -> tuple[tuple[str, int, Mapping[str, Any]], ...]:
        return logged_batch(persist)

    def payload_attributes(self, payload: Any) -> Mapping[str, Any] | None:
        attrs_ = getattr(payload, "attributes", None)
        if type(attrs_) is _PMAP or isinstance(attrs_, Mapping):
            return attrs_  # type: ignore[no-any-return]
        return None

    def effect_labels(self, effect: Effect | Any) -> tuple[str, ...] | None:
        """The coverage labels of an ``Observe`` effect (None for any other effect)."""
        if self._observe is not None and isinstance(effect, self._observe):
            rule = self._rule
            raw = effect.labels
            pairs = self._pairs.get((rule, raw))  # the same labels after the same rule
            if pairs is None:
                labels = tuple(str(label) for label in raw)
                pairs = labels + tuple(f"{rule} {label}" for label in labels) if rule else labels
                self._pairs[(rule, raw)] = pairs
            return pairs
        return None

    def coverage(self, before: Any, after: Any, inp: Any) -> tuple[str, ...]:
        """The rule that took ``inp`` (called by the world when it changed the state); none
        when the run's config switched coverage off (``GDConfig.coverage``)."""
        if not self.config.coverage:
            return ()
        t = type(inp)
        if t is Receive:
            key: tuple[Any, ...] = (type(after), t, type(inp.msg))
        elif t is TimerFired and isinstance(inp.key, tuple) and len(inp.key) > 2:
            key = (type(after), t, inp.key[2])
        else:
            key = (type(after), t)
        got = self._rules.get(key)
        if got is None:
            got = self._rules[key] = (rule_label(after, inp),)
        self._rule = got[0]
        return got

    def wire(self, msg: Any) -> Wire:
        """The wire summary of ``msg`` (:func:`gapless.impl.gd.messages.wire`). A message
        is often sent to several neighbours in a row (one knowledge message per broker of a
        downstream cell): the summary of the last message is kept and found again by
        identity (messages are frozen values, so it cannot have changed)."""
        if msg is self._wire_msg and self._wire_last is not None:
            return self._wire_last
        got = wire(msg)
        self._wire_msg, self._wire_last = msg, got
        return got

    def wire_of(self, msg: Any) -> Wire:
        return self.wire(msg)


def make_binding(spec: Any, graph: nx.Graph, workload: Workload) -> GDBinding:
    """The binding of ``spec`` (a ``RunSpec``): its variant's policy, its config overrides."""
    overrides = dict(spec.config)
    if "coverage" not in overrides:
        overrides["coverage"] = True
    try:
        config = GDConfig(**overrides)
    except TypeError as exc:
        fields = ", ".join(a.name for a in attrs.fields(GDConfig))
        raise RunSpecError(f"RunSpec.config: {exc}; allowed keys: {fields}") from exc
    policy = resolve("gd", spec.variant, gd.PAPER_POLICY, VARIANTS)
    return GDBinding(to_gd_topology(graph, workload), config, policy)


def check_context(
    graph: nx.Graph, workload: Workload, binding: Binding, matches: Callable[[str, Any], bool]
) -> CheckContext:
    """GD's invariants' :class:`~gapless.invariants.checker.CheckContext` for a run: the
    workload's subscriptions, the cell structure of ``graph``, the binding's decoders."""
    return CheckContext(
        subscriptions=tuple(
            SubscriptionInfo(name=s.name, shb=s.shb, filter=s.filter, order=s.order)
            for s in workload.subscriptions
        ),
        cell_of={n: str(d["cell"]) for n, d in sorted(graph.nodes(data=True))},
        cell_tree=tuple(graph.graph["cell_tree"]),
        pubend_host=dict(graph.graph["pubends"]),
        merged=tuple(graph.graph.get("merged", ())),
        roles={n: str(d["role"]) for n, d in sorted(graph.nodes(data=True))},
        min_repetition_us=binding.min_repetition_us,
        matches=matches,
        logged=binding.logged,
        # a binding whose writes may hold several messages (GD's group commit) decodes them
        logged_batch=getattr(binding, "logged_batch", None),
        payload_attributes=binding.payload_attributes,
        # a binding without the pubend's liveness rule (a toy) leaves it unjudged
        aet_us=getattr(binding, "aet_us", None),
        ack_expected_period_us=getattr(binding, "ack_expected_period_us", None),
        # a binding without an SHB ack delay (a toy) leaves shb_ack_timing unjudged
        ack_delay_us=getattr(binding, "ack_delay_us", None),
        links=tuple(sorted((min(a, b), max(a, b)) for a, b in graph.edges)),
    )
