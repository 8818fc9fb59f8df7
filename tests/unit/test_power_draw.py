"""The power bench's keyed draw (issue 18, power8): a sample that stays put when coverage or
code changes elsewhere, the same in every process."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gapless.benchmarks._mutants import Mutant, point_keys, sample
from gapless.benchmarks.power import _params


def _function(i: int) -> str:
    return (
        f"def f{i}(x: int, y: int) -> int:\n"
        f"    if x < {i} and y >= 2 * x:\n"
        f"        return x + y - {i}\n"
        f"    while x <= y or not x == {i + 1}:\n"
        f"        x += 1\n"
        f"    return x * y if x != y else {i}\n"
    )


#: twenty functions with the same shape and different constants: about 300 mutation points
SOURCE = "\n\n".join(_function(i) for i in range(20))


def _write(tmp_path: Path, source: str) -> Path:
    (tmp_path / "m.py").write_text(source)
    return tmp_path


def _lines_of(source: str, functions: range) -> frozenset[int]:
    """The lines of functions ``functions`` (their def lines and bodies), as coverage gives."""
    out: set[int] = set()
    current = None
    for n, line in enumerate(source.splitlines(), start=1):
        if line.startswith("def f"):
            current = int(line[5 : line.index("(")])
        if current in functions and line.strip():
            out.add(n)
    return frozenset(out)


def _body(m: Mutant) -> tuple[str, ...]:
    """A mutant's change without its line numbers (they move when code is edited)."""
    return tuple(x for x in m.diff.splitlines()[2:] if x[:1] in "+-")


def test_every_point_has_a_distinct_key_naming_its_function() -> None:
    keys = point_keys(ast.parse(SOURCE), "m.py")
    assert len(keys) == len(set(keys)) > 250
    assert any(
        k.startswith("m.py | f7 | compare Lt@0 | x < 7 | If x < 7 and y >= 2 * x") for k in keys
    )
    # two points alike in one function are told apart by their occurrence
    one = point_keys(ast.parse("def h(a):\n    a += 1\n    a += 1\n"), "m.py")
    assert [k[-2:] for k in one if "binop" in k] == ["#0", "#1"]


def test_more_coverage_keeps_the_sample_and_adds_only_new_points(tmp_path: Path) -> None:
    """Coverage grows from functions 0-15 to 0-17 (an eighth more run points): every point
    the old sample holds that the new draw drops was pushed out by a newly run point with a
    smaller key hash, so the shared part is everything but those; the shuffle of earlier runs
    redraws most of it."""
    root = _write(tmp_path, SOURCE)
    before = {"m.py": _lines_of(SOURCE, range(16))}
    after = {"m.py": _lines_of(SOURCE, range(18))}
    a = {m.ident for m in sample(root, ["m.py"], 30, seed=1, ran=before)}
    b = sample(root, ["m.py"], 30, seed=1, ran=after)
    new_points = [m for m in b if int(m.ident.split(":")[1]) not in before["m.py"]]
    kept = a & {m.ident for m in b}
    assert len(kept) == 30 - len(new_points)
    assert len(kept) >= 22  # an eighth of the run points are new: most stay
    shuffled_a = {m.ident for m in sample(root, ["m.py"], 30, seed=1, ran=before, draw="shuffle")}
    shuffled_b = {m.ident for m in sample(root, ["m.py"], 30, seed=1, ran=after, draw="shuffle")}
    assert len(shuffled_a & shuffled_b) < len(kept)


def test_an_edit_elsewhere_in_the_module_moves_no_point(tmp_path: Path) -> None:
    """A new function at the top shifts every line and point index below it; the keyed sample
    names the same changes (by their text), only at new lines."""
    root = _write(tmp_path, SOURCE)
    a = sample(root, ["m.py"], 25, seed=3)
    edited = "def g(z: int) -> int:\n    return z\n\n\n" + SOURCE
    (tmp_path / "edited").mkdir()
    other = _write(tmp_path / "edited", edited)
    b = sample(other, ["m.py"], 25, seed=3)
    assert sum(_body(m) in {_body(x) for x in a} for m in b) >= 24
    assert [m.ident for m in a] != [m.ident for m in b]  # the ids moved with the lines


def test_the_same_seed_draws_the_same_sample_in_every_process(tmp_path: Path) -> None:
    root = _write(tmp_path, SOURCE)
    code = (
        "import json, sys; from pathlib import Path;"
        "from gapless.benchmarks._mutants import sample;"
        "print(json.dumps([m.ident for m in sample(Path(sys.argv[1]), ['m.py'], 20, seed=5)]))"
    )
    drawn = []
    for hashseed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        out = subprocess.run(
            [sys.executable, "-c", code, str(root)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        drawn.append(json.loads(out.stdout))
    here = [m.ident for m in sample(root, ["m.py"], 20, seed=5)]
    assert drawn == [here, here, here]
    assert here != [m.ident for m in sample(root, ["m.py"], 20, seed=6)]


def test_the_draw_parameter_is_checked() -> None:
    assert _params({})["draw"] == "keyed"
    assert _params({"draw": "shuffle"})["draw"] == "shuffle"
    with pytest.raises(ValueError, match="draw='random' is not allowed"):
        _params({"draw": "random"})
    with pytest.raises(ValueError, match="allowed: keyed, shuffle"):
        sample(Path("."), [], 1, seed=1, draw="random")
