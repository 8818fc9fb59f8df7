"""The durable scenarios' figures folded online (``DurableFold``, ``Scenario.fold``) [DUR §5]:
``run_scenario`` without the trace gives the same figures, the same plot data and the same
digest as reading the whole recorded trace, while holding only the few records a plot reads
(dur7: the 240 s ``dur-shb-crash`` held its whole trace, 6.2 GB and growing)."""

from __future__ import annotations

from typing import Any

import pytest
from _dur_harness import small_shb_crash

from gapless.models import runner
from gapless.models.durable_scenarios import (
    DurableFold,
    durable_figures,
    report_series,
    run_marks,
)

_S = 1_000_000


def test_folded_figures_equal_the_figures_of_the_whole_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sc = small_shb_crash()
    assert sc.fold is DurableFold
    monkeypatch.setattr(runner, "scenario", lambda _name: sc)
    _sc, whole, m_whole = runner.run_scenario(sc.name, keep_trace=True)
    _sc, folded, m_folded = runner.run_scenario(sc.name, keep_trace=False)
    assert whole.trace is not None
    assert folded.trace is not None
    assert m_folded == m_whole
    assert m_whole["pass"], m_whole["pass_marks"]
    # the fold computed them online: the same as reading the recorded trace afterwards
    offline = durable_figures(sc, whole, ())
    assert {k: v for k, v in m_whole.items() if k not in ("pass", "pass_marks")} == offline
    assert offline["events_delivered"] > 0
    # the same run (digest), the same plot data, from a small part of the trace
    assert folded.trace_digest == whole.trace_digest
    assert report_series(folded.trace) == report_series(whole.trace)
    assert run_marks(folded.trace) == run_marks(whole.trace)
    assert len(folded.trace) < len(whole.trace) / 10


def _with(trace: tuple[Any, ...], i: int, *, twice: bool) -> tuple[Any, ...]:
    return (*trace[: i + 1], *trace[i:]) if twice else trace[:i] + trace[i + 1 :]


def test_the_fold_counts_a_duplicate_and_a_loss() -> None:
    """Non-vacuity of the fold's ``duplicates`` and ``lost``: one event message delivered
    twice, or dropped, in an otherwise clean trace."""
    sc = small_shb_crash()
    outcome = runner.simulate(sc.spec, sc.schedule, 0, record_trace=True)
    trace = outcome.trace or ()
    first = next(i for i, r in enumerate(trace) if r.kind == "deliver" and r.detail.kind == "event")
    for twice, key in ((True, "duplicates"), (False, "lost")):
        fold = DurableFold()
        for r in _with(trace, first, twice=twice):
            fold.add(r)
        f = fold.figures(sc, outcome, ())
        assert f[key] == 1, (key, f)
        assert f["duplicates" if key == "lost" else "lost"] == 0
