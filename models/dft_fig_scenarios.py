"""DFT's §IX figures as scenarios: ``dft-fig9``, ``dft-fig11``, ``dft-fig12`` [DFT §IX-A,
§IX-C, §IX-D].

Theory of operation
-------------------
``gapless simulate --scenario dft-fig9 --json --plot FILE`` and ``gapless bench dft`` compute
the same numbers with the same code: :func:`fig9_figures` calls
:func:`gapless.models.dft_figures.fig9` (as the bench does) with the issue's shape — a
1000-broker complete tree (broker i's parent is (i − 1) // fanout), fanout 3 and 7,
δ = 0..3, k in {10, 20, 50, 100, 170}, 100 failure sets per point, 1000 sampled live pairs
per set — and returns, per ``f{fanout}_d{delta}_k{k}``, ``disconnected_pct`` (the paper's
count: a chain of δ + 1 consecutive failed brokers on the primary path cuts the pair,
§IX-A) and ``disconnected_pct_legitimate`` (the protocol's own rule: connected only if a
legitimate propagation exists, at most δ bypassed in every sub-path of 2δ + 1), plus
``runs``. :func:`fig11_figures` gives the percentiles of the Δ-neighbourhood sizes per
``f{fanout}_d{delta}`` (:func:`~gapless.models.dft_figures.fig11`), :func:`fig12_figures`
those of the active sessions per live broker after 16 and 60 failures, δ = 3, per
``f{fanout}_k{k}`` (:func:`~gapless.models.dft_figures.fig12`), as ``gapless bench dft``
reports them (the plot recomputes the per-broker values with the same functions).

The registry runs every scenario's ``spec`` on the world; these figures are counts on the
tree, not a run, so their ``spec`` is a short fault-free run of the roles on the 13-broker
tree (δ = 1) whose verdict the JSON reports (``roles_run_verdict``) and a pass mark
requires clean. The plots are the bench's (:mod:`gapless.benchmarks.dft`).
"""

from __future__ import annotations

from typing import Any, Final

from gapless.models import dft_figures as F
from gapless.models.dft_scenarios import dft_run
from gapless.models.registry import Scenario

__all__ = ["FIG_SCENARIOS", "fig9_figures", "fig11_figures", "fig12_figures"]

_RUN: Final = dft_run("dft-tree13", duration_us=300_000, drain_us=300_000)


def fig9_figures(*, n: int = 1000, runs: int = 100, pairs: int = 1000) -> dict[str, Any]:
    """Figure 9 (see module doc); ``n``, ``runs``, ``pairs`` smaller only in tests."""
    got = F.fig9(n=n, runs=runs, pairs=pairs)
    return {
        **got["points"],
        "runs": got["runs"],
        "pairs_per_run": got["pairs_per_run"],
        "brokers": got["n"],
    }


def _percentiles(series: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {k: {p: v for p, v in d.items() if p != "values"} for k, d in series.items()}


def fig11_figures(*, n: int = 1000) -> dict[str, Any]:
    """Figure 11 (see module doc): percentiles; the plot recomputes the values (cheap,
    deterministic) rather than carry 8,000 of them in the JSON."""
    return {**_percentiles(F.fig11(n=n)), "brokers": n}


def fig12_figures(*, n: int = 1000, runs: int = 10) -> dict[str, Any]:
    """Figure 12 (see module doc): percentiles, as :func:`fig11_figures`."""
    return {**_percentiles(F.fig12(n=n, runs=runs)), "brokers": n, "runs": runs}


def _with_run(figures: dict[str, Any], name: str, outcome: Any) -> dict[str, Any]:
    return {"scenario": name, **figures, "roles_run_verdict": outcome.verdict}


def _fig9(sc: Scenario, outcome: Any, brokers: tuple[str, ...]) -> dict[str, Any]:
    return _with_run(fig9_figures(), sc.name, outcome)


def _fig11(sc: Scenario, outcome: Any, brokers: tuple[str, ...]) -> dict[str, Any]:
    return _with_run(fig11_figures(), sc.name, outcome)


def _fig12(sc: Scenario, outcome: Any, brokers: tuple[str, ...]) -> dict[str, Any]:
    return _with_run(fig12_figures(), sc.name, outcome)


def fig9_marks(name: str, m: dict[str, Any]) -> dict[str, bool]:
    """Figure 9's shape [DFT §IX-A]: a larger δ never disconnects more pairs (paper's
    count, same failure sets); the legitimate count is never below the paper's; more
    failures disconnect more pairs at δ = 0."""
    keys = [k for k in m if k.startswith("f") and "_k" in k]
    fanouts = sorted({k.split("_")[0] for k in keys})
    ks = sorted({int(k.rsplit("_k", 1)[1]) for k in keys})
    deltas = sorted({int(k.split("_d")[1].split("_")[0]) for k in keys})
    return {
        "roles run clean": m["roles_run_verdict"] == "pass",
        "larger δ, fewer disconnected (paper's count)": all(
            [m[f"{f}_d{d}_k{k}"]["disconnected_pct"] for d in deltas]
            == sorted((m[f"{f}_d{d}_k{k}"]["disconnected_pct"] for d in deltas), reverse=True)
            for f in fanouts
            for k in ks
        ),
        "legitimate count >= paper's count": all(
            m[k]["disconnected_pct_legitimate"] >= m[k]["disconnected_pct"] for k in keys
        ),
        "δ = 0 disconnects more with more failures": all(
            m[f"{f}_d0_k{ks[0]}"]["disconnected_pct"] <= m[f"{f}_d0_k{ks[-1]}"]["disconnected_pct"]
            for f in fanouts
        ),
    }


def _cdf_marks(name: str, m: dict[str, Any]) -> dict[str, bool]:
    """Every series is there (8 for Figure 11, 4 for Figure 12) and its percentiles are
    ordered."""
    series = [v for k, v in m.items() if isinstance(v, dict) and "p50" in v]
    return {
        "roles run clean": m["roles_run_verdict"] == "pass",
        "every series there": len(series) == (8 if name == "dft-fig11" else 4),
        "percentiles ordered": all(
            [v[p] for p in sorted((p for p in v if p.startswith("p")), key=lambda p: int(p[1:]))]
            == sorted(v[p] for p in v if p.startswith("p"))
            for v in series
        ),
    }


FIG_SCENARIOS: Final = (
    Scenario(
        name="dft-fig9",
        protocol="dft",
        description="Figure 9: % live pairs disconnected after k random failures, 1000 "
        "brokers, fanout 3 and 7, δ = 0..3 (paper's chain count and legitimate propagation)",
        spec=_RUN,
        events=(),
        figures=_fig9,
        pass_marks=fig9_marks,
        plot="dft-figure",
    ),
    Scenario(
        name="dft-fig11",
        protocol="dft",
        description="Figure 11: CDF of Δ-neighbourhood sizes, 1000 brokers, fanout 3 and 7, "
        "δ = 0..3",
        spec=_RUN,
        events=(),
        figures=_fig11,
        pass_marks=_cdf_marks,
        plot="dft-figure",
    ),
    Scenario(
        name="dft-fig12",
        protocol="dft",
        description="Figure 12: CDF of active sessions per live broker after 16 and 60 "
        "failures, δ = 3, 1000 brokers, fanout 3 and 7",
        spec=_RUN,
        events=(),
        figures=_fig12,
        pass_marks=_cdf_marks,
        plot="dft-figure",
    ),
)
"""The §IX figure scenarios."""
