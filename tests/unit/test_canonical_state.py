"""``canonical_state`` (issue 18): the verified types name what breaks their canonical form,
the world turns a step that breaks it into a ``malformed`` record, and the zoo variant
``newest-nacked-first`` is caught online and from a trace file while the correct protocol
passes the same run and the variant passes every other invariant. The hand-built violating
trace is in ``test_invariants_nonvacuity.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from _variant_runs import fig3_spec, run_and_write

from gapless.impl.curiosity import A, C
from gapless.impl.errors import ProtocolMisuse
from gapless.impl.fmap import FMap
from gapless.impl.gd.state import Stream
from gapless.impl.gd.variants import VARIANTS
from gapless.impl.knowledge import D, F, Q, S
from gapless.impl.ledger import CellLedger, CuriosityLedger
from gapless.impl.streams import CuriosityStream, KnowledgeStream
from gapless.invariants import INVARIANTS
from gapless.invariants.gd.forms import (
    cell_problem,
    ledger_problem,
    malformed,
    prefix_problem,
    run_stream_problem,
    stream_problem,
)
from gapless.invariants.tracefile import check_trace_file
from gapless.models.faults import FaultEvent, FaultSchedule
from gapless.models.gd_protocol import ENTRY as GD_ENTRY
from gapless.models.run import simulate
from gapless.spec.filters import reference_matcher

K = KnowledgeStream._make  # the raw constructor: builds any form, canonical or not


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (K(0, (0, 5, 10), (S, S, Q)), "adjacent runs from 0 and 5 both hold S"),
        (K(0, (0, 5), (F, Q)), "the run from 0 holds the final value F outside"),
        (K(0, (0, 5, 3), (S, D("x"), Q)), "run starts 5, 3 do not ascend"),
        (K(3, (0, 5), (S, Q)), "the run from 0 does not follow on from tick 2"),
        (K(0, (0, 5), (S, F)), "the tail from 5 holds F"),
        (K(0, (0, 5), (C, Q)), "value C at 0 is not a Knowledge value"),
        (K(-1, (0,), (Q,)), "prefix -1"),
        (K(0, (0, 5), (Q,)), "2 run starts for 1 values"),
    ],
)
def test_a_stream_names_what_breaks_its_form(value: KnowledgeStream, says: str) -> None:
    got = run_stream_problem(value)
    assert got is not None
    assert says in got, got
    assert got.startswith("KnowledgeStream")


def test_streams_built_by_their_operations_are_canonical() -> None:
    k = KnowledgeStream().accumulate(0, 9, S).accumulate(5, 5, D("x")).finalize(0, 2)
    c = CuriosityStream().accumulate(0, 99, A).accumulate(200, 209, C)
    assert run_stream_problem(k) is None
    assert run_stream_problem(c) is None
    assert run_stream_problem(CuriosityStream._make(0, (0, 4), (A, C))) is not None


@pytest.mark.parametrize(
    ("ledger", "says"),
    [
        (CellLedger(filtered=((3, 4), (5, 6))), "filtered ((3, 4), (5, 6)) is not a canonical"),
        (CellLedger(acked=4, filtered=((3, 6),)), "reaches the acked prefix 0..4"),
        (CellLedger(curious=FMap({"s1": ()})), "'s1' is listed with no C ticks"),
        (CellLedger(curious=FMap({"s1": ((7, 8), (1, 2))})), "is not a canonical tick set"),
        (CellLedger(acked=5, curious=FMap({"s1": ((5, 8),)})), "reaches the acked prefix"),
    ],
)
def test_a_cell_ledger_names_what_breaks_its_form(ledger: CellLedger, says: str) -> None:
    got = cell_problem(ledger)
    assert got is not None
    assert says in got, got
    wrapped = ledger_problem(CuriosityLedger(cells=(CellLedger(), ledger)))
    assert wrapped is not None
    assert wrapped.startswith("cell 1: ")


def test_upstream_curiosity_runs_ascend_and_do_not_overlap() -> None:
    led, _ = CuriosityLedger.fresh(1).nack(((3, 9),), 10)
    assert ledger_problem(led) is None
    bad = attrs.evolve(led, upstream=((3, 9, 10), (8, 12, 11)))
    assert "(8, 12) is empty, negative or not above" in (ledger_problem(bad) or "")


def _ib_states() -> tuple[Any, Any]:
    """An IB of Figure 3 after boot, and the same with its second stream out of form."""
    from gapless.impl import gd
    from gapless.impl.gd.config import GDConfig
    from gapless.impl.gd.state import evolve
    from gapless.impl.inputs import Restart

    states = gd.initial_states(gd.figure3(), GDConfig(), gd.PAPER_POLICY)
    ib, _ = gd.handle(states["b1"], Restart(), 0)
    streams = list(ib.streams)
    streams[1] = attrs.evolve(streams[1], nacked=((9, 9), (3, 4)))
    return ib, evolve(ib, streams=tuple(streams))


def test_malformed_names_the_pubend_and_looks_only_at_changed_streams() -> None:
    ib, bad = _ib_states()
    assert len(ib.streams) >= 2
    assert malformed(None, ib) is None
    got = malformed(ib, bad)
    assert got is not None
    assert got.startswith(f"stream of pubend {ib.ctx.pubends[1]!r}: nacked: ((9, 9), (3, 4))")
    # a stream that is the very object it was before the step is not looked at again
    assert malformed(bad, bad) is None
    assert isinstance(bad.streams[1], Stream)


# -- the zoo variant in a real run -------------------------------------------------------------

#: loss on both links into s1 and s3 for 0.6 s: each SHB nacks again while a nack is out
LOSS = FaultSchedule(
    seed=7,
    events=tuple(
        FaultEvent(
            kind="drop", at_us=200_000, duration_us=600_000, target=link, stream=i, probability=0.5
        )
        for i, link in enumerate(("b1|s1", "b2|s1", "b3|s3", "b4|s3"))
    ),
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    variants = ("none", "newest-nacked-first")
    return run_and_write(variants, LOSS, 2, (), tmp_path_factory.mktemp("forms"))


def test_the_variant_is_registered_and_judged_on_safety_alone_too() -> None:
    assert "canonical_state" in INVARIANTS
    assert "canonical_state" in GD_ENTRY.safety_invariants
    assert VARIANTS["newest-nacked-first"].caught_by == ("canonical_state",)
    assert GD_ENTRY.state_checked == ("canonical_state",)


def test_an_entry_cannot_state_check_an_invariant_it_does_not_have() -> None:
    with pytest.raises(ProtocolMisuse, match=r"state_checked names invariants \['no-such'\]"):
        attrs.evolve(GD_ENTRY, state_checked=("no-such",))


def test_the_variant_is_caught_online_and_offline(runs: dict[str, Any]) -> None:
    out, path = runs["newest-nacked-first"]
    assert out.verdict == "violation", out.explanation
    assert out.invariant == "canonical_state"
    assert "is not a canonical tick set" in out.explanation
    _tf, offline = check_trace_file(path, ("canonical_state",), matches=reference_matcher())
    assert offline is not None
    assert offline.invariant == "canonical_state"
    assert offline.message == out.violation.message


def test_the_correct_protocol_passes_the_same_run_and_writes_no_record(
    runs: dict[str, Any],
) -> None:
    out, path = runs["none"]
    assert out.verdict == "pass", out.explanation
    nacks = [r for r in out.trace if r.kind == "send" and r.detail.wire.kind == "nack"]
    assert len(nacks) > 5, "the schedule makes the SHBs nack (else the variant is idle)"
    assert not any(r.kind == "malformed" for r in out.trace)
    assert check_trace_file(path, (), matches=reference_matcher())[1] is None


def test_only_canonical_state_sees_the_variant_and_an_unjudged_rule_costs_no_check() -> None:
    others = tuple(n for n in INVARIANTS if n != "canonical_state")
    out = simulate(fig3_spec("newest-nacked-first", 2, others), LOSS, 1, record_trace=True)
    assert out.verdict == "pass", out.explanation
    assert not any(r.kind == "malformed" for r in (out.trace or ()))


def test_a_trace_file_keeps_the_text(runs: dict[str, Any]) -> None:
    _out, path = runs["newest-nacked-first"]
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    assert any('"malformed"' in line and "not a canonical tick set" in line for line in lines)


def test_upstream_curiosity_on_a_known_tick_is_named() -> None:
    led, _ = CuriosityLedger.fresh(1).nack(((3, 9),), 10)
    s = Stream(knowledge=KnowledgeStream(), ledger=led)
    assert stream_problem(s) is None
    known = attrs.evolve(s, knowledge=KnowledgeStream().accumulate(5, 5, S))
    got = stream_problem(known)
    assert got is not None
    assert "upstream C (3, 9) holds ticks ((5, 5),)" in got


def test_an_acknowledged_prefix_short_of_the_cells_a_is_named() -> None:
    """The second tie [GD §2.4, §3.1]: the acknowledged prefix reaches every tick A in all
    cells — acked in one, filtered in the other — and stops at the first that is not."""
    k = KnowledgeStream().accumulate(0, 9, S).acknowledge(3)
    assert k.fin == 3
    both = CuriosityLedger.fresh(2).with_cells(
        (CellLedger().ack(4), CellLedger().ack(3).filter(((4, 6),)))
    )
    got = stream_problem(Stream(knowledge=k, ledger=both))
    assert got is not None
    assert "ends at tick 3, yet tick 4 is A in every downstream cell" in got
    grown = k.acknowledge(4)
    assert prefix_problem(grown, both.release(4)) is None, "grown to 4: tick 5 is A in one only"
    one = both.with_cells((CellLedger().ack(3), both.cells[1]))
    assert prefix_problem(k, one) is None, "tick 4 is not A in the first cell"
    assert prefix_problem(k, CuriosityLedger()) is None, "no cells (an SHB): no tie"
    assert prefix_problem(k, CuriosityLedger.fresh(1).with_cells((CellLedger().ack(9),)))


def test_the_short_prefix_check_runs_only_for_a_changed_stream() -> None:
    k = KnowledgeStream().accumulate(0, 9, S).acknowledge(3)
    short = Stream(knowledge=k, ledger=CuriosityLedger.fresh(1).with_cells((CellLedger().ack(5),)))
    assert stream_problem(short) is not None
    assert stream_problem(short, short) is None, "nothing the step replaced"


def test_cell_f_or_c_at_or_below_the_final_prefix_is_named() -> None:
    """The same tie's other side [GD §2.1.1, §3.1]: where the istream is F, the ledger holds
    no per-cell F and no broker's C."""
    k = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 12, S)
    f_low = CuriosityLedger.fresh(1).with_cells((CellLedger().filter(((9, 11),)),))
    got = prefix_problem(k, f_low)
    assert got is not None
    assert "cell 0 keeps F (9, 11) at or below the acknowledged prefix 0..9" in got
    c_low = CellLedger(curious=FMap({"s2": ((12, 12),), "s1": ((7, 7),)}))
    got = prefix_problem(k, CuriosityLedger.fresh(2).with_cells((CellLedger(), c_low)))
    assert got is not None
    assert "cell 1 keeps C (7, 7) of 's1' at or below the acknowledged prefix 0..9" in got
    above = CellLedger(filtered=((11, 11),), curious=FMap({"s1": ((10, 12),)}))
    assert prefix_problem(k, CuriosityLedger.fresh(1).with_cells((above,))) is None
