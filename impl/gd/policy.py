"""GDPolicy: the GD roles' rules as one frozen record of functions; PAPER_POLICY is the paper.

Theory of operation
-------------------
Each place where an implementer makes a protocol decision the paper specifies is a field of
:class:`GDPolicy`. The roles (the rooms of :mod:`gapless.impl.gd`: ``pubend``, ``broker``,
``subend``, ``forwarding``) call the field; they never branch on
a policy's name. :data:`PAPER_POLICY` holds the paper's rules. A planted bug (the bug zoo,
``gapless.spark_fuzz.zoo``) is another value built with ``attrs.evolve(PAPER_POLICY, ...)``
outside this module, so the correct path holds no bug switches. Every function is a
module-level function, so a policy pickles by reference (Spark executors) and is named in
reports by ``name``.

Fields and the paper's rule:

* ``doubt_horizon(settled_upto, known) -> t_D`` [GD §2.3]: ticks ``0..settled_upto`` are
  settled, ``known`` are the D-or-F ranges above; t_D is the first Q tick.
* ``nack_upstream(newly_curious, requested) -> ranges`` [GD §3.1]: a nack goes upstream only
  for ticks newly C in the istream (nack consolidation).
* ``forget_curiosity`` [GD §3.1]: istream C is forgotten after the minimum repetition interval.
* ``merge_horizon(horizons) -> int`` [GD §2.4]: a merge passes F only if all inputs are F, so a
  total-order merge is settled below the *least* input horizon.
* ``filter_transfer(value, matches) -> value`` [GD §2.4]: a filter turns a non-matching D into F.
* ``ack_point(delivered_upto, highest_known) -> T`` [GD §2.1.1]: a subend acks the delivered
  prefix.
* ``answer_ack_expected`` [GD §3.2]: a subend nacks at once every Q tick up to T.
* ``publish_before_logged`` [GD §2.2]: False — a message is published only once logged.
* ``first_time_silence(curious_overlap) -> bool`` [GD §3.1]: first-time silence goes only
  where the ostream has an overlapping C.
* ``retransmit_to_nackers_only`` [GD §3.1]: retransmissions go only down curious paths.
* ``ack_all_downstream`` [GD §3.1]: the istream is A only where *every* ostream is A.
* ``ack_expected_point(now, aet) -> T`` [GD §3.2]: the pubend expects the ticks older than
  AET acked, ``T = now - AET``.
* ``periodic_ack_expected`` [GD §3.2]: the pubend checks that condition every
  ``ack_expected_period_us`` and sends AckExpected when it fails (True).
* ``route_around_down_links`` [GD §3.1]: knowledge towards a cell goes only on an up link of
  the bundle (sideways when none); False: a failed member is still chosen by the pubend hash.
* ``sideways_once`` [GD §3.1]: knowledge that came sideways from a cell neighbour goes down a
  link of the broker into the cell or nowhere (one sideways hop); False: it may be routed
  sideways again, back into the cell (a broker that lost the cell returns it).
* ``ack_in_order`` [GD §2.1.1, §3.1]: the SHB's in-order shortcut acks (arms the ack timer
  for) what it delivers, as the general rules do; False: it never does while an ack delay is
  set, so acks wait for a slow-path step or for AckExpected [GD §3.2].
* ``take_detours`` [GD §3.1]: an IB acts on knowledge a cell neighbour routes to it sideways
  for a downstream cell; False: it accepts such a message and drops it without a word.
* ``repeat_nacks`` [GD §3.2]: unsatisfied nacks are repeated every NRT (and AckExpected nacks
  every Q tick again); False: a subend never nacks a tick twice.

>>> PAPER_POLICY.doubt_horizon(9, ((10, 19), (25, 30)))
20
>>> PAPER_POLICY.merge_horizon([40, 25, 90])
25
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import final

import attrs

from gapless.impl.knowledge import F, Kind, Knowledge
from gapless.impl.ticksets import TickSet, run_end, union

__all__ = [
    "PAPER_POLICY",
    "GDPolicy",
    "paper_ack_expected_point",
    "paper_ack_point",
    "paper_doubt_horizon",
    "paper_filter_transfer",
    "paper_first_time_silence",
    "paper_merge_horizon",
    "paper_nack_upstream",
    "paper_remember_nacked",
]


def paper_doubt_horizon(settled_upto: int, known: TickSet) -> int:
    """[GD §2.3] The first tick after ``settled_upto`` that is Q (not in ``known``)."""
    t = settled_upto + 1
    end = run_end(known, t)
    while end is not None:
        t = end + 1
        end = run_end(known, t)
    return t


def paper_nack_upstream(newly_curious: TickSet, requested: TickSet) -> TickSet:
    """[GD §3.1] Nack consolidation: only ticks that were not already C go upstream."""
    return newly_curious


def paper_remember_nacked(nacked: TickSet, fresh: TickSet) -> TickSet:
    """[GD §3.2] The SHB's outstanding nacks after nacking ``fresh``: the union, one tick set."""
    return union(nacked, fresh)


def paper_merge_horizon(horizons: Sequence[int]) -> int:
    """[GD §2.4] A merge passes F only if all its inputs are F: the least horizon."""
    return min(horizons)


def paper_filter_transfer(value: Knowledge, matches: bool) -> Knowledge:
    """[GD §2.4] A filter passes a matching D unchanged and turns any other D into F."""
    if value.kind is Kind.D and not matches:
        return F
    return value


def paper_ack_point(delivered_upto: int, highest_known: int) -> int:
    """[GD §2.1.1] A subend acks the prefix it has delivered (or found silent)."""
    return delivered_upto


def paper_ack_expected_point(now: int, aet_us: int) -> int:
    """[GD §3.2] "a timestamp T equal to the current time minus AET"."""
    return now - aet_us


def paper_first_time_silence(curious_overlap: bool) -> bool:
    """[GD §3.1] First-time silence goes only where an overlapping tick is C."""
    return curious_overlap


@final
@attrs.frozen(kw_only=True)
class GDPolicy:
    """The GD roles' rules (see the module doc); the default of every field is the paper's."""

    name: str = "paper"
    doubt_horizon: Callable[[int, TickSet], int] = paper_doubt_horizon
    nack_upstream: Callable[[TickSet, TickSet], TickSet] = paper_nack_upstream
    remember_nacked: Callable[[TickSet, TickSet], TickSet] = paper_remember_nacked
    forget_curiosity: bool = True
    merge_horizon: Callable[[Sequence[int]], int] = paper_merge_horizon
    filter_transfer: Callable[[Knowledge, bool], Knowledge] = paper_filter_transfer
    ack_point: Callable[[int, int], int] = paper_ack_point
    answer_ack_expected: bool = True
    publish_before_logged: bool = False
    first_time_silence: Callable[[bool], bool] = paper_first_time_silence
    retransmit_to_nackers_only: bool = True
    ack_all_downstream: bool = True
    repeat_nacks: bool = True
    ack_expected_point: Callable[[int, int], int] = paper_ack_expected_point
    periodic_ack_expected: bool = True
    route_around_down_links: bool = True
    sideways_once: bool = True
    ack_in_order: bool = True
    take_detours: bool = True


PAPER_POLICY: GDPolicy = GDPolicy()
"""The paper's protocol [GD §2-3]; the default policy of every role."""
