"""The invariant plug-ins of each protocol, by protocol name.

A protocol registers the tuple of its :class:`~gapless.invariants.plugin.Plugin` classes here
(GD: :data:`gapless.invariants.gd.PLUGINS`); :func:`plugins_for` finds them and
:func:`invariant_names` lists the invariants they own, in report order. The checker takes the
plug-ins from its caller (``Checker(ctx, names, plugins=plugins_for(protocol))``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from gapless.impl.errors import ProtocolMisuse
from gapless.invariants import gd
from gapless.invariants.plugin import Plugin

__all__ = ["PLUGINS", "invariant_names", "plugins_for"]

PLUGINS: Final[dict[str, tuple[type[Plugin], ...]]] = {"gd": gd.PLUGINS}
"""Each protocol's invariant plug-ins."""


def plugins_for(protocol: str) -> tuple[type[Plugin], ...]:
    """The invariant plug-ins of ``protocol``; :class:`ProtocolMisuse` names the known ones."""
    try:
        return PLUGINS[protocol]
    except KeyError:
        raise ProtocolMisuse(
            f"invariants: protocol {protocol!r} has no plug-ins; "
            f"allowed: {', '.join(sorted(PLUGINS))}"
        ) from None


def invariant_names(plugins: Iterable[type[Plugin]]) -> tuple[str, ...]:
    """The invariants ``plugins`` own, in order; :class:`ProtocolMisuse` if two own one name."""
    out: list[str] = []
    for cls in plugins:
        for name in cls.names:
            if name in out:
                raise ProtocolMisuse(
                    f"invariants: {name!r} is owned by two plug-ins ({cls.__name__} and another); "
                    "allowed: one owner per invariant"
                )
            out.append(name)
    return tuple(out)
