"""The power bench's list of mutants argued equivalent in the protocol's use
(``benchmarks/power_equivalent.md``): every entry is a real mutation point of today's code,
with the change its reason describes, and the figure beside the headline leaves out exactly
the listed ones."""

from __future__ import annotations

from pathlib import Path

from gapless.benchmarks import power

#: the change each entry's reason quotes, as it appears in the mutant's diff
_QUOTED = {
    "impl/streams/runs.py:213:boolop Or#121": "if not (y is last and (",
    "impl/streams/runs.py:223:compare Is#198": "x.kind is not last.kind",
    "impl/streams/typed.py:287:binop Add#193": "after = v[i - 1]",
}


def test_every_entry_is_a_mutation_point_of_todays_code_with_the_quoted_change() -> None:
    listed = power.equivalent_in_use()
    assert sorted(listed) == sorted(_QUOTED)
    found = power.named_mutants(power.ROOT, power.run_modules(), ",".join(listed))
    assert len(found) == len(listed)
    for m in found:
        plus = [line for line in m.diff.splitlines() if line.startswith("+ ")]
        assert any(_QUOTED[f"{m.module}:{m.line}:{m.kind}#{m.index}"] in p for p in plus), m.diff


def test_the_figure_beside_the_headline_leaves_out_only_the_listed(tmp_path: Path) -> None:
    judged = [
        {"mutant": "a", "killed_by_tests": True, "killed_by_campaign": True},
        {"mutant": "b", "killed_by_tests": True, "killed_by_campaign": False},
        {"mutant": "c", "killed_by_tests": True, "killed_by_campaign": False},
        {"mutant": "d", "killed_by_tests": False, "killed_by_campaign": False},
    ]
    doc = tmp_path / "eq.md"
    doc.write_text("# x\n\n- `b`: equal values are one object\n- `d`: not killed anyway\n")
    listed = power.equivalent_in_use(doc)
    assert listed == {"b": "equal values are one object", "d": "not killed anyway"}
    got = power._without_equivalent(judged, listed)
    assert got["campaign_power_without_equivalent_in_use"] == 0.5  # a of a, c
    assert got["equivalent_in_use"] == [
        {"mutant": "b", "killed_by_campaign": False, "reason": "equal values are one object"}
    ]
    assert power.equivalent_in_use(tmp_path / "missing.md") == {}
