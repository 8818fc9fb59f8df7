"""Per-tick transfer functions of the knowledge graph's edges [GD §2.4].

Theory of operation
-------------------
"A filter passes a D tick unchanged if it matches the filter predicate, otherwise it
converts it to an F, and it passes an F tick unchanged; a merge passes a D tick to its
output, but passes F only if all inputs are F" [GD §2.4]. The paper leaves the other
values open; our decisions (recorded in ``spec/lattices.md`` and proved monotone by
``gapless prove``):

Filter, for predicate ``p``:

====== ============================== =====================================================
input  output                          why
====== ============================== =====================================================
Q      Q                               nothing known passes as nothing known
L      L                               a lost tick may have held a match: the loss passes
                                       (DUR §2 gap messages say "there may have been events")
D(a)   D(a) if p(a) else F             [GD §2.4]
D*(a)  D*(a) if p(a) else F            D* is D that was delivered; same rule
F      F                               [GD §2.4]
S      S                               silence stays silence
E      E                               errors are never hidden
====== ============================== =====================================================

Merge of inputs ``k1 .. kn`` (total order, [GD §2.2-2.4]): any E gives E; otherwise if
some inputs carry data (D or D*), the output is the join of those data values (two
different payloads on one tick give E, [GD §2.2]); otherwise any Q gives Q, else any L gives
L, else all S gives S, else F (every input is F or S: "F only if all inputs are F").
Both are monotone in every argument.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from gapless.impl.errors import LatticeMismatch
from gapless.impl.knowledge import E, F, Kind, Knowledge, L, Q, S

__all__ = ["Predicate", "filter_value", "merge_values"]

Predicate = Callable[[Hashable], bool]


def filter_value(value: Knowledge, matches: Predicate) -> Knowledge:
    """The filter edge's transfer of one tick [GD §2.4]; ``matches`` judges a payload."""
    if not isinstance(value, Knowledge):
        raise LatticeMismatch(
            f"filter_value: {value!r} is not a knowledge value; allowed: Q, L, D(a), D*(a), F, S, E"
        )
    kind = value.kind
    if kind is Kind.D or kind is Kind.DSTAR:
        return value if matches(value.payload) else F
    return value


def merge_values(values: Sequence[Knowledge]) -> Knowledge:
    """The merge hyperedge's transfer of one tick from all its inputs [GD §2.4]."""
    if not values:
        raise LatticeMismatch("merge_values: a merge needs at least one input; got none")
    data: Knowledge | None = None
    any_q = any_l = False
    all_s = True
    for v in values:
        if not isinstance(v, Knowledge):
            raise LatticeMismatch(
                f"merge_values: {v!r} is not a knowledge value; allowed: Q, L, D(a), D*(a), F, S, E"
            )
        kind = v.kind
        if kind is Kind.E:
            return E
        if kind is Kind.D or kind is Kind.DSTAR:
            data = v if data is None else data.join(v)
        elif kind is Kind.Q:
            any_q = True
        elif kind is Kind.L:
            any_l = True
        if kind is not Kind.S:
            all_s = False
    if data is not None:
        return data
    if any_q:
        return Q
    if any_l:
        return L
    return S if all_s else F
