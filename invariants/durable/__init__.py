"""Trace-only invariants of durable subscriptions [DUR §2-3]: Tr <= Td, the L rule, gap
legality and exactly-once across disconnections.

:data:`PLUGINS` is what a checker of a durable run is given (``Checker(ctx, names,
plugins=PLUGINS)``); :data:`INVARIANTS` names their invariants in report order.
"""

from __future__ import annotations

from typing import Final

from gapless.invariants.durable.judge import DurableRelease
from gapless.invariants.plugin import Plugin, invariant_names

__all__ = ["INVARIANTS", "PLUGINS", "DurableRelease"]

PLUGINS: Final[tuple[type[Plugin], ...]] = (DurableRelease,)
"""The durable plug-ins, in the order they judge a record."""

INVARIANTS: Final = invariant_names(PLUGINS)
"""``release_horizon``, ``release_rule``, ``gap_legal``, ``durable_exactly_once``."""
