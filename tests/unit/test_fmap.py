"""FMap (``gapless.impl.fmap``): an immutable dict whose updates return copies — checked
against plain dict semantics, and shown to refuse every in-place mutation."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.fmap import EMPTY, FMap

keys = st.sampled_from(["P0", "P1", "P2", "b1", "b2"])
maps = st.dictionaries(keys, st.integers(-5, 5), max_size=5)
ops = st.lists(st.tuples(st.sampled_from(["set", "remove", "discard"]), keys, st.integers()))


@given(maps, ops)
def test_updates_match_dict_semantics_and_never_mutate(base: dict[str, int], steps: Any) -> None:
    m = FMap(base)
    model = dict(base)
    for op, k, v in steps:
        before, snapshot = m, dict(m)
        if op == "set":
            m = m.set(k, v)
            model[k] = v
        elif op == "remove":
            if k not in model:
                with pytest.raises(ProtocolMisuse, match="not in the map"):
                    m.remove(k)
                continue
            m = m.remove(k)
            del model[k]
        else:
            m = m.discard(k)
            model.pop(k, None)
        assert dict(before) == snapshot  # the old value is untouched
        assert m == model
        assert type(m) is FMap
        assert hash(m) == hash(FMap(model))


def test_no_change_returns_the_same_object() -> None:
    m = FMap({"P0": 1})
    assert m.set("P0", m["P0"]) is m
    assert m.discard("P9") is m
    assert EMPTY == {}


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: m.__setitem__("P0", 2),
        lambda m: m.__delitem__("P0"),
        lambda m: m.update({"P1": 1}),
        lambda m: m.pop("P0"),
        lambda m: m.popitem(),
        lambda m: m.setdefault("P1", 1),
        lambda m: m.clear(),
    ],
)
def test_every_in_place_mutation_is_refused(mutate: Any) -> None:
    m = FMap({"P0": 1})
    with pytest.raises(TypeError, match="immutable"):
        mutate(m)
    assert m == {"P0": 1}


def test_ior_is_refused_and_pickle_round_trips() -> None:
    m = FMap({"P0": 1})
    n = m
    with pytest.raises(TypeError, match="immutable"):
        n |= {"P1": 2}
    assert m == {"P0": 1}
    back = pickle.loads(pickle.dumps(m))
    assert back == m
    assert type(back) is FMap
