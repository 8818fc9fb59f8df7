"""The harness the GES tier, replica and system-link tests share: a whole run that must pass,
one invariant judging a (possibly mutated) trace, and a run's trace written to a file and
judged offline beside its online verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
from _runs import run, spec

from gapless.impl.effects import Send
from gapless.impl.ges.messages import Routed
from gapless.impl.inputs import Receive
from gapless.impl.trace import TraceRecord
from gapless.invariants.ges import GESChecker
from gapless.invariants.ges_tracefile import trace_check, write_ges_trace
from gapless.invariants.violation import Violation
from gapless.models.ges_protocol import check_context
from gapless.models.run import build, run_context
from gapless.models.runspec import RunOutcome
from gapless.spec.filters import reference_matcher

Trace = tuple[TraceRecord, ...]


def at(dest: str, body: object) -> Receive:
    """``body`` arriving at node ``dest`` (the last hop of its route)."""
    return Receive(sender="x", msg=Routed(dest=dest, visited=frozenset(), body=body))


def bodies(effects: tuple[object, ...], kind: type) -> list[Any]:
    """The routed bodies of type ``kind`` among ``effects``' sends."""
    return [
        e.msg.body
        for e in effects
        if type(e) is Send and type(e.msg) is Routed and type(e.msg.body) is kind
    ]


def passing_trace(events: tuple[Any, ...], **kw: Any) -> Trace:
    """The recorded trace of a run of the correct protocol, which must pass."""
    out = run("none", events, record=True, **kw)
    assert out.verdict == "pass", out.explanation
    assert out.trace is not None
    return out.trace


def reseq(records: Trace | list[TraceRecord]) -> Trace:
    """``records`` renumbered in order (after one was removed or added)."""
    return tuple(attrs.evolve(r, seq=k) for k, r in enumerate(records))


def judge(trace: Trace, name: str, **kw: Any) -> str | None:
    """The message of invariant ``name``'s violation on ``trace`` (a run of ``spec(**kw)``,
    judged to the end), or None."""
    checker = GESChecker(run_context(spec(**kw), 1), (name,))
    for r in trace:
        if checker.observe(r):
            break
    end = TraceRecord(seq=len(trace), time=trace[-1].time, node="-", kind="fault", detail="end")
    v = checker.finish(end)
    return None if v is None else v.message


def file_verdict(
    tmp_path: Path, variant: str, events: tuple[Any, ...], carried: type, **kw: Any
) -> tuple[RunOutcome, Violation | None]:
    """Run ``variant``, write its trace to a file, and judge the file offline: the online
    outcome and the offline violation. The file must carry a completed-write value of type
    ``carried`` (what the test is about travels in it)."""
    out = run(variant, events, record=True, **kw)
    _entry, graph, wl, binding = build(spec(variant, **kw), 1)
    ctx = check_context(graph, wl, binding, reference_matcher())
    f = tmp_path / "trace.jsonl"
    write_ges_trace(f, ctx, out.trace or (), live_end=True, meta={"variant": variant})
    tf, violation = trace_check(f, matches=reference_matcher())
    assert any(r.kind == "persist" and type(r.detail.value) is carried for r in tf.records)
    return out, violation


def same_verdict(
    out: RunOutcome, violation: Violation | None, variant: str, invariant: str
) -> Violation | None:
    """The offline verdict is the online one: none for the correct protocol, ``invariant``'s
    (the same message) for a planted bug. Returns the violation."""
    if variant == "none":
        assert out.verdict == "pass"
        assert violation is None
        return None
    assert out.verdict == "violation"
    assert violation is not None
    assert violation.invariant == out.invariant == invariant
    assert violation.message in (out.explanation or "")
    return violation
