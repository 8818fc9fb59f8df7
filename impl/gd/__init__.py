"""Gryphon guaranteed delivery (GD) [GD §2-4] as pure, sans-IO roles.

The API the world (``gapless.models``), the invariants and the campaigns use
-----------------------------------------------------------------------------
Build and run::

    from gapless.impl.gd import GDConfig, GDTopology, PAPER_POLICY, initial_states, handle, crash
    states = initial_states(topology, GDConfig(), PAPER_POLICY)   # {broker: PHBState | ...}
    state, effects = handle(states["p1"], Restart(), 0)            # boot EVERY node at t=0
    state, effects = handle(state, some_input, now)                # one step
    state = crash(state)              # soft state lost, pubend log kept; then Restart() later

* Inputs are ``gapless.impl.inputs`` values; effects are ``gapless.impl.effects`` values plus
  :class:`Observe` (only when ``config.coverage``; labels such as ``"K:Q->D"``, ``"C:N->C"``).
* Every node must get ``Restart()`` once at boot (time 0: arms its periodic timers) and after each
  ``crash``; a crashed node ignores everything else. ``Publish`` goes to the PHB hosting the pubend,
  ``Connect``/``Disconnect`` to the subscriber's SHB (both raise ``ProtocolMisuse`` elsewhere).
  ``LinkChanged(neighbour, up)`` tells a node a link failed or healed (all links start up).
* Timers: keys are tuples ``("gd", epoch, kind, ...)``; a timer armed before a crash is ignored.
* An input that changes nothing returns the same state object and ``()``. Bad network input
  never raises: it becomes ``Rejected``.
* Persist: a pubend logs each message with ``Persist(key=("gd-log", pubend, tick),
  value=LogRecord(data, reserved), delay=config.logging_delay_us)`` and publishes it only on
  ``Persisted(key)``. :func:`logged` decodes such a Persist into ``(pubend, tick, attributes)``.
* Deliver: ``Deliver(subscriber, pubend, tick, payload=Data, connection)``;
  :func:`payload_attributes` reads a payload's attributes; ``Data.published_at`` is the time
  the pubend received the message.
* :func:`wire` summarises any message as a ``gapless.impl.trace.Wire`` (kinds data, silence, ack,
  nack, ack_expected, status; ``final_ranges`` = the silence ranges, not the final prefix).

What the wire shows (for conformance invariants):

* Nacks go upstream only for ticks newly C in the sender's istream (an IB), so one tick is nacked
  upstream at most once per ``config.min_repetition_us`` by one broker; subends repeat after their
  RTO (never below ``min_repetition_us``) with ``retransmission=True``.
* A broker acks ``T`` upstream only when, for each tick ``<= T``, every downstream cell acked it
  *to this broker*, or its edge filter turned the D into F at this broker, or the tick was F
  (silence) in the knowledge this broker received. Upstream, an ostream for a multi-broker cell
  takes the highest ack any broker of that cell sent.
* Retransmitted knowledge (``retransmission=True``) and first-time *silence* messages go only to
  brokers whose nacks are outstanding for an overlapping tick; first-time data goes along the
  routed link of every cell whose edge filter matches.
* An SHB acks only its delivered prefix (for total-order groups, the merged delivered prefix);
  SHBs and IBs send acks at most once per ``config.ack_delay_us`` (AckExpected is answered at
  once). Acks and nacks go to the upstream broker that last sent knowledge or AckExpected of the
  pubend (every up broker of the upstream cell when unknown or its link is down).
* A sideways message (``Knowledge.for_cell``) between brokers of one cell carries that cell's
  view: its silence is F for that cell only.

Roles are types: a broker's state is a :class:`PHBState`, :class:`IBState` or :class:`SHBState`
(with ``config.best_effort``: :class:`BestEffortPHB`, :class:`BestEffortIB`,
:class:`BestEffortSHB`); :data:`NodeState` is their union. :func:`handle` dispatches from the
table in :mod:`gapless.impl.gd.node`; an input a role does not accept is rejected (network and
world inputs: a ``Rejected`` effect naming the role, the input and what it accepts) or refused
(``Publish``, ``Connect``, ``Disconnect``: ``ProtocolMisuse``). The rooms — one module per role
or paper section — are listed, with their rules, in ``spec/gd.md`` (generated from the table).

Reading state (tests, debugging — never for judging correctness): ``state.stream(pubend)``
gives a guaranteed-delivery node's stream (``fin``, ``silent``, ``data``, ``ledger``...),
``PHBState.log`` the pubend's stable log.

Topology: :class:`GDTopology` (see :mod:`gapless.impl.gd.topology`; :func:`figure3` and
:func:`two_broker` build the paper's networks). Total order: ``groups`` names merge groups and a
subscriber's ``group`` selects one; its SHB merges the group's pubends by tick below the least
member horizon; set ``GDConfig(preassign_us=...)`` (e.g. the publish interval) so a quiet pubend
pre-assigns F and the merge does not wait for gap nacks [GD §2.2].

Policies: :class:`GDPolicy` fields are the paper's rules; :data:`PAPER_POLICY` is correct; the bug
zoo (``gapless.spark_fuzz.zoo``) assembles the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gapless.impl.effects import Persist
from gapless.impl.gd.build import initial_states
from gapless.impl.gd.config import GDConfig, GDConfigError
from gapless.impl.gd.messages import (
    Ack,
    AckExpected,
    Data,
    GDMessage,
    Knowledge,
    LinkStatus,
    Nack,
    wire,
)
from gapless.impl.gd.node import (
    crash,
    handle,
    on_connect,
    on_disconnect,
    on_link_changed,
    on_persisted,
    on_publish,
    on_receive,
    on_restart,
    on_timer_fired,
)
from gapless.impl.gd.policy import PAPER_POLICY, GDPolicy
from gapless.impl.gd.state import (
    BestEffortIB,
    BestEffortPHB,
    BestEffortSHB,
    IBState,
    LogBatch,
    LogRecord,
    NodeState,
    PHBState,
    SHBState,
)
from gapless.impl.gd.step import LOG_KEY, Observe
from gapless.impl.gd.topology import BrokerSpec, GDTopology, SubscriberSpec, figure3, two_broker

__all__ = [
    "LOG_KEY",
    "PAPER_POLICY",
    "Ack",
    "AckExpected",
    "BestEffortIB",
    "BestEffortPHB",
    "BestEffortSHB",
    "BrokerSpec",
    "Data",
    "GDConfig",
    "GDConfigError",
    "GDMessage",
    "GDPolicy",
    "GDTopology",
    "IBState",
    "Knowledge",
    "LinkStatus",
    "LogBatch",
    "LogRecord",
    "Nack",
    "NodeState",
    "Observe",
    "PHBState",
    "SHBState",
    "SubscriberSpec",
    "crash",
    "figure3",
    "handle",
    "initial_states",
    "logged",
    "logged_batch",
    "on_connect",
    "on_disconnect",
    "on_link_changed",
    "on_persisted",
    "on_publish",
    "on_receive",
    "on_restart",
    "on_timer_fired",
    "payload_attributes",
    "two_broker",
    "wire",
]


def logged(persist: Persist) -> tuple[str, int, Mapping[str, Any]] | None:
    """``(pubend, tick, attributes)`` when ``persist`` is a pubend logging one message, else
    None (a group-commit batch: see :func:`logged_batch`)."""
    value = persist.value
    if isinstance(value, LogRecord):
        d = value.data
        return (d.pubend, d.tick, d.attributes)
    return None


def logged_batch(persist: Persist) -> tuple[tuple[str, int, Mapping[str, Any]], ...]:
    """``(pubend, tick, attributes)`` of every message ``persist`` logs, in tick order: one
    for a per-message write, each of a group-commit ``LogBatch`` (``GDConfig.group_commit``),
    none for anything else [GD §2.2, §4.1]."""
    value = persist.value
    if isinstance(value, LogBatch):
        return tuple((r.data.pubend, r.data.tick, r.data.attributes) for r in value.records)
    got = logged(persist)
    return () if got is None else (got,)


def payload_attributes(payload: Any) -> Mapping[str, Any]:
    """The attributes of a delivered payload (a :class:`Data`)."""
    if isinstance(payload, Data):
        return payload.attributes
    return {}
