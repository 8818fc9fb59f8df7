"""Checkpoint tokens form a lattice under the pointwise order; subscriber messages validate
their ``(t0, t]`` interval [DUR §2]."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gapless.impl.durable import ct as ct_mod
from gapless.impl.durable import messages as msg_mod
from gapless.impl.durable.ct import UNSEEN, CheckpointToken
from gapless.impl.durable.messages import EventMessage, GapMessage, SilenceMessage
from gapless.impl.errors import InvalidRange, InvalidTick

tokens = st.dictionaries(st.sampled_from(["p1", "p2", "p3"]), st.integers(-1, 20)).map(
    CheckpointToken.of
)


@given(tokens, tokens, tokens)
def test_join_meet_laws(a: CheckpointToken, b: CheckpointToken, c: CheckpointToken) -> None:
    assert a.join(b) == b.join(a)
    assert a.join(b).join(c) == a.join(b.join(c))
    assert a.join(a) == a
    assert a.meet(b) == b.meet(a)
    assert a.meet(a) == a
    assert a.leq(a.join(b))
    assert b.leq(a.join(b))
    assert a.meet(b).leq(a)
    assert a.leq(b) == (a.join(b) == b) == (a.meet(b) == a)
    assert CheckpointToken().leq(a)
    for p in ("p1", "p2", "p3"):
        assert a.join(b).at(p) == max(a.at(p), b.at(p))


@given(tokens, st.sampled_from(["p1", "p2"]), st.integers(-1, 30))
def test_advance_is_monotone(a: CheckpointToken, p: str, t: int) -> None:
    b = a.advance(p, t)
    assert a.leq(b)
    assert b.at(p) == max(a.at(p), t)
    if t <= a.at(p):
        assert b is a


def test_canonical_and_errors() -> None:
    assert CheckpointToken.of({"p": UNSEEN}) == CheckpointToken()
    with pytest.raises(InvalidTick, match="allowed"):
        CheckpointToken.of({"p": -2})
    with pytest.raises(InvalidTick, match="allowed"):
        CheckpointToken().advance("", 3)
    with pytest.raises(InvalidRange, match="empty"):
        SilenceMessage(pubend="p", t0=4, t=2)
    with pytest.raises(InvalidTick, match="allowed"):
        EventMessage(pubend="p", t0=-5, t=2, payload="x")
    g = GapMessage(pubend="p", t0=-1, t=9)
    assert g.covers() == (0, 9)
    assert g.advances_to() == 9


def test_doctests() -> None:
    for mod in (ct_mod, msg_mod):
        res = doctest.testmod(mod)
        assert res.attempted > 0
        assert res.failed == 0
