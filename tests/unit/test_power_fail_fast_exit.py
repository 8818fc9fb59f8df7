"""A fail-fast Spark campaign exits even when a job call never returns (found by the power
bench: a mutant's demo committed its failing chunk, then its process hung at exit joining a
``ThreadPoolExecutor`` thread stuck in a Spark job of the stopped context)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from gapless.spark_fuzz.campaign import _on_daemon_threads

_STUCK = """
import sys, threading
from concurrent.futures import ThreadPoolExecutor
from gapless.spark_fuzz.campaign import _on_daemon_threads
never = threading.Event()
def job(i):
    never.wait()  # a Spark job call that never returns
if sys.argv[1] == "daemon":
    futures = _on_daemon_threads(job, 3, 2)
    for f in futures:
        f.cancel()
else:
    pool = ThreadPoolExecutor(max_workers=2)
    for i in range(3):
        pool.submit(job, i)
    pool.shutdown(wait=False, cancel_futures=True)
print("left")
"""


def _exits(how: str) -> bool:
    try:
        subprocess.run([sys.executable, "-c", _STUCK, how], timeout=20, check=True)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_a_stuck_job_no_longer_holds_the_process() -> None:
    assert _exits("daemon")


def test_an_executor_thread_would_hold_it() -> None:
    """Non-vacuity: the executor the campaign used before keeps the process alive."""
    try:
        subprocess.run([sys.executable, "-c", _STUCK, "executor"], timeout=3, check=True)
    except subprocess.TimeoutExpired:
        return
    pytest.fail("the executor's stuck thread did not hold the process")


def test_jobs_run_in_order_and_hand_back_results_and_errors() -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> list[list[int]]:
        with lock:
            seen.append(i)
        if i == 2:
            raise ValueError("chunk 2")
        return [[i]]

    futures = _on_daemon_threads(job, 4, 1)  # type: ignore[arg-type]
    by_index = {i: f for f, i in futures.items()}
    assert by_index[0].result(timeout=10) == [[0]]
    with pytest.raises(ValueError, match="chunk 2"):
        by_index[2].result(timeout=10)
    assert by_index[3].result(timeout=10) == [[3]]
    assert seen == [0, 1, 2, 3]
