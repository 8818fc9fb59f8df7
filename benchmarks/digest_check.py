"""Behaviour check for refactors of the GD roles: trace digests and verdicts, before and after.

``python benchmarks/digest_check.py --out FILE`` runs, in this process and in order:

* the first ``--seeds`` seeds (default 100) of every shipped campaign in ``campaigns/*.toml``,
  each through the campaign's own backend (``gapless.spark_fuzz.backend.load_backend``) on the
  configuration ``gapless.spark_fuzz.config.load_config`` reads from the file, with the
  simulated duration overridden only when ``--duration-s`` is given;
* the three GD paper scenarios (``gapless.models.gd_scenarios.SCENARIOS``) at their own settings;

and writes one JSON document: what was run (campaign files, seeds, durations) and, per run,
the verdict, the violated invariant and the trace digest. ``--compare FILE`` runs the same
selection as recorded in ``FILE`` and prints every run whose verdict or digest differs;
the exit code is 1 if any does. A refactor that must not change behaviour compares its
branch against a file written on the branch's own base.

``benchmarks/digests_before_rooms.json`` is such a file: 303 runs (100 seeds of each of the
three shipped campaigns at their own durations, and the three scenarios) recorded on the base
of the "one room per role" refactor (issue 10) before any change. It holds only for code whose
trace format is that base's: a later change of the digest format on purpose (coverage labels
leaving the trace, say) needs a new baseline written on its own base.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from gapless.models.gd_scenarios import SCENARIOS
from gapless.models.run import simulate
from gapless.spark_fuzz.backend import load_backend
from gapless.spark_fuzz.config import load_config

ROOT = Path(__file__).resolve().parent.parent


def campaign_runs(path: Path, seeds: int, duration_s: float | None) -> dict[str, Any]:
    """Verdict, invariant and trace digest of the first ``seeds`` seeds of one campaign."""
    overrides: dict[str, Any] = {}
    if duration_s is not None:
        overrides["duration_s"] = duration_s
    config = load_config(path, overrides)
    backend = load_backend(config.protocol, config.backend)
    spec = backend.make_spec(config)
    rows: dict[str, Any] = {}
    for seed in list(config.seeds())[:seeds]:
        schedule = backend.generate_schedule(spec, seed)
        outcome = backend.run(spec, schedule, seed)
        rows[str(seed)] = [outcome.verdict, outcome.invariant, outcome.trace_digest]
    return {
        "file": str(path.relative_to(ROOT)),
        "seeds": seeds,
        "duration_s": config.duration_s,
        "duration_override": duration_s,
        "runs": rows,
    }


def scenario_runs() -> dict[str, Any]:
    """Verdict, invariant and trace digest of each GD paper scenario."""
    out: dict[str, Any] = {}
    for name in sorted(SCENARIOS):
        sc = SCENARIOS[name]
        outcome = simulate(sc.spec, sc.schedule, 0)
        out[name] = [outcome.verdict, outcome.invariant or "", outcome.trace_digest]
    return out


def collect(seeds: int, duration_s: float | None, only: list[str] | None) -> dict[str, Any]:
    campaigns: dict[str, Any] = {}
    for path in sorted((ROOT / "campaigns").glob("*.toml")):
        if only and path.stem not in only:
            continue
        started = time.perf_counter()
        campaigns[path.stem] = campaign_runs(path, seeds, duration_s)
        campaigns[path.stem]["wall_s"] = round(time.perf_counter() - started, 1)
        print(f"{path.stem}: {seeds} seeds in {campaigns[path.stem]['wall_s']} s", file=sys.stderr)
    started = time.perf_counter()
    scenarios = scenario_runs()
    print(f"scenarios: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return {"campaigns": campaigns, "scenarios": scenarios}


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Every run whose (verdict, invariant, digest) differs, as readable lines."""
    diffs: list[str] = []
    for name, camp in old["campaigns"].items():
        got = new["campaigns"].get(name, {}).get("runs", {})
        for seed, row in camp["runs"].items():
            if got.get(seed) != row:
                diffs.append(f"{name} seed {seed}: {row} -> {got.get(seed)}")
    for name, row in old["scenarios"].items():
        if new["scenarios"].get(name) != row:
            diffs.append(f"scenario {name}: {row} -> {new['scenarios'].get(name)}")
    return diffs


def count(data: dict[str, Any]) -> int:
    return sum(len(c["runs"]) for c in data["campaigns"].values()) + len(data["scenarios"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=Path, help="write the digests of this checkout here")
    mode.add_argument("--compare", type=Path, help="recompute and compare with this file")
    ap.add_argument("--seeds", type=int, default=100, help="seeds per campaign (default 100)")
    ap.add_argument("--duration-s", type=float, default=None, help="override duration_s")
    ap.add_argument("--only", action="append", help="campaign file stem (repeatable)")
    args = ap.parse_args(argv)
    if args.out is not None:
        data = collect(args.seeds, args.duration_s, args.only)
        args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {count(data)} runs to {args.out}")
        return 0
    old = json.loads(args.compare.read_text(encoding="utf-8"))
    # re-run exactly what was recorded: same campaign files, seeds and duration overrides;
    # each part is compared as soon as it is done (a long check reports as it goes)
    new: dict[str, Any] = {"campaigns": {}, "scenarios": {}}
    diffs: list[str] = []
    for name, camp in sorted(old["campaigns"].items()):
        new["campaigns"][name] = campaign_runs(
            ROOT / camp["file"], camp["seeds"], camp["duration_override"]
        )
        part = compare({"campaigns": {name: camp}, "scenarios": {}}, new)
        print(f"{name}: {len(camp['runs'])} runs, {len(part)} differ", flush=True)
        diffs += part
    new["scenarios"] = scenario_runs()
    part = compare({"campaigns": {}, "scenarios": old["scenarios"]}, new)
    print(f"scenarios: {len(old['scenarios'])} runs, {len(part)} differ", flush=True)
    diffs += part
    for line in diffs:
        print(line)
    print(f"compared {count(old)} runs: {count(old) - len(diffs)} equal, {len(diffs)} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
