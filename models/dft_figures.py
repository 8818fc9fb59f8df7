"""The δ-fault-tolerant protocol's §IX evaluation on graphs: Figures 9, 11 and 12 [DFT §IX].

Theory of operation
-------------------
The paper studies connectivity and broker state on primary trees of 1000 brokers "with a graph
simulator" [DFT §IX-A, §IX-C, §IX-D]; it does not say how the trees were built, so we use the
complete tree in which broker i joins broker (i - 1) // fanout (:func:`int_tree`, the same
tree as :func:`gapless.impl.dft.tree.complete_tree`, with brokers as ints for speed).

* **Figure 9** (:func:`fig9`): k brokers fail at random; a live pair (a, b) is disconnected

  - by the paper's count (``disconnected_pct``) when P(a, b) holds a chain of δ + 1
    consecutive failed brokers [DFT §IX-A] (:func:`chain_connected`);
  - by the protocol's own rule (``disconnected_pct_legitimate``) unless a legitimate
    propagation exists: at most δ bypassed brokers in every sub-path of 2δ + 1 brokers of
    P(a, b) [DFT §VII] (:func:`legitimately_connected`). A propagation that visits every live
    broker of the path bypasses exactly its failed brokers, and bypassing fewer is impossible,
    so this is the test. It is stricter: with δ = 1, P = a x F y F b has no chain of two
    failures but bypasses two brokers in the window F y F — the roles refuse that second hop
    (``routing.legitimate``), so the publication waits.

  The paper counts over all pairs; we draw ``pairs`` live pairs per run (uniformly, with
  replacement) from the run's random generator and report the sample's percentage — with
  100 runs of 1000 pairs the standard error is below 0.2 percentage points.
* **Figure 11** (:func:`neighbourhood_sizes`): the number of brokers within Δ = δ + 1 primary
  links of each broker.
* **Figure 12** (:func:`active_session_counts`): after k random failures, the number of
  active sessions of each live broker: live brokers within Δ with no live broker between
  [DFT §II] (what ``routing.active_sessions`` computes from a broker's failure detector).

Everything is a pure function of its arguments and a seed (``random.Random``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any, Final, final

import attrs

__all__ = [
    "FIG9_DELTAS",
    "FIG9_KS",
    "IntTree",
    "active_session_counts",
    "cdf",
    "chain_connected",
    "fig9",
    "fig11",
    "fig12",
    "int_tree",
    "legitimately_connected",
    "neighbourhood_sizes",
    "percentiles",
    "tree_path",
]

FIG9_KS: Final = (10, 20, 50, 100, 170)
FIG9_DELTAS: Final = (0, 1, 2, 3)
PERCENTILES: Final = (10, 25, 50, 75, 90, 99, 100)


@final
@attrs.frozen(kw_only=True)
class IntTree:
    """A primary tree on brokers ``0..n-1``: ``parent`` (-1 at the root), ``depth``,
    ``children``."""

    parent: tuple[int, ...]
    depth: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]

    @property
    def n(self) -> int:
        return len(self.parent)


def int_tree(n: int, fanout: int) -> IntTree:
    """The complete tree of ``n`` brokers: broker i's parent is (i - 1) // fanout."""
    parent = [-1] + [(i - 1) // fanout for i in range(1, n)]
    depth = [0] * n
    kids: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        depth[i] = depth[parent[i]] + 1
        kids[parent[i]].append(i)
    return IntTree(parent=tuple(parent), depth=tuple(depth), children=tuple(map(tuple, kids)))


def tree_path(t: IntTree, a: int, b: int) -> list[int]:
    """P(a, b), both ends included."""
    up: list[int] = []
    down: list[int] = []
    parent, depth = t.parent, t.depth
    while depth[a] > depth[b]:
        up.append(a)
        a = parent[a]
    while depth[b] > depth[a]:
        down.append(b)
        b = parent[b]
    while a != b:
        up.append(a)
        down.append(b)
        a, b = parent[a], parent[b]
    up.append(a)
    up.extend(reversed(down))
    return up


def chain_connected(flags: Sequence[bool], delta: int) -> bool:
    """No chain of δ + 1 consecutive failed brokers (``flags``: failed, along the path)
    [DFT §IX-A]."""
    run = 0
    for f in flags:
        run = run + 1 if f else 0
        if run > delta:
            return False
    return True


def legitimately_connected(flags: Sequence[bool], delta: int) -> bool:
    """At most δ failed brokers in every window of 2δ + 1 consecutive brokers of the path
    (the whole path when shorter) [DFT §VII]."""
    w = 2 * delta + 1
    if len(flags) <= w:
        return sum(flags) <= delta
    inside = sum(flags[:w])
    if inside > delta:
        return False
    for i in range(w, len(flags)):
        inside += flags[i] - flags[i - w]
        if inside > delta:
            return False
    return True


def _fig9_run(
    t: IntTree, k: int, pairs: int, rng: random.Random, deltas: Sequence[int]
) -> list[tuple[int, int]]:
    """For one random failure set of ``k`` brokers: per δ, (chain-disconnected,
    legitimately-disconnected) counts among ``pairs`` sampled live pairs."""
    failed = [False] * t.n
    for b in rng.sample(range(t.n), k):
        failed[b] = True
    live = [b for b in range(t.n) if not failed[b]]
    counts = [[0, 0] for _ in deltas]
    for _ in range(pairs):
        a, b = rng.sample(live, 2)
        flags = [failed[x] for x in tree_path(t, a, b)]
        for j, d in enumerate(deltas):
            if not chain_connected(flags, d):
                counts[j][0] += 1
                counts[j][1] += 1
            elif not legitimately_connected(flags, d):
                counts[j][1] += 1
    return [(c[0], c[1]) for c in counts]


def fig9(
    *,
    n: int = 1000,
    fanouts: Iterable[int] = (3, 7),
    ks: Iterable[int] = FIG9_KS,
    deltas: Sequence[int] = FIG9_DELTAS,
    runs: int = 100,
    pairs: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Figure 9: per ``f{fanout}_d{delta}_k{k}``, ``disconnected_pct`` and
    ``disconnected_pct_legitimate`` (percent of sampled live pairs), averaged over ``runs``
    failure sets; the failure sets are shared by every δ of a (fanout, k)."""
    points: dict[str, dict[str, float]] = {}
    for f in fanouts:
        t = int_tree(n, f)
        for k in ks:
            rng = random.Random(f"fig9/{seed}/{n}/{f}/{k}")
            total = [[0, 0] for _ in deltas]
            for _ in range(runs):
                for j, (c, lg) in enumerate(_fig9_run(t, k, pairs, rng, deltas)):
                    total[j][0] += c
                    total[j][1] += lg
            for j, d in enumerate(deltas):
                points[f"f{f}_d{d}_k{k}"] = {
                    "disconnected_pct": round(100.0 * total[j][0] / (runs * pairs), 3),
                    "disconnected_pct_legitimate": round(100.0 * total[j][1] / (runs * pairs), 3),
                }
    return {"n": n, "runs": runs, "pairs_per_run": pairs, "points": points}


def _within(t: IntTree, b: int, radius: int) -> list[tuple[int, int]]:
    """``(broker, distance)`` for every broker within ``radius`` links of ``b``, ``b``
    excluded (a walk of the tree that never steps back)."""
    out: list[tuple[int, int]] = []
    stack = [(b, -1, 0)]
    while stack:
        x, came, d = stack.pop()
        if d:
            out.append((x, d))
        if d == radius:
            continue
        p = t.parent[x]
        for y in (*t.children[x], *((p,) if p >= 0 else ())):
            if y != came:
                stack.append((y, x, d + 1))
    return out


def neighbourhood_sizes(t: IntTree, big_delta: int) -> list[int]:
    """The size of every broker's Δ-neighbourhood [DFT §IV, §IX-C]."""
    return [len(_within(t, b, big_delta)) for b in range(t.n)]


def active_session_counts(t: IntTree, failed: frozenset[int], big_delta: int) -> list[int]:
    """Per live broker: its active sessions when exactly ``failed`` are unreachable — the
    live brokers within Δ with no live broker between [DFT §II, §IX-D]."""
    counts: list[int] = []
    for b in range(t.n):
        if b in failed:
            continue
        n = 0
        stack = [(b, -1, 0)]
        while stack:
            x, came, d = stack.pop()
            if d and x not in failed:
                n += 1
                continue  # the nearest live broker on this path: beyond it, not active
            if d == big_delta:
                continue
            p = t.parent[x]
            for y in (*t.children[x], *((p,) if p >= 0 else ())):
                if y != came:
                    stack.append((y, x, d + 1))
        counts.append(n)
    return counts


def percentiles(values: Sequence[int], ps: Iterable[int] = PERCENTILES) -> dict[str, int]:
    """Nearest-rank percentiles ``p{P}`` of ``values``."""
    s = sorted(values)
    return {f"p{p}": s[max(0, -(-p * len(s) // 100) - 1)] for p in ps}


def cdf(values: Sequence[int]) -> tuple[list[int], list[float]]:
    """The empirical CDF of ``values``: each distinct value and the fraction <= it."""
    s = sorted(values)
    xs: list[int] = []
    ys: list[float] = []
    for i, v in enumerate(s):
        if xs and xs[-1] == v:
            ys[-1] = (i + 1) / len(s)
        else:
            xs.append(v)
            ys.append((i + 1) / len(s))
    return xs, ys


def fig11(
    *, n: int = 1000, fanouts: Iterable[int] = (3, 7), deltas: Iterable[int] = FIG9_DELTAS
) -> dict[str, dict[str, Any]]:
    """Figure 11: per ``f{fanout}_d{delta}``, the Δ-neighbourhood sizes' percentiles and
    ``values`` (one per broker, for the CDF)."""
    out: dict[str, dict[str, Any]] = {}
    for f in fanouts:
        t = int_tree(n, f)
        for d in deltas:
            sizes = neighbourhood_sizes(t, d + 1)
            out[f"f{f}_d{d}"] = {**percentiles(sizes), "values": sizes}
    return out


def fig12(
    *,
    n: int = 1000,
    fanouts: Iterable[int] = (3, 7),
    ks: Iterable[int] = (16, 60),
    delta: int = 3,
    runs: int = 10,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Figure 12: per ``f{fanout}_k{k}`` (δ = ``delta``), the active-session counts of the
    live brokers over ``runs`` random failure sets: percentiles and ``values``."""
    out: dict[str, dict[str, Any]] = {}
    for f in fanouts:
        t = int_tree(n, f)
        for k in ks:
            rng = random.Random(f"fig12/{seed}/{n}/{f}/{k}")
            counts: list[int] = []
            for _ in range(runs):
                failed = frozenset(rng.sample(range(n), k))
                counts.extend(active_session_counts(t, failed, delta + 1))
            out[f"f{f}_k{k}"] = {**percentiles(counts), "values": counts}
    return out
