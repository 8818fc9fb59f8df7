"""What one published message costs on checked Figure 3, in events and records (issue 17).

``python -m gapless.benchmarks.fig3_events [--json]`` runs the checked Figure 3 run of
``gapless bench sim`` (60 simulated seconds, 4 pubends x 25 msgs/s, 20 subscribers per SHB,
every invariant online) once, with the world's input, record and effect handlers wrapped to
count what passes through them, and prints per published message:

* the inputs the roles handle (each is one simulator event, except the boot ``Restart`` and
  ``Connect`` inputs), by kind: ``Receive`` by message class, ``TimerFired`` by timer name;
* the trace records, by kind (each is digested and observed by the online checker);
* the effects other than ``Send``, by class (``Observe``: coverage labels, counted beside
  the trace);
* how many inputs left the role's state unchanged (the same object back), by kind.

The run is the bench's own, so its verdict and trace digest are the bench's; the wrapping
only counts (it is slower than the bench, so it reports no time). Use it to see which
events a change removes: ``iterations_per_message_fig3`` is per published message, so fewer
events per message is a speed-up.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

__all__ = ["count", "main"]

_S = 1_000_000


def _input_kind(inp: Any) -> str:
    name = type(inp).__name__
    if name == "Receive":
        return f"Receive:{type(inp.msg).__name__}"
    if name == "TimerFired":
        key = inp.key
        return f"TimerFired:{key[2] if isinstance(key, tuple) and len(key) > 2 else key}"
    return str(name)


def count() -> dict[str, Any]:
    """Run checked Figure 3 with counting wrappers; the counts per published message."""
    from gapless.models import world as world_mod
    from gapless.models.faults import FaultSchedule
    from gapless.models.run import Run
    from gapless.models.runner import RunSpec
    from gapless.models.workload import WorkloadSpec

    spec = RunSpec(
        topology="fig3",
        workload=WorkloadSpec(rate_per_pubend=25.0, size=100, subscribers_per_shb=20),
        duration_us=59 * _S,
        drain_us=1 * _S,
        online=True,
    )
    inputs: Counter[str] = Counter()
    unchanged: Counter[str] = Counter()
    records: Counter[str] = Counter()
    effects: Counter[str] = Counter()
    world_cls = world_mod.World
    original = (world_cls._input, world_cls._rec, world_cls._effect)

    def _input(self: Any, node: Any, inp: Any) -> None:
        kind = _input_kind(inp)
        inputs[kind] += 1
        before = node.state
        original[0](self, node, inp)
        if node.state is before:
            unchanged[kind] += 1

    def _rec(self: Any, node: str, kind: str, detail: Any) -> None:
        records[kind] += 1
        original[1](self, node, kind, detail)

    def _effect(self: Any, node: Any, eff: Any) -> None:
        effects[type(eff).__name__] += 1
        original[2](self, node, eff)

    world_cls._input, world_cls._rec, world_cls._effect = (  # type: ignore[method-assign]
        _input,
        _rec,
        _effect,
    )
    try:
        run = Run(spec, FaultSchedule(seed=1), 1)
        run.world.run(duration_us=spec.duration_us, drain_us=spec.drain_us)
        out = run.outcome()
    finally:
        world_cls._input, world_cls._rec, world_cls._effect = original  # type: ignore[method-assign]
    published = out.counters.published

    def per(c: Counter[str]) -> dict[str, float]:
        return {k: round(v / published, 3) for k, v in c.most_common()}

    return {
        "verdict": out.verdict,
        "trace_digest": out.trace_digest,
        "published": published,
        "events": out.events,
        "events_per_message": round(out.events / published, 3),
        "inputs_per_message": per(inputs),
        "records_per_message": per(records),
        "effects_per_message": per(effects),
        "unchanged_inputs_per_message": per(unchanged),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = ap.parse_args(argv)
    got = count()
    if args.json:
        print(json.dumps(got, indent=2))
        return
    print(
        f"checked Figure 3: {got['verdict']}, {got['published']} published, "
        f"{got['events']} events ({got['events_per_message']} per message)"
    )
    for title in ("inputs", "records", "effects", "unchanged_inputs"):
        table = got[f"{title}_per_message"]
        print(f"{title} per message: {round(sum(table.values()), 3)}")
        for kind, n in table.items():
            print(f"  {kind:32s} {n:8.3f}")


if __name__ == "__main__":
    main()
