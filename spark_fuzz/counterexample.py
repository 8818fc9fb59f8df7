"""Counterexample files: everything needed to replay a shrunk failing run, as JSON.

Theory of operation
-------------------
A counterexample is a frozen :class:`Counterexample` value written with cattrs as JSON
(never pickle): the protocol, its backend reference and **variant**, the run spec and fault
schedule as the backend's own plain data, the seed, the invariant it violates and the
explanation, plus how much shrinking removed. :func:`load_counterexample` checks the file
thoroughly (JSON syntax, format tag, every field's type, the backend can rebuild spec and
schedule) and raises :class:`CounterexampleError` naming what is wrong; :func:`replay`
re-runs it deterministically with the trace recorded.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs
import cattrs

from gapless.impl.errors import GaplessError
from gapless.impl.trace import DIGEST_VERSION
from gapless.spark_fuzz.backend import Backend, BackendError, Outcome, load_backend
from gapless.spark_fuzz.config import CampaignConfig, canonical_json, config_for_seed
from gapless.spark_fuzz.execute import prepare
from gapless.spark_fuzz.guided import schedule_for
from gapless.spark_fuzz.shrink import shrink

__all__ = [
    "FORMAT",
    "Counterexample",
    "CounterexampleError",
    "Replay",
    "load_counterexample",
    "replay",
    "shrink_campaign_failures",
    "shrink_seed",
    "write_counterexample",
]

FORMAT: Final = "gapless-counterexample/1"


class CounterexampleError(GaplessError, ValueError):
    """A counterexample file that cannot be read or replayed (message names what is wrong)."""


@final
@attrs.frozen(kw_only=True)
class Counterexample:
    """A shrunk failing run. ``spec`` and ``schedule`` are the backend's plain data."""

    format: str = FORMAT
    campaign_id: str
    protocol: str
    backend: str | None
    variant: str
    topology: str
    seed: int
    invariant: str
    explanation: str
    spec: Any
    schedule: Any
    original_fault_events: int
    shrunk_fault_events: int
    duration_s: float | None
    workload_scale: float
    trace_digest: str
    shrink_runs: int
    digest_version: int = 1
    """The trace-digest version ``trace_digest`` was computed under
    (:data:`gapless.impl.trace.DIGEST_VERSION`); files written before versions were recorded
    are version 1. Digests compare only within one version."""


_CONVERTER: Final = cattrs.Converter(forbid_extra_keys=True)


def to_data(cx: Counterexample) -> dict[str, Any]:
    data: dict[str, Any] = _CONVERTER.unstructure(cx)
    return data


def write_counterexample(cx: Counterexample, path: Path) -> Path:
    """Write ``cx`` to ``path`` atomically (temporary file, then rename)."""
    text = json.dumps(to_data(cx), indent=2, sort_keys=True) + "\n"
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def shrink_seed(
    config: CampaignConfig, seed: int, invariant: str, *, max_runs: int | None = None
) -> Counterexample:
    """Shrink the failing ``seed`` of ``config`` to a counterexample."""
    config = config_for_seed(config, seed)  # a mix setup's seed shrinks in its own setup
    config_json = canonical_json(config.to_data())
    _config, backend, spec = prepare(config_json)
    schedule = schedule_for(config, backend, spec, seed)  # a guided campaign's stored one
    result = shrink(
        backend,
        spec,
        schedule,
        seed,
        invariant,
        max_runs=max_runs if max_runs is not None else config.shrink_runs,
        duration_s=config.duration_s,
    )
    return Counterexample(
        campaign_id=config.campaign_id,
        protocol=config.protocol,
        backend=config.backend,
        variant=config.variant,
        topology=config.topology,
        seed=seed,
        invariant=result.outcome.invariant,
        explanation=result.outcome.explanation,
        spec=backend.spec_to_data(result.spec),
        schedule=backend.schedule_to_data(result.schedule),
        original_fault_events=result.original_events,
        shrunk_fault_events=result.shrunk_events,
        duration_s=result.duration_s,
        workload_scale=result.workload_scale,
        trace_digest=result.outcome.trace_digest,
        shrink_runs=result.runs,
        digest_version=DIGEST_VERSION,
    )


def shrink_campaign_failures(
    store: Any, config: CampaignConfig, rows: list[Mapping[str, Any]]
) -> list[Path]:
    """Shrink up to ``config.max_counterexamples`` violating rows — the first seed of each
    invariant first — skipping seeds that already have a file. Returns every counterexample
    file of the campaign."""
    violations = [r for r in rows if r["verdict"] == "violation"]
    violations.sort(key=lambda r: r["seed"])
    picked: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for r in violations:
        if r["invariant"] not in seen:
            seen.add(r["invariant"])
            picked.append(r)
    for r in violations:
        if r not in picked:
            picked.append(r)
    picked = picked[: config.max_counterexamples]
    directory: Path = store.counterexample_dir()
    todo = [
        (canonical_json(config.to_data()), int(r["seed"]), str(r["invariant"]))
        for r in picked
        if not (directory / f"seed-{r['seed']}.json").exists()
    ]
    if len(todo) > 1:
        # independent shrinks run side by side (one process each, up to the core count)
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(min(len(todo), os.cpu_count() or 1)) as pool:
            shrunk = pool.map(_shrink_job, todo)
    else:
        shrunk = [_shrink_job(job) for job in todo]
    for cx in shrunk:
        if cx is not None:  # None: not reproducible (e.g. a wall-clock timeout)
            write_counterexample(cx, directory / f"seed-{cx.seed}.json")
    return sorted(directory.glob("seed-*.json"), key=lambda p: int(p.stem.split("-")[1]))


def _shrink_job(job: tuple[str, int, str]) -> Counterexample | None:
    config_json, seed, invariant = job
    from gapless.spark_fuzz.config import config_from_json

    try:
        return shrink_seed(config_from_json(config_json), seed, invariant)
    except ValueError:
        return None


def load_counterexample(path: str | Path) -> Counterexample:
    """Read and check a counterexample file; :class:`CounterexampleError` if it is not one."""
    where = f"counterexample {str(path)!r}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CounterexampleError(
            f"{where}: cannot be read ({exc.strerror or exc}); expected a readable JSON file "
            "written by gapless fuzz"
        ) from exc
    except UnicodeDecodeError as exc:
        raise CounterexampleError(f"{where}: is not UTF-8 text; expected JSON") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CounterexampleError(
            f"{where}: is not valid JSON (truncated or corrupted?) at line {exc.lineno} column "
            f"{exc.colno}: {exc.msg}"
        ) from exc
    if not isinstance(data, dict):
        raise CounterexampleError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise CounterexampleError(
            f"{where}: key 'format' = {data.get('format')!r} is not allowed; expected {FORMAT!r}"
        )
    try:
        cx = _CONVERTER.structure(data, Counterexample)
    except Exception as exc:
        details = "; ".join(str(e) for e in getattr(exc, "exceptions", [exc])) or type(exc).__name__
        raise CounterexampleError(
            f"{where}: fields are missing or of the wrong type ({details}); expected every field "
            f"of {', '.join(a.name for a in attrs.fields(Counterexample))}"
        ) from exc
    for key in ("seed", "original_fault_events", "shrunk_fault_events", "shrink_runs"):
        value = getattr(cx, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CounterexampleError(
                f"{where}: key {key!r} = {value!r} is not allowed; expected an integer >= 0"
            )
    try:
        backend = load_backend(cx.protocol, cx.backend)
        spec = backend.spec_from_data(cx.spec)
        schedule = backend.schedule_from_data(cx.schedule)
        check_schedule = getattr(backend, "check_schedule", None)
        if check_schedule is not None:
            check_schedule(spec, schedule)
    except BackendError as exc:
        raise CounterexampleError(f"{where}: {exc}") from exc
    except (ValueError, TypeError, KeyError) as exc:
        raise CounterexampleError(
            f"{where}: its spec or schedule cannot be rebuilt ({type(exc).__name__}: {exc}); "
            "expected data written by gapless fuzz for this version"
        ) from exc
    _check_names(cx, backend, where)
    return cx


def _check_names(cx: Counterexample, backend: Backend, where: str) -> None:
    """The file's ``variant`` and ``topology`` are the backend's, and its spec says the same
    (issue 12: a file claiming ``variant = "none"`` over a planted bug's spec would make the
    correct protocol look broken)."""
    for key, allowed in (("variant", backend.variants()), ("topology", backend.topologies())):
        value = getattr(cx, key)
        if value not in allowed:
            raise CounterexampleError(
                f"{where}: key {key!r} = {value!r} is not allowed; expected one of "
                + ", ".join(allowed)
            )
        if isinstance(cx.spec, Mapping) and key in cx.spec and cx.spec[key] != value:
            raise CounterexampleError(
                f"{where}: key {key!r} = {value!r} disagrees with spec.{key} = "
                f"{cx.spec[key]!r}; expected the same {key} in both (was the file edited?)"
            )


@final
@attrs.frozen(kw_only=True)
class Replay:
    """A replayed counterexample. ``digest`` says how its recorded trace digest compared:
    ``"match"``, ``"mismatch"``, ``"none recorded"``, or ``"older version N"`` (recorded
    under an older digest version: not compared, never reported as a mismatch)."""

    counterexample: Counterexample
    outcome: Outcome
    reproduced: bool
    backend: Backend
    digest: str = "none recorded"


def replay(cx: Counterexample) -> Replay:
    """Re-run ``cx`` with its trace recorded. ``reproduced`` is true when the same invariant
    is violated again and, when a digest of the current version was recorded, the trace
    digest matches."""
    backend = load_backend(cx.protocol, cx.backend)
    spec = backend.spec_from_data(cx.spec)
    schedule = backend.schedule_from_data(cx.schedule)
    outcome = backend.run(spec, schedule, cx.seed, record_trace=True)
    reproduced = outcome.verdict == "violation" and outcome.invariant == cx.invariant
    digest = "none recorded"
    if cx.trace_digest and outcome.trace_digest:
        if cx.digest_version != DIGEST_VERSION:
            digest = f"older version {cx.digest_version}"
        elif outcome.trace_digest == cx.trace_digest:
            digest = "match"
        else:
            digest = "mismatch"
            reproduced = False
    return Replay(
        counterexample=cx, outcome=outcome, reproduced=reproduced, backend=backend, digest=digest
    )
