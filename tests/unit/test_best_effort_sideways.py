"""One sideways hop [GD §3.1] (issue 18 finding): knowledge a broker got sideways from a cell
neighbour goes down its own link into the cell it is for, or nowhere — never sideways again.

Before the fix, two brokers of a cell that had both lost the same downstream cell passed each
message back and forth until a link healed: in the best-effort roles [GD §4.1] forever (demo
seeds 201 and 245 with link faults: 113,845 and 335,035 sends), in the GD roles once per
message (the istream drops the returned copy). The shrunk schedule below is one fault: SHB s3
cut off from both b3 and b4 (cell IB2) for 300 ms from the start, one message per pubend.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from gapless.impl.effects import Send
from gapless.impl.gd import GDConfig, figure3, handle, initial_states
from gapless.impl.gd.messages import Data, Knowledge
from gapless.impl.gd.variants import VARIANTS
from gapless.impl.inputs import LinkChanged, Receive, Restart
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.runner import RunOutcome, run
from gapless.models.runspec import RunSpec
from gapless.models.topology import links, topology
from gapless.models.workload import WorkloadSpec

#: what best effort promises (the demo's best-effort share) and the rule under test
BEST_EFFORT_INVARIANTS = (
    "safety",
    "total_order",
    "minimal_traffic",
    "down_link_routing",
    "own_timers",
    "refused_input",
    "quiet_delivery",
    "sideways_one_hop",
)
#: s3 cut off from b3 and b4 (both its links), 0-300 ms: the shrunk demo schedule
S3_CUT_OFF = FaultSchedule(
    seed=0,
    events=(FaultEvent(kind="partition", at_us=0, duration_us=300_000, target="s3", stream=1),),
)


def _spec(*, best_effort: bool, variant: str = "none", messages: int | None = 1) -> RunSpec:
    return RunSpec(
        variant=variant,
        topology="fig3",
        workload=WorkloadSpec(rate_per_pubend=25.0, max_messages=messages),
        duration_us=1_000_000,
        drain_us=1_000_000 if best_effort else 12_000_000,  # GD: past AET, for liveness
        invariants=BEST_EFFORT_INVARIANTS if best_effort else (),
        config=(("best_effort", True),) if best_effort else (),
    )


def _sends(out: RunOutcome) -> Counter[tuple[str, str]]:
    assert out.trace is not None
    return Counter((r.node, r.detail.to) for r in out.trace if r.kind == "send")


def _sideways_data(out: RunOutcome) -> Counter[tuple[str, int]]:
    """How often each (pubend, tick) crossed between b3 and b4 (cell IB2), either way."""
    assert out.trace is not None
    return Counter(
        (r.detail.wire.pubend, t)
        for r in out.trace
        if r.kind == "send" and {r.node, r.detail.to} == {"b3", "b4"}
        for t in r.detail.wire.data_ticks
    )


# -- the shrunk schedule, replayed -----------------------------------------------------------


def test_best_effort_sends_a_message_sideways_once_on_the_shrunk_schedule() -> None:
    out = run(_spec(best_effort=True), S3_CUT_OFF, 0, record_trace=True)
    assert out.verdict == "pass", out.explanation
    # 4 messages (one per pubend, the pubend hash alternating b3 and b4): each crosses IB2
    # sideways once and stops; s3 misses them (best effort), the other four SHBs get them
    assert sorted(_sideways_data(out).values()) == [1, 1, 1, 1]
    assert sum(_sends(out).values()) == 28
    assert (out.counters.published, out.counters.delivered) == (4, 16)


def test_the_planted_bug_loops_in_best_effort_and_is_caught() -> None:
    spec = _spec(best_effort=True, variant="sideways-again")
    blind = attrs.evolve(spec, invariants=BEST_EFFORT_INVARIANTS[:-1])
    loop = run(blind, S3_CUT_OFF, 0, record_trace=True)
    assert loop.verdict == "pass"  # no other invariant sees it ...
    assert min(_sideways_data(loop).values()) > 200  # ... back and forth for 300 ms
    assert sum(_sends(loop).values()) > 1_000
    caught = run(spec, S3_CUT_OFF, 0)
    assert (caught.verdict, caught.invariant) == ("violation", "sideways_one_hop")
    gd = run(_spec(best_effort=False, variant="sideways-again"), S3_CUT_OFF, 0)
    assert (gd.verdict, gd.invariant) == ("violation", "sideways_one_hop")
    assert gd.violation is not None
    text = gd.violation.explain()
    assert "b4 sent data tick 256 of P0" in text
    assert "sideways to its cell neighbour b3, but it came to b4 only sideways, from b3" in text
    assert VARIANTS["sideways-again"].caught_by == ("sideways_one_hop",)


def test_gd_on_the_shrunk_schedule_passes_every_invariant() -> None:
    out = run(_spec(best_effort=False), S3_CUT_OFF, 0, record_trace=True)
    assert out.verdict == "pass", out.explanation
    assert sorted(_sideways_data(out).values()) == [1, 1, 1, 1]
    assert out.counters.delivered == 20  # s3's four repaired after the partition heals


# -- the role ----------------------------------------------------------------------------


def _b3_without_s3(best_effort: bool, policy: Any = None) -> Any:
    states = initial_states(figure3(), GDConfig(best_effort=best_effort), policy)
    b3 = handle(states["b3"], Restart(), 0)[0]
    return b3, handle(b3, LinkChanged(neighbour="s3", up=False), 5)[0]


def _sideways(for_cell: str = "s3") -> Receive:
    d = Data(pubend="P0", tick=100, attributes={"n": 1}, size=100, published_at=90)
    return Receive(sender="b4", msg=Knowledge(pubend="P0", prefix=99, data=d, for_cell=for_cell))


def test_a_best_effort_ib_drops_what_came_sideways_for_a_cell_it_lost() -> None:
    b3, lost = _b3_without_s3(best_effort=True)
    assert handle(lost, _sideways(), 10) == (lost, ())
    # with its link up, it sends the message down that link, not sideways
    _, effects = handle(b3, _sideways(), 10)
    assert [(e.to, e.msg.for_cell) for e in effects if isinstance(e, Send)] == [("s3", None)]


def test_a_gd_ib_keeps_what_came_sideways_but_does_not_return_it() -> None:
    _, lost = _b3_without_s3(best_effort=False)
    st, effects = handle(lost, _sideways(), 10)
    assert st is not lost  # the tick is in its istream (it may answer a nack later)
    assert not [e for e in effects if isinstance(e, Send)]


def test_the_planted_policy_returns_it_to_the_neighbour() -> None:
    policy = VARIANTS["sideways-again"].policy
    for best_effort in (True, False):
        _, lost = _b3_without_s3(best_effort, policy)
        _, effects = handle(lost, _sideways(), 10)
        sent = [(e.to, e.msg.for_cell) for e in effects if isinstance(e, Send)]
        assert sent == [("b4", "s3")]


# -- property: random link and broker faults -------------------------------------------------

_LINKS = tuple(links(topology("fig3")))
_NODES = ("b1", "b2", "b3", "b4", "s1", "s2", "s3", "s4", "s5")
_SHB_CELLS = ("s1", "s2", "s3", "s4", "s5")
#: per message, at most one send over each edge of Figure 3's cell tree (p1 -> IB1, IB2; each
#: IB -> its SHBs: 7) plus one sideways hop towards each SHB cell (5)
_PER_MESSAGE = 7 + len(_SHB_CELLS)


def _fault(kind: str, target: str, at: int, dur: int, k: int) -> FaultEvent:
    return FaultEvent(kind=kind, at_us=at, duration_us=dur, target=target, stream=k)


_faults = st.lists(
    st.one_of(
        st.builds(
            lambda t, at, d: ("link_fail", t, at, d),
            st.sampled_from(_LINKS),
            st.integers(0, 800_000),
            st.integers(1_000, 600_000),
        ),
        st.builds(
            lambda t, at, d: ("partition", t, at, d),
            st.sampled_from(_SHB_CELLS),
            st.integers(0, 800_000),
            st.integers(1_000, 600_000),
        ),
        st.builds(
            lambda t, at, d: ("crash", t, at, d),
            st.sampled_from(_NODES),
            st.integers(0, 800_000),
            st.integers(1_000, 600_000),
        ),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None)
@given(_faults)
def test_best_effort_sends_each_message_over_each_edge_and_hop_at_most_once(
    faults: list[tuple[str, str, int, int]],
) -> None:
    events = tuple(
        sorted(
            (_fault(kind, t, at, d, k) for k, (kind, t, at, d) in enumerate(faults)),
            key=lambda e: (e.at_us, e.kind, e.target),
        )
    )
    spec = attrs.evolve(_spec(best_effort=True, messages=5), drain_us=700_000)
    out = run(spec, FaultSchedule(seed=0, events=events), 0, record_trace=True)
    assert out.verdict == "pass", out.explanation
    assert sum(_sends(out).values()) <= _PER_MESSAGE * out.counters.published
