"""Planted protocol bugs declared as data, beside the rules they change (DESIGN.md, "sans-IO").

Theory of operation
-------------------
A role's rules come from a frozen *policy* value whose default is the paper's. A planted bug
is another policy value. Each protocol declares its bug zoo in its own package
(``gapless.impl.<protocol>.variants``) as a mapping from name to :class:`Variant`: the policy,
the invariants expected to catch it, the fault kinds it needs to show, and a one-paragraph
summary naming the paper section whose rule it breaks. Campaigns (``gapless.spark_fuzz``) run
zoo campaigns over what the protocols declare; the roles never test a bug's name, they only
call the policy's rule.

The name ``"none"`` is reserved for the correct protocol (:data:`CORRECT`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, final

import attrs

from gapless.impl.errors import ProtocolMisuse

__all__ = ["CORRECT", "CORRECT_ALIASES", "Variant", "resolve"]

CORRECT: Final = "none"
"""The variant name of the correct protocol (the paper's policy)."""

CORRECT_ALIASES: Final = ("none", "correct", "paper")
"""Names that all mean the correct protocol."""


@final
@attrs.frozen(kw_only=True)
class Variant:
    """One planted bug: ``policy`` replaces the paper's policy; ``caught_by`` names the
    invariants expected to catch it (any one of them suffices); ``needs`` the fault kinds
    it needs to show (empty: it shows without faults); ``topology`` the topology a zoo
    campaign should run it on (``None``: the protocol's default); ``summary`` what goes
    wrong, citing the paper rule it breaks.

    >>> v = Variant(name="x", policy=object(), caught_by=("liveness",), summary="s")
    >>> v.needs
    ()
    """

    name: str
    policy: Any
    caught_by: tuple[str, ...]
    needs: tuple[str, ...] = ()
    topology: str | None = None
    summary: str = ""

    def __attrs_post_init__(self) -> None:
        if not self.name or self.name in CORRECT_ALIASES:
            raise ProtocolMisuse(
                f"Variant: name {self.name!r} is empty or reserved for the correct protocol "
                f"({', '.join(CORRECT_ALIASES)})"
            )
        if not self.caught_by:
            raise ProtocolMisuse(
                f"Variant {self.name!r}: caught_by must name at least one invariant"
            )


def resolve(protocol: str, name: str, correct_policy: Any, variants: Mapping[str, Variant]) -> Any:
    """The policy of variant ``name`` of ``protocol``: ``correct_policy`` for the correct
    protocol's names, else the declared variant's policy. An unknown name raises
    :class:`~gapless.impl.errors.ProtocolMisuse` listing every allowed name."""
    if name in CORRECT_ALIASES:
        return correct_policy
    got = variants.get(name)
    if got is None:
        allowed = ", ".join((*CORRECT_ALIASES, *sorted(variants)))
        raise ProtocolMisuse(f"protocol {protocol!r}: unknown variant {name!r}; allowed: {allowed}")
    return got.policy
