"""The bug zoo as the campaigns see it: the planted bugs the protocols declare.

Theory of operation
-------------------
The bugs themselves are declared beside the rules they change
(:mod:`gapless.impl.gd.variants`, one :class:`~gapless.impl.variants.Variant` each: its policy,
the invariants expected to catch it, the fault kinds it needs). This module only names them
for campaigns: :data:`ZOO` maps a GD bug's name to its policy, :func:`policy_by_name` resolves
a name (``"none"``, ``"correct"`` and ``"paper"`` are the correct protocol).
"""

from __future__ import annotations

from typing import Final

from gapless.impl.gd import PAPER_POLICY, GDPolicy
from gapless.impl.gd.variants import VARIANTS
from gapless.impl.variants import CORRECT_ALIASES, resolve

__all__ = ["CORRECT_NAMES", "ZOO", "bug_names", "policy_by_name"]

ZOO: Final[dict[str, GDPolicy]] = {name: v.policy for name, v in VARIANTS.items()}
"""GD's planted bugs by name (declared in :mod:`gapless.impl.gd.variants`)."""

CORRECT_NAMES: Final = CORRECT_ALIASES


def bug_names() -> tuple[str, ...]:
    """Every planted bug's name, sorted."""
    return tuple(sorted(ZOO))


def policy_by_name(name: str) -> GDPolicy:
    """The policy called ``name``: a declared bug, or the paper's protocol for ``"none"``,
    ``"correct"`` or ``"paper"``. An unknown name raises
    :class:`~gapless.impl.errors.ProtocolMisuse` listing the allowed names."""
    policy: GDPolicy = resolve("gd", name, PAPER_POLICY, VARIANTS)
    return policy
