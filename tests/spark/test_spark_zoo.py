"""The bug zoo bites: a reduced-size ``gapless zoo`` detects every planted bug and passes
the correct protocol (issue 4 §4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from spark_helpers import gapless

# The reduced zoo end to end (every planted GD bug caught on Spark within 6 schedules, shrunk)
# takes about two minutes: it runs in `make test-long`, and every bug's own scenario is caught
# in `make test` (tests/unit/test_gd_network.py); `gapless zoo` is the full measure.
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.long]

REDUCED_SCHEDULES = "6"


def test_reduced_zoo_detects_every_bug(tmp_path: Path) -> None:
    proc = gapless(
        "zoo",
        "--schedules",
        REDUCED_SCHEDULES,
        "--shrink-runs",
        "40",
        "--out",
        str(tmp_path / "zoo"),
        "--master",
        "local[2]",
        "--json",
        env=dict(os.environ),
        timeout=900,
    )
    assert proc.stdout, proc.stderr
    results = json.loads(proc.stdout)
    by_bug = {r["bug"]: r for r in results}
    from gapless.spark_fuzz.zoo import ZOO  # type: ignore[import-not-found,unused-ignore]

    assert set(by_bug) == {*ZOO, "none"}
    assert len(ZOO) >= 8
    missed = [b for b, r in by_bug.items() if b != "none" and not r["detected"]]
    assert not missed, results
    assert by_bug["none"]["detected"] is False, by_bug["none"]
    for bug, r in by_bug.items():
        if bug != "none":
            assert r["schedules_to_detect"] >= 1
            assert r["shrunk_fault_events"] is not None
    assert proc.returncode == 0, proc.stderr
