"""A test double for the campaign backend (tests only — never shipped).

Deterministic and cheap: a schedule is a tuple of fault events drawn from the seed; the
"buggy" variant violates ``gapless`` exactly when the schedule holds both a ``crash`` and a
``drop`` event, the workload has at least 10 messages and the run lasts at least 2 s — three
conditions, so that shrinking has events, workload and time to remove. ``work_ms`` burns
CPU per run. If the environment variable ``GAPLESS_FAKE_LOG`` names a directory, every run
of a seed appends a line ``<seed>`` to a file there (one file per process), so tests can see
exactly which seeds a campaign executed. If ``GAPLESS_FAKE_HOLD`` is ``<seed>:<path>``, the
first run of that seed creates ``path``, writes its process id into it and then waits (up to
30 s) — a test hook to interrupt a campaign, or kill the worker running it, at a known point,
whatever the machine's load; a later run of that seed (a retry) finds ``path`` and does not wait.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from gapless.spark_fuzz.backend import Outcome

KINDS = ("crash", "drop", "delay")


@attrs.frozen(kw_only=True)
class FakeSpec:
    variant: str
    duration_s: float
    messages: int
    work_ms: float
    rates: tuple[tuple[str, float], ...]
    swarm: bool


@attrs.frozen(kw_only=True)
class FakeEvent:
    kind: str
    at_us: int
    stream: int


def _hold(seed: int) -> None:
    hold = os.environ.get("GAPLESS_FAKE_HOLD")
    if not hold:
        return
    at, _, path = hold.partition(":")
    if int(at) != seed:
        return
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # a retry of the held run
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    end = time.monotonic() + 30
    while time.monotonic() < end:  # a SIGINT ends this with KeyboardInterrupt
        time.sleep(0.01)


class FakeBackend:
    def topologies(self) -> Sequence[str]:
        return ("fig3", "line")

    def variants(self) -> Sequence[str]:
        return ("none", "buggy")

    def fault_kinds(self) -> Sequence[str]:
        return KINDS

    def invariants(self) -> Sequence[str]:
        return ("gapless", "exactly_once")

    def workload_keys(self) -> Mapping[str, str]:
        return {"messages": "an integer >= 0", "work_ms": "a number >= 0"}

    def make_spec(self, config: Any) -> FakeSpec:
        messages = config.workload.get("messages", 50)
        work = config.workload.get("work_ms", 0.0)
        if not isinstance(messages, int) or messages < 0:
            raise ValueError(f"key 'workload.messages' = {messages!r}; expected an integer >= 0")
        if not isinstance(work, int | float) or work < 0:
            raise ValueError(f"key 'workload.work_ms' = {work!r}; expected a number >= 0")
        rates = tuple(sorted(config.fault_rates.items())) or (("crash", 0.2), ("drop", 0.2))
        return FakeSpec(
            variant=config.variant,
            duration_s=config.duration_s,
            messages=messages,
            work_ms=float(work),
            rates=rates,
            swarm=config.fault_profile == "swarm",
        )

    def generate_schedule(self, spec: FakeSpec, seed: int) -> tuple[FakeEvent, ...]:
        rng = random.Random(f"schedule-{seed}")
        events = []
        for kind, rate in spec.rates:
            if spec.swarm and rng.random() < 0.5:
                continue
            expected = rate * spec.duration_s
            n = int(expected) + (1 if rng.random() < expected - int(expected) else 0)
            for i in range(n):
                at = rng.randrange(int(spec.duration_s * 1e6))
                events.append(FakeEvent(kind=kind, at_us=at, stream=hash_int(seed, kind, i)))
        return tuple(sorted(events, key=lambda e: (e.at_us, e.kind, e.stream)))

    def run(
        self,
        spec: FakeSpec,
        schedule: Sequence[FakeEvent],
        seed: int,
        *,
        record_trace: bool = False,
    ) -> Outcome:
        log = os.environ.get("GAPLESS_FAKE_LOG")
        if log:
            with open(os.path.join(log, f"seeds-{os.getpid()}.log"), "a") as f:
                f.write(f"{seed}\n")
        _hold(seed)
        if spec.work_ms:
            end = time.perf_counter() + spec.work_ms / 1000
            while time.perf_counter() < end:
                pass
        kinds = {e.kind for e in schedule}
        violated = (
            spec.variant == "buggy"
            and {"crash", "drop"} <= kinds
            and spec.messages >= 10
            and spec.duration_s >= 2
        )
        digest = hashlib.sha256(
            json.dumps(
                [attrs.asdict(spec), [attrs.asdict(e) for e in schedule], seed], sort_keys=True
            ).encode()
        ).hexdigest()
        timeline: tuple[Mapping[str, Any], ...] = ()
        if record_trace:
            events = [
                {"time": e.at_us, "node": "b1", "event": e.kind, "detail": f"stream {e.stream}"}
                for e in schedule
            ]
            end = {"time": int(spec.duration_s * 1e6), "node": "s1", "event": "deliver"}
            timeline = (*events, {**end, "detail": "K:Q->D"})
        nacks = len(schedule) * 3
        return Outcome(
            verdict="violation" if violated else "pass",
            invariant="gapless" if violated else "",
            explanation="s1 skipped tick 42 after a crash and a drop" if violated else "",
            published=spec.messages,
            delivered=spec.messages - (1 if violated else 0),
            nacks=nacks,
            nack_range=nacks * 1000,
            retransmissions=nacks,
            latency_p50=1.0 + len(schedule),
            latency_p99=2.0 + len(schedule),
            latency_max=3.0 + len(schedule),
            trace_digest=digest,
            coverage={"K:Q->D": spec.messages, "C:N->C": len(schedule)},
            timeline=timeline,
            violation_time=int(spec.duration_s * 1e6) if violated else None,
        )

    def schedule_events(self, schedule: Sequence[FakeEvent]) -> Sequence[FakeEvent]:
        return tuple(schedule)

    def with_events(self, schedule: Any, events: Sequence[FakeEvent]) -> tuple[FakeEvent, ...]:
        return tuple(events)

    def event_kind(self, event: FakeEvent) -> str:
        return event.kind

    def shorten(
        self, spec: FakeSpec, *, duration_s: float | None, workload_scale: float | None
    ) -> FakeSpec:
        if duration_s is not None:
            spec = attrs.evolve(spec, duration_s=duration_s)
        if workload_scale is not None:
            spec = attrs.evolve(spec, messages=int(spec.messages * workload_scale))
        return spec

    def spec_to_data(self, spec: FakeSpec) -> Any:
        return attrs.asdict(spec)

    def spec_from_data(self, data: Any) -> FakeSpec:
        if not isinstance(data, dict):
            raise ValueError("spec: expected an object")
        data = dict(data)
        data["rates"] = tuple(tuple(r) for r in data["rates"])
        return FakeSpec(**data)

    def schedule_to_data(self, schedule: Sequence[FakeEvent]) -> Any:
        return [attrs.asdict(e) for e in schedule]

    def schedule_from_data(self, data: Any) -> tuple[FakeEvent, ...]:
        if not isinstance(data, list):
            raise ValueError("schedule: expected a list")
        return tuple(FakeEvent(**e) for e in data)


def hash_int(*parts: Any) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")
