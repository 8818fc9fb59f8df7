"""The release protocol's Z3 rows [DUR §3]: every step proved to preserve INV, every twin
refuted with a genuine witness, no step vacuous, and the rows listed by ``gapless prove``."""

from __future__ import annotations

import itertools
import json
import time

import pytest
import z3
from click.testing import CliRunner

from gapless.cli.prove_cmd import prove
from gapless.impl.durable.release import l_bound
from gapless.spec import durable_proofs as dp
from gapless.spec import proofs as pf

pytestmark = pytest.mark.proofs

STEPS = [name for name, *_ in dp._STEPS]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, pf.Outcome]:
    return {o.name: o.check() for o in pf.obligations() if o.kind in ("inductive", "twin")}


def test_rows_are_listed_with_their_kinds() -> None:
    rows = {o.name: o for o in pf.obligations() if o.kind in ("inductive", "twin")}
    assert set(rows) == {r.name for r in dp.ROWS}
    assert all(n.startswith("release_") for n in rows)
    assert {n for n, o in rows.items() if o.kind == "inductive"} == {
        "release_initial",
        *(f"release_{s}" for s in STEPS),
    }
    assert {n for n, o in rows.items() if o.kind == "twin"} == {f"release_{s}_twin" for s in STEPS}
    # the steps are all there
    for step in ("ack", "deliver", "propagate", "l_step", "join", "leave", "crash"):
        assert step in STEPS


def test_every_step_proved_every_twin_refuted(outcomes: dict[str, pf.Outcome]) -> None:
    for name, o in outcomes.items():
        if o.kind == "inductive":
            assert (o.status, o.witness) == ("proved", None), name
        else:
            assert o.status == "refuted", name
            assert o.witness, name


def _values(witness: str) -> dict[str, int | bool]:
    out: dict[str, int | bool] = {}
    for part in witness.split(", "):
        k, v = part.split(" = ")
        out[k] = {"True": True, "False": False}[v] if v in ("True", "False") else int(v)
    return out


def _subst(expr: z3.ExprRef, values: dict[str, int | bool]) -> z3.ExprRef:
    st = dp.state()
    pairs = []
    for k, var in st.items():
        v = values[k]
        pairs.append((var, z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v)))
    for k, var in zip("vcxy", (dp._V, dp._C, dp._X, dp._Y), strict=True):
        pairs.append((var, z3.IntVal(values[k])))
    return z3.simplify(z3.substitute(expr, *pairs))


def test_twin_witnesses_are_genuine(outcomes: dict[str, pf.Outcome]) -> None:
    """Each witness is a state satisfying INV from which the twin step breaks INV (for some
    choice of SHB and subscriber), while the paper's step keeps INV from the same state."""
    for name, step, *_ in dp._STEPS:
        w = outcomes[f"release_{name}_twin"].witness
        assert w is not None
        values = _values(w)
        st = dp.state()
        assert z3.is_true(_subst(dp.invariant(st), values)), name
        broke = False
        for i, s in itertools.product(dp.SHBS, dp.SUBS):
            g, succ = step(st, i, s, True)
            if z3.is_true(_subst(g, values)) and z3.is_false(_subst(dp.invariant(succ), values)):
                broke = True
            g0, succ0 = step(st, i, s, False)
            if z3.is_true(_subst(g0, values)):
                assert z3.is_true(_subst(dp.invariant(succ0), values)), (name, i, s)
        assert broke, name


def test_no_step_is_vacuous() -> None:
    """For every step and every (SHB, subscriber), some state satisfies INV and the guard, and
    the step changes it: a proof over an unreachable guard would prove nothing."""
    st = dp.state()
    for name, step, *_ in dp._STEPS:
        for i, s in itertools.product(dp.SHBS, dp.SUBS):
            g, succ = step(st, i, s, False)
            changed = z3.Or([succ[k] != st[k] for k in st])
            solver = z3.Solver()
            solver.add(dp.invariant(st), g, changed)
            assert solver.check() == z3.sat, (name, i, s)


def test_l_step_guard_is_the_cores_l_bound() -> None:
    """The proved L rule is the one the core runs: ``t`` passes the Z3 guard iff
    ``t <= l_bound(Tr, Td, T, maxRetain)``."""
    st = dp.state()
    guard, _ = dp._l_step(st, 0, 0, False)
    for tr, td, clock, mr, early in itertools.product(
        (-1, 2), (2, 6), (5, 12), (0, 3), (False, True)
    ):
        values = {k: -1 for k in st if st[k].sort() == z3.IntSort()}
        values |= {k: False for k in st if st[k].sort() == z3.BoolSort()}
        values |= {"Tr": tr, "Td": td, "T": clock, "mr": mr, "early": early}
        bound = l_bound(tr, td, clock, mr if early else None)
        for t in range(-1, 14):
            vals = values | {"v": t, "c": 0, "x": 0, "y": 0}
            assert z3.is_true(_subst(guard, vals)) == (t <= bound), (tr, td, clock, mr, t)


def test_prove_json_lists_the_rows_and_exits_zero() -> None:
    start = time.perf_counter()
    got = CliRunner().invoke(prove, ["--json"])
    assert got.exit_code == 0, got.output
    rows = {r["obligation"]: r for r in json.loads(got.output)}
    assert rows["release_l_step"]["kind"] == "inductive"
    assert rows["release_l_step"]["status"] == "proved"
    assert rows["release_l_step_twin"]["kind"] == "twin"
    assert rows["release_l_step_twin"]["status"] == "refuted"
    assert rows["release_l_step_twin"]["witness"]
    assert time.perf_counter() - start < 20.0


@pytest.mark.parametrize(
    ("kind", "status"), [("inductive", "refuted"), ("twin", "proved"), ("inductive", "unknown")]
)
def test_prove_exits_1_when_a_release_row_is_not_as_required(
    kind: str, status: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = pf.Outcome(obligation="release_x", kind=kind, status=status, seconds=0.0, witness="w")  # type: ignore[arg-type]
    monkeypatch.setattr(pf, "run_all", lambda _a=None: [bad])
    got = CliRunner().invoke(prove, [])
    assert got.exit_code == 1
    assert "release_x" in got.output
