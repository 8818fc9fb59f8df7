"""``gapless bench power``: how many of the bugs the tests find does the main job find? (issue 18)

Theory of operation
-------------------
1. **Which modules.** The modules the guaranteed-delivery protocol runs are found, not listed:
   import ``gapless.impl.gd`` in a fresh interpreter and take every ``gapless.impl`` module it
   loaded, minus those that cannot change what a correct run does (the planted-bug table
   ``variants``, the rule map that only documents handlers, the error types).
2. **Which mutants.** :mod:`gapless.benchmarks._mutants` enumerates every mutation point of
   those modules (mutmut's operator kinds) and draws ``mutants`` of them with a fixed
   ``seed`` — only among the points on lines the protocol runs
   (:mod:`gapless.benchmarks.power_lines`: line coverage of the demo's first seeds of each
   setup, cached per code digest). The draw is keyed (power8): the points with the smallest
   ``sha256(seed, key)``, each point's key naming it by module, enclosing function, operator
   and source text (:func:`gapless.benchmarks._mutants.point_keys`), so a change of coverage
   or of code elsewhere adds or removes only the points it touches. A module the protocol
   imports may hold helpers no role calls; the report's ``unrun_lines_mutants`` says how many
   of the uniform draw (every point) fell in such code, and in which functions: code to
   delete or to question, not misses of the campaign.
3. **Who kills each** (:mod:`gapless.benchmarks.power_judge`). Every mutant is staged in a
   fresh directory (a copy of ``impl/`` with the one module changed, first on
   ``PYTHONPATH``) and judged, each in its own output directory, by
   - the fast test tiers (:data:`FAST_TIERS`), in two ``-x`` passes (the test files that
     import the mutated module first, then the others: every file once, so the verdict is
     the full tiers'); the record names the first failing test (``tests_by``);
   - the default demo campaign (its seed and schedule count as shipped, on Spark, no
     shrinking, ``--fail-fast``): killed when ``gapless fuzz`` exits non-zero. A kill is a
     kill however early the campaign stops; a survivor runs every schedule.
4. **Resumable, and when a stored verdict still holds.** With ``out=DIR`` each mutant's
   verdicts are written to ``DIR/<mutant digest>.json`` as soon as it is judged (the digest
   is of the mutant's id and mutated source); a rerun reads them back and keeps a verdict
   only while its key (:func:`verdict_keys`) is unchanged. A verdict is only valid for the
   code that produced it, and the key is the digest of exactly the code that can produce
   it, so narrowing it from "the whole repository" loses no soundness:

   - both keys hold the unmutated ``impl/`` (every module; the staged copy runs all of
     them) and the text of :mod:`gapless.benchmarks.power_judge` (the staging, the pytest
     and ``gapless fuzz`` command lines, what counts as a kill);
   - the tests key holds every file of the fast tiers and ``tests/conftest.py``, the
     import closure of those files outside ``impl`` (import statements anywhere in a file,
     and module names in strings handed to ``importlib``: the CLI's command table, which
     the tests run as a subprocess), the data files of those folders and of
     ``campaigns/``, ``pyproject.toml`` and the installed distributions' versions;
   - the campaign key holds the import closure of ``gapless fuzz`` (the ``fuzz`` command's
     module and the module Spark forks its workers from; the CLI entry's own text but not
     its command table, since it imports only the command it runs), the demo TOML, the data
     files of the closure's packages, the versions, and the schedule counts and master.

   A file outside a closure is never imported by that judge, so it cannot change its
   verdict (:mod:`gapless.benchmarks.power_keys`; a test checks the closure against the
   modules a real campaign loads). What no longer discards verdicts: the bench's own
   report code, a Z3 proof, the zoo, the plots, other benchmarks and CLI commands (the
   campaign's), tests outside the fast tiers. What still does, rightly: any change to
   ``impl/``, to the campaign runner (``spark_fuzz`` as imported, ``guided`` included: the
   runner imports it), to an invariant or to the world model.
5. **The figures.** ``campaign_power`` = killed by both / killed by the tests (the share of
   the bugs the tests find that the campaign finds too); ``equivalent_suspects`` are the
   mutants nobody killed, with their diff, for a person to judge; per-module rows; the wall
   time (of this run; ``judge_s_total`` sums every verdict's own time, resumed ones
   included). Target: ``campaign_power >= 0.9``. Beside it, never in it:
   ``campaign_power_without_equivalent_in_use``, without the mutants a person argued
   equivalent in the protocol's use (``benchmarks/power_equivalent.md``, each with its
   reason, listed under ``equivalent_in_use``).

Parameters (``gapless bench power --param KEY=VALUE``): ``mutants`` (60), ``seed`` (1),
``schedules`` (the demo's 300; fewer for a quick look, reported as such), ``master``
(``local[*]``), ``total_order`` (0: off; N: a mutant the demo campaign misses also meets the
demo campaign on the total-order merge topology [GD Figure 1] for N schedules, and counts as
killed by the campaign if that fails), ``out`` (a directory for resumable verdicts; none:
nothing kept), ``judge`` (1; 0: judge nothing, report the verdicts stored in ``out``),
``only`` (mutant ids ``module:line:kind#index``, comma-separated: judge exactly those —
any mutation point of the modules, not only the sample's, so a miss of an earlier sample can
be re-judged after the code moved), ``tests`` (1; 0: judge the campaign verdicts only, e.g.
to re-judge known misses after a change to the campaign), ``lines`` (1; 0: draw from every
mutation point, the uniform sample of earlier runs), ``campaigns`` (``all``; ``killed``: judge
the campaign only for the mutants the tests kill, which is all ``campaign_power`` needs;
``none``: a tests-only pass, e.g. while the campaign code still changes), ``full`` (0; 1: also
judge every verdict in full — every test file without ``-x``, every schedule without
``--fail-fast`` — and report in ``stopped_vs_full`` whether the stopped judgement agreed and
what each cost; the stored verdict is the stopped one), ``draw`` (``keyed``: the points with
the smallest ``sha256(seed, stable key)`` — a sample that keeps its points when coverage or code
changes elsewhere, power8 on; ``shuffle``: the ``random.Random(seed)`` shuffle of every
earlier sample, to reproduce one).
Mutants are judged in a seeded random order (so a partial run is a random subsample): the
tests, then — if the tests kill it — the campaign; the campaigns of the mutants the tests
do not kill (not part of ``campaign_power``) come last. The figures count only mutants with
both verdicts; ``pending`` says how many lack one.
It is long (minutes per surviving mutant): a bench, never part of ``make test``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

from gapless.benchmarks._mutants import DRAWS, Mutant, mutant_named, sample, unrun
from gapless.benchmarks.power_judge import (
    FAST_TIERS,
    OVER_CAP,
    ROOT,
    KillerFailsClean,
    judge_campaign,
    judge_tests,
    killer_passes_clean,
    ordered_test_files,
)
from gapless.benchmarks.power_judge import stage as _stage
from gapless.benchmarks.power_keys import campaign_key, impl_key, tests_key
from gapless.benchmarks.power_lines import PER_SETUP, run_lines

__all__ = [
    "FAST_TIERS",
    "TAKES_PARAMS",
    "named_mutants",
    "ordered_test_files",
    "run",
    "run_modules",
    "verdict_keys",
]

TARGET: Final = 0.9
#: mutants a person argued equivalent in the protocol's use (reported beside the headline)
EQUIVALENT_IN_USE: Final = ROOT / "benchmarks" / "power_equivalent.md"
_LISTED: Final = re.compile(r"^- `([^`]+)`: (.+)$", re.MULTILINE)
#: Whose campaigns are judged: every mutant's, those the tests kill (all ``campaign_power``
#: needs), or none (a tests-only pass, e.g. while the campaign code is still changing).
_CAMPAIGNS: Final = ("all", "killed", "none")
TAKES_PARAMS: Final = True
#: Modules the protocol loads that cannot change a correct run's behaviour.
_NOT_RUN: Final = (
    "gapless.impl.gd.variants",  # the planted bugs: off in a correct run
    "gapless.impl.gd.rulemap",  # documents the handlers
    "gapless.impl.variants",  # how a planted bug is chosen
    "gapless.impl.errors",  # exception types
    "gapless.impl.trace",  # the trace records and their digest, not the protocol
)

_PROBE: Final = (
    "import sys, gapless.impl.gd, gapless.models.gd_binding\n"
    "print(gapless.impl.__path__[0])\n"
    "print('\\n'.join(sorted(getattr(m, '__file__', None) or '' for n, m in sys.modules.items()"
    " if n.startswith('gapless.impl.') and n not in {skip!r})))"
)


def run_modules() -> list[str]:
    """The ``impl/`` modules (``impl/...`` paths, as in the repository) the GD protocol runs:
    of the ``impl`` the interpreter imports, so the answer is the same under the bench's
    staging (a mutated copy of ``impl`` first on ``PYTHONPATH``) as in the repository."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(skip=set(_NOT_RUN))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    first, *rest = out.splitlines()
    impl = Path(first).resolve()
    mods = []
    for line in rest:
        path = Path(line).resolve() if line else None
        if path is not None and path.is_relative_to(impl):
            mods.append(str(Path("impl") / path.relative_to(impl)))
    return sorted(mods)


def verdict_keys(root: Path = ROOT) -> dict[str, str]:
    """The keys a stored verdict is valid under (:mod:`gapless.benchmarks.power_keys`): each
    the digest of what the judge loads (the tests and their imports; the campaign's import
    closure, demo file and data), of the unmutated ``impl/`` and of the judging procedure
    (:mod:`gapless.benchmarks.power_judge`), for the code under ``root``."""
    judge = hashlib.sha256((root / "benchmarks" / "power_judge.py").read_bytes())
    common = f"{impl_key(root)}:{judge.hexdigest()[:16]}"
    return {
        "tests": f"{tests_key(root, FAST_TIERS)}:{common}",
        "campaign": f"{campaign_key(root)}:{common}",
    }


def _key(mutant: Mutant) -> str:
    return hashlib.sha256(f"{mutant.ident}\0{mutant.source}".encode()).hexdigest()[:20]


class _Store:
    """One JSON file per mutant under ``out`` (nothing kept when ``out`` is None)."""

    def __init__(self, out: str | None) -> None:
        self.dir = Path(out) if out else None
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)

    def get(self, mutant: Mutant) -> dict[str, Any]:
        if self.dir is None:
            return {}
        f = self.dir / f"{_key(mutant)}.json"
        return dict(json.loads(f.read_text())) if f.exists() else {}

    def put(self, mutant: Mutant, record: dict[str, Any]) -> None:
        if self.dir is None:
            return
        self._write(self.dir / f"{_key(mutant)}.json", record)

    def killers(self, tests_key: str) -> dict[str, bool]:
        """Tests already run on the unmutated code under ``tests_key``: passed or not."""
        f = None if self.dir is None else self.dir / "clean-killers.json"
        if f is None or not f.exists():
            return {}
        got = json.loads(f.read_text())
        return dict(got["tests"]) if got.get("tests_key") == tests_key else {}

    def put_killer(self, tests_key: str, test_id: str, passed: bool) -> None:
        if self.dir is None:
            return
        tests = {**self.killers(tests_key), test_id: passed}
        self._write(self.dir / "clean-killers.json", {"tests_key": tests_key, "tests": tests})

    @staticmethod
    def _write(f: Path, data: dict[str, Any]) -> None:
        tmp = f.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(f)


def _check_killer(test_id: str, mutant: Mutant, work: Path, params: dict[str, Any]) -> None:
    """Stop the bench when the test that killed ``mutant`` fails on the unmutated code too
    (checked once per test and tests key, remembered in ``out``): its kills are not the
    mutants', and every figure after would count them."""
    store: _Store = params.get("_store") or _Store(None)
    key = str(params.get("tests_key"))
    known = store.killers(key)
    if test_id not in known:
        known[test_id] = killer_passes_clean(test_id, mutant.module, work / "clean")
        store.put_killer(key, test_id, known[test_id])
    if not known[test_id]:
        raise KillerFailsClean(
            f"bench power: {test_id} fails on the unmutated code as well (it killed "
            f"{mutant.ident}); a kill by it is not the mutant's. Make the fast tiers pass "
            "on this commit, then run the bench again"
        )


def _judge(
    mutant: Mutant, record: dict[str, Any], what: str, params: dict[str, Any]
) -> dict[str, Any]:
    """``record`` with the ``what`` (``tests`` or ``campaign``) verdict of ``mutant`` added."""
    work = Path(tempfile.mkdtemp(prefix="gapless-power-"))
    try:
        env = _stage(mutant, work)
        t0 = time.perf_counter()
        if what == "tests":
            got = judge_tests(mutant, env, work)
            if got["killed"] and got["by"] and got["by"] != OVER_CAP:
                _check_killer(got["by"], mutant, work, params)
            record = {**record, "killed_by_tests": got["killed"], "tests_by": got["by"]}
            record["tests_pass"] = got["pass"]
            record["tests_key"] = params.get("tests_key")
        else:
            got = judge_campaign(env, work, params)
            record = {**record, "killed_by_campaign": got["killed"], "campaign": got}
            record["campaign_key"] = params["campaign_key"]
        record[f"{what}_s"] = round(time.perf_counter() - t0, 1)
        if params.get("full"):
            # the judgement the stopped one stands for, to show they agree (full=1)
            t0 = time.perf_counter()
            if what == "tests":
                full = judge_tests(mutant, env, work, stop=False)
            else:
                full = judge_campaign(env, work, params, stop=False)
            record[f"{what}_full"] = {
                "killed": full["killed"],
                "s": round(time.perf_counter() - t0, 1),
                **{k: full.get(k) for k in ("by", "failures", "schedules_run", "by_invariant")},
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return record


def _params(given: dict[str, str]) -> dict[str, Any]:
    allowed = {
        "mutants": 60,
        "seed": 1,
        "schedules": None,
        "master": "local[*]",
        "total_order": 0,
        "out": None,
        "judge": 1,
        "only": None,
        "tests": 1,
        "lines": 1,
        "campaigns": "all",
        "full": 0,
        "draw": "keyed",
    }
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"bench power: unknown parameter(s) {unknown}; allowed: {sorted(allowed)}")
    out: dict[str, Any] = dict(allowed)
    for key, value in given.items():
        if key in ("master", "out", "only"):
            out[key] = value
            continue
        if key == "draw":
            if value not in DRAWS:
                raise ValueError(
                    f"bench power: draw={value!r} is not allowed; expected one of {list(DRAWS)}"
                )
            out[key] = value
            continue
        if key == "campaigns":
            if value not in _CAMPAIGNS:
                raise ValueError(
                    f"bench power: campaigns={value!r} is not allowed; expected one of "
                    f"{list(_CAMPAIGNS)}"
                )
            out[key] = value
            continue
        least = 0 if key in ("seed", "total_order", "judge", "tests", "lines", "full") else 1
        if not value.isdigit() or int(value) < least:
            raise ValueError(
                f"bench power: {key}={value!r} is not allowed; expected an integer >= {least}"
            )
        out[key] = int(value)
    return out


def _complete(record: dict[str, Any], campaigns: str) -> bool:
    """Whether ``record`` has every verdict the run asks for: the tests', and the campaign's
    for every mutant (``campaigns=all``) or for those the tests kill (otherwise)."""
    if "killed_by_tests" not in record:
        return False
    needs_campaign = campaigns == "all" or record["killed_by_tests"]
    return "killed_by_campaign" in record or not needs_campaign


def _unrun_report(found: list[tuple[Mutant, str, bool]], of: int) -> dict[str, Any]:
    """The mutants of the uniform sample (every point of the modules, the draw earlier runs
    made) whose point the protocol never runs: in a function no role calls (code to delete
    or a helper to question) or on a branch of a function that runs but never takes it."""
    return {
        "of_uniform_sample": of,
        "count": len(found),
        "in_uncalled_functions": sum(not called for _m, _w, called in found),
        "uncalled_functions": sorted({f"{m.module}:{w}" for m, w, called in found if not called}),
        "branch_not_taken_in": sorted({f"{m.module}:{w}" for m, w, called in found if called}),
        "mutants": [
            {"mutant": m.ident, "function": w, "function_ran": called, "diff": m.diff}
            for m, w, called in found
        ],
    }


def _stopped_vs_full(records: list[dict[str, Any]]) -> dict[str, Any]:
    """For the verdicts also judged in full (``full=1``): whether the stopped judgement (``-x``
    passes, ``--fail-fast``) gave the same verdict, and what each cost."""
    out: dict[str, Any] = {}
    for what in ("tests", "campaign"):
        pairs = [
            (r["mutant"], r[f"killed_by_{what}"], r[f"{what}_full"], r.get(f"{what}_s"))
            for r in records
            if f"{what}_full" in r and f"killed_by_{what}" in r
        ]
        if not pairs:
            continue
        out[what] = {
            "judged_both_ways": len(pairs),
            "same_verdict": sum(stopped == full["killed"] for _m, stopped, full, _s in pairs),
            "differ": [m for m, stopped, full, _s in pairs if stopped != full["killed"]],
            "stopped_s": round(sum(s or 0.0 for *_x, s in pairs), 1),
            "full_s": round(sum(full["s"] for _m, _k, full, _s in pairs), 1),
        }
    return out


def _rows(judged: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    per: dict[str, Counter[str]] = {}
    for r in judged:
        c = per.setdefault(r["module"], Counter())
        c["mutants"] += 1
        c["killed_by_tests"] += r["killed_by_tests"]
        c["killed_by_campaign"] += r.get("killed_by_campaign", False)
        c["killed_by_both"] += r["killed_by_tests"] and r.get("killed_by_campaign", False)
    return {m: dict(sorted(c.items())) for m, c in sorted(per.items())}


def _judge_all(
    mutants: list[Mutant], store: _Store, params: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every mutant's record, judging what is missing (order: see the module docstring)."""
    records = [store.get(m) for m in mutants]
    for i, m in enumerate(mutants):
        base = {"mutant": m.ident, "module": m.module, "diff": m.diff}
        records[i] = {**records[i], **base}
        if records[i].get("campaign_key") != params["campaign_key"]:
            records[i].pop("killed_by_campaign", None)
        if records[i].get("tests_key") != params.get("tests_key"):
            records[i].pop("killed_by_tests", None)
    if not params["judge"]:
        return records
    order = list(range(len(mutants)))
    random.Random(params["seed"]).shuffle(order)

    def judge(i: int, what: str) -> None:
        records[i] = _judge(mutants[i], records[i], what, params)
        store.put(mutants[i], records[i])

    campaigns = params["campaigns"]
    for i in order:
        if "killed_by_tests" not in records[i] and params["tests"]:
            judge(i, "tests")
        wanted = campaigns != "none" and records[i].get("killed_by_tests")
        if wanted and "killed_by_campaign" not in records[i]:
            judge(i, "campaign")
    if campaigns != "all":
        return records
    for i in order:
        if "killed_by_campaign" not in records[i]:
            judge(i, "campaign")
    return records


def named_mutants(root: Path, modules: list[str], only: str) -> list[Mutant]:
    """The mutants of ``modules`` whose ids are listed in ``only`` (comma-separated), in the
    sample's order; a ``ValueError`` names the ids no mutation point has."""
    wanted = sorted({w.strip() for w in only.split(",") if w.strip()})
    found = [
        m
        for m in (mutant_named(root, w) if w.split(":", 1)[0] in modules else None for w in wanted)
        if m is not None
    ]
    missing = sorted(set(wanted) - {m.ident for m in found})
    if missing:
        raise ValueError(
            f"bench power: only= names mutants that do not exist: {missing}; expected ids "
            "'module:line:kind#index' of the modules the protocol runs"
        )
    return sorted(found, key=lambda m: (m.module, m.index))


def equivalent_in_use(path: Path = EQUIVALENT_IN_USE) -> dict[str, str]:
    """``mutant id -> reason`` from ``benchmarks/power_equivalent.md``; empty without it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    return {m.group(1): m.group(2) for m in _LISTED.finditer(text)}


def _without_equivalent(judged: list[dict[str, Any]], listed: dict[str, str]) -> dict[str, Any]:
    """The campaign power over the test-killed mutants not argued equivalent in use, and the
    listed ones in this sample with their reason and campaign verdict."""
    found = [r for r in judged if r["mutant"] in listed and r["killed_by_tests"]]
    rest = [r for r in judged if r["mutant"] not in listed and r["killed_by_tests"]]
    both = sum(bool(r.get("killed_by_campaign")) for r in rest)
    return {
        "campaign_power_without_equivalent_in_use": round(both / len(rest), 3) if rest else 0.0,
        "equivalent_in_use": [
            {
                "mutant": r["mutant"],
                "killed_by_campaign": bool(r.get("killed_by_campaign")),
                "reason": listed[r["mutant"]],
            }
            for r in found
        ],
    }


def run(**given: str) -> dict[str, Any]:
    params = _params(given)
    t0 = time.perf_counter()
    modules = run_modules()
    ran = run_lines(ROOT)
    draw = params["draw"]
    uniform = sample(ROOT, modules, params["mutants"], params["seed"], draw=draw)
    if params["only"]:
        mutants = named_mutants(ROOT, modules, params["only"])
    elif params["lines"]:
        mutants = sample(ROOT, modules, params["mutants"], params["seed"], ran, draw=draw)
    else:
        mutants = uniform
    keys = verdict_keys()
    key = f"{keys['campaign']}:{params['schedules']}:{params['total_order']}:{params['master']}"
    params["campaign_key"] = key
    params["tests_key"] = keys["tests"]
    store = _Store(params["out"])
    params["_store"] = store
    records = _judge_all(mutants, store, params)
    judged = [r for r in records if _complete(r, params["campaigns"])]
    by_tests = sum(r["killed_by_tests"] for r in judged)
    by_campaign = sum(r.get("killed_by_campaign", False) for r in judged)
    both = sum(r["killed_by_tests"] and r["killed_by_campaign"] for r in judged)
    power = round(both / by_tests, 3) if by_tests else 0.0
    complete = len(judged) == len(mutants)
    return {
        "mutants": len(mutants),
        "judged": len(judged),
        "pending": len(mutants) - len(judged),
        "seed": params["seed"],
        "draw": draw,
        "schedules": params["schedules"] or "demo.toml's",
        "total_order_schedules": params["total_order"],
        "campaign_key": key,
        "tests_key": keys["tests"],
        "modules": modules,
        "killed_by_tests": by_tests,
        "killed_by_campaign": by_campaign,
        "killed_by_both": both,
        "campaign_power": power,
        # beside the headline, never in it: benchmarks/power_equivalent.md
        **_without_equivalent(judged, equivalent_in_use()),
        "campaigns": params["campaigns"],
        "sampled_from": (
            "named mutants (only=)"
            if params["only"]
            else f"the lines the demo's first {PER_SETUP} seeds of each setup run"
            if params["lines"]
            else "every mutation point of the modules (lines=0)"
        ),
        "unrun_lines_mutants": _unrun_report(unrun(ROOT, uniform, ran), len(uniform)),
        "campaign_only": [
            r["mutant"] for r in judged if r.get("killed_by_campaign") and not r["killed_by_tests"]
        ],
        # a kill by timed-out schedules alone: a hang the mutant causes, or a machine so
        # loaded that a schedule overran timeout_s; a person should look (the diff says which)
        "killed_by_timeouts_only": [
            r["mutant"]
            for r in judged
            if r.get("killed_by_campaign")
            and (r.get("campaign") or {}).get("timeouts")
            and not (r.get("campaign") or {}).get("failed")
            and not (r.get("campaign") or {}).get("errors")
        ],
        "missed_by_campaign": [
            {"mutant": r["mutant"], "diff": r["diff"]}
            for r in judged
            if r["killed_by_tests"] and not r["killed_by_campaign"]
        ],
        "equivalent_suspects": [
            {
                "mutant": r["mutant"],
                "diff": r["diff"],
                **({} if "killed_by_campaign" in r else {"campaign": "not run"}),
            }
            for r in judged
            if not r["killed_by_tests"] and not r.get("killed_by_campaign")
        ],
        # every campaign verdict, with or without a tests verdict (``tests=0`` re-judges)
        "campaign_verdicts": {
            r["mutant"]: {
                "killed": r["killed_by_campaign"],
                "by_invariant": (r.get("campaign") or {}).get("by_invariant"),
                "schedules_run": (r.get("campaign") or {}).get("schedules_run"),
            }
            for r in records
            if "killed_by_campaign" in r
        },
        "per_module": _rows(judged),
        "stopped_vs_full": _stopped_vs_full(records),
        "records": records,
        "wall_s": round(time.perf_counter() - t0, 1),
        "judge_s_total": round(
            sum(r.get("tests_s", 0.0) + r.get("campaign_s", 0.0) for r in records), 1
        ),
        "targets": {
            "campaign_power": {
                "value": power,
                "target": f">= {TARGET}",
                "met": complete and power >= TARGET,
            }
        },
    }
