"""``own_timers`` on a real run: a dispatch that refuses its own GCT timers (the timer-argument
table's count for ``gct`` off by one, a mutant the demo campaign used to pass) is caught on the
demo's first schedule; the correct dispatch passes it (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest

from gapless.impl.gd import node
from gapless.spark_fuzz.config import canonical_json, load_config
from gapless.spark_fuzz.execute import run_seed

ROOT = Path(__file__).resolve().parents[2]


def _first_demo_schedule() -> dict[str, object]:
    config = load_config(str(ROOT / "campaigns" / "demo.toml"), {"schedules": 1, "shrink": False})
    return run_seed(canonical_json(config.to_data()), config.seed).row


def test_a_refused_own_timer_is_caught_on_a_real_run(monkeypatch: pytest.MonkeyPatch) -> None:
    good = _first_demo_schedule()
    assert good["verdict"] == "pass", good["explanation"]
    table = dict(node.TIMER_ARGS) | {"gct": node.TIMER_ARGS["gct"] + 1}
    monkeypatch.setattr(node, "TIMER_ARGS", MappingProxyType(table))
    bad = _first_demo_schedule()
    assert bad["verdict"] == "violation", bad["explanation"]
    assert bad["invariant"] == "own_timers"
    assert "refused its own timer" in bad["explanation"]
    assert json.loads(bad["coverage"])  # the run itself went on
