"""The §IX figures as ``gapless simulate`` scenarios (``dft-fig9``, ``dft-fig11``,
``dft-fig12``) [DFT §IX]: the same functions as ``gapless bench dft``, the issue's keys, at a
reduced size here (the full size is the scenario's)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gapless.cli.simulate_cmd import simulate
from gapless.models import dft_figures as F
from gapless.models.dft_fig_scenarios import (
    FIG_SCENARIOS,
    fig9_figures,
    fig9_marks,
    fig11_figures,
    fig12_figures,
)
from gapless.models.protocols import scenarios


def test_the_figure_scenarios_are_registered_with_their_plot() -> None:
    got = scenarios()
    for sc in FIG_SCENARIOS:
        assert got[sc.name] is sc
        assert sc.plot == "dft-figure"


def test_fig9_keys_and_numbers_are_the_bench_function_s() -> None:
    m = fig9_figures(n=200, runs=3, pairs=200)
    bench = F.fig9(n=200, runs=3, pairs=200)
    keys = {f"f{f}_d{d}_k{k}" for f in (3, 7) for d in range(4) for k in F.FIG9_KS}
    assert {k for k in m if k.startswith("f")} == keys
    assert {k: m[k] for k in keys} == bench["points"]
    assert m["runs"] == 3
    for k in keys:
        assert set(m[k]) == {"disconnected_pct", "disconnected_pct_legitimate"}
    marks = fig9_marks("dft-fig9", {**m, "roles_run_verdict": "pass"})
    assert all(marks.values()), marks
    # non-vacuity: a sweep in which a larger δ disconnects more fails the shape mark
    bad = {**m, "roles_run_verdict": "pass"}
    bad["f3_d3_k170"] = {"disconnected_pct": 99.0, "disconnected_pct_legitimate": 99.0}
    assert not fig9_marks("dft-fig9", bad)["larger δ, fewer disconnected (paper's count)"]


def test_fig11_and_fig12_percentiles() -> None:
    m11 = fig11_figures(n=200)
    assert {k for k in m11 if k.startswith("f")} == {f"f{f}_d{d}" for f in (3, 7) for d in range(4)}
    assert all("values" not in v for k, v in m11.items() if k.startswith("f"))
    assert m11["f3_d0"]["p100"] == 4  # a fanout-3 broker: parent and 3 children
    m12 = fig12_figures(n=200, runs=2)
    assert {k for k in m12 if k.startswith("f")} == {f"f{f}_k{k}" for f in (3, 7) for k in (16, 60)}
    assert m12["runs"] == 2


def test_simulate_dft_fig11_json_and_plot(tmp_path: Path) -> None:
    plot = tmp_path / "fig11.png"
    res = CliRunner().invoke(simulate, ["--scenario", "dft-fig11", "--json", "--plot", str(plot)])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    assert m["pass"]
    assert m["roles_run_verdict"] == "pass"
    assert m["f7_d3"]["p50"] > m["f7_d0"]["p50"]
    assert plot.stat().st_size > 10_000
