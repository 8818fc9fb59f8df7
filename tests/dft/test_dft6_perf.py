"""The hot path's shortcuts change nothing observable: ``state.evolve`` is
``attrs.evolve`` for :class:`BrokerState`, which has no converters, validators or
post-init hook for it to skip."""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pmap

from gapless.impl.dft.state import BrokerState, evolve, new_broker
from gapless.impl.dft.tree import complete_tree


def test_broker_state_has_nothing_evolve_would_skip() -> None:
    for a in attrs.fields(BrokerState):
        assert a.converter is None, a.name
        assert a.validator is None, a.name
        assert a.init, a.name
    assert not hasattr(BrokerState, "__attrs_post_init__")


def test_evolve_equals_attrs_evolve_and_refuses_unknown_fields() -> None:
    s = new_broker("B1", complete_tree(13, 3))
    changes = {"stamp": 7, "local": pmap({"S/0": ("S", 0)}), "restored": False}
    got = evolve(s, **changes)
    assert got == attrs.evolve(s, **changes)
    assert type(got) is BrokerState
    assert s.stamp == 0  # the original is untouched
    assert evolve(s) == s
    with pytest.raises(TypeError, match="no field"):
        evolve(s, stmp=1)
