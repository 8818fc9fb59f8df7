"""Every planted GES bug is caught by an invariant it declares, on a small run the correct
protocol passes (the invariants' non-vacuity: each catches the bug it is for)."""

from __future__ import annotations

import pytest
from _runs import MIXED, fault, run

from gapless.impl.ges.variants import VARIANTS
from gapless.invariants.ges import INVARIANTS
from gapless.models.workload import WorkloadSpec

ROAMS = tuple(
    fault("disconnect", 0.6 + 0.3 * i, 0.2, f"n{1 + i % 8}.u{i % 2}", 10 + i) for i in range(8)
)
FINE_CRASHES = (fault("crash", 1.0, 0.8, "n3", 1), fault("crash", 1.3, 0.5, "n8", 2))
"""Two cluster storages crash (the finer tier: run config granularity = "cluster")."""
CLUSTER = {"config": {"granularity": "cluster"}}
LINKS = {"config": {"system_links": True}}
LOSSY = (fault("drop", 0.5, 2.0, "n3|n5", 1, probability=0.8),)
"""The link between the two super-clusters on n2's route to n7 loses most messages: events
n2 forwards to n7 and n2's acknowledgements of n7's events (the system-level links)."""
CUT = (fault("link_fail", 0.8, 0.5, "n3|n5", 1), fault("link_fail", 0.8, 0.5, "n4|n6", 2))
"""Both links between the super-clusters fail together, then come back."""
ONE_LINK = (fault("link_fail", 0.8, 0.5, "n3|n5", 1),)
"""One of the two links between the super-clusters fails, then comes back."""
SAME_PROFILE = WorkloadSpec(rate_per_pubend=10.0, filters="keys", keys=1, subscribers_per_shb=2)
CASES = {
    "epoch-at-reconnect": ("release_after_confirm", MIXED, {}),
    "double-decrement": ("reference_counts", MIXED, {}),
    "route-through-suspected": ("avoid_suspected", MIXED, {}),
    "no-alternate-route": ("route_while_path", ONE_LINK, {}),
    "aggregate-losses-only": ("route_while_path", CUT, {}),
    "no-edge-refcount": ("reference_counts", ROAMS, {"workload": SAME_PROFILE}),
    "flooding": ("selective_routing", MIXED, {}),
    "skip-chain": ("release_after_confirm", MIXED, {}),
    "recovery-from-new-profile": ("release_after_confirm", MIXED, {}),
    "gatekeeper-no-edge-refcount": ("roam_complete", ROAMS, {"workload": SAME_PROFILE}),
    "release-before-units": ("release_after_confirm", FINE_CRASHES, CLUSTER),
    "replica-released-early": ("release_after_confirm", MIXED, CLUSTER),
    "sys-skip-gap": ("system_sequence", LOSSY, LINKS),
    "sys-write-again": ("system_sequence", LOSSY, LINKS),
    "release-before-peers": ("release_after_confirm", MIXED, LINKS),
}


def test_every_variant_has_a_case() -> None:
    assert set(CASES) == set(VARIANTS)
    assert len(VARIANTS) >= 5


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_variant_is_caught_and_the_correct_protocol_passes(name: str) -> None:
    invariant, events, kw = CASES[name]
    assert invariant in VARIANTS[name].caught_by
    bad = run(name, events, **kw)
    assert bad.verdict == "violation", bad.explanation
    assert bad.invariant == invariant, bad.explanation
    good = run("none", events, **kw)
    assert good.verdict == "pass", good.explanation
    assert good.counters.delivered > 0


def test_only_the_instantaneous_judgement_sees_a_drop_while_the_alternate_link_was_up() -> None:
    """``no-alternate-route`` drops what should take the other link between the
    super-clusters; once the failed one heals everything arrives, so liveness alone passes
    it: ``route_while_path`` is what sees it."""
    liveness = tuple(n for n in INVARIANTS if n != "route_while_path")
    assert run("no-alternate-route", ONE_LINK, invariants=liveness).verdict == "pass"
