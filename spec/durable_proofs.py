"""Z3: the release protocol's invariant is inductive, step by step [DUR §3, §4.1].

Theory of operation
-------------------
The symbolic state is one pubend's release protocol over two SHBs (``0``, ``1``) below one
node below the pubend, and two durable subscribers (``0``, ``1``); every number is a free Z3
``Int`` and every flag a free ``Bool``, so a proof covers every value:

* per SHB ``i``: ``ld_i`` (latestDelivered(p)), the highest pair it sent upstream
  (``rr_i``, ``rd_i``), and per subscriber ``s`` a record: ``pres_i_s`` (registered here),
  ``act_i_s`` (active, not a pending reconnect-anywhere registration) and ``rel_i_s``
  (released(s, p)); ``released_i = min(ld_i, min over active records rel_i_s)``;
* at the node, the highest pair received from each SHB (``nr_i``, ``nd_i``); at the pubend
  ``Tr``, ``Td``, its time ``T`` and the last L tick ``lmax`` (L ticks are the prefix
  ``[0, lmax]``); ``early`` and ``mr`` (maxRetain) are the early-release policy;
* per subscriber, ghost facts: ``sub_s`` (it is subscribed) and ``acked_s`` (the latest CT it
  acknowledged, or started at).

The invariant ``INV`` chains the minima from the subscribers to the pubend and states the
protocol's two promises: ``Tr <= Td``, and the L rule: every L tick ``t`` satisfies ``t <= Tr``,
or ``t <= Td`` and ``T - t > mr`` with early release on [DUR §3]. From the chain follow the
consequences the paper wants, also stated in ``INV``: no L tick above any SHB's latestDelivered
(the constream never meets a gap, [DUR §4.1]) and no L tick above what a subscribed subscriber
acknowledged unless early release allowed it.

Each step (an ack, latestDelivered advancing, a report sent and one received — late, repeated or
out of order —, the min propagating to the pubend, the L step, the clock, a subscriber joining,
leaving, moving to another SHB (register — at a CT presented, or in ack mode SHB at the CT the
old SHB keeps —, activate, unregister the old record) and an SHB crash)
is a guarded transition; its row asks Z3 for a state satisfying ``INV`` and the guard whose
successor breaks ``INV``: ``unsat`` proves the step preserves it (kind ``"inductive"``). The
steps are instantiated for every choice of SHB and subscriber. Each step has a *twin*, the same
step with one planted bug (kind ``"twin"``), which must be refuted with a witness: the proof is
not vacuous, and the witness shows how the bug breaks the release protocol.

This module imports nothing of ours; :mod:`gapless.spec.proofs` lists its rows beside the
lattice laws (``gapless prove``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, final

import attrs
import z3

__all__ = ["INV", "ROWS", "ReleaseRow", "initial_state", "invariant", "state"]

Expr = Any  # a z3 expression
State = dict[str, Expr]

SHBS: Final = (0, 1)
SUBS: Final = (0, 1)


def state(tag: str = "") -> State:
    """A fully symbolic state; ``tag`` distinguishes copies."""
    st: State = {}
    for i in SHBS:
        for name in ("ld", "rr", "rd", "nr", "nd"):
            st[f"{name}{i}"] = z3.Int(f"{name}{i}{tag}")
        for s in SUBS:
            st[f"pres{i}{s}"] = z3.Bool(f"pres{i}{s}{tag}")
            st[f"act{i}{s}"] = z3.Bool(f"act{i}{s}{tag}")
            st[f"rel{i}{s}"] = z3.Int(f"rel{i}{s}{tag}")
    for s in SUBS:
        st[f"sub{s}"] = z3.Bool(f"sub{s}{tag}")
        st[f"acked{s}"] = z3.Int(f"acked{s}{tag}")
    for name in ("Tr", "Td", "T", "lmax", "mr"):
        st[name] = z3.Int(f"{name}{tag}")
    st["early"] = z3.Bool(f"early{tag}")
    return st


def initial_state() -> State:
    """Nothing delivered, reported or released; no subscriber; a free policy."""
    st = state("_0")
    for k in list(st):
        if k in ("mr", "early"):
            continue
        st[k] = z3.BoolVal(False) if st[k].sort() == z3.BoolSort() else z3.IntVal(-1)
    return st


def _max(a: Expr, b: Expr) -> Expr:
    return z3.If(a >= b, a, b)


def _min(a: Expr, b: Expr) -> Expr:
    return z3.If(a <= b, a, b)


def released(st: State, i: int, with_ld: bool = True) -> Expr:
    """``released(p)`` at SHB ``i`` [DUR §4.1] (``with_ld=False``: a twin's broken form)."""
    m = st[f"ld{i}"]
    first = not with_ld
    for s in SUBS:
        counts = z3.And(st[f"pres{i}{s}"], st[f"act{i}{s}"])
        rel = st[f"rel{i}{s}"]
        m = rel if first else z3.If(z3.And(counts, rel < m), rel, m)
        first = False
    return m


def _early_ok(st: State, t: Expr) -> Expr:
    return z3.And(st["early"], st["T"] - t > st["mr"])


def invariant(st: State) -> Expr:
    """``INV`` (see the module doc)."""
    # the domain: every timestamp is a tick or -1 (nothing yet); maxRetain is not negative
    parts = [v >= -1 for k, v in st.items() if k != "mr" and v.sort() == z3.IntSort()]
    parts += [st["mr"] >= 0, st["Tr"] <= st["Td"]]
    parts += [st["lmax"] <= st["Td"], z3.Or(st["lmax"] <= st["Tr"], _early_ok(st, st["lmax"]))]
    for i in SHBS:
        parts += [
            st[f"rr{i}"] <= released(st, i),
            st[f"rd{i}"] <= st[f"ld{i}"],
            st[f"nr{i}"] <= st[f"rr{i}"],
            st[f"nd{i}"] <= st[f"rd{i}"],
            st[f"nr{i}"] <= st[f"nd{i}"],
            st["Tr"] <= st[f"nr{i}"],
            st["Td"] <= st[f"nd{i}"],
            st["lmax"] <= st[f"ld{i}"],  # consequence: the constream never meets an L tick
        ]
        for s in SUBS:
            parts.append(
                z3.Implies(
                    st[f"pres{i}{s}"], z3.And(st[f"sub{s}"], st[f"rel{i}{s}"] <= st[f"acked{s}"])
                )
            )
    for s in SUBS:
        holds = z3.Or([z3.And(st[f"pres{i}{s}"], st[f"act{i}{s}"]) for i in SHBS])
        safe = z3.Or(st["lmax"] <= st[f"acked{s}"], _early_ok(st, st["lmax"]))
        parts.append(z3.Implies(st[f"sub{s}"], z3.And(holds, safe)))
    return z3.And(parts)


INV: Final = invariant


# -- steps: (guard, successor) ------------------------------------------------------------

Step = Callable[[State, int, int, bool], tuple[Expr, State]]
"""``step(st, i, s, twin) -> (guard, successor)`` for SHB ``i`` and subscriber ``s``."""

_V, _C, _X, _Y = z3.Ints("v c x y")


def _other(i: int) -> int:
    return 1 - i


def _ack(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    # twin: released(s, p) taken from what was delivered, not from what s acknowledged
    n[f"rel{i}{s}"] = st[f"ld{i}"] if twin else _max(st[f"rel{i}{s}"], _V)
    n[f"acked{s}"] = _max(st[f"acked{s}"], _V)
    return st[f"pres{i}{s}"], n


def _deliver(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    n[f"ld{i}"] = _max(st[f"ld{i}"], _V)
    if twin:  # delivery taken as acknowledgement: active records jump to latestDelivered
        for u in SUBS:
            n[f"rel{i}{u}"] = z3.If(st[f"act{i}{u}"], n[f"ld{i}"], st[f"rel{i}{u}"])
    return z3.BoolVal(True), n


def _report_send(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    # twin: released(p) computed without latestDelivered
    n[f"rr{i}"] = _max(st[f"rr{i}"], released(st, i, with_ld=not twin))
    n[f"rd{i}"] = _max(st[f"rd{i}"], st[f"ld{i}"])
    return z3.BoolVal(True), n


def _report_receive(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    """The node receives any pair the SHB sent (late, repeated or reordered: any pair at or
    below the highest sent, released at or below delivered)."""
    n = dict(st)
    guard = z3.And(st[f"rr{i}"] >= _X, st[f"rd{i}"] >= _Y, _X <= _Y, _X >= -1)
    # twin: the node keeps the pair it received last, not the highest
    n[f"nr{i}"] = _X if twin else _max(st[f"nr{i}"], _X)
    n[f"nd{i}"] = _Y if twin else _max(st[f"nd{i}"], _Y)
    return guard, n


def _propagate(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    low_r = _min(st["nr0"], st["nr1"])
    low_d = _max(st["nd0"], st["nd1"]) if twin else _min(st["nd0"], st["nd1"])  # twin: max
    n["Tr"] = _max(st["Tr"], low_r)
    n["Td"] = _max(st["Td"], low_d)
    return z3.BoolVal(True), n


def _l_step(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    capped = z3.BoolVal(True) if twin else st["Td"] >= _V  # twin: L placed above Td
    guard = z3.Or(st["Tr"] >= _V, z3.And(capped, _early_ok(st, _V)))
    n["lmax"] = _max(st["lmax"], _V)
    return guard, n


def _clock(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    n["T"] = _V  # twin: the clock may go back
    return (z3.BoolVal(True) if twin else st["T"] <= _V), n


def _join(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    start = _C if twin else st[f"ld{i}"]  # twin: started at a CT it presented
    n[f"pres{i}{s}"], n[f"act{i}{s}"], n[f"sub{s}"] = (z3.BoolVal(True),) * 3
    n[f"rel{i}{s}"] = start
    n[f"acked{s}"] = start
    guard = z3.And(z3.Not(st[f"sub{s}"]), st[f"ld{i}"] >= _C, _C >= -1)
    return guard, n


def _leave(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    for j in SHBS:
        n[f"pres{j}{s}"] = z3.BoolVal(False)
    if not twin:  # twin: a disconnection dropped the records; still subscribed
        n[f"sub{s}"] = z3.BoolVal(False)
    return z3.BoolVal(True), n


def _move_register(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    n[f"pres{i}{s}"] = z3.BoolVal(True)
    n[f"act{i}{s}"] = z3.BoolVal(twin)  # twin: registered active at once
    n[f"rel{i}{s}"] = _C
    guard = z3.And(st[f"sub{s}"], z3.Not(st[f"pres{i}{s}"]), st[f"acked{s}"] >= _C, _C >= -1)
    return guard, n


def _move_fetch(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    """Ack mode SHB [DUR §5.2]: the new SHB ``i`` registers a pending record at the CT the old
    SHB ``j`` keeps, its ``released(s, p)`` (the subscriber presents none)."""
    n = dict(st)
    j = _other(i)
    n[f"pres{i}{s}"] = z3.BoolVal(True)
    n[f"act{i}{s}"] = z3.BoolVal(False)
    # twin: the old SHB answers with what it delivered (latestDelivered), not the kept CT
    n[f"rel{i}{s}"] = st[f"ld{j}"] if twin else st[f"rel{j}{s}"]
    guard = z3.And(st[f"sub{s}"], z3.Not(st[f"pres{i}{s}"]), st[f"pres{j}{s}"], st[f"act{j}{s}"])
    return guard, n


def _activate(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    n[f"act{i}{s}"] = z3.BoolVal(True)
    ready = z3.BoolVal(True) if twin else st[f"rel{i}{s}"] >= st[f"rr{i}"]  # twin: no check
    return z3.And(st[f"pres{i}{s}"], ready), n


def _move_unregister(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    j = _other(i)
    n[f"pres{i}{s}"] = z3.BoolVal(False)
    there = st[f"pres{j}{s}"] if twin else z3.And(st[f"pres{j}{s}"], st[f"act{j}{s}"])
    return z3.And(st[f"pres{i}{s}"], there), n  # twin: the new record merely pending


def _crash(st: State, i: int, s: int, twin: bool) -> tuple[Expr, State]:
    n = dict(st)
    # recovery: latestDelivered and records are durable; what was reported is taken to be
    # released(p). twin: taken to be nothing (-1), as if soft state were simply lost.
    n[f"rr{i}"] = z3.IntVal(-1) if twin else released(st, i)
    n[f"rd{i}"] = z3.IntVal(-1) if twin else st[f"ld{i}"]
    return z3.BoolVal(True), n


@final
@attrs.frozen(kw_only=True)
class ReleaseRow:
    """One obligation: ``claim()`` is the formula to prove (Z3 is asked to refute it) and the
    named values a witness reports; ``kind`` is ``"inductive"`` or ``"twin"``."""

    name: str
    kind: str
    statement: str
    source: str
    claim: Callable[[], tuple[Expr, Sequence[tuple[str, Expr]]]]
    expected: str


def _named(st: State) -> list[tuple[str, Expr]]:
    return [(k, v) for k, v in st.items()] + [("v", _V), ("c", _C), ("x", _X), ("y", _Y)]


def _step_claim(step: Step, twin: bool) -> Callable[[], tuple[Expr, Sequence[tuple[str, Expr]]]]:
    def claim() -> tuple[Expr, Sequence[tuple[str, Expr]]]:
        st = state()
        cases = []
        for i in SHBS:
            for s in SUBS:
                guard, succ = step(st, i, s, twin)
                cases.append(z3.Implies(z3.And(invariant(st), guard), invariant(succ)))
        return z3.And(cases), _named(st)

    return claim


def _initial_claim() -> tuple[Expr, Sequence[tuple[str, Expr]]]:
    st = initial_state()
    return z3.Implies(st["mr"] >= 0, invariant(st)), [("mr", st["mr"])]


_STEPS: Final[tuple[tuple[str, Step, str, str, str], ...]] = (
    ("ack", _ack, "a subscriber's ack raises released(s, p)", "[DUR §2, §4.1]",
     "released(s, p) set to latestDelivered, not to the ack"),
    ("deliver", _deliver, "latestDelivered(p) advances", "[DUR §4.1]",
     "delivery taken as acknowledgement"),
    ("report_send", _report_send, "an SHB sends (released(p), latestDelivered(p)) upstream",
     "[DUR §3, §4.1]", "released(p) computed without latestDelivered"),
    ("report_receive", _report_receive, "a node receives a pair, late or repeated",
     "[DUR §3]", "the node keeps the last pair received, not the highest"),
    ("propagate", _propagate, "the minimum over SHBs propagates to the pubend", "[DUR §3]",
     "Td taken as the maximum over SHBs"),
    ("l_step", _l_step, "the pubend turns ticks into L by the rule", "[DUR §3]",
     "early release not capped at Td (L above Td)"),
    ("clock", _clock, "the pubend's time T(p) advances", "[DUR §3]", "T(p) goes back"),
    ("join", _join, "a new subscriber starts at latestDelivered(p)", "[DUR §2, §4.1]",
     "a new subscriber released from a CT it presented"),
    ("leave", _leave, "a subscriber unsubscribes durably", "[DUR §3]",
     "a disconnection drops the subscriber's records"),
    ("move_register", _move_register, "reconnect-anywhere: the new SHB registers a pending "
     "record", "[DUR §1 item 5], spec/durable.md", "the moved record is active at once"),
    ("move_fetch", _move_fetch, "reconnect-anywhere in ack mode SHB: the new SHB registers a "
     "pending record at the CT the old SHB keeps", "[DUR §1 item 5, §5.2], spec/durable.md",
     "the old SHB answers with its latestDelivered, not the kept CT"),
    ("activate", _activate, "a pending record activates once at or above what its SHB "
     "reported", "spec/durable.md", "activation without the check"),
    ("move_unregister", _move_unregister, "the old SHB drops a moved subscriber's record once "
     "the new one is active", "spec/durable.md", "dropped while the new record is pending"),
    ("crash", _crash, "an SHB crashes and recovers", "[DUR §4.1]",
     "what was reported is forgotten on recovery"),
)  # fmt: skip


def _rows() -> tuple[ReleaseRow, ...]:
    rows = [
        ReleaseRow(
            name="release_initial",
            kind="inductive",
            statement="the initial state satisfies INV (Tr <= Td, the L rule)",
            source="[DUR §3]",
            claim=_initial_claim,
            expected="proved",
        )
    ]
    for name, step, what, src, bug in _STEPS:
        rows.append(
            ReleaseRow(
                name=f"release_{name}",
                kind="inductive",
                statement=f"{what} preserves INV (Tr <= Td, the L rule)",
                source=src,
                claim=_step_claim(step, twin=False),
                expected="proved",
            )
        )
        rows.append(
            ReleaseRow(
                name=f"release_{name}_twin",
                kind="twin",
                statement=f"twin of release_{name}: {bug}; must break INV",
                source=src,
                claim=_step_claim(step, twin=True),
                expected="refuted",
            )
        )
    return tuple(rows)


ROWS: Final = _rows()
