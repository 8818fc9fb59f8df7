"""``gapless.impl.gd.step.unchanged`` (issue 17): the identity-first comparison that decides
whether a GD step changed nothing agrees with the states' own equality, on hand-built
values and on every effect-free step of fault-injected runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from pyrsistent import pset

from gapless.impl.gd import GDConfig, handle, initial_states, two_broker
from gapless.impl.gd import step as step_module
from gapless.impl.gd.state import evolve
from gapless.impl.gd.step import unchanged
from gapless.impl.inputs import Restart
from gapless.models.run import simulate
from gapless.spark_fuzz.backend import load_backend
from gapless.spark_fuzz.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def booted() -> Any:
    st, _ = handle(initial_states(two_broker({"a": "*"}), GDConfig())["shb"], Restart(), 0)
    return st


def test_equal_values_in_new_objects_are_unchanged() -> None:
    st = booted()
    assert unchanged(st, st)
    same = evolve(st, links_down=pset(), status=type(st.status)(st.status))
    assert same is not st
    assert same == st
    assert unchanged(st, same)


def test_a_changed_field_or_role_is_a_change() -> None:
    st = booted()
    down = evolve(st, links_down=pset(["phb"]))
    assert down != st
    assert not unchanged(st, down)
    later = evolve(st, epoch=st.epoch + 1)
    assert not unchanged(st, later)
    phb, _ = handle(initial_states(two_broker({"a": "*"}), GDConfig())["phb"], Restart(), 0)
    assert not unchanged(st, phb)


def test_the_context_is_left_out_as_the_states_equality_leaves_it_out() -> None:
    st = booted()
    other_ctx = evolve(st, ctx=attrs.evolve(st.ctx))
    assert other_ctx == st
    assert unchanged(st, other_ctx)


def test_values_without_an_instance_dict_are_compared_by_value() -> None:
    assert unchanged((1, 2), (1, 2))
    assert not unchanged((1, 2), (1, 3))


def test_it_agrees_with_equality_on_every_effect_free_step_of_faulty_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = {True: 0, False: 0}

    def checked(old: Any, new: Any) -> bool:
        got = unchanged(old, new)
        assert got == (new is old or new == old), (type(old).__name__, old, new)
        seen[got] += 1
        return got

    monkeypatch.setattr(step_module, "unchanged", checked)
    config = load_config(ROOT / "campaigns" / "demo.toml", {"duration_s": 2.0})
    backend = load_backend(config.protocol, config.backend)
    spec = backend.make_spec(config)
    for seed in list(config.seeds())[:3]:
        out = simulate(spec, backend.generate_schedule(spec, seed), seed)
        assert out.verdict == "pass"
    # both answers occur: the check is not vacuous
    assert seen[True] > 0, seen
    assert seen[False] > 0, seen
