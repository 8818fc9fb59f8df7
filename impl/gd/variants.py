"""GD's planted bugs, declared beside the rules they change [GD §2-4] (DESIGN.md, "sans-IO").

Theory of operation
-------------------
Each entry of :data:`VARIANTS` is a :class:`~gapless.impl.variants.Variant`: a
:class:`~gapless.impl.gd.policy.GDPolicy` built with ``attrs.evolve(PAPER_POLICY, ...)``, the
invariants expected to catch it, the fault kinds it needs and what goes wrong. The roles never
test a bug's name; they call the policy's rule. Each bug is a mistake a real implementer could
make, observable by invariants that judge only the wire, the logs and the deliveries. The buggy
rule functions are module-level so a policy pickles by reference to Spark executors.

Measured on Figure 3, 10 msgs/s per pubend, mixed filters, swarm faults, 20 s + 25 s drain, 8
seeds each (``merge-f-while-q`` on the total-order topology): every bug but
``never-forget-curiosity``, ``ignore-ack-expected`` and ``no-nack-repetition`` was caught in at
least 5 of 8 schedules; those three need rarer faults (a lost nack repair or a lost tail) and
were caught in 1-4 of 8 or 12.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs

from gapless.impl.gd.policy import PAPER_POLICY, GDPolicy
from gapless.impl.knowledge import Kind, Knowledge, Q
from gapless.impl.ticksets import TickSet
from gapless.impl.variants import Variant

__all__ = ["VARIANTS"]


def horizon_past_gaps(settled_upto: int, known: TickSet) -> int:
    """Bug: one past the highest known tick, whatever Q ticks lie below it."""
    return max(settled_upto, known[-1][1] if known else settled_upto) + 1


def forward_every_nack(newly_curious: TickSet, requested: TickSet) -> TickSet:
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


def filter_passes_data(value: Knowledge, matches: bool) -> Knowledge:
    """Bug: a filter edge passes every D unchanged, matching or not."""
    return value


def newest_nacked_first(nacked: TickSet, fresh: TickSet) -> TickSet:
    """Bug: the new nack ranges are put in front of the outstanding ones, not joined with
    them (a most-recent-first list where a tick set belongs)."""
    return fresh + nacked


def ack_highest_known(delivered_upto: int, highest_known: int) -> int:
    """Bug: ack the highest known tick, delivered or not."""
    return max(delivered_upto, highest_known)


def silence_everywhere(curious_overlap: bool) -> bool:
    """Bug: first-time silence goes down every path."""
    return True


def expect_everything_now(now: int, aet_us: int) -> int:
    """Bug: AckExpected(now) — the pubend forgets to subtract AET."""
    return now


def _bug(
    name: str,
    caught_by: tuple[str, ...],
    needs: tuple[str, ...],
    summary: str,
    topology: str | None = None,
    **rules: Any,
) -> Variant:
    policy: GDPolicy = attrs.evolve(PAPER_POLICY, name=name, **rules)
    return Variant(
        name=name,
        policy=policy,
        caught_by=caught_by,
        needs=needs,
        topology=topology,
        summary=summary,
    )


VARIANTS: Final[dict[str, Variant]] = {
    "deliver-past-doubt-horizon": _bug(
        "deliver-past-doubt-horizon",
        ("gapless", "liveness"),
        ("drop", "reorder", "stall_link", "link_fail"),
        (
            "The SHB takes its doubt horizon as one past the highest known tick, delivering "
            "across Q ticks, which then count as delivered [GD §2.3]. *gapless* (a matching "
            "message between two delivered ones is skipped) and *liveness*; needs loss or "
            "reordering on a path to an SHB (drop or reorder windows, stalls, link failures)."
        ),
        doubt_horizon=horizon_past_gaps,
    ),
    "no-nack-consolidation": _bug(
        "no-nack-consolidation",
        ("nack_consolidation",),
        ("stall_broker", "crash"),
        (
            "An IB forwards every unsatisfied nacked tick upstream, not only ticks newly C in its "
            "istream [GD §3.1]. *nack consolidation* (a broker nacks upstream a tick it already "
            "nacked within the repetition interval); needs two downstream cells losing the same "
            "ticks (a stall or crash of an IB whose cell serves two SHBs, e.g. Figure 3's b1) or "
            "nack repetition during an outage."
        ),
        nack_upstream=forward_every_nack,
    ),
    "never-forget-curiosity": _bug(
        "never-forget-curiosity",
        ("liveness",),
        ("drop",),
        (
            "istream C is never forgotten, so a repeated subend nack looks already-forwarded "
            "forever [GD §3.1]. *liveness* after heal-and-drain; needs an upstream nack or its "
            "answer to be lost (drop window between an IB and its upstream while a gap is being "
            "repaired)."
        ),
        forget_curiosity=False,
    ),
    "merge-f-while-q": _bug(
        "merge-f-while-q",
        ("total_order", "order", "gapless"),
        (),
        (
            "A total-order merge treats a tick as settled when *any* input is (the greatest input "
            "horizon, not the least), so it passes F while another input is still Q [GD §2.4]. "
            "*total order* / per-merged-stream *ordering* and *gapless*; needs a total-order "
            "topology (the two-pubend merge graph) and any delay difference between the pubends' "
            "streams — reordering, loss, or just the pubends' different publication times."
        ),
        topology="total-order",
        merge_horizon=merge_on_any_input,
    ),
    "filter-drops-d": _bug(
        "filter-drops-d",
        ("nack_consolidation", "liveness"),
        (),
        (
            "A filter edge drops a non-matching D instead of turning it into F, so the downstream "
            "sees Q [GD §2.4]. *nack consolidation* (the IB knows the tick, so it is no longer C "
            "there, yet it cannot satisfy the repeated nacks and forwards each upstream again) "
            "and *liveness* (the downstream horizon stalls at the dropped tick, later matching "
            "messages are never delivered); needs only selective subscriptions (some message one "
            "SHB's subscribers do not match); no fault needed."
        ),
        filter_transfer=filter_drops_data,
    ),
    "filter-passes-d": _bug(
        "filter-passes-d",
        ("minimal_traffic",),
        (),
        (
            "A filter edge passes a non-matching D on unchanged instead of turning it into F "
            "[GD §2.4], so every message floods the whole tree. No subscriber sees a difference: "
            "each SHB matches a message against its own subscriptions and delivers it to no one "
            "there, acks it and moves on. Only *minimal traffic* (no data tick crosses an edge "
            "whose filter rejects it) catches it; needs only selective subscriptions (some "
            "message one cell's subscribers do not match); no fault needed."
        ),
        filter_transfer=filter_passes_data,
    ),
    "newest-nacked-first": _bug(
        "newest-nacked-first",
        ("canonical_state",),
        ("drop",),
        (
            "The SHB remembers what it nacked by putting the new ranges in front of its "
            "outstanding ones instead of joining them [GD §3.2], so its tick set holds runs out of "
            "order. "
            "Every query of a run form assumes it canonical; this one still answers the SHB's "
            "questions right in most runs, so no delivery invariant sees it. *canonical state* "
            "(every lattice value a role holds after a step is in the form its verified "
            "operations return) catches it at the step; needs two nacks by one SHB while the "
            "first is outstanding (loss before an SHB)."
        ),
        remember_nacked=newest_nacked_first,
    ),
    "ack-before-delivery": _bug(
        "ack-before-delivery",
        ("gapless", "liveness", "ack_consolidation"),
        ("drop", "stall_link"),
        (
            "The SHB acks the highest tick it knows instead of its delivered prefix [GD §2.1.1]. "
            "Upstream finalises ticks the SHB still lacks and answers its nacks with F: *gapless* "
            "(a published matching message skipped) and *liveness*; needs loss or reordering "
            'before an SHB (drop window or stall on an IB-SHB link). An "acks only the delivered '
            'prefix" conformance check catches it with reordering alone.'
        ),
        ack_point=ack_highest_known,
    ),
    "ignore-ack-expected": _bug(
        "ignore-ack-expected",
        ("liveness",),
        ("drop", "crash"),
        (
            "The subend ignores AckExpected [GD §3.2]. With DCT infinite, a lost *last* message "
            "(nothing published after it to reveal the gap) is never nacked: *liveness*; needs "
            "tail loss — a drop window or PHB crash right before the publishers pause, or the "
            "p1-crash scenario."
        ),
        answer_ack_expected=False,
    ),
    "unlogged-is-published": _bug(
        "unlogged-is-published",
        ("logged_first",),
        (),
        (
            "The pubend forwards a message as soon as it is assigned, before stable storage has "
            'it [GD §2.2]. *safety* ("every delivered message was durably logged first") — with '
            "the modelled logging delay (~100 ms) longer than a link delay every delivery "
            "violates it, no fault needed; a PHB crash during logging also delivers a message "
            "that was never published."
        ),
        publish_before_logged=True,
    ),
    "silence-to-everyone": _bug(
        "silence-to-everyone",
        ("silence_targets",),
        (),
        (
            "First-time silence is sent down every path, not only to brokers with an overlapping "
            "C [GD §3.1]. *first-time silence only toward curious brokers*; no fault needed (the "
            "pubend's idle silence or a filtered D produces first-time silence)."
        ),
        first_time_silence=silence_everywhere,
    ),
    "retransmit-to-all": _bug(
        "retransmit-to-all",
        ("retransmission_targets",),
        ("drop",),
        (
            "An IB forwards retransmitted knowledge down every path, not only to brokers that "
            "nacked [GD §3.1]. *retransmissions only to nackers*; needs one SHB's nack to be "
            "answered through an IB with a second downstream cell (loss on one IB-SHB link)."
        ),
        retransmit_to_nackers_only=False,
    ),
    "ack-any-downstream": _bug(
        "ack-any-downstream",
        ("ack_consolidation", "gapless"),
        (),
        (
            "The istream becomes A when *any* downstream cell acks, not all [GD §3.1]. *ack "
            "consolidation* without faults (cells ack at different times); with loss on one "
            "branch also *gapless* (the pubend releases what that branch still needs)."
        ),
        ack_all_downstream=False,
    ),
    "no-nack-repetition": _bug(
        "no-nack-repetition",
        ("liveness",),
        ("drop",),
        (
            "A subend never nacks a tick twice: no repetition after NRT, and AckExpected does not "
            "re-nack ticks it already asked for [GD §3.2]. *liveness*; needs a nack or its answer "
            "to be lost (drop window, stall or link failure while a gap is repaired)."
        ),
        repeat_nacks=False,
    ),
    "ack-expected-now": _bug(
        "ack-expected-now",
        ("ack_expected_timing",),
        (),
        (
            "The pubend sends AckExpected(now) instead of AckExpected(now - AET): it expects "
            "ticks acked the moment they are published [GD §3.2]. No subscriber notices (the "
            "subends nack what is still in flight and the answers are duplicates they drop); "
            "only *ack_expected_timing* (never early) catches it; needs no fault."
        ),
        ack_expected_point=expect_everything_now,
    ),
    "no-ack-expected": _bug(
        "no-ack-expected",
        ("ack_expected_timing", "liveness"),
        ("drop", "crash", "stall_link", "link_fail"),
        (
            "The pubend never checks the AET condition, so no AckExpected goes down while ticks "
            "stay unacked [GD §3.2] (it still sends one at a restart). *ack_expected_timing* "
            "(never late) when an ack or the tail of the stream is lost and nothing else makes "
            "the subends nack; *liveness* when the subends never learn of a lost tail."
        ),
        periodic_ack_expected=False,
    ),
    "route-into-down-link": _bug(
        "route-into-down-link",
        ("down_link_routing",),
        ("link_fail", "stall_link", "partition"),
        (
            "A broker routing knowledge towards a cell keeps the bundle member the pubend hash "
            "picks even when its link is down, instead of another up link of the bundle or a "
            "cell neighbour [GD §3.1]. The messages are lost until the link heals, then nacks "
            "repair them: subscribers see only delay. *down_link_routing* catches it; needs a "
            "failed member of a bundle (Figure 3's p1-b1 or p1-b2 link) while data flows."
        ),
        route_around_down_links=False,
    ),
    "sideways-again": _bug(
        "sideways-again",
        ("sideways_one_hop",),
        ("crash", "link_fail", "partition"),
        (
            "A broker that got knowledge sideways from a cell neighbour and has no link to the "
            "cell it is for routes it sideways again instead of dropping it [GD §3.1], so it "
            "returns to the neighbour it came from (the issue 18 finding, in the GD roles: the "
            "istream drops the returned copy, so each message bounces once; the best-effort "
            "roles, without one, pass it back and forth until a link heals). Subscribers see "
            "nothing; *sideways_one_hop* catches it; needs both brokers of a cell to lose the "
            "same downstream cell while data flows (that SHB crashing, or a partition)."
        ),
        sideways_once=False,
    ),
    "ack-waits-for-ack-expected": _bug(
        "ack-waits-for-ack-expected",
        ("shb_ack_timing",),
        (),
        (
            "The SHB's in-order shortcut (the common case: the next message, nothing pending) "
            "delivers but never arms the ack timer, so what it delivered is acked only when a "
            "slow-path step arms it or when the pubend asks with AckExpected, AET later "
            "[GD §2.1.1, §3.1, §3.2] (issue 18: a mutant of subend.py that passed the demo). "
            "Subscribers see nothing and the logs upstream are held AET instead of the ack "
            "delay; *shb_ack_timing* catches it; needs no fault."
        ),
        ack_in_order=False,
    ),
    "drop-detours": _bug(
        "drop-detours",
        ("sideways_forwarded",),
        ("link_fail",),
        (
            "An IB accepts knowledge its cell neighbour routes to it sideways for a downstream "
            "cell the neighbour lost its link to, then drops it without a Rejected record "
            "[GD §3.1] (issue 18: a mutant of knowledge_cell that passed the demo). The cell "
            "finds the gap and nacks, so subscribers see only delay; *sideways_forwarded* "
            "catches it; needs a failed link from one broker of a bundle to a downstream cell "
            "while its neighbour's link there stays up."
        ),
        take_detours=False,
    ),
}
"""GD's planted bugs by name."""
