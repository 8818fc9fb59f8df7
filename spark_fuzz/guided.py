"""Coverage-guided fault schedules: the roles' coverage labels as the campaign's feedback
(issue 18 §2).

Theory of operation
-------------------
A blind campaign draws every schedule from its seed. A *guided* campaign (``guided = true``,
``gapless fuzz --guided``) draws its first chunk blind, then plans each later chunk from the
rows committed before it, as a coverage-guided fuzzer plans inputs:

1. **feedback** — each committed row's coverage labels (:mod:`gapless.spark_fuzz.transitions`:
   rules, lattice transitions and their pairs); a label's *rarity* is one over the number
   of rows that reached it;
2. **parents** — the :data:`PARENTS` rows with the highest score (the sum of the rarities of
   their labels: rows that reached rarely hit transitions), ties broken by seed;
3. **children** — each seed of the chunk is blind with probability :data:`BLIND` (the swarm
   keeps exploring) or a mutant of a parent picked in proportion to its score: one to three
   of *add* (an event of a fresh blind schedule), *remove*, *stretch* (duration doubled or
   halved) and *move* (a new start time) applied to the parent's fault events.

Every draw comes from ``derive_seed(campaign seed, "guided", seed)``, and a chunk's plan
depends only on the rows of the chunks before it, so the plan is the same in every process
and after an interrupt: chunks run in seed order (one after the other; the seeds *within* a
chunk run in parallel), the chunk size is fixed (``chunk_size`` or :data:`CHUNK`), and a
resumed campaign re-plans its next chunk from the same committed rows. The driver writes
each chunk's plan (the schedules and where each came from) to
``_guided/chunk-<first>-<last>.json`` before running it; a counterexample shrinks the stored
schedule of its seed (:func:`schedule_for`). Still one row per schedule.

:func:`compare` runs a guided campaign beside its blind twin (the same configuration with
``guided`` off: same seeds, workload and profile) and reports both coverage growths per
chunk and the schedules each needed to reach the blind campaign's final coverage.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from gapless.models.faults import FaultEvent, FaultSchedule, derive_seed
from gapless.spark_fuzz.config import CampaignConfig, canonical_json
from gapless.spark_fuzz.execute import SeedResult, prepare, run_seed
from gapless.spark_fuzz.store import CampaignStore, read_rows
from gapless.spark_fuzz.transitions import coverage_of

__all__ = [
    "BLIND",
    "CHUNK",
    "PARENTS",
    "aligned_chunks",
    "blind_twin",
    "mutate",
    "plan_chunk",
    "reach_point",
    "read_plan",
    "run_guided",
    "schedule_for",
    "versus_blind",
    "write_plan",
]

CHUNK: Final = 10
"""Seeds per chunk of a guided campaign when ``chunk_size`` is automatic (0). Ten rather than
twenty: with feedback every ten schedules the guided demo reached its blind twin's final label
count within half the schedules on 4 of 5 campaign seeds (100 schedules each; 1 of 3 with
twenty; README, "Coverage and guided campaigns")."""
PARENTS: Final = 8
"""How many of the best-scoring rows are kept as parents."""
BLIND: Final = 0.5
"""The probability that a child is a fresh blind schedule instead of a mutant."""
OPERATORS: Final = ("add", "remove", "stretch", "move")


def aligned_chunks(config: CampaignConfig, missing: Sequence[int]) -> list[tuple[int, int]]:
    """The chunks of a guided campaign that hold missing seeds: fixed ranges from
    ``config.seed`` of ``chunk_size`` (or :data:`CHUNK`) seeds, clipped to the campaign."""
    size = config.chunk_size or CHUNK
    end = config.seed + config.schedules - 1
    firsts = sorted({config.seed + (s - config.seed) // size * size for s in missing})
    return [(f, min(f + size - 1, end)) for f in firsts]


def _score(rows: Sequence[Mapping[str, Any]]) -> list[tuple[float, int]]:
    """``(score, seed)`` of every row, best first: the sum of the rarities of its labels."""
    covs = {int(r["seed"]): coverage_of(r) for r in rows if r["verdict"] != "error"}
    reached: Counter[str] = Counter()
    for cov in covs.values():
        reached.update(cov.keys())
    scored = [(sum(1.0 / reached[k] for k in cov), seed) for seed, cov in covs.items()]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return scored


def _move(ev: FaultEvent, rng: random.Random, horizon: int) -> FaultEvent:
    return attrs.evolve(ev, at_us=rng.randint(0, max(0, horizon - 1)))


def mutate(
    parent: FaultSchedule, fresh: FaultSchedule, rng: random.Random, horizon: int, seed: int
) -> tuple[FaultSchedule, tuple[str, ...]]:
    """One to three operators applied to ``parent``'s events (``fresh``: a blind schedule to
    take added events from; ``horizon``: the run's duration in µs). Returns the child (its
    ``seed`` set to ``seed``) and the operators applied."""
    events = list(parent.events)
    done: list[str] = []
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(OPERATORS)
        if op == "add" or not events:
            if not fresh.events:
                continue
            events.append(rng.choice(fresh.events))
            op = "add"
        elif op == "remove":
            events.pop(rng.randrange(len(events)))
        elif op == "stretch":
            i = rng.randrange(len(events))
            ev = events[i]
            dur = ev.duration_us * 2 if rng.random() < 0.5 else max(1, ev.duration_us // 2)
            events[i] = attrs.evolve(ev, duration_us=dur)
        else:
            i = rng.randrange(len(events))
            events[i] = _move(events[i], rng, horizon)
        done.append(op)
    events.sort(key=lambda e: (e.at_us, e.kind, e.target, e.stream))
    return FaultSchedule(seed=seed, events=tuple(events)), tuple(done)


def plan_chunk(
    config: CampaignConfig,
    backend: Any,
    spec: Any,
    rows: Sequence[Mapping[str, Any]],
    known: Mapping[int, FaultSchedule],
    first: int,
    last: int,
) -> dict[int, dict[str, Any]]:
    """The plan of chunk ``[first, last]``: per seed its schedule (``schedule``, the backend's
    data) and where it came from (``origin``: ``"blind"`` or ``{"parent", "ops"}``).
    ``rows`` are the committed rows of the seeds before ``first``; ``known`` their schedules."""
    horizon = int(spec.duration_us)
    scored = [(s, seed) for s, seed in _score(rows) if seed in known and seed < first]
    parents = scored[:PARENTS]
    plan: dict[int, dict[str, Any]] = {}
    for seed in range(first, last + 1):
        rng = random.Random(derive_seed(config.seed, "guided", seed))
        blind = backend.generate_schedule(spec, seed)
        if not parents or rng.random() < BLIND:
            plan[seed] = {"schedule": backend.schedule_to_data(blind), "origin": "blind"}
            continue
        weights = [s for s, _ in parents]
        parent = rng.choices([p for _, p in parents], weights=weights)[0]
        child, ops = mutate(known[parent], blind, rng, horizon, seed)
        plan[seed] = {
            "schedule": backend.schedule_to_data(child),
            "origin": {"parent": parent, "ops": list(ops)},
        }
    return plan


def _plan_dir(config: CampaignConfig) -> Path:
    return CampaignStore.campaign_dir(config.out, config.campaign_id) / "_guided"


def write_plan(config: CampaignConfig, first: int, last: int, plan: Mapping[int, Any]) -> Path:
    """Write chunk ``[first, last]``'s plan atomically; returns its path."""
    d = _plan_dir(config)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"chunk-{first}-{last}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(canonical_json({str(k): v for k, v in plan.items()}), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_plan(config: CampaignConfig) -> dict[int, dict[str, Any]]:
    """Every stored plan entry of the campaign, by seed (empty when none)."""
    d = _plan_dir(config)
    out: dict[int, dict[str, Any]] = {}
    if d.is_dir():
        for path in sorted(d.glob("chunk-*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            out.update({int(k): v for k, v in data.items()})
    return out


def schedule_for(config: CampaignConfig, backend: Any, spec: Any, seed: int) -> Any:
    """The schedule seed ``seed`` ran with: the stored plan's for a guided campaign, else the
    one its seed generates."""
    if config.guided:
        entry = read_plan(config).get(seed)
        if entry is not None:
            return backend.schedule_from_data(entry["schedule"])
    return backend.generate_schedule(spec, seed)


def reach_point(growth: Sequence[Mapping[str, int]], target: int, key: str) -> int | None:
    """The schedules a campaign needed until ``growth[key]`` reached ``target`` (None: never)."""
    for g in growth:
        if g[key] >= target:
            return g["schedules"]
    return None


def _pool_seed(job: tuple[str, int, Any]) -> SeedResult:
    return run_seed(*job)


def _run_plan(
    config_json: str,
    plan: Mapping[int, Mapping[str, Any]],
    executor: str,
    processes: int,
    spark_context: Any,
) -> list[SeedResult]:
    """Run one planned chunk's seeds (in parallel where the executor allows), in seed order."""
    jobs = [(config_json, seed, plan[seed]["schedule"]) for seed in sorted(plan)]
    if executor == "processes" and len(jobs) > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(min(processes, len(jobs))) as pool:
            return pool.map(_pool_seed, jobs)
    if executor == "spark":
        got: list[SeedResult] = spark_context.parallelize(jobs, len(jobs)).map(_pool_seed).collect()
        return got
    return [_pool_seed(j) for j in jobs]


def run_guided(
    config: CampaignConfig,
    store: CampaignStore,
    chunks: Sequence[tuple[int, int]],
    commit: Callable[[int, int, list[SeedResult]], None],
    *,
    executor: str,
    processes: int,
    spark_context: Any = None,
) -> None:
    """Plan, store, run and commit ``chunks`` one after the other (see the module doc)."""
    config_json = canonical_json(config.to_data())
    _config, backend, spec = prepare(config_json)
    sc = spark_context
    if executor == "spark" and sc is None:
        from gapless.spark_fuzz.session import start_spark  # pyspark only when asked for

        sc = start_spark(config.master)
    try:
        for first, last in chunks:
            stored = read_plan(config)
            known = {
                seed: backend.schedule_from_data(e["schedule"])
                for seed, e in stored.items()
                if seed < first
            }
            rows = [r for r in read_rows(store.root).to_pylist() if int(r["seed"]) < first]
            plan = plan_chunk(config, backend, spec, rows, known, first, last)
            write_plan(config, first, last, plan)
            commit(first, last, _run_plan(config_json, plan, executor, processes, sc))
    finally:
        if executor == "spark" and spark_context is None and sc is not None:
            sc.stop()


def blind_twin(config: CampaignConfig) -> CampaignConfig:
    """The blind campaign a guided one is compared with: the same configuration with
    ``guided`` off and the same chunks (so the growths compare chunk by chunk); an explicit
    id gets ``-blind`` appended."""
    return attrs.evolve(
        config,
        guided=False,
        chunk_size=config.chunk_size or CHUNK,
        id=None if config.id is None else config.id + "-blind",
    )


def versus_blind(guided: Mapping[str, Any], blind: Mapping[str, Any]) -> dict[str, Any]:
    """The guided campaign's coverage beside its blind twin's: both growths per chunk, the
    blind campaign's final coverage (reachable transitions reached, distinct labels) and the
    schedules each campaign needed to reach it; ``half`` says whether guided reached the blind
    campaign's final count of each in at most half the blind campaign's schedules (the
    issue's target)."""
    g_growth = guided["coverage"].get("growth", [])
    b_growth = blind["coverage"].get("growth", [])
    out: dict[str, Any] = {
        "blind_campaign_id": blind["campaign_id"],
        "blind_growth": b_growth,
        "guided_growth": g_growth,
    }
    if not b_growth:
        return out
    total = b_growth[-1]["schedules"]
    for key in ("reached", "labels"):
        target = b_growth[-1][key]
        g_at = reach_point(g_growth, target, key)
        b_at = reach_point(b_growth, target, key)
        out[key] = {
            "blind_final": target,
            "guided_final": g_growth[-1][key] if g_growth else 0,
            "blind_schedules": b_at,
            "guided_schedules": g_at,
            "half": g_at is not None and 2 * g_at <= total,
        }
    return out
