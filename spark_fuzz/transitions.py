"""Per-transition coverage of a campaign: which transitions the roles can take, which no
schedule reached, and how coverage grew chunk by chunk (issue 18 §2).

Theory of operation
-------------------
A run counts coverage labels beside its trace (``RunOutcome.coverage``, the row's
``coverage`` column). For guaranteed delivery (:mod:`gapless.models.gd_binding`) they are

* the lattice transitions the roles emit (``K:Q->D``, ``C:N->C``, ... [GD §2.1-2.4]);
* the *rules*: the ``(role, input)`` rows of the dispatch table that took an input and changed
  the role's state, ``"R:IB Receive(Nack)"`` — the rows of ``spec/gd.md``'s rule map
  (:func:`gapless.impl.gd.rulemap.handlers`) [GD §3.1-3.2];
* each rule paired with each lattice transition it made, ``"R:IB Receive(Nack) C:N->C"``.

:func:`reachable` is what the roles *can* take: every rule of the paper's roles (the
best-effort roles [GD §4.1] are not part of a GD campaign) but the effect-only ones
(:data:`GD_EFFECT_ONLY`: coverage counts a rule when it changes a role's state), and every
lattice transition the GD rooms emit (:data:`GD_LATTICE`; with :data:`GD_ERRORS`, the error
a correct run never takes, a test keeps it equal to the labels in ``impl/gd``'s source). The
pairs are not enumerable statically (which rule makes which transition is what a campaign
finds out), so they feed guidance (:mod:`gapless.spark_fuzz.guided`) but not the "never
reached" list. :func:`coverage_report` gives a campaign's figures: reachable, reached, the
list never reached, and — per committed chunk, in seed order — how many distinct labels (and
how many reachable transitions) the campaign had covered so far.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from gapless.impl.gd.rulemap import handlers
from gapless.impl.gd.state import BestEffortIB, BestEffortPHB, BestEffortSHB

__all__ = [
    "GD_EFFECT_ONLY",
    "GD_ERRORS",
    "GD_LATTICE",
    "coverage_of",
    "coverage_report",
    "growth",
    "reachable",
]

GD_LATTICE: Final = (
    "C:C->N",
    "C:N->A",
    "C:N->C",
    "K:D->F",
    "K:D->F(filter)",
    "K:Q->D",
    "K:Q->F",
)
"""The lattice transitions GD's roles emit as coverage labels [GD §2.1-2.4, §3.1], but for
:data:`GD_ERRORS`."""

GD_ERRORS: Final = ("K:D->E",)
"""Transitions the roles label but a correct run never takes: ``K:D->E`` is conflicting data
at one tick, which the roles reject [GD §2.2]."""

GD_EFFECT_ONLY: Final = ("TimerFired(aet)", "TimerFired(status)")
"""Inputs whose rule only sends and re-arms, never changing the role's state (the link-status
round [GD §3.1], the AckExpected check [GD §3.2]); coverage counts a rule when it changes
the state, so these are never counted and are not part of :func:`reachable`."""


def _gd_rules() -> tuple[str, ...]:
    best_effort = (BestEffortPHB, BestEffortIB, BestEffortSHB)
    return tuple(
        sorted(
            {
                f"R:{role.ROLE} {what}"  # type: ignore[attr-defined]
                for role, what, _h in handlers()
                if role not in best_effort and what not in GD_EFFECT_ONLY
            }
        )
    )


def reachable(protocol: str) -> tuple[str, ...]:
    """The transitions ``protocol``'s roles can take, sorted (empty: not known for it)."""
    if protocol != "gd":
        return ()
    return tuple(sorted(set(_gd_rules()) | set(GD_LATTICE)))


def coverage_of(row: Mapping[str, Any]) -> dict[str, int]:
    """A row's coverage column as a mapping (empty when absent)."""
    text = row.get("coverage")
    if not text:
        return {}
    got: dict[str, int] = json.loads(text)
    return got


def growth(
    rows: Iterable[Mapping[str, Any]], chunks: Sequence[tuple[int, int]], universe: Sequence[str]
) -> list[dict[str, int]]:
    """Per chunk ``(first, last)``, in seed order: the seeds so far, the distinct labels so far
    (``labels``) and the transitions of ``universe`` reached so far (``reached``)."""
    by_seed = {int(r["seed"]): coverage_of(r) for r in rows}
    want = set(universe)
    seen: set[str] = set()
    out: list[dict[str, int]] = []
    n = 0
    for first, last in sorted(chunks):
        for seed in range(first, last + 1):
            if seed in by_seed:
                n += 1
                seen.update(by_seed[seed])
        out.append(
            {"last_seed": last, "schedules": n, "labels": len(seen), "reached": len(seen & want)}
        )
    return out


def coverage_report(
    protocol: str, rows: Sequence[Mapping[str, Any]], chunks: Sequence[tuple[int, int]] = ()
) -> dict[str, Any]:
    """A campaign's per-transition coverage (the fuzz JSON's ``coverage`` key): ``reachable``
    and ``reached`` counts, ``never_reached`` (sorted), ``labels`` (distinct labels counted,
    pairs included) and, when ``chunks`` are given, ``growth`` (see :func:`growth`)."""
    universe = reachable(protocol)
    total: Counter[str] = Counter()
    for r in rows:
        total.update(coverage_of(r))
    out: dict[str, Any] = {
        "reachable": len(universe),
        "reached": sum(1 for t in universe if total.get(t)),
        "never_reached": [t for t in universe if not total.get(t)],
        "labels": len(total),
    }
    if chunks:
        out["growth"] = growth(rows, chunks, universe)
    return out
