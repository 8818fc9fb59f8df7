"""The power judge's memory cap: a judged process group that grows without end is killed
and named, one that stays below the cap runs as if uncapped (benchmarks/power_judge.py, 4.)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gapless.benchmarks import power_judge
from gapless.benchmarks._mutants import Mutant
from gapless.benchmarks.power_judge import run_capped

#: a grandchild of the judged process that leaves its process group (as Spark's Python
#: daemon's workers do) and grows a list without end: the cap must see the whole session
_GROWS = (
    "import subprocess, sys; "
    "subprocess.run([sys.executable, '-c', "
    "'import os\\nos.setpgid(0, 0)\\nx = []\\nwhile True: x.append(bytearray(1 << 20))'])"
)


def test_a_session_that_grows_without_end_is_killed_and_named(tmp_path: Path) -> None:
    done = run_capped([sys.executable, "-c", _GROWS], tmp_path, dict(os.environ), cap=300 << 20)
    assert done.over_cap
    assert done.returncode != 0
    assert done.peak > 300 << 20


def test_a_run_below_the_cap_keeps_its_output_and_exit_code(tmp_path: Path) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    done = run_capped([sys.executable, "-c", code], tmp_path, dict(os.environ), cap=300 << 20)
    assert not done.over_cap
    assert done.peak < 300 << 20
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_a_capped_test_run_kills_the_mutant_by_the_cap_not_by_a_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def capped(cmd: list[str], *_a: object, **_k: object) -> power_judge.Capped:
        got = power_judge.Capped(cmd, -9, "FAILED tests/unit/test_x.py::test_y\n", "")
        got.over_cap = True
        return got

    monkeypatch.setattr(power_judge, "run_capped", capped)
    mutant = Mutant(module="impl/ticksets.py", line=1, kind="k", index=0, source="", diff="")
    got = power_judge.judge_tests(mutant, {}, tmp_path)
    assert got == {"killed": True, "by": power_judge.OVER_CAP, "pass": 1}
