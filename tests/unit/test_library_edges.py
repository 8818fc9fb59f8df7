"""Library edges (issue 12, defect 10): the verified core's constructors and combinators refuse
misuse with the kit's typed errors, naming what is allowed."""

from __future__ import annotations

import pytest

from gapless.impl.curiosity import A, C, Demand, N, combine, upstream
from gapless.impl.errors import GaplessError, LatticeMismatch
from gapless.impl.knowledge import DSTAR, D


def test_upstream_of_no_downstream_stream_is_refused() -> None:
    # no downstream stream has acked anything: a vacuous A would release ticks nobody saw
    with pytest.raises(LatticeMismatch, match="at least one downstream"):
        upstream([])
    with pytest.raises(LatticeMismatch, match="at least one downstream"):
        upstream(iter(()))
    # the combination itself keeps its identity (a law: demand_combine_laws)
    assert combine([]) == Demand(acked=True, curious=False)
    assert upstream([A]) is A
    assert upstream([A, C]) is C
    assert upstream([N, A]) is N


@pytest.mark.parametrize("make", [D, DSTAR])
@pytest.mark.parametrize("payload", [[1, 2], {"a": 1}, {1, 2}])
def test_an_unhashable_payload_is_refused_with_a_typed_error(make: object, payload: object) -> None:
    with pytest.raises(GaplessError, match=r"not hashable.*allowed: any hashable") as info:
        make(payload)  # type: ignore[operator]
    assert isinstance(info.value, TypeError)  # still a TypeError for callers that catch it
    assert repr(payload) in str(info.value)
