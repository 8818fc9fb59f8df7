"""The Python daemon Spark forks its workers from, with gapless imported once up front.

Spark starts one ``pyspark.daemon`` per executor and forks a Python worker from it for tasks;
a fresh worker would import gapless, the world and the protocol roles again (about 0.3 s).
This module imports them in the daemon, so every forked worker starts with them loaded, and
then hands over to ``pyspark.daemon.manager``. Selected by :func:`gapless.spark_fuzz.session
.start_spark` through ``spark.python.daemon.module``.
"""

from __future__ import annotations

import contextlib
import importlib

import pyspark.daemon

import gapless.spark_fuzz.execute  # noqa: F401  (loaded before workers fork)

for _module in (
    "gapless.models.runner",
    "gapless.models.world",
    "gapless.spark_fuzz.runner_backend",
):
    with contextlib.suppress(ImportError):  # a missing optional part must not stop Spark
        importlib.import_module(_module)

if __name__ == "__main__":
    pyspark.daemon.manager()
