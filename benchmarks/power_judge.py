"""How ``gapless bench power`` judges one mutant: the procedure a stored verdict depends on.

Theory of operation
-------------------
Everything here decides a verdict, so the text of this module is part of both verdict keys
(:mod:`gapless.benchmarks.power_keys`); the bench's bookkeeping and report
(:mod:`gapless.benchmarks.power`) are not, and change no verdict.

1. **Staging** (:func:`stage`): a fresh directory gets a copy of ``impl/`` with the one
   module changed, laid out as ``src/gapless/impl`` and put first on ``PYTHONPATH`` (the
   editable install supplies every other subpackage; Spark's Python workers inherit it).
2. **The tests** (:func:`judge_tests`): the fast tiers (:data:`FAST_TIERS`) in two passes, both
   stopping at the first failure (``-x``): first the test files that import the mutated
   module, then the others, nearest in the import graph first (:func:`ordered_test_files`).
   Together they run every test file once, so the verdict (some test fails) is the full
   tiers'; the order and the stop only change how long a killed mutant takes. The
   Hypothesis profile ``mutation`` draws the ``ci`` profile's examples (``derandomize``,
   same count) and skips shrinking, which never changes whether a test fails.
3. **The campaign** (:func:`judge_campaign`): the default demo campaign (``campaigns/demo.toml``,
   its seed and schedule count as shipped unless ``schedules`` is given), on Spark, no
   shrinking, ``--fail-fast``: killed when ``gapless fuzz`` exits non-zero — 1: a schedule
   failed, errored or timed out; anything else: the campaign could not run with the mutant
   (its topology no longer builds...), which the unmutated code never does. Stopping at the
   first chunk with a failing schedule cannot change that exit code, only how long a killed
   mutant takes; a surviving mutant always runs every schedule.
4. **The memory cap** (:func:`run_capped`): every pytest and campaign a judge starts runs in
   a session of its own, killed whole when it holds more than :data:`MEMORY_CAP_BYTES`
   resident (the session, not the process group: Spark's Python workers leave the group).
   Some mutants turn a loop into one that grows a list without end (``cur + width`` into
   ``cur - width``); uncapped, one of them filled this 24 GiB machine in a minute and stalled
   everything on it.
   A capped run counts as failed (the mutant is seen, as by a hang), and its record says
   ``memory_cap`` instead of a test name. The unmutated code stays far below the cap: on
   2026-11-25 the fast tiers in one process peaked at 0.43 GiB, and a 60-schedule demo
   campaign, its JVM and Python workers included, at 0.61 GiB.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Any, Final

from gapless.benchmarks._mutants import Mutant
from gapless.benchmarks.power_keys import _named, module_file

__all__ = [
    "DEMO",
    "FAST_TIERS",
    "JUDGE_PYTEST",
    "MEMORY_CAP_BYTES",
    "OVER_CAP",
    "ROOT",
    "KillerFailsClean",
    "import_distance",
    "judge_campaign",
    "judge_tests",
    "killer_passes_clean",
    "one_campaign",
    "ordered_test_files",
    "run_capped",
    "stage",
]

ROOT: Final = Path(__file__).resolve().parents[1]
DEMO: Final = ROOT / "campaigns" / "demo.toml"
FAST_TIERS: Final = ("tests/laws", "tests/stateful", "tests/scenarios", "tests/unit")
#: How the judge runs pytest: the fast tiers as ``make test`` runs them, without the tests
#: marked ``long`` (one of them judges mutants in full: run inside a judge it would recurse).
JUDGE_PYTEST: Final = (
    sys.executable,
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-m",
    "not long",
)
#: pytest's short summary line of a failure: the node id is everything up to `` - `` and the
#: message (a parametrized id may hold spaces: ``test_semantics[loc == "NY"-attrs0]``)
_FAILED: Final = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.MULTILINE)
#: Resident memory a judged process group may hold (see the module doc, 4.)
MEMORY_CAP_BYTES: Final = 8 << 30
#: What a judged run that hit the memory cap is named by, in place of a test's node id
OVER_CAP: Final = "memory_cap"


class Capped(subprocess.CompletedProcess[str]):
    """A finished judged run; ``over_cap``: it was killed for holding more than the cap;
    ``peak``: the most its process group held resident at one sample, in bytes."""

    over_cap: bool = False
    peak: int = 0


def _session(sid: int) -> dict[int, int]:
    """``pid -> resident bytes`` of every process in session ``sid`` (from ``/proc``): a
    process group is not enough, since Spark's Python daemon puts its workers in a group of
    their own (``os.setpgid``), but they stay in the session."""
    out: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                raw = f.read()
        except OSError:  # the process ended meanwhile
            continue
        # the fields after the command name (which may hold spaces): state ppid pgrp session
        # ...; rss is field 24 of the whole line, 22 after the name
        rest = raw[raw.rfind(b")") + 2 :].split()
        if int(rest[3]) == sid:
            out[int(d)] = int(rest[21]) * page
    return out


def _kill_session(sid: int) -> None:
    for pid in _session(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_capped(
    cmd: list[str], cwd: Path, env: dict[str, str], cap: int = MEMORY_CAP_BYTES
) -> Capped:
    """Run ``cmd`` in a session of its own, its output captured, killing every process of the
    session when together they hold more than ``cap`` bytes resident (sampled twice a
    second); what is left of the session when ``cmd`` ends (a Spark JVM, its workers) goes
    with it."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=err, text=True, start_new_session=True
        )
        over = False
        peak = 0
        while True:
            try:
                code = p.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                peak = max(peak, sum(_session(p.pid).values()))
                if peak > cap:
                    over = True
                    _kill_session(p.pid)
        if over:
            code = -signal.SIGKILL
        _kill_session(p.pid)
        out.seek(0)
        err.seek(0)
        done = Capped(cmd, code, out.read(), err.read())
    done.over_cap = over
    done.peak = peak
    return done


def _with_packages(names: set[str]) -> set[str]:
    """``names`` and their enclosing packages (importing a module runs their ``__init__``)."""
    out = set(names)
    for n in names:
        parts = n.split(".")
        out.update(".".join(parts[:i]) for i in range(2, len(parts)))
    return out


def import_distance(
    test_file: Path, module: str, root: Path = ROOT, graph: dict[str, set[str]] | None = None
) -> int | None:
    """How many imports separate ``test_file`` from the gapless ``module`` (dotted name): 1
    when the file imports it, 2 when it imports a module that does...; None when no chain
    of import statements leads there (the file may still run it, e.g. in a subprocess).
    ``graph`` caches each module's imports between calls."""
    graph = {} if graph is None else graph

    def deps(name: str) -> set[str]:
        if name not in graph:
            f = module_file(root, name)
            graph[name] = _with_packages(_named(root, name, f.read_text(), False)) if f else set()
        return graph[name]

    start = _with_packages(_named(root, "tests." + test_file.stem, test_file.read_text(), False))
    seen = dict.fromkeys(start, 1)
    queue = deque(sorted(start))
    while queue:
        name = queue.popleft()
        if name == module:
            return seen[name]
        for d in sorted(deps(name)):
            if d not in seen:
                seen[d] = seen[name] + 1
                queue.append(d)
    return None


def ordered_test_files(module: str, root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The test files of :data:`FAST_TIERS` under ``root`` in two passes: those that import the
    mutated ``module`` (``impl/...``), then all the others, nearest first by
    :func:`import_distance` (a test of a role that calls the mutated helper before a law of
    an unrelated lattice), ties in tier and name order, files no import chain leads from
    last. Together they are every test file, once; the order changes only how soon a
    killing test runs."""
    dotted = "gapless." + module.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    ranked: list[tuple[float, int, str]] = []
    graph: dict[str, set[str]] = {}
    for t, tier in enumerate(FAST_TIERS):
        for f in _tier_files(root / tier):
            d = import_distance(f, dotted, root, graph)
            ranked.append((float("inf") if d is None else d, t, str(f.relative_to(root))))
    ranked.sort()
    first = [f for d, _t, f in ranked if d == 1]
    rest = [f for d, _t, f in ranked if d != 1]
    return first, rest


def stage(mutant: Mutant, work: Path) -> dict[str, str]:
    """Lay out the mutated ``impl/`` under ``work/src/gapless/impl``; the environment to use."""
    src = work / "src" / "gapless"
    src.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "impl", src / "impl", ignore=ignore)
    (src / "impl" / Path(mutant.module).relative_to("impl")).write_text(mutant.source)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(work / "src"), env.get("PYTHONPATH")]))
    env["HYPOTHESIS_PROFILE"] = "mutation"  # the ci profile's examples, no shrinking
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(work / "hypothesis")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def judge_tests(
    mutant: Mutant, env: dict[str, str], work: Path, stop: bool = True
) -> dict[str, Any]:
    """``killed``: whether some fast test fails with the mutant staged in ``env``; ``by``: the
    first failing test (pytest's node id), ``pass``: 1 or 2, which pass it failed in. With
    ``stop`` off, the full judgement the stopped one stands for: one pytest run of every
    file of the tiers in their own order, no ``-x`` (``failures``: how many tests failed)."""
    base = [*JUDGE_PYTEST, "--basetemp", str(work / ("pytest" if stop else "pytest-full"))]
    if not stop:
        files = [str(f.relative_to(ROOT)) for t in FAST_TIERS for f in _tier_files(ROOT / t)]
        done = run_capped([*base, *files], ROOT, env)
        failed = _FAILED.findall(done.stdout)
        return {
            "killed": done.returncode != 0,
            "by": OVER_CAP if done.over_cap else failed[0] if failed else None,
            "pass": None,
            "failures": len(failed),
        }
    for n, files in enumerate(ordered_test_files(mutant.module), start=1):
        if not files:
            continue
        done = run_capped([*base, "-x", *files], ROOT, env)
        if done.returncode != 0:
            if done.over_cap:
                return {"killed": True, "by": OVER_CAP, "pass": n}
            first = _FAILED.search(done.stdout)
            return {"killed": True, "by": first.group(1) if first else None, "pass": n}
    return {"killed": False, "by": None, "pass": None}


class KillerFailsClean(ValueError):
    """A test that killed a mutant fails on the unmutated code too: every kill by it would be
    counted for the mutant when it is the test's own failure."""


def killer_passes_clean(test_id: str, module: str, work: Path) -> bool:
    """Whether ``test_id`` (a pytest node id) passes with the **unmutated** ``impl/`` staged
    exactly as a mutant of ``module`` is (same copy, paths, environment, Hypothesis profile):
    a kill by a test that fails here is not the mutant's."""
    source = (ROOT / module).read_text()
    clean = Mutant(module=module, line=0, kind="none", index=0, source=source, diff="")
    env = stage(clean, work)
    done = run_capped([*JUDGE_PYTEST, "--basetemp", str(work / "pytest-clean"), test_id], ROOT, env)
    return done.returncode == 0


def _tier_files(tier: Path) -> list[Path]:
    return sorted(tier.rglob("test_*.py"))


def judge_campaign(
    env: dict[str, str], work: Path, params: dict[str, Any], stop: bool = True
) -> dict[str, Any]:
    """The demo campaign's verdict on the mutant staged in ``env`` (see the module doc); with
    ``stop`` off, the full judgement: every schedule, no ``--fail-fast``."""
    got = one_campaign(env, work, params, (), stop)
    if not got["killed"] and got["exit"] == 0 and params["total_order"]:
        extra = ("--topology", "total-order", "--campaign-id", "demo-total-order")
        total = {**params, "schedules": params["total_order"]}
        more = one_campaign(env, work, total, extra, stop)
        got = {**more, "topology": "total-order"}
    return got


def one_campaign(
    env: dict[str, str],
    work: Path,
    params: dict[str, Any],
    extra: tuple[str, ...],
    stop: bool = True,
) -> dict[str, Any]:
    gapless = Path(sys.executable).with_name("gapless")
    out = work / ("out" if stop else "out-full")
    cmd = [str(gapless), "fuzz", "--config", str(DEMO), "--out", str(out), "--no-shrink"]
    cmd += ["--json", "--master", str(params["master"]), *extra]
    cmd += ["--fail-fast"] if stop else []
    if params["schedules"] is not None:
        cmd += ["--schedules", str(params["schedules"])]
    done = run_capped(cmd, work, env)
    try:
        summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        summary = {}
    return {
        # 1: a schedule failed; any other non-zero exit: the campaign could not run with the
        # mutant (e.g. its topology no longer builds, a configuration error), which the
        # unmutated code never does — the mutant is seen either way
        "killed": done.returncode != 0,
        "exit": done.returncode,
        "failed": summary.get("failed"),
        "errors": summary.get("errors"),
        "timeouts": summary.get("timeouts"),
        "by_invariant": summary.get("by_invariant"),
        "schedules_run": summary.get("schedules_committed"),
        "stderr_tail": done.stderr[-400:] if done.returncode not in (0, 1) else "",
        "memory_cap": done.over_cap,
    }
