"""Active sessions and the directions messages travel in [DFT §II, §V, §VI, Figure 3].

Theory of operation
-------------------
Pure helpers over a broker's view. S(B, X) is *active* when it is established and B has no
other established session to a broker on P(B, X) [DFT §II]: so B has one active session per
primary path, the nearest reachable broker along it, and that is where B sends anything bound
along the path. Active sessions are asymmetric (Figure 3): they depend on B's own failure
detector only.

A message may take a hop only if its propagation stays *legitimate*: in every primary
sub-path of 2δ + 1 brokers it bypasses at most δ [DFT §VII] (:func:`legitimate`). Each hop
bypasses at most δ (sessions reach only the Δ-neighbourhood), but two hops in a row may not:
with more than δ failures in a window, a broker refuses the hop and the direction is a
barrier for that message — the δ-fault-tolerance the duplicate detection relies on.

A subscription travels *downstream*, away from its source S [DFT §V-A]; a publication travels
from its source P towards the sources of matching subscriptions, along P(P, S) [DFT §VI].
"""

from __future__ import annotations

from collections.abc import Iterable

from gapless.impl.dft.tree import PrimaryTree

__all__ = ["active_sessions", "downstream", "legitimate", "route", "toward"]


def active_sessions(tree: PrimaryTree, me: str, established: Iterable[str]) -> frozenset[str]:
    """The established sessions with no other established broker on the primary path to
    them [DFT §II]."""
    est = set(established)
    return frozenset(x for x in est if not any(y in est for y in tree.path(me, x)[1:-1]))


def downstream(tree: PrimaryTree, me: str, source: str, x: str) -> bool:
    """Is ``x`` downstream of ``me`` for a subscription issued at ``source``: is ``me`` on
    P(source, x), ``x`` not ``me`` [DFT §V-A]?"""
    if x == me:
        return False
    return me == source or tree.next_hop(me, x) != tree.next_hop(me, source)


def toward(tree: PrimaryTree, me: str, origin: str, target: str) -> bool:
    """Does a publication from ``origin`` at ``me`` travel on towards ``target``: is ``me``
    on P(origin, target), ``target`` not ``me`` [DFT §VI]?"""
    return downstream(tree, me, origin, target)


def legitimate(tree: PrimaryTree, trail: tuple[str, ...], me: str, to: str, delta: int) -> bool:
    """Is a message that ``trail`` forwarded, then ``me``, still legitimately propagated when
    ``me`` sends it to ``to``: at most ``delta`` brokers bypassed in every primary sub-path of
    2δ + 1 brokers of P(first forwarder, to) [DFT §VII]?"""
    chain = (*trail, me, to)
    path = tree.path(chain[0], to)
    if len(path) == len(chain):
        return True
    forwarded = set(chain)
    w = 2 * delta + 1
    flags = [b not in forwarded for b in path]
    return all(sum(flags[i : i + w]) <= delta for i in range(max(1, len(path) - w + 1)))


def route(
    tree: PrimaryTree,
    me: str,
    active: frozenset[str],
    target: str,
    trail: tuple[str, ...] = (),
    delta: int | None = None,
) -> str | None:
    """The active session on P(me, target): the first broker of the path, after ``me``, to
    which ``me`` has an active session; ``None`` when none (a barrier) [DFT §VI l. 15-16],
    or when, with ``delta`` given, the hop would make the propagation of a message that
    ``trail`` forwarded illegitimate."""
    for x in tree.path(me, target)[1:]:
        if x in active:
            if delta is not None and not legitimate(tree, trail, me, x, delta):
                return None
            return x
    return None
