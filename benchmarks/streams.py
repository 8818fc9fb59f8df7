"""``gapless bench streams``: the tick streams' in-order path and their range independence.

Figures (one run, ~10-20 s on 2 cores):

* ``inorder_msgs_per_s`` -- 100,000 knowledge messages as [GD §3.1] encodes a data message
  (``F*Q*F*DF*Q*``), 40 ms = 40,000 ticks apart (one pubend at 25 msgs/s), accumulated in order
  into one :class:`KnowledgeStream`. Message ``k`` at tick ``t``: F over ``[0, t-1]`` (the
  acknowledged prefix, which covers the previous message's D, then the silence since it), one
  ``D(a)`` at ``t``, then silence: F over ``[t+1, t+20000]``, then the unknown future (Q). The
  stream applies it as ``accumulate(0, t-1, F)``, the automatic lowering ``finalize(0, t-1)``
  ("any S or D* tick is automatically lowered to F", [GD §2.1]), ``accumulate(t, t, D(a))``
  and ``accumulate(t+1, t+20000, F)``: four operations per message. The message values are
  built before the clock starts. Median of 3 repetitions.
* ``reference_msgs_per_s`` -- the same messages on the per-tick reference
  (``gapless.spec.reference_stream``). Its cost grows with every tick the F prefix covers, so
  it runs only the first ``reference_messages`` messages: its figure is its *best* case, and
  ``speedup_vs_reference`` understates the real gap.
* ``range_independence`` -- on a stream already holding 10,000 runs, the median time of a
  silence (S) accumulated at the tail over 10^9 ticks divided by the median time over 1 tick.
* ``middle_merge_us`` -- on the same stream (S runs separated by Q gaps, 40,000 ticks apart),
  a 10^6-tick silence in the middle that fills 25 gaps and merges 50 runs into one: median µs.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from gapless.benchmarks._targets import target
from gapless.impl.knowledge import D, F, Knowledge, Q, S, finalize
from gapless.impl.streams import KnowledgeStream
from gapless.spec.reference_stream import ReferenceStream

MESSAGES = 100_000
SPACING = 40_000  # ticks (µs) between two messages: 25 msgs/s
SILENCE = SPACING // 2  # the silence a data message declares after its D
REFERENCE_MESSAGES = 4
RUNS = 10_000
HUGE = 10**9
MIDDLE = 10**6


def _messages(n: int) -> list[tuple[int, Knowledge]]:
    return [(i * SPACING, D(f"m{i}")) for i in range(1, n + 1)]


def _inorder_impl(msgs: list[tuple[int, Knowledge]]) -> float:
    s = KnowledgeStream()
    t0 = time.perf_counter()
    for t, d in msgs:
        s = s.accumulate(0, t - 1, F).finalize(0, t - 1)
        s = s.accumulate(t, t, d).accumulate(t + 1, t + SILENCE, F)
    elapsed = time.perf_counter() - t0
    last = msgs[-1][0]
    assert s.final_prefix == last, "the acknowledged prefix must collapse"
    assert s.run_count == 2, "the in-order stream must stay two runs (D, then silence)"
    return elapsed


def _join(x: Knowledge, y: Knowledge) -> Knowledge:
    return x.join(y)


def _inorder_reference(msgs: list[tuple[int, Knowledge]]) -> float:
    r: ReferenceStream[Knowledge] = ReferenceStream(bottom=Q, final=F)
    t0 = time.perf_counter()
    for t, d in msgs:
        r = r.accumulate(0, t - 1, F, _join).lower(0, t - 1, finalize)
        r = r.accumulate(t, t, d, _join).accumulate(t + 1, t + SILENCE, F, _join)
    elapsed = time.perf_counter() - t0
    assert r.final_prefix() == msgs[-1][0]
    return elapsed


def _many_runs() -> KnowledgeStream:
    """S runs over the first half of every 40,000-tick slot, Q gaps in between, one D at the
    end: 10,000 runs."""
    s = KnowledgeStream()
    for i in range(RUNS // 2):
        s = s.accumulate(i * SPACING, i * SPACING + SPACING // 2 - 1, S)
    end = s.extent
    s = s.accumulate(end, end, D("last"))
    assert s.run_count == RUNS, s.run_count
    return s


def _median_us(fn: Callable[[], object], *, calls: int, samples: int) -> float:
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


SPEEDUP_KEYS = {
    "inorder_msgs_per_s": "higher",
    "tail_silence_1e9_ticks_us": "lower",
    "middle_merge_us": "lower",
}
"""Figures ``gapless bench streams --baseline PATH`` compares (and which way is better)."""


def run() -> dict[str, Any]:
    """Run the benchmark; return its figures and ``targets``."""
    gc.collect()
    msgs = _messages(MESSAGES)
    impl_times = [_inorder_impl(msgs) for _ in range(3)]
    impl_rate = MESSAGES / statistics.median(impl_times)

    ref_time = _inorder_reference(msgs[:REFERENCE_MESSAGES])
    ref_rate = REFERENCE_MESSAGES / ref_time

    base = _many_runs()
    tail = base.extent + 1
    # Interleave the two sizes so that machine noise hits both alike.
    one, huge = [], []
    for _ in range(7):
        one.append(_median_us(lambda: base.accumulate(tail, tail, S), calls=300, samples=3))
        huge.append(
            _median_us(lambda: base.accumulate(tail, tail + HUGE - 1, S), calls=300, samples=3)
        )
    one_us, huge_us = statistics.median(one), statistics.median(huge)
    independence = huge_us / one_us

    mid = (RUNS // 4) * SPACING + SPACING // 2  # the start of a Q gap in the middle
    merged = base.accumulate(mid, mid + MIDDLE - 1, S)
    merged_runs = base.run_count - merged.run_count
    middle_us = _median_us(lambda: base.accumulate(mid, mid + MIDDLE - 1, S), calls=50, samples=7)

    return {
        "messages": MESSAGES,
        "inorder_msgs_per_s": impl_rate,
        "inorder_us_per_msg": 1e6 / impl_rate,
        "reference_messages": REFERENCE_MESSAGES,
        "reference_msgs_per_s": ref_rate,
        "speedup_vs_reference": impl_rate / ref_rate,
        "stream_runs": base.run_count,
        "tail_silence_1_tick_us": one_us,
        "tail_silence_1e9_ticks_us": huge_us,
        "range_independence": independence,
        "middle_merge_runs_removed": merged_runs,
        "middle_merge_us": middle_us,
        "targets": {
            "inorder_msgs_per_s": target(impl_rate, 100_000, at_least=True),
            "range_independence": target(independence, 1.5, at_least=False),
        },
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2, sort_keys=True))
