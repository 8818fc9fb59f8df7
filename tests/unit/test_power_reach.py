"""``benchmarks/power_reach.py``: a mutant run beside the original on the demo's calls (issue 18:
is a campaign miss observable at all?). The probe must see a mutant that changes values (or it
would call every miss unobservable) and must refuse functions it cannot run twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from gapless.benchmarks._mutants import Mutant
from gapless.benchmarks.power_reach import ReachError, probe_source, reach

ROOT = Path(__file__).resolve().parents[2]


def _by_hand(module: str, old: str, new: str) -> Mutant:
    """A one-change mutant written by hand (ids carry line numbers, which move)."""
    text = (ROOT / module).read_text()
    assert text.count(old) == 1, f"{module} no longer reads {old!r}: update the test"
    line = text[: text.index(old)].count("\n") + 1
    source = text.replace(old, new)
    return Mutant(module=module, line=line, kind="by hand", index=0, source=source, diff="")


#: The bottom-tail fast path of ``accumulate`` taken for every value not of the bottom's
#: kind: what the roles join into the tail is dropped.
_DROPS_THE_TAIL = (
    "impl/streams/runs.py",
    "if value is bottom or value.kind is bottom.kind:",
    "if value is bottom or value.kind is not bottom.kind:",
)


def test_a_mutant_that_changes_values_is_seen_on_one_demo_schedule() -> None:
    got = reach(_by_hand(*_DROPS_THE_TAIL), 1)
    assert got["verdicts"] == {"pass": 1}  # the run itself is the correct run
    assert got["calls"] > 0
    assert got["differ"] > 0
    first = got["first"][0]
    assert first["original"] != first["mutant"]


def test_a_role_handler_is_refused_by_name() -> None:
    text = (ROOT / "impl/gd/subend.py").read_text()
    mutant = Mutant(module="impl/gd/subend.py", line=1, kind="-", index=0, source=text, diff="")
    with pytest.raises(ReachError, match="not a value module"):
        probe_source(mutant, text)


def test_an_unknown_mutant_and_no_seeds_are_refused() -> None:
    with pytest.raises(ReachError, match="no such mutant"):
        reach("impl/streams/runs.py:1:nothing#0", 1)
    with pytest.raises(ReachError, match="seeds must be"):
        reach(_by_hand(*_DROPS_THE_TAIL), 0)


def test_a_cell_ledger_method_is_probed_beside_the_original() -> None:
    """The cell ledgers are frozen values (an edit returns a new one), so a mutant of one of
    their methods may run a second time on the same arguments (power8: ``ledger.py:183``)."""
    mutant = _by_hand(
        "impl/ledger.py",
        "if filtered is self.filtered and curious is self.curious:",
        "if filtered is not self.filtered and curious is self.curious:",
    )
    probe = probe_source(mutant, (ROOT / "impl/ledger.py").read_text())
    assert (
        "CellLedger.release = _reach_wrap(CellLedger.__dict__['release'], _reach_mutant)" in probe
    )
    compile(probe, "ledger.py", "exec")
