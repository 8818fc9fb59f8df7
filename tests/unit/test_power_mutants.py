"""The power bench's source mutator and parameters (issue 18 §1)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gapless.benchmarks._mutants import mutants_of, sample
from gapless.benchmarks.power import _params, run_modules

ROOT = Path(__file__).resolve().parents[2]

SOURCE = '''"""Docstring 1 < 2 is never mutated."""
__all__ = ["f"]


def f(x: int = 3) -> bool:
    """Nor this one."""
    if x < 2 and not x == 0:
        raise ValueError(f"bad {x + 1}")
    y: list[int] = [x + 1]
    return y[0] >= 4
'''


def _module(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(SOURCE)
    return tmp_path


def test_every_mutant_changes_exactly_one_line_and_compiles(tmp_path: Path) -> None:
    root = _module(tmp_path)
    mutants = mutants_of(root, "m.py")
    kinds = sorted(m.kind for m in mutants)
    # x < 2, and, not, x == 0, x + 1 (in the list), 3, 2, 0, 1, 4, >= 4, return
    assert kinds == sorted(
        [
            "boolop And",
            "compare Lt",
            "compare Eq",
            "compare GtE",
            "drop not",
            "binop Add",
            "int constant",
            "int constant",
            "int constant",
            "int constant",
            "int constant",
            "int constant",
            "return None",
        ]
    )
    original = ast.unparse(ast.parse(SOURCE)).splitlines()
    for m in mutants:
        ast.parse(m.source)
        changed = [a for a, b in zip(original, m.source.splitlines(), strict=True) if a != b]
        assert len(changed) == 1, m.ident
        body = m.diff.splitlines()[3:]
        assert [line[0] for line in body] == ["-", "+"], m.diff


def test_docstrings_annotations_all_and_error_texts_are_not_mutated(tmp_path: Path) -> None:
    root = _module(tmp_path)
    for m in mutants_of(root, "m.py"):
        assert "Docstring 1 < 2" in m.source
        assert "Nor this one." in m.source
        assert "__all__ = ['f']" in m.source
        assert "list[int]" in m.source
        assert "x: int" in m.source
        assert "bad {x + 1}" in m.source


def test_sample_is_deterministic_and_bounded(tmp_path: Path) -> None:
    root = _module(tmp_path)
    a = sample(root, ["m.py"], 5, seed=7)
    b = sample(root, ["m.py"], 5, seed=7)
    assert [m.ident for m in a] == [m.ident for m in b]
    assert len(a) == 5
    assert len({m.ident for m in a}) == 5
    assert len(sample(root, ["m.py"], 100, seed=7)) == len(mutants_of(root, "m.py"))


def test_the_modules_are_the_ones_the_protocol_runs() -> None:
    mods = run_modules()
    assert "impl/gd/subend.py" in mods
    assert "impl/gd/pubend.py" in mods
    assert "impl/knowledge.py" in mods
    assert not {"impl/gd/variants.py", "impl/gd/rulemap.py", "impl/trace.py"} & set(mods)


@pytest.mark.parametrize(
    ("given", "wanted"),
    [
        ({"bogus": "1"}, "unknown parameter"),
        ({"mutants": "0"}, "integer >= 1"),
        ({"schedules": "ten"}, "integer >= 1"),
        ({"total_order": "-1"}, "integer >= 0"),
    ],
)
def test_bad_parameters_are_named(given: dict[str, str], wanted: str) -> None:
    with pytest.raises(ValueError, match=wanted):
        _params(given)


def test_the_total_order_campaign_is_off_unless_asked_for() -> None:
    assert _params({})["total_order"] == 0
    assert _params({"total_order": "50"})["total_order"] == 50


def test_a_staged_mutant_reaches_the_tests_and_the_spark_workers() -> None:
    """Non-vacuity of the bench: a mutant whose every GD step ends in an exception (``finish``,
    which every handler returns through, raises) is seen by the test subprocess and by the
    campaign's Spark workers (every schedule errors), so both report it killed."""
    from gapless.benchmarks._mutants import Mutant
    from gapless.benchmarks.power import _judge

    source = (ROOT / "impl/gd/step.py").read_text()
    source += "\n\ndef finish(*args, **kwargs):\n    raise RuntimeError('planted')\n"
    broken = Mutant(module="impl/gd/step.py", line=0, kind="test", index=0, source=source, diff="")
    params = {"master": "local[2]", "schedules": 2, "total_order": 0, "campaign_key": "k"}
    judged = _judge(broken, _judge(broken, {}, "tests", params), "campaign", params)
    assert judged["killed_by_tests"]
    assert judged["killed_by_campaign"]
    assert judged["campaign_key"] == "k"
    assert judged["campaign"]["errors"] >= 1  # fail-fast: it may stop after the first chunk
