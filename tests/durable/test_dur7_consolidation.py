"""Nack consolidation of catchup streams at the SHB [DUR §4 Figure 1, §5] (dur7).

The SHB's istream keeps the curiosity of its catchup streams (``PubendView.curious``): a tick
some stream nacked since the SHB's last timer is not nacked again by another, so streams in
step (subscribers with the same filter that reconnected at the same CT, as after an SHB crash
[DUR §5.3]) share one fetch per event. These tests show the fetches drop and the deliveries
stay the same, and that leaving a waiting stream unstepped (``shb_core._waiting``) changes no
trace at all.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from gapless.impl.curiosity import C, N
from gapless.impl.durable import shb_core
from gapless.impl.gd.messages import Knowledge, Nack
from gapless.impl.streams import CuriosityStream
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.run import simulate
from gapless.models.runspec import RunOutcome, RunSpec
from gapless.models.workload import WorkloadSpec

_S = 1_000_000
_SUBS = 8  # two subscribers per key (filters "k == i % 4"): pairs of streams in step


def _spec(**config: object) -> RunSpec:
    return RunSpec(
        protocol="durable",
        topology="dur-line",
        workload=WorkloadSpec(
            rate_per_pubend=40.0, subscribers_per_shb=_SUBS, filters="keys", keys=4
        ),
        duration_us=4 * _S,
        drain_us=3 * _S,
        config=(("catchup_window", 4), *sorted(config.items())),
    )


def _crash() -> FaultSchedule:
    """The SHB down 1 s; its subscribers away until 0.5 s after the restart, so all of them
    catch up the same backlog at once (Figure 7's setting, small)."""
    away = tuple(
        FaultEvent(
            kind="disconnect",
            target=f"shb1.u{k}",
            at_us=_S - 1,
            duration_us=3 * _S // 2 + 1,
            stream=1 + k,
        )
        for k in range(_SUBS)
    )
    crash = FaultEvent(kind="crash", target="shb1", at_us=_S, duration_us=_S, stream=0)
    return FaultSchedule(seed=0, events=(*away, crash))


def _traffic(outcome: RunOutcome) -> tuple[int, int, dict[tuple[str, str], list[int]]]:
    """Catchup nacks the SHB sent, data answers it was sent, and each subscriber's event
    deliveries per pubend, in order (the order [DUR §2] promises; the interleaving of pubends
    follows timing, which consolidation changes)."""
    nacks = answers = 0
    got: dict[tuple[str, str], list[int]] = {}
    for r in outcome.trace or ():
        if r.kind == "send":
            msg = r.detail.msg
            if r.node == "shb1" and type(msg) is Nack and msg.end - msg.start < 1_000:
                nacks += 1  # (the constream's window nacks are far wider: not counted)
            elif (
                r.detail.to == "shb1"
                and type(msg) is Knowledge
                and msg.retransmission
                and msg.data is not None
            ):
                answers += 1
        elif r.kind == "deliver" and r.detail.kind == "event":
            got.setdefault((r.detail.subscriber, r.detail.pubend), []).append(r.detail.tick)
    return nacks, answers, got


def test_streams_in_step_share_their_fetches_and_deliver_the_same() -> None:
    together = simulate(_spec(), _crash(), 1, record_trace=True)
    alone = simulate(_spec(consolidate=False), _crash(), 1, record_trace=True)
    assert together.verdict == alone.verdict == "pass", (together.explanation, alone.explanation)
    n1, a1, got1 = _traffic(together)
    n0, a0, got0 = _traffic(alone)
    assert n0 > 100  # the comparison is not vacuous: the streams did fetch
    # two streams per key in step: about half the nacks and half the answers
    assert n1 <= 0.6 * n0, (n1, n0)
    assert a1 < a0, (a1, a0)
    assert a0 - a1 >= 0.9 * (n0 - n1), (a1, a0, n1, n0)  # about one answer per nack saved
    # ... and every subscriber is delivered the same events in the same order
    assert got1 == got0
    assert len(got1) == 4 * _SUBS
    assert all(got1.values())


def test_leaving_waiting_streams_unstepped_changes_no_trace(monkeypatch: Any) -> None:
    skipped = Counter[bool]()
    real = shb_core._waiting

    def counting(*args: Any) -> bool:
        w = real(*args)
        skipped[w] += 1
        return w

    monkeypatch.setattr(shb_core, "_waiting", counting)
    lazy = simulate(_spec(consolidate=False), _crash(), 1)
    assert lazy.verdict == "pass", lazy.explanation
    assert skipped[True] > 100  # not vacuous: streams were left waiting
    monkeypatch.setattr(shb_core, "_waiting", lambda *a: False)
    eager = simulate(_spec(consolidate=False), _crash(), 1)
    assert eager.trace_digest == lazy.trace_digest


def test_not_curious_is_the_n_ticks_of_the_range() -> None:
    cur = CuriosityStream().accumulate(3, 4, C).accumulate(10, 600, C).accumulate(700, 700, C)
    for a, b in ((0, 9), (2, 12), (5, 5), (4, 4), (0, 2000), (650, 800), (601, 699)):
        want = [t for t in range(a, b + 1) if cur.value_at(t) is N]
        got = [t for x, y in shb_core._not_curious(cur, a, b) for t in range(x, y + 1)]
        assert got == want, (a, b)
        ranges = shb_core._not_curious(cur, a, b)
        assert all(y + 1 < x2 for (_x, y), (x2, _y) in itertools.pairwise(ranges))
