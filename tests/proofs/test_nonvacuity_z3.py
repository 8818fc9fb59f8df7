"""Non-vacuity on the Z3 side: each broken variant has the laws it breaks refuted.

The Python side (law checkers and Hypothesis) is ``tests/laws/test_lattice_nonvacuity.py``.
"""

from __future__ import annotations

import pytest

from gapless.spec import proofs as pf

pytestmark = pytest.mark.proofs

EXPECTED_REFUTED = {
    # (a) one join table entry changed: F ⊔ S = E
    "broken-join": {"k_join_is_least", "k_join_commutative", "k_order_consistent"},
    # (b) a filter that passes D(a) when the predicate fails
    "broken-filter": {"filter_conforms_to_table", "filter_monotone"},
    # (c) a merge that passes F while an input is Q
    "broken-merge": {"merge_conforms_to_table", "merge_final_only_if_all_final", "merge2_monotone"},
    # the hypothetical linkage in which released (L, A) ticks are fixed points
    "link-L-keeps-A": {"link_monotone", "link_fixed_points_are_linked"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_REFUTED))
def test_variant_is_refuted(name: str) -> None:
    outcomes = pf.run_all(pf.variant(name))
    refuted = {o.obligation for o in outcomes if o.kind == "law" and o.status == "refuted"}
    assert EXPECTED_REFUTED[name] <= refuted
    for o in outcomes:
        if o.status == "refuted":
            assert o.witness


def test_unknown_variant_names_the_allowed() -> None:
    with pytest.raises(ValueError, match="broken-join"):
        pf.variant("nonsense")
