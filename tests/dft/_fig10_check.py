"""Figure 10 at the size ``make test`` runs [DFT §IX-B]: 100 brokers, 30 simulated seconds,
k in {0, 4, 8, 12, 17} failed for good (the paper's 0..85 of 500 as fractions), one δ per
test file so the four spread over the workers (``test_dft10_fig10_d*.py``).

Each point runs the real roles on the simulator with every invariant on. What it must show:
no invariant is violated (k = 0 passes; with failures the run is judged on safety alone,
``out_of_budget``, because the subscribers of failed brokers are owed nothing); with no
failure every expected delivery is made; and with failures the roles make **exactly** the
deliveries legitimate propagation allows while the failures persist — each publication at
every live broker whose primary path from the source has at most δ failed brokers in every
window of 2δ + 1 [DFT §VII] (:func:`gapless.models.dft_fig10.legitimate_deliveries`, the
count behind Figure 9's second column). Fewer would be a bypass the protocol failed to
make; more, a delivery along a path the protocol may not use. The count is computed from
the tree and the failure set alone, not from the run."""

from __future__ import annotations

from gapless.models.dft_fig10 import fig10_delta, legitimate_of_point

N = 100
DURATION_S = 30.0
KS = (17, 12, 8, 4, 0)


def check_delta(delta: int) -> list[dict[str, object]]:
    """Run the five points of ``delta`` and assert the above; returns the points."""
    points = list(fig10_delta(N, delta, KS, DURATION_S))
    assert [p["k"] for p in points] == list(KS)
    for p in points:
        where = f"δ={delta} k={p['k']}: {p}"
        assert p["invariant"] is None, where
        assert p["verdict"] == ("pass" if p["k"] == 0 else "out_of_budget"), where
        assert p["delivered"] == p["legitimate"], where
        assert p["expected"] > 0, where
        if p["k"] == 0:
            assert p["delivered"] == p["expected"], where
    # the same two counts from the workload, tree and failures alone (how the paper-scale
    # points that ran before ``legitimate`` existed are judged): checked at the largest k
    top = points[0]
    assert legitimate_of_point(N, delta, top["k"], DURATION_S) == {
        "expected": top["expected"],
        "legitimate": top["legitimate"],
    }, top
    # non-vacuity: at k = 17 the failures cut pairs off for every δ (so the count is not
    # just ``expected``), and the owed deliveries of in-budget pairs were judged by
    # ``bounded_delivery`` on the way
    assert points[0]["legitimate"] < points[0]["expected"], points[0]
    assert all(p["bounded_met"] for p in points)
    return points
