"""An IB lets go of per-cell F and C where its istream became F from upstream alone
[GD §2.1.1, §3.1] (issue 18's ``ledger.py:183``): before, only an ack that raised the A
prefix released the cell ledgers, so F a filter had made and C a cell broker had left
stayed below the final prefix for as long as no ack came. ``grow_a_prefix`` closes every
step that changes the istream, so it releases there; ``canonical_state`` names a ledger
that keeps them (``test_canonical_state.py``)."""

from __future__ import annotations

from pathlib import Path

import attrs
from _staged_mutant import mutant, run_seed_staged

from gapless.impl.fmap import FMap
from gapless.impl.gd import GDConfig, figure3, handle, initial_states
from gapless.impl.gd.forwarding import grow_a_prefix
from gapless.impl.gd.state import NodeCtx, Stream
from gapless.impl.gd.step import Step
from gapless.impl.inputs import Restart
from gapless.impl.knowledge import F, S
from gapless.impl.ledger import CellLedger, CuriosityLedger
from gapless.impl.streams import KnowledgeStream
from gapless.spark_fuzz.config import canonical_json, load_config
from gapless.spark_fuzz.execute import run_seed

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "campaigns" / "demo.toml"
MUTANT = "impl/ledger.py:183:compare Is#96"
SEED = 4  # a demo schedule where upstream F outgrows cell F (the old roles failed it)


def _ib_ctx() -> NodeCtx:
    states = initial_states(figure3(), GDConfig())
    return handle(states["b1"], Restart(), 0)[0].ctx


def test_final_prefix_from_upstream_releases_cell_f_and_c() -> None:
    k = KnowledgeStream().accumulate(0, 9, F).accumulate(10, 12, S)
    assert k.fin == 9
    kept_f = CellLedger().filter(((4, 4), (11, 11)))
    kept_c = attrs.evolve(CellLedger().ack(1), curious=FMap({"s1": ((3, 5), (12, 12))}))
    s = Stream(knowledge=k, ledger=CuriosityLedger.fresh(2).with_cells((kept_f, kept_c)))
    step = Step(now=0)
    got = grow_a_prefix(_ib_ctx(), s, step)
    assert got.knowledge is k, "no tick past 9 is A in both cells: the prefix stays"
    assert got.ledger.cells[0].filtered == ((11, 11),)
    assert got.ledger.cells[1].curious == FMap({"s1": ((12, 12),)})
    assert step.out == [], "releasing sends nothing"
    assert grow_a_prefix(_ib_ctx(), got, Step(now=0)) is got, "nothing left to release"


def test_a_ledger_that_keeps_f_below_the_final_prefix_is_caught(tmp_path: Path) -> None:
    m = mutant(MUTANT)
    assert "if filtered is not self.filtered and curious is self.curious:" in m.diff
    row = run_seed_staged(tmp_path, m, DEMO, 3, 2.0)
    assert row["verdict"] == "violation", row["explanation"]
    assert row["invariant"] == "canonical_state"
    assert "at or below the acknowledged prefix" in row["explanation"]


def test_the_correct_roles_release_on_a_schedule_the_old_ones_failed() -> None:
    config = load_config(DEMO)
    row = run_seed(canonical_json(config.to_data()), SEED).row
    assert row["verdict"] == "pass", row["explanation"]
