"""Reference semantics of the lattices of [GD §2] and [DUR §3]: small, slow, obviously correct.

Theory of operation
-------------------
This module is the *reference answer* that ``gapless.impl`` is tested against exhaustively
and that the Z3 encoding of :mod:`gapless.spec.proofs` is checked against on concrete values.
It imports nothing of ours and nothing outside the standard library. Everything is a plain
string over a finite universe with two payloads, ``a`` and ``b`` (two suffice: every law
about at most three values needs at most three payloads, and ``a`` vs ``b`` already covers
"same payload" and "different payload" for every pair).

* Knowledge values are the strings ``Q``, ``L``, ``D(a)``, ``D(b)``, ``D*(a)``, ``D*(b)``,
  ``F``, ``S``, ``E`` [GD §2.1, DUR §3].
* The order is *defined* by its covering relation :data:`KNOWLEDGE_COVERS` (the Hasse edges)
  and nothing else: :func:`leq` is its reflexive-transitive closure; :func:`join` and
  :func:`meet` are found by searching all values for the least upper / greatest lower bound
  (and fail loudly if there is none, so the tables really are a lattice).
* Curiosity values are ``N``, ``C``, ``A`` on the chain ``N < C < A`` [GD §2.1.1]; the naive
  rule of [GD §2.4] (:func:`naive_upstream`) and its decomposition into a monotone
  (acked, curious) pair (:func:`decompose`, :func:`combine`, :func:`recompose`).
* The transfer functions are *tables of rows* (:data:`FILTER_ROWS`, :data:`MERGE_RULES`),
  interpreted here in Python, rendered into ``spec/lattices.md`` and compiled into Z3 by
  :mod:`gapless.spec.proofs`, so the three can never say different things.
* :func:`link` finds, by search, the least linked pair above a (knowledge, curiosity) pair:
  the closure of the F <=> A linkage [GD §2.1.1].

``python -m gapless.spec.lattices`` prints the generated Markdown blocks of
``spec/lattices.md`` (Hasse diagrams and tables); ``python -m gapless.spec.lattices
spec/lattices.md`` regenerates them in place; a test checks the file holds exactly them.

>>> join("D(a)", "F"), join("D(a)", "D(b)"), meet("D*(a)", "S"), meet("D(a)", "S")
('D*(a)', 'E', 'F', 'L')
>>> naive_upstream(["N", "C"]), naive_upstream(["N", "A"]), naive_upstream(["A", "A"])
('C', 'N', 'A')
>>> link("Q", "A"), link("D(a)", "A"), link("S", "N"), link("L", "C")
(('F', 'A'), ('D*(a)', 'A'), ('S', 'A'), ('L', 'C'))
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Final

__all__ = [
    "CURIOSITY",
    "CURIOSITY_COVERS",
    "DEMANDS",
    "FILTER_ROWS",
    "KNOWLEDGE",
    "KNOWLEDGE_COVERS",
    "MERGE_RULES",
    "PAYLOADS",
    "c_join",
    "c_leq",
    "c_meet",
    "combine",
    "decompose",
    "demand_leq",
    "dur_resolved",
    "filter_value",
    "finalize",
    "forget",
    "forget_curiosity",
    "gd_resolved",
    "generated_blocks",
    "hasse_mermaid",
    "join",
    "kind",
    "leq",
    "link",
    "linked",
    "meet",
    "merge_values",
    "naive_upstream",
    "payload",
    "recompose",
    "release",
    "update_blocks",
    "upstream",
]

PAYLOADS: Final = ("a", "b")

KNOWLEDGE: Final = ("Q", "L", "D(a)", "D(b)", "F", "D*(a)", "D*(b)", "S", "E")
"""Every knowledge value of the two-payload universe, bottom first."""

KNOWLEDGE_COVERS: Final = (
    ("Q", "L"),  # L is knowledge: a gap message can be delivered for it [DUR §2, §3]
    ("L", "D(a)"),  # data refines "lost"
    ("L", "D(b)"),
    ("L", "F"),  # a silence refines "lost"
    ("D(a)", "D*(a)"),  # D* is D that was delivered [GD §2.1]
    ("D(b)", "D*(b)"),
    ("F", "D*(a)"),  # F is the glb of D* and S [GD §2.1]
    ("F", "D*(b)"),
    ("F", "S"),
    ("D*(a)", "E"),  # E is the top [GD §2.1]
    ("D*(b)", "E"),
    ("S", "E"),
)
"""The covering relation (Hasse edges) ``lower -> upper`` of the knowledge order."""

CURIOSITY: Final = ("N", "C", "A")
CURIOSITY_COVERS: Final = (("N", "C"), ("C", "A"))
"""The accumulation chain N < C < A at one stream [GD §2.1.1, §3.1]."""


# -- order, join and meet by closure and search ----------------------------------------


def _closure(
    universe: Sequence[str], covers: Iterable[tuple[str, str]]
) -> frozenset[tuple[str, str]]:
    """Reflexive-transitive closure of ``covers`` over ``universe`` (Warshall)."""
    rel = {(x, x) for x in universe} | set(covers)
    for k in universe:
        for i in universe:
            for j in universe:
                if (i, k) in rel and (k, j) in rel:
                    rel.add((i, j))
    return frozenset(rel)


_K_ORDER: Final = _closure(KNOWLEDGE, KNOWLEDGE_COVERS)
_C_ORDER: Final = _closure(CURIOSITY, CURIOSITY_COVERS)


def _bound(
    universe: Sequence[str], order: frozenset[tuple[str, str]], x: str, y: str, up: bool
) -> str:
    """The least upper (``up``) or greatest lower bound of ``x`` and ``y``, by search."""

    def below(u: str, v: str) -> bool:
        return (u, v) in order if up else (v, u) in order

    bounds = [z for z in universe if below(x, z) and below(y, z)]
    best = [z for z in bounds if all(below(z, w) for w in bounds)]
    if len(best) != 1:
        what = "least upper" if up else "greatest lower"
        raise ValueError(f"{x} and {y} have no {what} bound: candidates {best}")
    return best[0]


def _check(universe: Sequence[str], value: str, what: str) -> None:
    if value not in universe:
        raise ValueError(f"{what}: {value!r} is not one of {', '.join(universe)}")


def leq(x: str, y: str) -> bool:
    """``x`` is at or below ``y``: the reflexive-transitive closure of the Hasse edges."""
    _check(KNOWLEDGE, x, "leq")
    _check(KNOWLEDGE, y, "leq")
    return (x, y) in _K_ORDER


def join(x: str, y: str) -> str:
    """Least upper bound, found by search (knowledge accumulation [GD §2.1])."""
    _check(KNOWLEDGE, x, "join")
    _check(KNOWLEDGE, y, "join")
    return _bound(KNOWLEDGE, _K_ORDER, x, y, up=True)


def meet(x: str, y: str) -> str:
    """Greatest lower bound, found by search."""
    _check(KNOWLEDGE, x, "meet")
    _check(KNOWLEDGE, y, "meet")
    return _bound(KNOWLEDGE, _K_ORDER, x, y, up=False)


def kind(x: str) -> str:
    """``D(a)`` -> ``D``, ``D*(b)`` -> ``D*``, ``S`` -> ``S``."""
    return x.split("(")[0]


def payload(x: str) -> str | None:
    """``D(a)`` -> ``a``; ``None`` for the payload-free values."""
    return x[x.index("(") + 1 : -1] if "(" in x else None


def c_leq(x: str, y: str) -> bool:
    """The curiosity chain N < C < A."""
    _check(CURIOSITY, x, "c_leq")
    _check(CURIOSITY, y, "c_leq")
    return (x, y) in _C_ORDER


def c_join(x: str, y: str) -> str:
    return _bound(CURIOSITY, _C_ORDER, x, y, up=True)


def c_meet(x: str, y: str) -> str:
    return _bound(CURIOSITY, _C_ORDER, x, y, up=False)


# -- forgetting [GD §2.1, §3.1, DUR §3] ------------------------------------------------


def forget(x: str) -> str:
    """Any stream but the pubend may drop a tick to Q [GD §2.1]."""
    _check(KNOWLEDGE, x, "forget")
    return "Q"


def finalize(x: str) -> str:
    """Any S or D* tick is lowered to F [GD §2.1]."""
    _check(KNOWLEDGE, x, "finalize")
    return "F" if kind(x) in ("S", "D*") else x


def release(x: str) -> str:
    """The pubend's release protocol changes a tick to L [DUR §3]; Q is below L and stays."""
    _check(KNOWLEDGE, x, "release")
    return "Q" if x == "Q" else "L"


def forget_curiosity(c: str) -> str:
    """C ticks are forgotten (to N) after the minimum repetition interval [GD §3.1]."""
    _check(CURIOSITY, c, "forget_curiosity")
    return "N" if c == "C" else c


# -- transfer tables [GD §2.4] ---------------------------------------------------------

FILTER_ROWS: Final = (
    # (input kind, predicate holds? None = not consulted, output; "same" = the input, why)
    ("Q", None, "Q", "nothing known passes as nothing known"),
    ("L", None, "L", "a lost tick may have held a match: the loss passes [DUR §2 gap message]"),
    ("D", True, "same", "[GD §2.4] passes a D tick unchanged if it matches"),
    ("D", False, "F", "[GD §2.4] otherwise it converts it to an F"),
    ("D*", True, "same", "D* is D that was delivered: same rule as D"),
    ("D*", False, "F", "same rule as D"),
    ("F", None, "F", "[GD §2.4] passes an F tick unchanged"),
    ("S", None, "S", "silence stays silence [GD §2.1: S includes filtered out]"),
    ("E", None, "E", "errors are never hidden"),
)
"""The filter edge's table, one row per input kind and predicate outcome."""


def filter_value(x: str, matches: Callable[[str], bool]) -> str:
    """Interpret :data:`FILTER_ROWS` for one tick; ``matches`` judges a payload."""
    _check(KNOWLEDGE, x, "filter_value")
    k, p = kind(x), payload(x)
    for row_kind, holds, out, _why in FILTER_ROWS:
        if row_kind == k and (holds is None or holds == matches(str(p))):
            return x if out == "same" else out
    raise AssertionError(f"FILTER_ROWS has no row for {x}")  # pragma: no cover


MERGE_RULES: Final = (
    # (guard, output, why) -- the first rule whose guard holds decides
    ("some input is E", "E", "errors are never hidden"),
    ("some input carries data", "join of the data inputs", "[GD §2.4] a merge passes a D tick"),
    ("some input is Q", "Q", "unknown input: the output cannot be final yet"),
    ("some input is L", "L", "a lost input may have held data: the loss passes [DUR §3]"),
    ("every input is S", "S", "silence everywhere"),
    ("otherwise (every input F or S)", "F", "[GD §2.4] passes F only if all inputs are F"),
)
"""The merge hyperedge's rules; GD's total order merge [GD §2.3, §2.4]."""


def merge_values(xs: Sequence[str]) -> str:
    """Interpret :data:`MERGE_RULES` for one tick of all a merge's inputs."""
    if not xs:
        raise ValueError("merge_values: a merge needs at least one input")
    for x in xs:
        _check(KNOWLEDGE, x, "merge_values")
    data = [x for x in xs if kind(x) in ("D", "D*")]
    kinds = {kind(x) for x in xs}
    if "E" in kinds:
        return "E"
    if data:
        out = "Q"
        for x in data:
            out = join(out, x)
        return out
    if "Q" in kinds:
        return "Q"
    if "L" in kinds:
        return "L"
    if kinds == {"S"}:
        return "S"
    return "F"


# -- curiosity combination [GD §2.4, §3.1] ---------------------------------------------


def naive_upstream(cs: Iterable[str]) -> str:
    """GD's rule read literally: any downstream C gives C, all A gives A, otherwise N
    [GD §2.4, §3.1]. Not monotone in N < C < A (see the facts of ``gapless prove``)."""
    cs = list(cs)
    for c in cs:
        _check(CURIOSITY, c, "naive_upstream")
    if "C" in cs:
        return "C"
    if all(c == "A" for c in cs):
        return "A"
    return "N"


DEMANDS: Final = ((False, False), (False, True), (True, False), (True, True))
"""All (acked, curious) pairs; ordered componentwise, False < True."""


def demand_leq(x: tuple[bool, bool], y: tuple[bool, bool]) -> bool:
    return x[0] <= y[0] and x[1] <= y[1]


def decompose(c: str) -> tuple[bool, bool]:
    """N -> (not acked, not curious), C -> (not acked, curious), A -> (acked, not curious)."""
    _check(CURIOSITY, c, "decompose")
    return (c == "A", c == "C")


def combine(ds: Iterable[tuple[bool, bool]]) -> tuple[bool, bool]:
    """Acked by AND, curious by OR; the empty combination is (acked, not curious)."""
    ds = list(ds)
    return (all(d[0] for d in ds), any(d[1] for d in ds))


def recompose(d: tuple[bool, bool]) -> str:
    """Any curiosity wins (a nack is due); else all acked gives A; else N."""
    acked, curious = d
    if curious:
        return "C"
    return "A" if acked else "N"


def upstream(cs: Iterable[str]) -> str:
    """The combined curiosity through the decomposition; equals :func:`naive_upstream`."""
    return recompose(combine(decompose(c) for c in cs))


# -- the F <=> A linkage [GD §2.1.1] ---------------------------------------------------


def linked(k: str, c: str) -> bool:
    """A pair obeys the linkage: knowledge at or above F exactly when curiosity is A."""
    return leq("F", k) == (c == "A")


def link(k: str, c: str) -> tuple[str, str]:
    """The least linked pair at or above ``(k, c)`` in the product order, by search."""
    _check(KNOWLEDGE, k, "link")
    _check(CURIOSITY, c, "link")
    above = [
        (k2, c2)
        for k2 in KNOWLEDGE
        for c2 in CURIOSITY
        if leq(k, k2) and c_leq(c, c2) and linked(k2, c2)
    ]
    least = [p for p in above if all(leq(p[0], q[0]) and c_leq(p[1], q[1]) for q in above)]
    if len(least) != 1:
        raise ValueError(f"link({k}, {c}): no least linked pair above it: {least}")
    return least[0]


# -- the two doubt horizons, per tick [GD §2.3, DUR §4.1] ------------------------------


def gd_resolved(k: str, c: str) -> bool:
    """A tick that does not hold back GD's doubt horizon: ``C_t = A`` or ``K_t = D`` [GD §2.3]."""
    return c == "A" or kind(k) == "D"


def dur_resolved(k: str, c: str) -> bool:
    """A tick that does not hold back DUR's doubt horizon: ``K_t`` is not Q [DUR §4.1]."""
    del c
    return k != "Q"


# -- generated documentation -----------------------------------------------------------


def _node_id(x: str) -> str:
    return x.replace("*", "star").replace("(", "_").replace(")", "")


def hasse_mermaid(universe: Sequence[str], covers: Iterable[tuple[str, str]]) -> str:
    """A Mermaid ``graph BT`` (bottom to top) of the covering relation."""
    lines = ["```mermaid", "graph BT"]
    lines += [f'    {_node_id(x)}["{x}"]' for x in universe]
    lines += [f"    {_node_id(lo)} --> {_node_id(hi)}" for lo, hi in covers]
    lines.append("```")
    return "\n".join(lines)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _join_table() -> str:
    return _table(["⊔", *KNOWLEDGE], [[x, *(join(x, y) for y in KNOWLEDGE)] for x in KNOWLEDGE])


def _meet_table() -> str:
    return _table(["⊓", *KNOWLEDGE], [[x, *(meet(x, y) for y in KNOWLEDGE)] for x in KNOWLEDGE])


def _filter_table() -> str:
    def holds(h: bool | None) -> str:
        return "—" if h is None else ("p(a) holds" if h else "p(a) fails")

    return _table(
        ["input", "predicate", "output", "why"],
        [(k, holds(h), "unchanged" if o == "same" else o, w) for k, h, o, w in FILTER_ROWS],
    )


def _merge_table() -> str:
    return _table(["first rule that applies", "output", "why"], MERGE_RULES)


def _link_table() -> str:
    rows = [[k, *("({}, {})".format(*link(k, c)) for c in CURIOSITY)] for k in KNOWLEDGE]
    return _table(["link(k, c)", *CURIOSITY], rows)


def _combine_table() -> str:
    rows = []
    for x, y in itertools.product(CURIOSITY, repeat=2):
        rows.append([x, y, naive_upstream([x, y]), str(combine([decompose(x), decompose(y)]))])
    return _table(["downstream 1", "downstream 2", "upstream", "(acked, curious)"], rows)


def generated_blocks() -> dict[str, str]:
    """Every generated block of ``spec/lattices.md``, by name (sorted)."""
    blocks = {
        "knowledge-hasse": hasse_mermaid(KNOWLEDGE, KNOWLEDGE_COVERS),
        "curiosity-hasse": hasse_mermaid(CURIOSITY, CURIOSITY_COVERS),
        "join-table": _join_table(),
        "meet-table": _meet_table(),
        "filter-table": _filter_table(),
        "merge-table": _merge_table(),
        "combine-table": _combine_table(),
        "link-table": _link_table(),
    }
    return dict(sorted(blocks.items()))


_BLOCK_BEGIN: Final = "<!-- BEGIN generated: {} -->"
_BLOCK_END: Final = "<!-- END generated: {} -->"


def update_blocks(text: str) -> str:
    """``text`` with every generated block (between its BEGIN/END markers) regenerated.

    Raises ``ValueError`` for a marker that names no block or a block the text lacks, so
    ``spec/lattices.md`` always holds each of :func:`generated_blocks` exactly once.
    """
    for name, body in generated_blocks().items():
        begin, end = _BLOCK_BEGIN.format(name), _BLOCK_END.format(name)
        if text.count(begin) != 1 or text.count(end) != 1:
            raise ValueError(f"update_blocks: block {name!r} must appear exactly once")
        head, rest = text.split(begin)
        _old, tail = rest.split(end)
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    known = set(generated_blocks())
    for line in text.splitlines():
        if line.startswith("<!-- BEGIN generated: "):
            name = line.removeprefix("<!-- BEGIN generated: ").removesuffix(" -->")
            if name not in known:
                raise ValueError(f"update_blocks: unknown generated block {name!r}")
    return text


def _main(argv: Sequence[str]) -> None:  # pragma: no cover - exercised by hand
    """Print every block, or with a path, regenerate that file's blocks in place."""
    if not argv:
        for name, text in generated_blocks().items():
            print(f"{_BLOCK_BEGIN.format(name)}\n{text}\n{_BLOCK_END.format(name)}\n")
        return
    with open(argv[0], encoding="utf-8") as fh:
        text = fh.read()
    with open(argv[0], "w", encoding="utf-8") as fh:
        fh.write(update_blocks(text))


if __name__ == "__main__":  # pragma: no cover
    import sys

    _main(sys.argv[1:])
