"""The campaign report's titles say what was fuzzed, mixes included, and its coverage plot
counts the transitions the roles can take, as the fuzz summary does."""

from __future__ import annotations

from collections import Counter
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from gapless.spark_fuzz.report import _TITLE_WIDTH, _roles_coverage_plot, _what
from gapless.spark_fuzz.transitions import reachable


def _config(**extra: Any) -> dict[str, Any]:
    return {"protocol": "gd", "variant": "none", "topology": "fig3", **extra}


def test_a_campaign_without_a_mix_reads_as_before() -> None:
    assert _what(_config(), 30) == "gd, variant none, topology fig3, 30 schedules"


def test_each_mix_setup_is_named_with_its_share_and_what_it_changes() -> None:
    mix = {
        "total-order": {"share": 0.15, "topology": "total-order"},
        "best-effort": {"share": 0.1, "run_config": {"best_effort": True}, "invariants": ["x"]},
    }
    text = _what(_config(mix=mix), 300)
    first, *rest = text.split("\n")
    assert first == "gd, variant none, topology fig3, 300 schedules"
    assert " ".join(rest) == (
        "mix (drawn per schedule): best-effort 10% (best_effort = True); "
        "total-order 15% (topology total-order)"
    )


def test_a_long_mix_is_wrapped_to_the_plots_width() -> None:
    """The demo's three setups made one line the 7-inch plots cut off at both edges."""
    mix = {
        "total-order": {"share": 0.15, "topology": "total-order"},
        "best-effort": {"share": 0.1, "run_config": {"best_effort": True}},
        "with-group-commit": {"share": 0.05, "run_config": {"group_commit": True}},
    }
    lines = _what(_config(mix=mix), 300).split("\n")
    assert len(lines) >= 3
    assert all(len(line) <= _TITLE_WIDTH for line in lines)
    assert "with-group-commit 5% (group_commit = True)" in " ".join(lines)


def test_the_coverage_plot_counts_the_roles_transitions() -> None:
    universe = reachable("gd")
    assert len(universe) > 20
    taken = Counter(dict.fromkeys(universe[:-2], 3))
    taken["K:D->E"] = 1  # an algebra transition outside the universe: not drawn, not counted
    _roles_coverage_plot(plt, taken, universe, "gd, variant none, topology fig3, 1 schedules")
    ax = plt.gca()
    title = ax.get_title()
    assert f"{len(universe) - 2} of {len(universe)} reached" in title
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-2:] == list(universe[-2:])  # never reached: listed last
    assert "K:D->E" not in labels
    plt.close("all")
