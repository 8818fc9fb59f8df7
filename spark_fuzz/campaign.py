"""Running a campaign: plan the missing seeds, execute them in chunks, commit, summarise, shrink.

Theory of operation
-------------------
1. Open the campaign's store (``store.py``): takes the lock, reconciles the manifest with the
   files, and answers which seeds are already committed. Re-running a campaign id skips them.
2. Split the missing seeds into contiguous chunks (``chunk_size``; automatic: about four
   chunks per core, so each task carries well over a second of work).
3. Execute the chunks with one of three executors — ``spark`` (the default: one Spark job
   per chunk over ``sc.parallelize(chunks).mapPartitions``, a few jobs in flight from driver
   threads so every core stays busy; a task lost with an executor is re-run by Spark),
   ``processes`` (``multiprocessing``) or ``loop`` (in this process). All three call the
   same :func:`gapless.spark_fuzz.execute.run_chunk`.
4. The driver commits each finished chunk atomically (only the driver writes), so an
   interrupted campaign keeps every chunk it finished and a lost task can never produce a
   second copy of a row.
   With ``fail_fast``, the first committed chunk that holds a failing schedule (violation,
   error or timeout) stops the campaign: the jobs in flight are cancelled, the chunks already
   committed stay, and the summary says ``stopped_at_first_failure``. Such a campaign's
   chunks are smaller (about sixteen per core), so a failure is reported after a few
   schedules rather than after a quarter of them. It changes which seeds run, never a row:
   its verdict (exit 1 or not) is the full campaign's whenever a failure exists.
5. Summarise from the manifest (by verdict, invariant and fault kind), then shrink up to
   ``max_counterexamples`` violating seeds (one per invariant first) and write their
   counterexample files.
"""

from __future__ import annotations

import math
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from typing import Any, Final, final

import attrs

from gapless.spark_fuzz.config import CampaignConfig, canonical_json
from gapless.spark_fuzz.execute import SeedResult, prepare, run_chunk, run_chunks
from gapless.spark_fuzz.guided import aligned_chunks, blind_twin, run_guided, versus_blind
from gapless.spark_fuzz.store import CampaignStore, chunk_ranges, read_rows
from gapless.spark_fuzz.transitions import coverage_report

__all__ = [
    "EXECUTORS",
    "CampaignRun",
    "Progress",
    "SparkStatus",
    "run_campaign",
    "summarise",
]

EXECUTORS: Final = ("spark", "processes", "loop")


@final
@attrs.frozen(kw_only=True)
class SparkStatus:
    """What Spark's status tracker says about a campaign's jobs right now."""

    jobs: int
    tasks_total: int
    tasks_done: int
    tasks_active: int
    tasks_failed: int


@final
@attrs.frozen(kw_only=True)
class Progress:
    """Callbacks a front end (the CLI's rich progress bar) gets; every one optional."""

    on_plan: Callable[[int, int, int], None] | None = None  # (to_run, skipped, chunks)
    on_chunk: Callable[[int, int, dict[str, int]], None] | None = None  # (first, last, verdicts)
    on_status: Callable[[SparkStatus], None] | None = None
    on_phase: Callable[[str], None] | None = None


@final
@attrs.frozen(kw_only=True)
class CampaignRun:
    """The result of :func:`run_campaign`."""

    campaign_id: str
    directory: Path
    executed: tuple[tuple[int, int], ...]
    skipped: int
    interrupted: bool
    summary: dict[str, Any]
    counterexamples: tuple[Path, ...]
    spark_startup_s: float
    run_s: float


def _auto_chunk(n: int, parallelism: int, per_core: int = 4) -> int:
    return max(1, min(1000, math.ceil(n / max(1, per_core * parallelism))))


class _FirstFailure(Exception):
    """Raised by the commit of a fail-fast campaign's first chunk with a failing schedule."""


def _verdicts(results: list[SeedResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.row["verdict"]] = counts.get(r.row["verdict"], 0) + 1
    return counts


def _spark_status(sc: Any, group: str) -> SparkStatus:
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    total = done = active = failed = 0
    for job_id in jobs:
        info = tracker.getJobInfo(job_id)
        if info is None:
            continue
        for stage_id in info.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is None:
                continue
            total += stage.numTasks
            done += stage.numCompletedTasks
            active += stage.numActiveTasks
            failed += stage.numFailedTasks
    return SparkStatus(
        jobs=len(jobs),
        tasks_total=total,
        tasks_done=done,
        tasks_active=active,
        tasks_failed=failed,
    )


def _on_daemon_threads(
    fn: Callable[[int], list[list[SeedResult]]], n: int, width: int
) -> dict[Future[list[list[SeedResult]]], int]:
    """``fn(0)``, ..., ``fn(n - 1)`` in that order on at most ``width`` *daemon* threads: a
    future per call (cancel one not started yet to skip it). Daemon threads, not a
    ``ThreadPoolExecutor``'s: after a fail-fast stop a thread may sit in a Spark job call
    that never returns once the context is stopped, and the executor's threads are joined at
    interpreter exit — the campaign then never exited (seen under ``gapless bench power``:
    a mutant's demo committed its failing chunk, then hung for 30 minutes)."""
    futures: dict[Future[list[list[SeedResult]]], int] = {Future(): i for i in range(n)}
    queue = iter(list(futures))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                fut = next(queue, None)
            if fut is None:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(futures[fut]))
            except BaseException as exc:  # handed to the waiting thread, as an executor does
                fut.set_exception(exc)

    for _ in range(min(width, n)):
        threading.Thread(target=worker, name="gapless-job", daemon=True).start()
    return futures


def _execute_spark(
    config: CampaignConfig,
    config_json: str,
    chunks: list[tuple[int, int]],
    commit: Callable[[int, int, list[SeedResult]], None],
    progress: Progress,
    timings: dict[str, float],
    spark_context: Any = None,
) -> None:
    from gapless.spark_fuzz.session import start_spark

    started = time.perf_counter()
    sc = spark_context if spark_context is not None else start_spark(config.master)
    group = f"gapless-{config.campaign_id}-{time.time_ns()}"
    try:
        parallelism = max(1, int(sc.defaultParallelism))
        # start-up includes the Python workers: start them and let each load the backend
        sc.parallelize(range(parallelism), parallelism).map(
            lambda _: len(prepare(config_json)) and 0
        ).collect()
        timings["spark_startup_s"] = time.perf_counter() - started
        in_flight = config.partitions or parallelism + 1
        rdd = sc.parallelize(chunks, len(chunks))

        def task(it: Any) -> Any:
            return run_chunks(config_json, it)

        def one(index: int) -> list[list[SeedResult]]:
            sc.setJobGroup(group, f"gapless campaign {config.campaign_id}", True)
            return list(sc.runJob(rdd, task, [index]))

        stop_polling = threading.Event()

        def poll() -> None:
            while not stop_polling.wait(0.25):
                if progress.on_status is not None:
                    try:
                        progress.on_status(_spark_status(sc, group))
                    except Exception:  # the tracker is best effort; never kill the campaign
                        return

        poller = threading.Thread(target=poll, name="gapless-status", daemon=True)
        poller.start()
        futures = _on_daemon_threads(one, len(chunks), in_flight)
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: futures[f]):
                    (results,) = fut.result()
                    first, last = chunks[futures[fut]]
                    commit(first, last, results)
        except BaseException:
            sc.cancelJobGroup(group)
            for fut in futures:
                fut.cancel()  # the chunks not started yet; a started job's thread is a daemon
            raise
        finally:
            stop_polling.set()
        try:
            status = _spark_status(sc, group)
            # attempts: every finished one plus every failed one (each failure was retried,
            # or the job would have failed)
            timings["spark_tasks"] = float(status.tasks_done + status.tasks_failed)
            timings["spark_failed_tasks"] = float(status.tasks_failed)
        except Exception:  # best effort, as above
            pass
    finally:
        if spark_context is None:
            sc.stop()


def _pool_chunk(args: tuple[str, int, int]) -> tuple[int, int, list[SeedResult]]:
    config_json, first, last = args
    return first, last, run_chunk(config_json, first, last)


def _execute_processes(
    config_json: str,
    chunks: list[tuple[int, int]],
    commit: Callable[[int, int, list[SeedResult]], None],
    processes: int,
) -> None:
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(processes) as pool:
        for first, last, results in pool.imap_unordered(
            _pool_chunk, [(config_json, f, la) for f, la in chunks]
        ):
            commit(first, last, results)


def summarise(store: CampaignStore, config: CampaignConfig) -> dict[str, Any]:
    """The campaign summary (the ``--json`` object): ``schedules`` (requested),
    ``schedules_committed`` (rows on disk), ``passed``, ``failed`` (violations), ``errors``,
    ``timeouts``, ``by_invariant``, ``by_fault_kind``..."""
    counts = store.summary_counts()
    verdicts = counts["by_verdict"]
    return {
        "campaign_id": config.campaign_id,
        "protocol": config.protocol,
        "variant": config.variant,
        "topology": config.topology,
        "schedules": config.schedules,  # requested
        "schedules_committed": counts["rows"],  # rows on disk (fewer after an interrupt)
        "passed": verdicts.get("pass", 0),
        "failed": verdicts.get("violation", 0),
        "errors": verdicts.get("error", 0),
        "timeouts": verdicts.get("timeout", 0),
        "by_invariant": counts["by_invariant"],
        "by_fault_kind": counts["by_fault_kind"],
        "coverage": coverage_report(
            config.protocol, read_rows(store.root).to_pylist(), store.committed_ranges()
        ),
        "directory": str(store.root),
    }


def run_campaign(
    config: CampaignConfig,
    *,
    executor: str = "spark",
    processes: int = 2,
    progress: Progress | None = None,
    spark_context: Any = None,
) -> CampaignRun:
    """Run (or resume) ``config``; see the module docstring. ``KeyboardInterrupt`` stops it
    cleanly: finished chunks stay committed and the result says ``interrupted``. Pass a
    running ``spark_context`` to share one Spark session between campaigns (it is not
    stopped). A guided campaign (``config.guided``) first runs its blind twin
    (:func:`gapless.spark_fuzz.guided.blind_twin`) and reports the two coverage growths side
    by side under ``versus_blind``."""
    if not config.guided:
        return _run_one(
            config,
            executor=executor,
            processes=processes,
            progress=progress,
            spark_context=spark_context,
        )
    twin = _run_one(
        blind_twin(config),
        executor=executor,
        processes=processes,
        progress=progress,
        spark_context=spark_context,
    )
    run = _run_one(
        config,
        executor=executor,
        processes=processes,
        progress=progress,
        spark_context=spark_context,
    )
    run.summary["versus_blind"] = versus_blind(run.summary, twin.summary)
    return run


def _run_one(
    config: CampaignConfig,
    *,
    executor: str = "spark",
    processes: int = 2,
    progress: Progress | None = None,
    spark_context: Any = None,
) -> CampaignRun:
    """Run (or resume) ``config``; see the module docstring. ``KeyboardInterrupt`` stops it
    cleanly: finished chunks stay committed and the result says ``interrupted``. Pass a
    running ``spark_context`` to share one Spark session between campaigns (it is not
    stopped)."""
    if executor not in EXECUTORS:
        raise ValueError(
            f"run_campaign: executor {executor!r} is not allowed; expected one of {EXECUTORS}"
        )
    progress = progress or Progress()
    config_json = canonical_json(config.to_data())
    started = time.perf_counter()
    timings: dict[str, float] = {"spark_startup_s": 0.0}
    executed: list[tuple[int, int]] = []
    interrupted = False
    with CampaignStore.open(config.out, config) as store:
        missing = store.missing_seeds(config.seeds())
        skipped = config.schedules - len(missing)
        parallelism = processes if executor == "processes" else 1
        if executor == "spark":
            parallelism = _master_cores(config.master)
        per_core = 16 if config.fail_fast else 4
        chunk = config.chunk_size or _auto_chunk(len(missing), parallelism, per_core)
        chunks = aligned_chunks(config, missing) if config.guided else chunk_ranges(missing, chunk)
        if progress.on_plan:
            progress.on_plan(len(missing), skipped, len(chunks))

        def commit(first: int, last: int, results: list[SeedResult]) -> None:
            store.commit(first, last, results)
            executed.append((first, last))
            verdicts = _verdicts(results)
            if progress.on_chunk:
                progress.on_chunk(first, last, verdicts)
            if config.fail_fast and set(verdicts) - {"pass"}:
                raise _FirstFailure

        stopped_early = False
        try:
            if chunks and config.guided:
                run_guided(
                    config,
                    store,
                    chunks,
                    commit,
                    executor=executor,
                    processes=processes,
                    spark_context=spark_context,
                )
            elif chunks:
                if executor == "spark":
                    _execute_spark(
                        config, config_json, chunks, commit, progress, timings, spark_context
                    )
                elif executor == "processes":
                    _execute_processes(config_json, chunks, commit, processes)
                else:
                    for first, last in chunks:
                        commit(first, last, run_chunk(config_json, first, last))
        except KeyboardInterrupt:
            interrupted = True
        except _FirstFailure:
            stopped_early = True
        run_s = time.perf_counter() - started - timings["spark_startup_s"]
        summary = summarise(store, config)
        counterexamples: list[Path] = []
        if config.shrink and not interrupted and config.max_counterexamples > 0:
            if progress.on_phase:
                progress.on_phase("shrinking")
            from gapless.spark_fuzz.counterexample import shrink_campaign_failures

            counterexamples = shrink_campaign_failures(
                store, config, read_rows(store.root).to_pylist()
            )
        summary["counterexamples"] = [str(p) for p in counterexamples]
        summary["executed"] = sum(last - first + 1 for first, last in executed)
        summary["skipped"] = skipped
        summary["interrupted"] = interrupted
        if config.fail_fast:
            summary["stopped_at_first_failure"] = stopped_early
        summary["run_s"] = round(run_s, 3)
        summary["spark_startup_s"] = round(timings["spark_startup_s"], 3)
        if "spark_tasks" in timings:
            # task attempts Spark ran and the ones that failed (e.g. lost with an executor)
            summary["spark_tasks"] = int(timings["spark_tasks"])
            summary["spark_failed_tasks"] = int(timings["spark_failed_tasks"])
        store.write_summary(summary)
        return CampaignRun(
            campaign_id=config.campaign_id,
            directory=store.root,
            executed=tuple(sorted(executed)),
            skipped=skipped,
            interrupted=interrupted,
            summary=summary,
            counterexamples=tuple(counterexamples),
            spark_startup_s=timings["spark_startup_s"],
            run_s=run_s,
        )


def _master_cores(master: str) -> int:
    import os
    import re

    m = re.match(r"^local\[(\*|\d+)", master)
    if m:
        return (os.cpu_count() or 2) if m.group(1) == "*" else int(m.group(1))
    m = re.match(r"^local-cluster\[(\d+),(\d+)", master)
    if m:
        return int(m.group(1)) * int(m.group(2))
    if master == "local":
        return 1
    return os.cpu_count() or 2
