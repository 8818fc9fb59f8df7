"""Starting Spark the way campaigns need it (NOTES.md, "Spark").

* Executors must run this interpreter (``PYSPARK_PYTHON`` = ``sys.executable``), or they
  cannot import gapless.
* Local masters stay on loopback (``SPARK_LOCAL_IP`` and the driver host = 127.0.0.1).
* The JVMs only schedule tasks and move small rows: C1-only JIT (``-XX:TieredStopAtLevel=1``)
  halves their start-up CPU and per-job cost on a small machine.
* Logs are quiet: the package's ``log4j2.properties`` for driver and executors, no console
  progress bar (campaigns draw their own, fed by the status tracker).
* Python tasks talk to the JVM over unix domain sockets (lower per-task overhead), and their
  workers fork from a daemon that has already imported gapless (:mod:`.spark_daemon`).

This is the only module that starts a JVM; it imports ``pyspark`` lazily.
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from typing import Any

__all__ = ["is_loopback_master", "log4j_path", "start_spark", "stop_spark"]


def log4j_path() -> str:
    """Absolute path of the packaged ``log4j2.properties``."""
    return str(resources.files("gapless.spark_fuzz").joinpath("log4j2.properties"))


def is_loopback_master(master: str) -> bool:
    return master.startswith(("local", "spark://127.0.0.1:", "spark://localhost:"))


def start_spark(master: str = "local[*]", *, app_name: str = "gapless-fuzz") -> Any:
    """A ``SparkContext`` for ``master`` (created, or the running one if it matches)."""
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
