"""The bug zoo: planted guaranteed-delivery bugs as alternative GD policies (issue 4 §4).

Theory of operation
-------------------
Each entry of :data:`ZOO` is a :class:`gapless.impl.gd.GDPolicy` assembled *here*, outside the
correct path, with ``attrs.evolve(PAPER_POLICY, ...)``: the roles never test a bug's name, they
just call the policy's rule. Each bug is a mistake a real implementer could make, and each is
observable by invariants that judge only the wire, the logs and the deliveries. The buggy rule
functions are module-level so a policy pickles by reference to Spark executors;
:func:`policy_by_name` picks one by name (``"none"``, ``"correct"`` and ``"paper"`` are the
correct protocol).

Per bug — what goes wrong, which invariant should catch it, under which faults. (Measured on
Figure 3, 10 msgs/s per pubend, mixed filters, swarm faults, 20 s + 25 s drain, 8 seeds each —
``merge-f-while-q`` on the total-order topology: every bug but ``never-forget-curiosity``,
``ignore-ack-expected`` and ``no-nack-repetition`` was caught in at least 5 of 8 schedules; those
three need rarer faults — a lost nack repair or a lost tail — and were caught in 1-4 of 8 or 12.)

``deliver-past-doubt-horizon``
    The SHB takes its doubt horizon as one past the highest known tick, delivering across Q
    ticks, which then count as delivered [GD §2.3]. *gapless* (a matching message between two
    delivered ones is skipped) and *liveness*; needs loss or reordering on a path to an SHB
    (drop or reorder windows, stalls, link failures).
``no-nack-consolidation``
    An IB forwards every unsatisfied nacked tick upstream, not only ticks newly C in its istream
    [GD §3.1]. *nack consolidation* (a broker nacks upstream a tick it already nacked within the
    repetition interval); needs two downstream cells losing the same ticks (a stall or crash of
    an IB whose cell serves two SHBs, e.g. Figure 3's b1) or nack repetition during an outage.
``never-forget-curiosity``
    istream C is never forgotten, so a repeated subend nack looks already-forwarded forever
    [GD §3.1]. *liveness* after heal-and-drain; needs an upstream nack or its answer to be lost
    (drop window between an IB and its upstream while a gap is being repaired).
``merge-f-while-q``
    A total-order merge treats a tick as settled when *any* input is (the greatest input horizon,
    not the least), so it passes F while another input is still Q [GD §2.4]. *total order* /
    per-merged-stream *ordering* and *gapless*; needs a total-order topology (the two-pubend
    merge graph) and any delay difference between the pubends' streams — reordering, loss, or just
    the pubends' different publication times.
``filter-drops-d``
    A filter edge drops a non-matching D instead of turning it into F, so the downstream sees Q
    [GD §2.4]. *nack consolidation* (the IB knows the tick, so it is no longer C there, yet it
    cannot satisfy the repeated nacks and forwards each upstream again) and *liveness* (the
    downstream horizon stalls at the dropped tick, later matching messages are never
    delivered); needs only selective subscriptions (some message one SHB's subscribers do not
    match); no fault needed.
``ack-before-delivery``
    The SHB acks the highest tick it knows instead of its delivered prefix [GD §2.1.1]. Upstream
    finalises ticks the SHB still lacks and answers its nacks with F: *gapless* (a published
    matching message skipped) and *liveness*; needs loss or reordering before an SHB (drop window
    or stall on an IB-SHB link). An "acks only the delivered prefix" conformance check catches it
    with reordering alone.
``ignore-ack-expected``
    The subend ignores AckExpected [GD §3.2]. With DCT infinite, a lost *last* message (nothing
    published after it to reveal the gap) is never nacked: *liveness*; needs tail loss — a drop
    window or PHB crash right before the publishers pause, or the p1-crash scenario.
``unlogged-is-published``
    The pubend forwards a message as soon as it is assigned, before stable storage has it
    [GD §2.2]. *safety* ("every delivered message was durably logged first") — with the modelled
    logging delay (~100 ms) longer than a link delay every delivery violates it, no fault
    needed; a PHB crash during logging also delivers a message that was never published.
``silence-to-everyone``
    First-time silence is sent down every path, not only to brokers with an overlapping C
    [GD §3.1]. *first-time silence only toward curious brokers*; no fault needed (the pubend's
    idle silence or a filtered D produces first-time silence).
``retransmit-to-all``
    An IB forwards retransmitted knowledge down every path, not only to brokers that nacked
    [GD §3.1]. *retransmissions only to nackers*; needs one SHB's nack to be answered through an
    IB with a second downstream cell (loss on one IB-SHB link).
``ack-any-downstream``
    The istream becomes A when *any* downstream cell acks, not all [GD §3.1]. *ack
    consolidation* without faults (cells ack at different times); with loss on one branch also
    *gapless* (the pubend releases what that branch still needs).
``no-nack-repetition``
    A subend never nacks a tick twice: no repetition after NRT, and AckExpected does not re-nack
    ticks it already asked for [GD §3.2]. *liveness*; needs a nack or its answer to be lost (drop
    window, stall or link failure while a gap is repaired).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.gd import PAPER_POLICY, GDPolicy
from gapless.impl.gd.ranges import Ranges
from gapless.impl.knowledge import Kind, Knowledge, Q

__all__ = ["CORRECT_NAMES", "ZOO", "bug_names", "policy_by_name"]


def horizon_past_gaps(settled_upto: int, known: Ranges) -> int:
    """Bug: one past the highest known tick, whatever Q ticks lie below it."""
    return max(settled_upto, known[-1][1] if known else settled_upto) + 1


def forward_every_nack(newly_curious: Ranges, requested: Ranges) -> Ranges:
    """Bug: forward every unsatisfied tick upstream, already-C or not."""
    return requested


def merge_on_any_input(horizons: Sequence[int]) -> int:
    """Bug: a merge settles a tick when any input has settled it."""
    return max(horizons)


def filter_drops_data(value: Knowledge, matches: bool) -> Knowledge:
    """Bug: a non-matching D is dropped (Q) instead of turned into F."""
    if value.kind is Kind.D and not matches:
        return Q
    return value


def ack_highest_known(delivered_upto: int, highest_known: int) -> int:
    """Bug: ack the highest known tick, delivered or not."""
    return max(delivered_upto, highest_known)


def silence_everywhere(curious_overlap: bool) -> bool:
    """Bug: first-time silence goes down every path."""
    return True


def _bug(name: str, **rules: Any) -> GDPolicy:
    return attrs.evolve(PAPER_POLICY, name=name, **rules)


ZOO: Final[dict[str, GDPolicy]] = {
    "deliver-past-doubt-horizon": _bug(
        "deliver-past-doubt-horizon", doubt_horizon=horizon_past_gaps
    ),
    "no-nack-consolidation": _bug("no-nack-consolidation", nack_upstream=forward_every_nack),
    "never-forget-curiosity": _bug("never-forget-curiosity", forget_curiosity=False),
    "merge-f-while-q": _bug("merge-f-while-q", merge_horizon=merge_on_any_input),
    "filter-drops-d": _bug("filter-drops-d", filter_transfer=filter_drops_data),
    "ack-before-delivery": _bug("ack-before-delivery", ack_point=ack_highest_known),
    "ignore-ack-expected": _bug("ignore-ack-expected", answer_ack_expected=False),
    "unlogged-is-published": _bug("unlogged-is-published", publish_before_logged=True),
    "silence-to-everyone": _bug("silence-to-everyone", first_time_silence=silence_everywhere),
    "retransmit-to-all": _bug("retransmit-to-all", retransmit_to_nackers_only=False),
    "ack-any-downstream": _bug("ack-any-downstream", ack_all_downstream=False),
    "no-nack-repetition": _bug("no-nack-repetition", repeat_nacks=False),
}
"""Planted bugs by name (sorted names: :func:`bug_names`)."""

CORRECT_NAMES: Final = ("none", "correct", "paper")


def bug_names() -> tuple[str, ...]:
    """Every planted bug's name, sorted."""
    return tuple(sorted(ZOO))


def policy_by_name(name: str) -> GDPolicy:
    """The policy called ``name``: a bug of :data:`ZOO`, or the paper's protocol for ``"none"``,
    ``"correct"`` or ``"paper"``. An unknown name raises
    :class:`~gapless.impl.errors.ProtocolMisuse` listing the allowed names."""
    if name in CORRECT_NAMES:
        return PAPER_POLICY
    policy = ZOO.get(name)
    if policy is None:
        allowed = ", ".join((*CORRECT_NAMES, *bug_names()))
        raise ProtocolMisuse(f"policy_by_name: unknown variant {name!r}; allowed: {allowed}")
    return policy
