"""Guaranteed delivery's invariants as plug-ins over the shared ledger [GD §2-3].

:data:`PLUGINS` is what a checker of a GD run is given
(``Checker(ctx, names, plugins=PLUGINS)``, the default): the delivery invariants
(:mod:`gapless.invariants.gd.delivery`), the wire-conformance ones
(:mod:`gapless.invariants.gd.conformance`), minimal traffic
(:mod:`gapless.invariants.gd.traffic`), the AckExpected timing rule
(:mod:`gapless.invariants.gd.timing`), the link-bundle rule
(:mod:`gapless.invariants.gd.links`), the own-timer rule
(:mod:`gapless.invariants.gd.timers`), the refused-input rule
(:mod:`gapless.invariants.gd.refusals`), the quiet-delivery rule
(:mod:`gapless.invariants.gd.quiet`), the one-sideways-hop rule
(:mod:`gapless.invariants.gd.sideways`), the silence rule
(:mod:`gapless.invariants.gd.silence`), the SHB ack rule (:mod:`gapless.invariants.gd.acks`)
the detour rule (:mod:`gapless.invariants.gd.detour`) and the canonical-state rule
(:mod:`gapless.invariants.gd.forms`, the one that reads role state, through ``malformed``
records). Their names, in report order, are
``gapless.invariants.INVARIANTS``.
"""

from __future__ import annotations

from typing import Final

from gapless.invariants.gd.acks import GDShbAckTiming
from gapless.invariants.gd.conformance import GDConformance
from gapless.invariants.gd.delivery import GDDelivery
from gapless.invariants.gd.detour import GDSidewaysForwarded
from gapless.invariants.gd.forms import GDCanonicalState
from gapless.invariants.gd.links import GDDownLinkRouting
from gapless.invariants.gd.quiet import GDQuietDelivery
from gapless.invariants.gd.refusals import GDRefusedInput
from gapless.invariants.gd.sideways import GDSidewaysOneHop
from gapless.invariants.gd.silence import GDSilence
from gapless.invariants.gd.timers import GDOwnTimers
from gapless.invariants.gd.timing import GDAckExpectedTiming
from gapless.invariants.gd.traffic import GDMinimalTraffic
from gapless.invariants.plugin import Plugin

__all__ = [
    "PLUGINS",
    "GDAckExpectedTiming",
    "GDCanonicalState",
    "GDConformance",
    "GDDelivery",
    "GDDownLinkRouting",
    "GDMinimalTraffic",
    "GDOwnTimers",
    "GDQuietDelivery",
    "GDRefusedInput",
    "GDShbAckTiming",
    "GDSidewaysForwarded",
    "GDSidewaysOneHop",
    "GDSilence",
]

PLUGINS: Final[tuple[type[Plugin], ...]] = (
    GDDelivery,
    GDConformance,
    GDMinimalTraffic,
    GDAckExpectedTiming,
    GDDownLinkRouting,
    GDOwnTimers,
    GDRefusedInput,
    GDQuietDelivery,
    GDSidewaysOneHop,
    GDSilence,
    GDShbAckTiming,
    GDSidewaysForwarded,
    GDCanonicalState,
)
"""GD's plug-ins, in the order they judge a record."""
