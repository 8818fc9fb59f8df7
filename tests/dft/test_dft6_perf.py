"""The hot path's shortcuts change nothing observable: ``state.evolve`` is
``attrs.evolve`` for :class:`BrokerState`, which has no converters, validators or
post-init hook for it to skip."""

from __future__ import annotations

import random

import attrs
import pytest
from pyrsistent import pmap

from gapless.impl.dft import seqvec
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


def _observe_unhurried(seen, vec):  # type: ignore[no-untyped-def]
    """``seqvec.observe`` without its in-order shortcut (the general fold only)."""
    for y, n, low in vec:
        key = (y, seqvec.epoch(n))
        s = seen.get(key, seqvec.Seen())
        mark = max(s.low, min(low, n) - 1)
        above = {m for m in s.above if m > mark}
        above.add(n)
        while mark + 1 in above:
            mark += 1
            above.discard(mark)
        seen = seen.set(key, seqvec.Seen(low=mark, above=frozenset(above)))
    return seen


def test_observe_with_its_in_order_shortcut_folds_as_the_general_rule() -> None:
    rng = random.Random(5)
    for _ in range(150):
        a = b = pmap()
        for _ in range(25):
            vec = tuple(
                (rng.choice("XYZ"), rng.randint(1, 20), rng.randint(0, 20))
                for _ in range(rng.randint(1, 3))
            )
            a, b = _observe_unhurried(a, vec), seqvec.observe(b, vec)
            assert a == b, vec
