"""Fault schedules as plain, serialisable data (DESIGN.md "Determinism and faults").

Theory of operation
-------------------
A :class:`FaultSchedule` is a tuple of :class:`FaultEvent` values. Each event carries *all*
its parameters (kind, start, duration, target, probabilities, delays) and the seed of its
*own* random stream (``stream``), derived once, at generation, from the campaign seed and the
event's own identity (its kind and its index among events of that kind). The world draws
every random choice an event makes (which message a drop window loses, how far a reorder
window delays one) from that stream alone, so removing one event while shrinking never
changes what the others do (NOTES.md, "Determinism pitfalls").

Schedules are generated from ``(profile, targets, duration, seed)`` by the pure function
:func:`generate`, serialised with cattrs to JSON (:func:`to_json`, :func:`from_json`) and
never pickled.

Fault kinds (:data:`FAULT_KINDS`), each starting at ``at_us``:

* ``crash`` — broker ``target`` crashes (soft state lost, stable storage kept) and restarts
  ``duration_us`` later;
* ``stall_broker`` — broker ``target`` accepts input but forwards nothing for ``stall_us``,
  then crashes, and restarts ``duration_us`` after the crash [GD §4.2];
* ``link_fail`` — link ``"a|b"`` fails (both ends told) and heals ``duration_us`` later;
* ``stall_link`` — link ``"a|b"`` silently loses everything for ``stall_us``, then fails for
  ``duration_us`` [GD §4.2];
* ``drop`` / ``duplicate`` — for ``duration_us`` the link loses / duplicates each message
  with ``probability``;
* ``reorder`` — for ``duration_us`` each message on the link gets an extra delay drawn
  uniformly from ``[0, max_delay_us]`` (so later messages can overtake it);
* ``disconnect`` — subscriber ``target`` disconnects and reconnects (a new connection)
  ``duration_us`` later;
* ``partition`` — the nodes listed in ``target`` (comma separated) are cut from all others
  for ``duration_us`` (every crossing link fails, then heals);
* ``fail`` (:data:`PERMANENT_KINDS`) — broker ``target`` crashes and never restarts [GES
  "Reliable delivery": "a unit can fail and remain failed forever"]; ``duration_us`` later
  the clients it hosted reconnect elsewhere when the protocol's binding lets them roam. It is
  not one of :data:`FAULT_KINDS` (the kinds every protocol takes, and GD's), so no GD
  schedule or swarm draws it; a protocol lists it in its own fault kinds.
* ``fail_unit`` (:data:`UNIT_KINDS`) — every broker of a *unit* fails forever at one instant
  [GES "Reliable delivery": "a unit can fail and remain failed forever"; "Conclusion": "a
  broker node or a unit/super-unit of broker nodes"]: a unit is one of ``Targets.units``
  (comma-separated brokers: a cluster, a super-cluster..., as the topology names them in its
  graph attribute ``units``). It is a kind of the *generator* only: it writes the unit's
  failure as one ``fail`` event per broker, all at the same ``at_us`` with the same
  ``duration_us`` (each with its own stream), so the world carries it out exactly as it
  carries out ``fail`` and the shrinker can drop members one by one; no
  :class:`FaultEvent` has kind ``fail_unit``. A swarm enables it from a stream of its own,
  so a profile's other kinds are drawn as they were without it. Only protocols that list it
  (and topologies that name units) get it.
* ``move`` and ``older_ct`` (:data:`SUBSCRIBER_KINDS`) — subscriber ``target`` disconnects, as
  ``disconnect``, and ``duration_us`` later reconnects *at another broker* (``move``: the
  binding's ``roam`` is told, reconnect-anywhere [DUR §1 item 5]) or presenting *an older
  checkpoint than its latest* (``older_ct``: the binding's ``resume_token`` is told [DUR §2]).
  The world passes the kind of the ending fault to the binding's optional
  ``reconnecting(subscriber, kind)`` before it reconnects the subscriber; protocols that list
  them in their fault kinds (durable subscriptions) give them a meaning, no other draws them.
* ``reprofile`` (:data:`PROFILE_KINDS`) — connected subscriber ``target`` changes its
  profile within its connection (the binding's optional ``reprofile`` seam picks the new
  one; ``duration_us`` is unused) [GES "Epochs"]; only protocols that list it.
* ``join`` (:data:`JOIN_KINDS`) — broker ``target``, one of the topology's *joiners*
  (``Targets.joiners``: in the graph, not in the system at the start), joins at ``at_us``
  and stays (``duration_us`` is unused): the world starts it absent and, at its join, hands
  its state to the binding's ``join`` seam, then starts it as a restart would [DFT §I, §II].
  A schedule joins each joiner at most once: the i-th join time of a schedule takes the
  i-th joiner of an order drawn from the schedule's seed. Only protocols that list it.

>>> s = generate(FaultProfile(rates=(("crash", 1.0),)), Targets(brokers=("b1",), links=(),
...     subscribers=()), duration_us=10_000_000, seed=7)
>>> from_json(to_json(s)) == s
True
>>> without_event(s, 0).events == s.events[1:]
True
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any, Final, final

import attrs
import cattrs

from gapless.impl.errors import ProtocolMisuse

__all__ = [
    "ALL_FAULT_KINDS",
    "DEFAULT_RATES",
    "FAULT_KINDS",
    "JOIN_KINDS",
    "PERMANENT_KINDS",
    "PROFILE_KINDS",
    "SUBSCRIBER_KINDS",
    "UNIT_KINDS",
    "FaultEvent",
    "FaultProfile",
    "FaultSchedule",
    "Targets",
    "check_targets",
    "derive_seed",
    "from_json",
    "generate",
    "to_json",
    "without_event",
]

FAULT_KINDS: Final = (
    "crash",
    "stall_broker",
    "link_fail",
    "stall_link",
    "drop",
    "duplicate",
    "reorder",
    "disconnect",
    "partition",
)

PERMANENT_KINDS: Final = ("fail",)
"""Faults that never heal (a broker that fails forever); only protocols that list them."""

SUBSCRIBER_KINDS: Final = ("move", "older_ct")
"""Disconnections whose reconnection is special (module doc); only protocols that list them."""

RECONNECTING_KINDS: Final = ("disconnect", *SUBSCRIBER_KINDS)
"""The faults that disconnect a subscriber and reconnect it when they end."""

PROFILE_KINDS: Final = ("reprofile",)
"""A subscriber changing its profile within its connection; only protocols that list it."""

JOIN_KINDS: Final = ("join",)
"""A broker joining the system during the run (module doc); only protocols that list it."""

UNIT_KINDS: Final = ("fail_unit",)
"""A whole unit failing forever, written as ``fail`` events (module doc); only protocols that
list it. A rate key of a profile, never the kind of a :class:`FaultEvent`."""

ALL_FAULT_KINDS: Final = (
    FAULT_KINDS + PERMANENT_KINDS + PROFILE_KINDS + SUBSCRIBER_KINDS + JOIN_KINDS + UNIT_KINDS
)
"""Every fault kind a profile may draw (a schedule holds every one but :data:`UNIT_KINDS`)."""

EVENT_KINDS: Final = tuple(k for k in ALL_FAULT_KINDS if k not in UNIT_KINDS)
"""The kinds a :class:`FaultEvent` may have."""

# events per simulated second for each kind under the "swarm" profile
DEFAULT_RATES: Final[dict[str, float]] = {
    "crash": 0.05,
    "stall_broker": 0.03,
    "link_fail": 0.08,
    "stall_link": 0.05,
    "drop": 0.1,
    "duplicate": 0.1,
    "reorder": 0.1,
    "disconnect": 0.05,
    "partition": 0.03,
}

_SEC: Final = 1_000_000


def derive_seed(*parts: object) -> int:
    """A 63-bit seed derived from ``parts`` by sha256 of their ``repr`` (ints and strings
    only, so it is stable across processes and ``PYTHONHASHSEED``)."""
    for p in parts:
        if not isinstance(p, (int, str)):
            raise ProtocolMisuse(
                f"derive_seed: part {p!r} is a {type(p).__name__}; allowed: int or str"
            )
    text = "\x1f".join(repr(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


@final
@attrs.frozen(kw_only=True)
class FaultEvent:
    """One fault: see the module docstring for what each ``kind`` does with its fields."""

    kind: str
    at_us: int
    duration_us: int
    target: str
    stream: int
    stall_us: int = 0
    probability: float = 0.0
    max_delay_us: int = 0

    def __attrs_post_init__(self) -> None:
        if self.kind not in EVENT_KINDS:
            unit = (
                " (a unit's failure is written as fail events)" if self.kind in UNIT_KINDS else ""
            )
            raise ProtocolMisuse(
                f"FaultEvent: kind {self.kind!r} is unknown{unit}; "
                f"allowed: {', '.join(EVENT_KINDS)}"
            )
        if self.at_us < 0 or self.duration_us < 0 or self.stall_us < 0 or self.max_delay_us < 0:
            raise ProtocolMisuse(
                f"FaultEvent: times must be >= 0, got at_us={self.at_us}, "
                f"duration_us={self.duration_us}, stall_us={self.stall_us}, "
                f"max_delay_us={self.max_delay_us}"
            )
        if not 0.0 <= self.probability <= 1.0:
            raise ProtocolMisuse(f"FaultEvent: probability {self.probability!r} is outside [0, 1]")

    @property
    def end_us(self) -> int:
        """When the event's effects are over (restart, heal, reconnect, window end)."""
        return self.at_us + self.stall_us + self.duration_us

    def rng(self) -> random.Random:
        """A fresh copy of this event's own random stream."""
        return random.Random(self.stream)


@final
@attrs.frozen(kw_only=True)
class FaultSchedule:
    """The faults of one run, ordered by start time (ties by kind, then target)."""

    seed: int
    events: tuple[FaultEvent, ...] = ()

    @property
    def kinds(self) -> tuple[str, ...]:
        """The sorted distinct fault kinds in this schedule."""
        return tuple(sorted({e.kind for e in self.events}))


@final
@attrs.frozen(kw_only=True)
class FaultProfile:
    """Which faults to generate: ``rates`` as (kind, events per simulated second) pairs, or
    ``swarm``: each schedule enables a random non-empty subset of kinds (from ``rates``, or
    every kind at :data:`DEFAULT_RATES` when ``rates`` is empty). Durations are drawn from
    ``[min_duration_us, max_duration_us]``; faults start no earlier than ``warmup_us``.

    Shaping, so that faults reach the protocol's rules (issue 18 §2; all off by default, and
    drawn from a stream of their own, so a profile without them generates what it always did):

    * ``focus`` — per kind, the targets that exercise its rules (e.g. the members of a link
      bundle, the brokers hosting pubends); an event of that kind picks among them with
      probability ``focus_bias`` (a bundle member fails while the others stay up [GD §3.1]);
    * ``long_fraction`` — the probability that a lasting fault (crash, stall, link failure,
      partition) lasts ``[long_duration_us, 3/2 long_duration_us]`` instead (past AET, the
      AckExpected threshold [GD §3.2], in runs that long);
    * ``partition_us`` — ``(lo, hi)``: a partition lasts ``[lo, hi]`` (a few nack repetition
      periods: it heals while the nacks it caused are being repeated [GD §3.2]);
    * ``swarm_weights`` — per kind, the probability that a swarm schedule enables it
      (default 1/2 each).
    """

    rates: tuple[tuple[str, float], ...] = ()
    swarm: bool = False
    min_duration_us: int = 200_000
    max_duration_us: int = 5_000_000
    warmup_us: int = 1_000_000
    focus: tuple[tuple[str, tuple[str, ...]], ...] = ()
    focus_bias: float = 0.0
    long_fraction: float = 0.0
    long_duration_us: int = 0
    partition_us: tuple[int, int] | None = None
    swarm_weights: tuple[tuple[str, float], ...] = ()

    def __attrs_post_init__(self) -> None:
        for kind, rate in self.rates:
            if kind not in ALL_FAULT_KINDS:
                raise ProtocolMisuse(
                    f"FaultProfile: kind {kind!r} is unknown; allowed: {', '.join(ALL_FAULT_KINDS)}"
                )
            if not rate >= 0:
                raise ProtocolMisuse(f"FaultProfile: rate of {kind!r} must be >= 0, got {rate!r}")
        for name, p in (("focus_bias", self.focus_bias), ("long_fraction", self.long_fraction)):
            if not 0.0 <= p <= 1.0:
                raise ProtocolMisuse(f"FaultProfile: {name} {p!r} is outside [0, 1]")
        for kind, w in self.swarm_weights:
            if kind not in ALL_FAULT_KINDS or not 0.0 <= w <= 1.0:
                raise ProtocolMisuse(
                    f"FaultProfile: swarm weight {kind!r} = {w!r}; allowed: a fault kind "
                    f"({', '.join(ALL_FAULT_KINDS)}) and a probability in [0, 1]"
                )
        if self.partition_us is not None and not 0 <= self.partition_us[0] <= self.partition_us[1]:
            raise ProtocolMisuse(
                f"FaultProfile: partition_us {self.partition_us!r} must be (lo, hi), 0 <= lo <= hi"
            )
        if not 0 <= self.min_duration_us <= self.max_duration_us:
            raise ProtocolMisuse(
                "FaultProfile: need 0 <= min_duration_us <= max_duration_us, got "
                f"{self.min_duration_us}, {self.max_duration_us}"
            )


@final
@attrs.frozen(kw_only=True)
class Targets:
    """What faults can hit: broker names, links as ``"a|b"`` (sorted ends), subscribers, the
    brokers that may join during the run (``joiners``, a subset of ``brokers``), and the
    units that may fail whole (``units``: each its brokers, comma-separated)."""

    brokers: tuple[str, ...]
    links: tuple[str, ...]
    subscribers: tuple[str, ...]
    joiners: tuple[str, ...] = ()
    units: tuple[str, ...] = ()


def _poisson_times(rng: random.Random, rate: float, start: int, end: int) -> list[int]:
    times: list[int] = []
    if rate <= 0 or end <= start:
        return times
    t = float(start)
    while True:
        t += rng.expovariate(rate) * _SEC
        if t >= end:
            return times
        times.append(int(t))


def _event(
    kind: str, at: int, stream: int, profile: FaultProfile, targets: Targets
) -> FaultEvent | None:
    rng = random.Random(stream)
    dur = rng.randint(profile.min_duration_us, profile.max_duration_us)
    if kind in ("crash", "stall_broker", "fail"):
        if not targets.brokers:
            return None
        target = rng.choice(targets.brokers)
    elif kind in ("link_fail", "stall_link", "drop", "duplicate", "reorder"):
        if not targets.links:
            return None
        target = rng.choice(targets.links)
    elif kind in (*RECONNECTING_KINDS, "reprofile"):
        if not targets.subscribers:
            return None
        target = rng.choice(targets.subscribers)
    else:  # partition
        if len(targets.brokers) < 2:
            return None
        k = rng.randint(1, max(1, len(targets.brokers) // 2))
        target = ",".join(sorted(rng.sample(targets.brokers, k)))
    if profile.focus_bias or profile.long_fraction or profile.partition_us is not None:
        target, dur = _shape(kind, target, dur, stream, profile, targets)
    stall = rng.randint(500_000, 3_000_000) if kind.startswith("stall") else 0
    prob = round(rng.uniform(0.05, 0.5), 4) if kind in ("drop", "duplicate") else 0.0
    max_delay = rng.randint(1_000, 50_000) if kind == "reorder" else 0
    return FaultEvent(
        kind=kind,
        at_us=at,
        duration_us=dur,
        target=target,
        stream=derive_seed(stream, "event-stream"),
        stall_us=stall,
        probability=prob,
        max_delay_us=max_delay,
    )


#: the faults that last (their duration is how long something is down)
_LASTING: Final = frozenset({"crash", "stall_broker", "link_fail", "stall_link", "partition"})


def _shape(
    kind: str, target: str, dur: int, stream: int, profile: FaultProfile, targets: Targets
) -> tuple[str, int]:
    """The profile's shaping of one event (see :class:`FaultProfile`), drawn from a stream of
    its own so the event's other parameters are those of the unshaped profile."""
    rng = random.Random(derive_seed(stream, "shape"))
    focus = dict(profile.focus).get(kind, ())
    allowed = set(targets.links) | set(targets.brokers) | set(targets.subscribers)
    focus = tuple(t for t in focus if t in allowed)
    if focus and rng.random() < profile.focus_bias:
        target = rng.choice(focus)
    if kind in _LASTING and rng.random() < profile.long_fraction:
        dur = rng.randint(profile.long_duration_us, profile.long_duration_us * 3 // 2)
    elif kind == "partition" and profile.partition_us is not None:
        dur = rng.randint(*profile.partition_us)
    return target, dur


def generate(
    profile: FaultProfile, targets: Targets, *, duration_us: int, seed: int
) -> FaultSchedule:
    """The fault schedule of ``seed`` under ``profile`` (a pure function of its arguments).

    Event ``i`` of kind ``k`` gets the stream ``derive_seed(seed, k, i)``; its parameters are
    drawn from that stream only."""
    rates = dict(profile.rates) if profile.rates else ({} if not profile.swarm else DEFAULT_RATES)
    kinds = sorted(k for k in rates if k not in UNIT_KINDS)
    units = sorted(k for k in rates if k in UNIT_KINDS)
    if profile.swarm:
        rng = random.Random(derive_seed(seed, "swarm"))
        weights = dict(profile.swarm_weights)
        chosen = [k for k in kinds if rng.random() < weights.get(k, 0.5)]
        kinds = (chosen or [kinds[rng.randrange(len(kinds))]]) if kinds else []
        units = [  # each from a stream of its own: the other kinds are drawn as before
            k for k in units if random.Random(derive_seed(seed, "swarm", k)).random() < 0.5
        ]
    events: list[FaultEvent] = []
    for kind in kinds + units:
        arrivals = random.Random(derive_seed(seed, kind, "arrivals"))
        times = _poisson_times(arrivals, rates[kind], profile.warmup_us, duration_us)
        if kind == "join":
            events += _joins(times, seed, targets)
            continue
        if kind in UNIT_KINDS:
            for i, at in enumerate(times):
                events += _unit_fails(at, derive_seed(seed, kind, i), profile, targets)
            continue
        for i, at in enumerate(times):
            ev = _event(kind, at, derive_seed(seed, kind, i), profile, targets)
            if ev is not None:
                events.append(ev)
    events.sort(key=lambda e: (e.at_us, e.kind, e.target, e.stream))
    return FaultSchedule(seed=seed, events=tuple(events))


def _unit_fails(at: int, stream: int, profile: FaultProfile, targets: Targets) -> list[FaultEvent]:
    """A ``fail_unit`` at ``at``: a unit drawn from ``targets.units`` and one ``fail`` event
    per broker of it, all at ``at`` with one duration (module doc)."""
    if not targets.units:
        return []
    rng = random.Random(stream)
    unit = rng.choice(targets.units)
    dur = rng.randint(profile.min_duration_us, profile.max_duration_us)
    return [
        FaultEvent(
            kind="fail",
            at_us=at,
            duration_us=dur,
            target=broker,
            stream=derive_seed(stream, broker, "event-stream"),
        )
        for broker in unit.split(",")
    ]


def _joins(times: list[int], seed: int, targets: Targets) -> list[FaultEvent]:
    """The schedule's joins: the i-th of ``times`` joins the i-th joiner of an order drawn
    from ``seed`` (each joiner at most once; times beyond the joiners are dropped)."""
    order = list(targets.joiners)
    random.Random(derive_seed(seed, "join", "order")).shuffle(order)
    return [
        FaultEvent(
            kind="join",
            at_us=at,
            duration_us=0,
            target=broker,
            stream=derive_seed(derive_seed(seed, "join", i), "event-stream"),
        )
        for i, (at, broker) in enumerate(zip(times, order, strict=False))
    ]


_TARGET_KIND: Final = {
    "crash": "brokers",
    "fail": "brokers",
    "stall_broker": "brokers",
    "partition": "brokers",
    "link_fail": "links",
    "stall_link": "links",
    "drop": "links",
    "duplicate": "links",
    "reorder": "links",
    "disconnect": "subscribers",
    "move": "subscribers",
    "older_ct": "subscribers",
    "reprofile": "subscribers",
    "join": "joiners",
}


def check_targets(schedule: FaultSchedule, targets: Targets) -> None:
    """Raise ``ProtocolMisuse`` naming the first event whose target is not one of ``targets``
    (a broker, a link ``"a|b"``, a subscriber, a joiner; a partition's comma-separated
    brokers)."""
    for index, event in enumerate(schedule.events):
        what = _TARGET_KIND[event.kind]
        allowed: tuple[str, ...] = getattr(targets, what)
        names = event.target.split(",") if event.kind == "partition" else [event.target]
        for name in names:
            if name not in allowed:
                raise ProtocolMisuse(
                    f"fault event {index} ({event.kind} at {event.at_us} us): target "
                    f"{name!r} is not one of the topology's {what}; allowed: {', '.join(allowed)}"
                )


def _leaf_messages(exc: BaseException) -> list[str]:
    inner = getattr(exc, "exceptions", None)
    if not inner:
        return [str(exc)]
    return [m for e in inner for m in _leaf_messages(e)]


def without_event(schedule: FaultSchedule, index: int) -> FaultSchedule:
    """The schedule without its ``index``-th event (a shrink step); the others are unchanged."""
    if not 0 <= index < len(schedule.events):
        raise ProtocolMisuse(
            f"without_event: index {index} is outside 0..{len(schedule.events) - 1}"
        )
    return attrs.evolve(schedule, events=schedule.events[:index] + schedule.events[index + 1 :])


_converter = cattrs.Converter()


def unstructure(value: Any) -> Any:
    """Plain data (dicts, lists, numbers, strings) for a schedule, event or profile."""
    return _converter.unstructure(value)


def to_json(schedule: FaultSchedule) -> str:
    """The schedule as canonical JSON (sorted keys)."""
    return json.dumps(_converter.unstructure(schedule), sort_keys=True)


def from_json(text: str) -> FaultSchedule:
    """Parse :func:`to_json` output; a malformed document raises ``ProtocolMisuse`` naming
    what is wrong."""
    try:
        data = json.loads(text)
        return _converter.structure(data, FaultSchedule)
    except (ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
        details = "; ".join(_leaf_messages(exc))
        raise ProtocolMisuse(f"from_json: not a valid fault schedule: {details}") from exc
