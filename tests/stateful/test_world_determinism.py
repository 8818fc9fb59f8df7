"""Same input, same trace digest: in this process, and in subprocesses under different
``PYTHONHASHSEED`` values (issue 3 §4, DESIGN.md "Determinism and faults")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gapless.models.faults import FaultProfile
from gapless.models.runner import RunSpec, generate_schedule, run, spec_to_dict
from gapless.models.workload import WorkloadSpec

SPEC = RunSpec(
    topology="fig3",
    workload=WorkloadSpec(rate_per_pubend=10.0, filters="mixed"),
    faults=FaultProfile(swarm=True, max_duration_us=2_000_000),
    duration_us=8_000_000,
    drain_us=15_000_000,
)
SEED = 5

_CHILD = """
import json, sys
from gapless.models.runner import generate_schedule, run, spec_from_dict
from gapless.models.faults import to_json
spec = spec_from_dict(json.loads(sys.argv[1]))
schedule = generate_schedule(spec, int(sys.argv[2]))
out = run(spec, schedule, int(sys.argv[2]))
doc = {"digest": out.trace_digest, "verdict": out.verdict, "schedule": to_json(schedule)}
print(json.dumps(doc))
"""


def _child(hashseed: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(spec_to_dict(SPEC)), str(SEED)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def test_same_seed_same_digest_across_processes_and_hash_seeds() -> None:
    from gapless.models.faults import to_json

    schedule = generate_schedule(SPEC, SEED)
    assert schedule.events, "the swarm schedule of this seed has faults"
    here = run(SPEC, schedule, SEED)
    assert here.verdict in ("pass", "violation")
    assert len(here.trace_digest) == 64
    children = [_child(h) for h in ("0", "1", "4242")]
    for c in children:
        assert c["schedule"] == to_json(schedule)
        assert c["digest"] == here.trace_digest
        assert c["verdict"] == here.verdict


def test_other_seed_other_digest() -> None:
    a = run(SPEC, generate_schedule(SPEC, SEED), SEED)
    b = run(SPEC, generate_schedule(SPEC, SEED + 1), SEED + 1)
    assert a.trace_digest != b.trace_digest
