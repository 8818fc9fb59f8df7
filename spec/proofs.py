"""Z3 proofs of the lattice algebra of [GD §2] and [DUR §3]: laws proved, facts answered.

Theory of operation
-------------------
Knowledge is a Z3 algebraic datatype with one constructor per kind; ``D`` and ``Dstar``
(the paper's D*) carry a symbolic ``Int`` payload, so a law proved here holds for every
payload, not just for the two of the reference universe. Curiosity is a three-valued
enumeration; the (acked, curious) demand is a pair of Booleans.

Every **law** is proved by asking Z3 for a counterexample to it: ``unsat`` means proved, a
model is a refutation (and its values are the witness). Every **fact** is a question whose
answer we want on record either way: ``proved`` (it holds) or ``refuted`` with Z3's
witness. Each obligation is quantifier-free over a handful of free variables, so Z3 decides
each in milliseconds.

The operations under proof come from an :class:`Algebra` value: :data:`PAPER` is ours; the
non-vacuity variants (:func:`variant`) are the same encoding with one operation swapped for
a broken one, so every law can be run against them without duplicating a line of it. The
filter and merge tables are compiled from the rows of :mod:`gapless.spec.lattices`
(:data:`~gapless.spec.lattices.FILTER_ROWS`, :data:`~gapless.spec.lattices.MERGE_RULES`),
the same rows the reference semantics interprets and ``spec/lattices.md`` renders.

Sorts are declared once, at import time (a Z3 sort name can be declared once per context).

>>> outcome = by_name("k_join_is_least").check()
>>> outcome.status, outcome.witness
('proved', None)
>>> run(by_name("knowledge_distributive")).status
'refuted'
>>> by_name("k_join_is_least").check(variant("broken-join")).status
'refuted'
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, final

import attrs
import z3

from gapless.spec import durable_proofs
from gapless.spec.lattices import FILTER_ROWS, MERGE_RULES

__all__ = [
    "PAPER",
    "VARIANTS",
    "Algebra",
    "Obligation",
    "Outcome",
    "by_name",
    "obligations",
    "run",
    "run_all",
    "variant",
]

Expr = Any  # a z3 expression (z3 ships no type information)
Status = Literal["proved", "refuted", "unknown"]
Kind = Literal["law", "fact", "inductive", "twin"]

TIMEOUT_MS: Final = 10_000

# -- sorts, declared once --------------------------------------------------------------

_K = z3.Datatype("Knowledge")
for _name in ("Q", "L", "F", "S", "E"):
    _K.declare(_name)
_K.declare("D", ("d_payload", z3.IntSort()))
_K.declare("Dstar", ("dstar_payload", z3.IntSort()))
K: Final = _K.create()

Cur, (N, C, A) = z3.EnumSort("Curiosity", ["N", "C", "A"])

Q: Final = K.Q
L: Final = K.L
F: Final = K.F
S: Final = K.S
E: Final = K.E


def D(p: Expr) -> Expr:
    return K.D(p)


def DSTAR(p: Expr) -> Expr:
    return K.Dstar(p)


def is_data(x: Expr) -> Expr:
    return z3.Or(K.is_D(x), K.is_Dstar(x))


def payload(x: Expr) -> Expr:
    """The payload of a data value (unspecified for the payload-free kinds)."""
    return z3.If(K.is_D(x), K.d_payload(x), K.dstar_payload(x))


_KIND_TEST: Final = {
    "Q": K.is_Q,
    "L": K.is_L,
    "D": K.is_D,
    "D*": K.is_Dstar,
    "F": K.is_F,
    "S": K.is_S,
    "E": K.is_E,
}
_CONST: Final = {"Q": Q, "L": L, "F": F, "S": S, "E": E}


# -- the reference encoding ------------------------------------------------------------


def k_leq(x: Expr, y: Expr) -> Expr:
    """Q < L < {D(a), F}; D(a) < D*(a); F < {D*(a), S}; all < E."""
    return z3.Or(
        x == y,
        K.is_Q(x),
        K.is_E(y),
        z3.And(K.is_L(x), z3.Not(K.is_Q(y))),
        z3.And(K.is_D(x), K.is_Dstar(y), K.d_payload(x) == K.dstar_payload(y)),
        z3.And(K.is_F(x), z3.Or(K.is_Dstar(y), K.is_S(y))),
    )


def k_join(x: Expr, y: Expr) -> Expr:
    """Comparable: the larger; D(a) with F: D*(a); any other incomparable pair: E."""
    return z3.If(
        k_leq(x, y),
        y,
        z3.If(
            k_leq(y, x),
            x,
            z3.If(
                z3.And(K.is_D(x), K.is_F(y)),
                DSTAR(K.d_payload(x)),
                z3.If(z3.And(K.is_F(x), K.is_D(y)), DSTAR(K.d_payload(y)), E),
            ),
        ),
    )


def k_meet(x: Expr, y: Expr) -> Expr:
    """Comparable: the smaller; two of {D*(a), D*(b), S}: F; any other incomparable pair: L."""
    upper = [K.is_Dstar, K.is_S]
    both_upper = z3.And(z3.Or([t(x) for t in upper]), z3.Or([t(y) for t in upper]))
    return z3.If(k_leq(x, y), x, z3.If(k_leq(y, x), y, z3.If(both_upper, F, L)))


def k_filter(x: Expr, matches: Expr) -> Expr:
    """[GD §2.4]: data passes if the predicate holds, else becomes F; the rest is unchanged."""
    return z3.If(z3.And(is_data(x), z3.Not(matches(payload(x)))), F, x)


def _data_join(xs: Sequence[Expr], join: Callable[[Expr, Expr], Expr]) -> Expr:
    acc = Q
    for x in xs:
        acc = z3.If(is_data(x), join(acc, x), acc)
    return acc


def k_merge(xs: Sequence[Expr]) -> Expr:
    """E wins; else the join of the data inputs; else Q, L, all-S S, else F [GD §2.4]."""
    data = _data_join(xs, k_join)
    return z3.If(
        z3.Or([K.is_E(x) for x in xs]),
        E,
        z3.If(
            z3.Or([is_data(x) for x in xs]),
            data,
            z3.If(
                z3.Or([K.is_Q(x) for x in xs]),
                Q,
                z3.If(
                    z3.Or([K.is_L(x) for x in xs]),
                    L,
                    z3.If(z3.And([K.is_S(x) for x in xs]), S, F),
                ),
            ),
        ),
    )


def c_rank(c: Expr) -> Expr:
    return z3.If(c == N, 0, z3.If(c == C, 1, 2))


def c_leq(x: Expr, y: Expr) -> Expr:
    return c_rank(x) <= c_rank(y)


def c_join(x: Expr, y: Expr) -> Expr:
    return z3.If(c_leq(x, y), y, x)


def c_meet(x: Expr, y: Expr) -> Expr:
    return z3.If(c_leq(x, y), x, y)


def k_link(k: Expr, c: Expr) -> tuple[Expr, Expr]:
    """The F <=> A closure: K >= F gives A; A gives K ⊔ F [GD §2.1.1]."""
    at_f = k_leq(F, k)
    return (
        z3.If(z3.Or(at_f, c != A), k, k_join(k, F)),
        z3.If(z3.Or(at_f, c == A), A, c),
    )


def forget(x: Expr) -> Expr:
    del x
    return Q


def finalize(x: Expr) -> Expr:
    return z3.If(z3.Or(K.is_S(x), K.is_Dstar(x)), F, x)


def release(x: Expr) -> Expr:
    return z3.If(K.is_Q(x), Q, L)


def forget_curiosity(c: Expr) -> Expr:
    return z3.If(c == C, N, c)


def naive_upstream(cs: Sequence[Expr]) -> Expr:
    """GD's rule read literally: any C gives C, all A gives A, else N [GD §2.4]."""
    return z3.If(z3.Or([c == C for c in cs]), C, z3.If(z3.And([c == A for c in cs]), A, N))


def decompose(c: Expr) -> tuple[Expr, Expr]:
    return (c == A, c == C)


def combine(ds: Sequence[tuple[Expr, Expr]]) -> tuple[Expr, Expr]:
    return (z3.And([d[0] for d in ds]), z3.Or([d[1] for d in ds]))


def recompose(d: tuple[Expr, Expr]) -> Expr:
    return z3.If(d[1], C, z3.If(d[0], A, N))


def demand_leq(x: tuple[Expr, Expr], y: tuple[Expr, Expr]) -> Expr:
    return z3.And(z3.Implies(x[0], y[0]), z3.Implies(x[1], y[1]))


def pair_leq(p: tuple[Expr, Expr], q: tuple[Expr, Expr]) -> Expr:
    """The product order on (knowledge, curiosity) pairs."""
    return z3.And(k_leq(p[0], q[0]), c_leq(p[1], q[1]))


def pair_eq(p: tuple[Expr, Expr], q: tuple[Expr, Expr]) -> Expr:
    """Componentwise equality of two pairs (Python's tuple ``==`` would not build a formula)."""
    return z3.And(p[0] == q[0], p[1] == q[1])


def linked(k: Expr, c: Expr) -> Expr:
    return k_leq(F, k) == (c == A)


# -- the algebra under proof: the paper's, or a variant ---------------------------------


@final
@attrs.frozen(kw_only=True)
class Algebra:
    """The operations the laws are proved about; swap one to run the laws on a variant."""

    name: str
    leq: Callable[[Expr, Expr], Expr] = k_leq
    join: Callable[[Expr, Expr], Expr] = k_join
    meet: Callable[[Expr, Expr], Expr] = k_meet
    filter: Callable[[Expr, Expr], Expr] = k_filter
    merge: Callable[[Sequence[Expr]], Expr] = k_merge
    link: Callable[[Expr, Expr], tuple[Expr, Expr]] = k_link


PAPER: Final = Algebra(name="paper")


def _broken_join(x: Expr, y: Expr) -> Expr:
    # one table entry changed: F ⊔ S gives E instead of S
    return z3.If(z3.And(K.is_F(x), K.is_S(y)), E, k_join(x, y))


def _broken_filter(x: Expr, matches: Expr) -> Expr:
    # passes D(a) although the predicate fails
    return z3.If(z3.And(K.is_D(x), z3.Not(matches(K.d_payload(x)))), x, k_filter(x, matches))


def _broken_merge(xs: Sequence[Expr]) -> Expr:
    # passes F while an input is Q (and no input carries data)
    quiet = z3.Not(z3.Or([z3.Or(is_data(x), K.is_E(x)) for x in xs]))
    bad = z3.And(quiet, z3.Or([K.is_F(x) for x in xs]), z3.Or([K.is_Q(x) for x in xs]))
    return z3.If(bad, F, k_merge(xs))


def _link_l_keeps_a(k: Expr, c: Expr) -> tuple[Expr, Expr]:
    # hypothetical: a released (L, A) tick is a fixed point under accumulation too
    keep = z3.And(K.is_L(k), c == A)
    k2, c2 = k_link(k, c)
    return (z3.If(keep, k, k2), z3.If(keep, c, c2))


VARIANTS: Final = {
    "broken-join": Algebra(name="broken-join", join=_broken_join),
    "broken-filter": Algebra(name="broken-filter", filter=_broken_filter),
    "broken-merge": Algebra(name="broken-merge", merge=_broken_merge),
    "link-L-keeps-A": Algebra(name="link-L-keeps-A", link=_link_l_keeps_a),
}
"""Named variants for non-vacuity: each must have some law refuted."""


def variant(name: str) -> Algebra:
    """The algebra called ``name``: ``paper`` or one of :data:`VARIANTS`."""
    if name == "paper":
        return PAPER
    try:
        return VARIANTS[name]
    except KeyError:
        allowed = ", ".join(["paper", *sorted(VARIANTS)])
        raise ValueError(f"variant: unknown algebra {name!r}; allowed: {allowed}") from None


# -- obligations ------------------------------------------------------------------------


@final
@attrs.frozen(kw_only=True)
class Outcome:
    """The answer to one obligation, in the shape of ``gapless prove --json``."""

    obligation: str
    kind: Kind
    status: Status
    seconds: float
    witness: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "obligation": self.obligation,
            "kind": self.kind,
            "status": self.status,
            "seconds": round(self.seconds, 6),
            "witness": self.witness,
        }


@final
@attrs.frozen(kw_only=True)
class Obligation:
    """A named claim: ``claim(algebra)`` returns (formula, named variables to report)."""

    name: str
    kind: Kind
    statement: str
    source: str
    claim: Callable[[Algebra], tuple[Expr, Sequence[tuple[str, Expr]]]]
    expected: Status = "proved"
    """What we expect for the paper's algebra (for facts: the answer we record)."""

    def check(self, algebra: Algebra | None = None) -> Outcome:
        """Decide this obligation (for the paper's algebra unless told otherwise)."""
        return run(self, PAPER if algebra is None else algebra)


def _show(value: Expr) -> str:
    return str(value).replace("Dstar(", "D*(")


_PAYLOAD_IN_DATA: Final = re.compile(r"(D\*?)\((-?\d+)\)")


def _witness(model: Expr, named: Sequence[tuple[str, Expr]]) -> str:
    """``x = D(a), y = D*(b), z = S``: Z3's integer payloads renamed a, b, c... in order of
    first appearance (only equality of payloads matters to every law)."""
    text = ", ".join(f"{n} = {_show(model.eval(v, model_completion=True))}" for n, v in named)
    letters: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        letter = letters.setdefault(m.group(2), "abcdefghij"[len(letters) % 10])
        return f"{m.group(1)}({letter})"

    return _PAYLOAD_IN_DATA.sub(rename, text)


def run(obligation: Obligation, algebra: Algebra = PAPER) -> Outcome:
    """Decide one obligation for ``algebra`` by asking Z3 for a counterexample."""
    start = time.perf_counter()
    formula, named = obligation.claim(algebra)
    solver = z3.Solver()
    solver.set(timeout=TIMEOUT_MS)
    solver.add(z3.Not(formula))
    result = solver.check()
    witness: str | None = None
    status: Status
    if result == z3.unsat:
        status = "proved"
    elif result == z3.sat:
        status = "refuted"
        witness = _witness(solver.model(), named)
    else:
        status = "unknown"
        witness = f"z3: {solver.reason_unknown()}"
    return Outcome(
        obligation=obligation.name,
        kind=obligation.kind,
        status=status,
        seconds=time.perf_counter() - start,
        witness=witness,
    )


def run_all(algebra: Algebra = PAPER) -> list[Outcome]:
    """Every obligation, in declaration order (for a broken variant algebra, only those that
    depend on the algebra: the release rows do not)."""
    skip = ("inductive", "twin") if algebra is not PAPER else ()
    return [run(o, algebra) for o in obligations() if o.kind not in skip]


def by_name(name: str) -> Obligation:
    for o in obligations():
        if o.name == name:
            return o
    raise KeyError(f"by_name: no obligation {name!r}")


# Free variables (Z3 constants are universally quantified by validity checking).
x, y, z = z3.Consts("x y z", K)
x2, y2, z2 = z3.Consts("x2 y2 z2", K)
c1, c2, c3, d1, d2, d3 = z3.Consts("c1 c2 c3 d1 d2 d3", Cur)
p_a, p_b = z3.Ints("a b")
matches = z3.Function("p", z3.IntSort(), z3.BoolSort())
ack1, cur1, ack2, cur2, ack3, cur3 = z3.Bools("ack1 cur1 ack2 cur2 ack3 cur3")
ack1b, cur1b, ack2b, cur2b = z3.Bools("ack1b cur1b ack2b cur2b")

XY: Final = (("x", x), ("y", y))
XYZ: Final = (("x", x), ("y", y), ("z", z))


def _filter_conforms(alg: Algebra) -> tuple[Expr, Sequence[tuple[str, Expr]]]:
    rows = []
    for row_kind, holds, out, _why in FILTER_ROWS:
        guard = _KIND_TEST[row_kind](x)
        if holds is not None:
            guard = z3.And(guard, matches(payload(x)) == holds)
        expected = x if out == "same" else _CONST[out]
        rows.append(z3.Implies(guard, alg.filter(x, matches) == expected))
    return z3.And(rows), (("x", x), ("p(payload x)", matches(payload(x))))


_MERGE_GUARDS: Final[dict[str, Callable[[Sequence[Expr]], Expr]]] = {
    "some input is E": lambda xs: z3.Or([K.is_E(v) for v in xs]),
    "some input carries data": lambda xs: z3.Or([is_data(v) for v in xs]),
    "some input is Q": lambda xs: z3.Or([K.is_Q(v) for v in xs]),
    "some input is L": lambda xs: z3.Or([K.is_L(v) for v in xs]),
    "every input is S": lambda xs: z3.And([K.is_S(v) for v in xs]),
    "otherwise (every input F or S)": lambda xs: z3.BoolVal(True),
}


def _merge_table(xs: Sequence[Expr]) -> Expr:
    """MERGE_RULES compiled to Z3: the first rule whose guard holds decides."""
    out = None
    for guard, result, _why in reversed(MERGE_RULES):
        value = _data_join(xs, k_join) if result.startswith("join") else _CONST[result]
        out = value if out is None else z3.If(_MERGE_GUARDS[guard](xs), value, out)
    return out


def _merge_conforms(alg: Algebra) -> tuple[Expr, Sequence[tuple[str, Expr]]]:
    return (
        z3.And(alg.merge([x, y]) == _merge_table([x, y]), alg.merge(XYZ_V) == _merge_table(XYZ_V)),
        XYZ,
    )


XYZ_V: Final = (x, y, z)


def _final_or_silent(v: Expr) -> Expr:
    return z3.Or(K.is_F(v), K.is_S(v))


def _merge_passes_data(alg: Algebra) -> tuple[Expr, Sequence[tuple[str, Expr]]]:
    claims = []
    for xs in ([x, y], [x, y, z]):
        out = alg.merge(xs)
        claims += [z3.Implies(is_data(v), k_leq(v, out)) for v in xs]
    return z3.And(claims), XYZ


def _merge_final_only_if_all_final(alg: Algebra) -> tuple[Expr, Sequence[tuple[str, Expr]]]:
    claims = []
    for xs in ([x, y], [x, y, z]):
        all_final = z3.And([_final_or_silent(v) for v in xs])
        claims.append(_final_or_silent(alg.merge(xs)) == all_final)
    return z3.And(claims), XYZ


def _lattice_claims() -> list[Obligation]:
    def ob(
        name: str, statement: str, claim: Callable[[Algebra], Expr], named: Sequence[Any] = XYZ
    ) -> Obligation:
        return Obligation(
            name=name,
            kind="law",
            statement=statement,
            source="[GD §2.1, Figure 2], [DUR §3]",
            claim=lambda alg: (claim(alg), named),
        )

    return [
        ob("k_leq_reflexive", "x ≤ x", lambda a: a.leq(x, x), (("x", x),)),
        ob(
            "k_leq_antisymmetric",
            "x ≤ y ∧ y ≤ x ⇒ x = y",
            lambda a: z3.Implies(z3.And(a.leq(x, y), a.leq(y, x)), x == y),
            XY,
        ),
        ob(
            "k_leq_transitive",
            "x ≤ y ∧ y ≤ z ⇒ x ≤ z",
            lambda a: z3.Implies(z3.And(a.leq(x, y), a.leq(y, z)), a.leq(x, z)),
        ),
        ob(
            "k_join_is_upper_bound",
            "x ≤ x ⊔ y ∧ y ≤ x ⊔ y",
            lambda a: z3.And(a.leq(x, a.join(x, y)), a.leq(y, a.join(x, y))),
            XY,
        ),
        ob(
            "k_join_is_least",
            "x ≤ z ∧ y ≤ z ⇒ x ⊔ y ≤ z",
            lambda a: z3.Implies(z3.And(a.leq(x, z), a.leq(y, z)), a.leq(a.join(x, y), z)),
        ),
        ob(
            "k_meet_is_lower_bound",
            "x ⊓ y ≤ x ∧ x ⊓ y ≤ y",
            lambda a: z3.And(a.leq(a.meet(x, y), x), a.leq(a.meet(x, y), y)),
            XY,
        ),
        ob(
            "k_meet_is_greatest",
            "z ≤ x ∧ z ≤ y ⇒ z ≤ x ⊓ y",
            lambda a: z3.Implies(z3.And(a.leq(z, x), a.leq(z, y)), a.leq(z, a.meet(x, y))),
        ),
        ob(
            "k_join_associative",
            "(x ⊔ y) ⊔ z = x ⊔ (y ⊔ z)",
            lambda a: a.join(a.join(x, y), z) == a.join(x, a.join(y, z)),
        ),
        ob("k_join_commutative", "x ⊔ y = y ⊔ x", lambda a: a.join(x, y) == a.join(y, x), XY),
        ob("k_join_idempotent", "x ⊔ x = x", lambda a: a.join(x, x) == x, (("x", x),)),
        ob(
            "k_meet_associative",
            "(x ⊓ y) ⊓ z = x ⊓ (y ⊓ z)",
            lambda a: a.meet(a.meet(x, y), z) == a.meet(x, a.meet(y, z)),
        ),
        ob("k_meet_commutative", "x ⊓ y = y ⊓ x", lambda a: a.meet(x, y) == a.meet(y, x), XY),
        ob("k_meet_idempotent", "x ⊓ x = x", lambda a: a.meet(x, x) == x, (("x", x),)),
        ob(
            "k_absorption",
            "x ⊔ (x ⊓ y) = x = x ⊓ (x ⊔ y)",
            lambda a: z3.And(a.join(x, a.meet(x, y)) == x, a.meet(x, a.join(x, y)) == x),
            XY,
        ),
        ob(
            "k_bottom_and_top",
            "Q ≤ x ≤ E; Q ⊔ x = x; E ⊓ x = x",
            lambda a: z3.And(a.leq(Q, x), a.leq(x, E), a.join(Q, x) == x, a.meet(E, x) == x),
            (("x", x),),
        ),
        ob(
            "k_order_consistent",
            "x ≤ y ⇔ x ⊔ y = y ⇔ x ⊓ y = x",
            lambda a: z3.And(
                a.leq(x, y) == (a.join(x, y) == y), a.leq(x, y) == (a.meet(x, y) == x)
            ),
            XY,
        ),
        ob(
            "k_paper_points",
            "D(a) ⊔ F = D*(a); D*(a) ⊓ S = F; D*(a) ⊓ D*(b) = F; a ≠ b ⇒ D(a) ⊔ D(b) = E",
            lambda a: z3.And(
                a.join(D(p_a), F) == DSTAR(p_a),
                a.meet(DSTAR(p_a), S) == F,
                z3.Implies(p_a != p_b, a.meet(DSTAR(p_a), DSTAR(p_b)) == F),
                z3.Implies(p_a != p_b, a.join(D(p_a), D(p_b)) == E),
            ),
            (("a", p_a), ("b", p_b)),
        ),
    ]


def _monotone2(f: Callable[[Expr, Expr], Expr]) -> Expr:
    return z3.Implies(z3.And(k_leq(x, x2), k_leq(y, y2)), k_leq(f(x, y), f(x2, y2)))


def _transfer_claims() -> list[Obligation]:
    src = "[GD §2.4]"
    return [
        Obligation(
            name="filter_conforms_to_table",
            kind="law",
            statement="filter(x) follows FILTER_ROWS for every x and every predicate p",
            source=src,
            claim=_filter_conforms,
        ),
        Obligation(
            name="filter_monotone",
            kind="law",
            statement="x ≤ y ⇒ filter(x) ≤ filter(y) for every predicate p",
            source=src,
            claim=lambda a: (
                z3.Implies(k_leq(x, y), k_leq(a.filter(x, matches), a.filter(y, matches))),
                (*XY, ("p(payload x)", matches(payload(x))), ("p(payload y)", matches(payload(y)))),
            ),
        ),
        Obligation(
            name="merge_conforms_to_table",
            kind="law",
            statement="merge of 2 and of 3 inputs follows MERGE_RULES",
            source=src,
            claim=_merge_conforms,
        ),
        Obligation(
            name="merge_passes_data",
            kind="law",
            statement="every data input is at or below the merge output (2 and 3 inputs)",
            source=src,
            claim=_merge_passes_data,
        ),
        Obligation(
            name="merge_final_only_if_all_final",
            kind="law",
            statement="the output is F or S exactly when every input is F or S (2 and 3 inputs)",
            source=src,
            claim=_merge_final_only_if_all_final,
        ),
        Obligation(
            name="merge2_monotone",
            kind="law",
            statement="x ≤ x2 ∧ y ≤ y2 ⇒ merge(x, y) ≤ merge(x2, y2)",
            source=src,
            claim=lambda a: (
                _monotone2(lambda u, v: a.merge([u, v])),
                (*XY, ("x2", x2), ("y2", y2)),
            ),
        ),
        Obligation(
            name="merge3_monotone",
            kind="law",
            statement="merge of 3 inputs is monotone in every input",
            source=src,
            claim=lambda a: (
                z3.Implies(
                    z3.And(k_leq(x, x2), k_leq(y, y2), k_leq(z, z2)),
                    k_leq(a.merge([x, y, z]), a.merge([x2, y2, z2])),
                ),
                (*XYZ, ("x2", x2), ("y2", y2), ("z2", z2)),
            ),
        ),
        Obligation(
            name="merge_is_a_fold",
            kind="law",
            statement="merge(x, y) = merge(y, x); merge(x, y, z) = merge(merge(x, y), z)",
            source=src,
            claim=lambda a: (
                z3.And(
                    a.merge([x, y]) == a.merge([y, x]),
                    a.merge([x, y, z]) == a.merge([a.merge([x, y]), z]),
                ),
                XYZ,
            ),
        ),
    ]


def _forgetting_claims() -> list[Obligation]:
    def lowers(name: str, fn: Callable[[Expr], Expr], source: str) -> Obligation:
        return Obligation(
            name=f"{name}_lowers",
            kind="law",
            statement=f"{name}(x) ≤ x",
            source=source,
            claim=lambda a: (a.leq(fn(x), x), (("x", x),)),
        )

    return [
        lowers("forget", forget, "[GD §2.1]"),
        lowers("finalize", finalize, "[GD §2.1]"),
        lowers("release", release, "[DUR §3]"),
        Obligation(
            name="forget_curiosity_lowers",
            kind="law",
            statement="forget_curiosity(c) ≤ c in N < C < A",
            source="[GD §3.1]",
            claim=lambda a: (c_leq(forget_curiosity(c1), c1), (("c", c1),)),
        ),
        Obligation(
            name="release_monotone",
            kind="law",
            statement="x ≤ y ⇒ release(x) ≤ release(y)",
            source="[DUR §3]",
            claim=lambda a: (z3.Implies(a.leq(x, y), a.leq(release(x), release(y))), XY),
        ),
    ]


def _curiosity_claims() -> list[Obligation]:
    src = "[GD §2.1.1, §2.4, §3.1]"
    d_1, d_2, d_3 = (ack1, cur1), (ack2, cur2), (ack3, cur3)
    e_1, e_2 = (ack1b, cur1b), (ack2b, cur2b)
    identity = (z3.BoolVal(True), z3.BoolVal(False))
    demand_vars = (("d1", d_1), ("d2", d_2), ("d1'", e_1), ("d2'", e_2))

    def show_demands(pairs: Sequence[tuple[str, tuple[Expr, Expr]]]) -> list[tuple[str, Expr]]:
        out: list[tuple[str, Expr]] = []
        for n, (ack, cur) in pairs:
            out += [(f"{n}.acked", ack), (f"{n}.curious", cur)]
        return out

    chain = z3.And(
        c_leq(c1, c1),
        z3.Implies(z3.And(c_leq(c1, c2), c_leq(c2, c1)), c1 == c2),
        z3.Implies(z3.And(c_leq(c1, c2), c_leq(c2, c3)), c_leq(c1, c3)),
        c_leq(c1, c_join(c1, c2)),
        c_leq(c2, c_join(c1, c2)),
        z3.Implies(z3.And(c_leq(c1, c3), c_leq(c2, c3)), c_leq(c_join(c1, c2), c3)),
        c_leq(c_meet(c1, c2), c1),
        c_leq(c_meet(c1, c2), c2),
        z3.Implies(z3.And(c_leq(c3, c1), c_leq(c3, c2)), c_leq(c3, c_meet(c1, c2))),
        c_leq(N, c1),
        c_leq(c1, A),
    )
    return [
        Obligation(
            name="curiosity_chain_is_lattice",
            kind="law",
            statement="N < C < A: partial order, join is the lub, meet the glb, N bottom, A top",
            source=src,
            claim=lambda a: (chain, (("c1", c1), ("c2", c2), ("c3", c3))),
        ),
        Obligation(
            name="demand_combine_monotone",
            kind="law",
            statement="d1 ≤ d1' ∧ d2 ≤ d2' ⇒ combine(d1, d2) ≤ combine(d1', d2') "
            "(product order, False < True)",
            source=src,
            claim=lambda a: (
                z3.Implies(
                    z3.And(demand_leq(d_1, e_1), demand_leq(d_2, e_2)),
                    demand_leq(combine([d_1, d_2]), combine([e_1, e_2])),
                ),
                show_demands(demand_vars),
            ),
        ),
        Obligation(
            name="demand_combine_laws",
            kind="law",
            statement="combine is associative, commutative, idempotent, with identity (acked, "
            "not curious)",
            source=src,
            claim=lambda a: (
                z3.And(
                    pair_eq(
                        combine([combine([d_1, d_2]), d_3]), combine([d_1, combine([d_2, d_3])])
                    ),
                    pair_eq(combine([d_1, d_2]), combine([d_2, d_1])),
                    pair_eq(combine([d_1, d_1]), d_1),
                    pair_eq(combine([d_1, identity]), d_1),
                ),
                show_demands((("d1", d_1), ("d2", d_2), ("d3", d_3))),
            ),
        ),
        Obligation(
            name="demand_recomposes_to_gd_rule",
            kind="law",
            statement="recompose(combine(decompose(c_i))) = GD's rule, for 1, 2 and 3 "
            "downstream streams",
            source=src,
            claim=lambda a: (
                z3.And(
                    [
                        recompose(combine([decompose(c) for c in cs])) == naive_upstream(cs)
                        for cs in ([c1], [c1, c2], [c1, c2, c3])
                    ]
                ),
                (("c1", c1), ("c2", c2), ("c3", c3)),
            ),
        ),
    ]


def _link_claims() -> list[Obligation]:
    src = "[GD §2.1.1]"
    pk, pc = x, c1
    qk, qc = y, c2
    named = (("k", pk), ("c", pc), ("k'", qk), ("c'", qc))
    return [
        Obligation(
            name="link_extensive",
            kind="law",
            statement="(k, c) ≤ link(k, c) in the product order",
            source=src,
            claim=lambda a: (pair_leq((pk, pc), a.link(pk, pc)), named[:2]),
        ),
        Obligation(
            name="link_monotone",
            kind="law",
            statement="(k, c) ≤ (k', c') ⇒ link(k, c) ≤ link(k', c')",
            source=src,
            claim=lambda a: (
                z3.Implies(pair_leq((pk, pc), (qk, qc)), pair_leq(a.link(pk, pc), a.link(qk, qc))),
                named,
            ),
        ),
        Obligation(
            name="link_idempotent",
            kind="law",
            statement="link(link(k, c)) = link(k, c)",
            source=src,
            claim=lambda a: (pair_eq(a.link(*a.link(pk, pc)), a.link(pk, pc)), named[:2]),
        ),
        Obligation(
            name="link_fixed_points_are_linked",
            kind="law",
            statement="link(k, c) = (k, c) ⇔ (F ≤ k ⇔ c = A)",
            source=src,
            claim=lambda a: (pair_eq(a.link(pk, pc), (pk, pc)) == linked(pk, pc), named[:2]),
        ),
        Obligation(
            name="gd_resolved_implies_dur_resolved",
            kind="law",
            statement="on linked pairs and released (L, A) ticks: (c = A ∨ k = D) ⇒ k ≠ Q, "
            "so GD's doubt horizon never passes DUR's",
            source="[GD §2.3], [DUR §4.1]",
            claim=lambda a: (
                z3.Implies(
                    z3.Or(linked(pk, pc), z3.And(K.is_L(pk), pc == A)),
                    z3.Implies(z3.Or(pc == A, K.is_D(pk)), z3.Not(K.is_Q(pk))),
                ),
                named[:2],
            ),
        ),
        Obligation(
            name="horizons_agree_without_L",
            kind="law",
            statement="on linked pairs with k ≠ L: (c = A ∨ k = D) ⇔ k ≠ Q, so the two doubt "
            "horizons differ only at unacknowledged L ticks",
            source="[GD §2.3], [DUR §4.1]",
            claim=lambda a: (
                z3.Implies(
                    z3.And(linked(pk, pc), z3.Not(K.is_L(pk))),
                    z3.Or(pc == A, K.is_D(pk)) == z3.Not(K.is_Q(pk)),
                ),
                named[:2],
            ),
        ),
    ]


def _fact(
    name: str,
    statement: str,
    source: str,
    expected: Status,
    claim: Callable[[Algebra], tuple[Expr, Sequence[tuple[str, Expr]]]],
) -> Obligation:
    return Obligation(
        name=name, kind="fact", statement=statement, source=source, claim=claim, expected=expected
    )


def _distributive(a: Algebra) -> Expr:
    return a.meet(x, a.join(y, z)) == a.join(a.meet(x, y), a.meet(x, z))


def _one_payload(*vs: Expr) -> Expr:
    return z3.And([z3.Implies(is_data(v), payload(v) == 0) for v in vs])


def _fact_claims() -> list[Obligation]:
    d_1, d_2 = decompose(c1), decompose(c2)
    return [
        _fact(
            "knowledge_distributive",
            "x ⊓ (y ⊔ z) = (x ⊓ y) ⊔ (x ⊓ z) with payloads",
            "[GD §2.2]",
            "refuted",
            lambda a: (_distributive(a), XYZ),
        ),
        _fact(
            "knowledge_modular",
            "x ≤ z ⇒ x ⊔ (y ⊓ z) = (x ⊔ y) ⊓ z with payloads",
            "[GD §2.2]",
            "refuted",
            lambda a: (
                z3.Implies(a.leq(x, z), a.join(x, a.meet(y, z)) == a.meet(a.join(x, y), z)),
                XYZ,
            ),
        ),
        _fact(
            "knowledge_distributive_one_payload",
            "distributivity when every data value carries the same payload",
            "[GD §2.1, Figure 2]",
            "proved",
            lambda a: (z3.Implies(_one_payload(x, y, z), _distributive(a)), XYZ),
        ),
        _fact(
            "knowledge_distributive_without_data",
            "distributivity on the payload-free values Q, L, F, S, E",
            "[GD §2.1, Figure 2], [DUR §3]",
            "proved",
            lambda a: (
                z3.Implies(z3.Not(z3.Or([is_data(v) for v in (x, y, z)])), _distributive(a)),
                XYZ,
            ),
        ),
        _fact(
            "naive_curiosity_rule_monotone",
            "GD's rule (any C gives C, all A gives A, else N) is monotone in N < C < A",
            "[GD §2.4]",
            "refuted",
            lambda a: (
                z3.Implies(
                    z3.And(c_leq(c1, d1), c_leq(c2, d2)),
                    c_leq(naive_upstream([c1, c2]), naive_upstream([d1, d2])),
                ),
                (("c1", c1), ("c2", c2), ("c1'", d1), ("c2'", d2)),
            ),
        ),
        _fact(
            "decompose_monotone",
            "c ≤ c' in N < C < A ⇒ decompose(c) ≤ decompose(c') (product order)",
            "[GD §2.1.1]",
            "refuted",
            lambda a: (
                z3.Implies(c_leq(c1, c2), demand_leq(d_1, d_2)),
                (("c", c1), ("c'", c2)),
            ),
        ),
        _fact(
            "finalize_monotone",
            "x ≤ y ⇒ finalize(x) ≤ finalize(y)",
            "[GD §2.1]",
            "refuted",
            lambda a: (z3.Implies(a.leq(x, y), a.leq(finalize(x), finalize(y))), XY),
        ),
        _fact(
            "link_monotone_if_L_keeps_A",
            "were a released (L, A) tick a fixed point of the linkage, would link stay monotone?",
            "[GD §2.1.1], [DUR §3]",
            "refuted",
            lambda a: by_name("link_monotone").claim(VARIANTS["link-L-keeps-A"]),
        ),
        _fact(
            "filter_preserves_join",
            "filter(x ⊔ y) = filter(x) ⊔ filter(y)",
            "[GD §2.4]",
            "refuted",
            lambda a: (
                a.filter(a.join(x, y), matches)
                == a.join(a.filter(x, matches), a.filter(y, matches)),
                (*XY, ("p(payload x)", matches(payload(x))), ("p(payload y)", matches(payload(y)))),
            ),
        ),
        _fact(
            "merge2_is_join",
            "merge(x, y) = x ⊔ y (is merging just accumulation?)",
            "[GD §2.4]",
            "refuted",
            lambda a: (a.merge([x, y]) == a.join(x, y), XY),
        ),
        _fact(
            "dur_resolved_implies_gd_resolved",
            "on linked pairs: k ≠ Q ⇒ (c = A ∨ k = D) — are the two horizons equal?",
            "[GD §2.3], [DUR §4.1]",
            "refuted",
            lambda a: (
                z3.Implies(linked(x, c1), z3.Implies(z3.Not(K.is_Q(x)), z3.Or(c1 == A, K.is_D(x)))),
                (("k", x), ("c", c1)),
            ),
        ),
        _fact(
            "gd_resolved_implies_dur_resolved_any_pair",
            "on every pair, linked or not: (c = A ∨ k = D) ⇒ k ≠ Q",
            "[GD §2.3], [DUR §4.1]",
            "refuted",
            lambda a: (
                z3.Implies(z3.Or(c1 == A, K.is_D(x)), z3.Not(K.is_Q(x))),
                (("k", x), ("c", c1)),
            ),
        ),
    ]


def _release_claims() -> list[Obligation]:
    """The release protocol's inductive invariant and its twins [DUR §3]
    (:mod:`gapless.spec.durable_proofs`); they do not depend on the algebra."""
    return [
        Obligation(
            name=r.name,
            kind="inductive" if r.kind == "inductive" else "twin",
            statement=r.statement,
            source=r.source,
            claim=lambda _a, r=r: r.claim(),  # type: ignore[misc]
            expected="proved" if r.expected == "proved" else "refuted",
        )
        for r in durable_proofs.ROWS
    ]


_OBLIGATIONS: tuple[Obligation, ...] | None = None


def obligations() -> tuple[Obligation, ...]:
    """Every law, then every fact, then the release protocol's rows (built once)."""
    global _OBLIGATIONS
    if _OBLIGATIONS is None:
        _OBLIGATIONS = (
            *_lattice_claims(),
            *_transfer_claims(),
            *_forgetting_claims(),
            *_curiosity_claims(),
            *_link_claims(),
            *_fact_claims(),
            *_release_claims(),
        )
    return _OBLIGATIONS
