"""Starting Spark the way campaigns need it (NOTES.md, "Spark").

* Executors must run this interpreter (``PYSPARK_PYTHON`` = ``sys.executable``), or they
  cannot import gapless.
* Local masters stay on loopback (``SPARK_LOCAL_IP`` and the driver host = 127.0.0.1).
* The JVMs only schedule tasks and move small rows: C1-only JIT (``-XX:TieredStopAtLevel=1``)
  halves their start-up CPU and per-job cost on a small machine.
* Logs are quiet: the package's ``log4j2.properties`` for driver and executors, no console
  progress bar (campaigns draw their own, fed by the status tracker).
* A local master retries a failed task (``local[N]`` gives each task one attempt; we run it as
  ``local[N,4]``, NOTES.md): a crashed Python worker costs one attempt, not the campaign.
  An explicit ``local[N,F]`` is kept as given.
* Python tasks talk to the JVM over unix domain sockets (lower per-task overhead), and their
  workers fork from a daemon that has already imported gapless (:mod:`.spark_daemon`).

This is the only module that starts a JVM; it imports ``pyspark`` lazily.
"""

from __future__ import annotations

import os
import re
import sys
from importlib import resources
from typing import Any, Final

__all__ = [
    "LOCAL_TASK_ATTEMPTS",
    "is_loopback_master",
    "log4j_path",
    "start_spark",
    "stop_spark",
    "with_task_retries",
]

LOCAL_TASK_ATTEMPTS: Final = 4
"""Attempts a task gets on a local master that does not say (``local[N,F]`` says F)."""


def log4j_path() -> str:
    """Absolute path of the packaged ``log4j2.properties``."""
    return str(resources.files("gapless.spark_fuzz").joinpath("log4j2.properties"))


def is_loopback_master(master: str) -> bool:
    return master.startswith(("local", "spark://127.0.0.1:", "spark://localhost:"))


def with_task_retries(master: str) -> str:
    """``master`` with :data:`LOCAL_TASK_ATTEMPTS` attempts per task if it is a local master
    that does not set them (Spark's ``local[N]`` gives one; ``spark.task.maxFailures`` does
    not apply in local mode).

    >>> with_task_retries("local[*]"), with_task_retries("local"), with_task_retries("local[2,1]")
    ('local[*,4]', 'local[1,4]', 'local[2,1]')
    """
    if master == "local":
        return f"local[1,{LOCAL_TASK_ATTEMPTS}]"
    m = re.fullmatch(r"local\[(\*|[0-9]+)\]", master)
    if m:
        return f"local[{m.group(1)},{LOCAL_TASK_ATTEMPTS}]"
    return master


def start_spark(master: str = "local[*]", *, app_name: str = "gapless-fuzz") -> Any:
    """A ``SparkContext`` for ``master`` (created, or the running one if it matches); a local
    master retries failed tasks (:func:`with_task_retries`)."""
    master = with_task_retries(master)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if is_loopback_master(master):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark import SparkConf, SparkContext

    java_opts = f"-Dlog4j2.configurationFile=file:{log4j_path()} -XX:TieredStopAtLevel=1"
    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(app_name)
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.extraJavaOptions", java_opts)
        .set("spark.executor.extraJavaOptions", java_opts)
        .set("spark.python.unix.domain.socket.enabled", "true")
        .set("spark.python.worker.reuse", "true")
        .set("spark.python.daemon.module", "gapless.spark_fuzz.spark_daemon")
        .set("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .set("spark.scheduler.mode", "FIFO")
    )
    if "PYTHONPATH" in os.environ:
        conf = conf.set("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    if is_loopback_master(master):
        conf = conf.set("spark.driver.host", "127.0.0.1").set(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    if master.startswith("spark://"):
        # tasks lost with a killed worker are re-run elsewhere; keep going after a few losses
        conf = conf.set("spark.task.maxFailures", "8")
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("ERROR")
    return sc


def stop_spark(sc: Any) -> None:
    sc.stop()
