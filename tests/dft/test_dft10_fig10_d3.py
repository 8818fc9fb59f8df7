"""Figure 10, δ = 3, at the size ``make test`` runs (see ``_fig10_check.py``) [DFT §IX-B]."""

from __future__ import annotations

from _fig10_check import check_delta


def test_fig10_delta_3() -> None:
    check_delta(3)
