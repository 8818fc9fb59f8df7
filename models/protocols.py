"""The one protocol registry: every protocol the kit knows, by name (DESIGN.md, "Layers").

Theory of operation
-------------------
Each protocol builds its :class:`~gapless.models.registry.ProtocolEntry` in its own module
(``gapless.models.<protocol>_protocol``); this table lists them. Every command finds a
protocol here: campaigns and the zoo by ``--protocol NAME``, ``gapless simulate`` by scenario
name (unique across protocols, checked when the table is built), ``gapless check`` by the
protocol named in a trace file's header, ``gapless protocols`` lists them.

To add a protocol: build its entry, import it below and add it to :data:`PROTOCOLS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gapless.impl.errors import ProtocolMisuse
from gapless.models import dft_protocol, durable_protocol, gd_protocol, ges_protocol, zmq_protocol
from gapless.models.registry import ProtocolEntry, Scenario

__all__ = ["PROTOCOLS", "protocol", "protocols", "scenario", "scenarios"]


def _table(entries: tuple[ProtocolEntry, ...]) -> dict[str, ProtocolEntry]:
    table: dict[str, ProtocolEntry] = {}
    owner: dict[str, str] = {}
    for e in entries:
        if e.name in table:
            raise ProtocolMisuse(f"protocol {e.name!r} is registered twice")
        for s in e.scenarios:
            if s.name in owner:
                raise ProtocolMisuse(
                    f"scenario {s.name!r} is registered by both {owner[s.name]!r} and {e.name!r}"
                )
            owner[s.name] = e.name
        table[e.name] = e
    return table


PROTOCOLS: Final[Mapping[str, ProtocolEntry]] = _table(
    (
        gd_protocol.ENTRY,
        zmq_protocol.ENTRY,
        dft_protocol.ENTRY,
        ges_protocol.ENTRY,
        durable_protocol.ENTRY,
    )
)
"""Protocol name -> its entry."""


def protocol(name: str) -> ProtocolEntry:
    """The entry of protocol ``name``; an unknown name raises
    :class:`~gapless.impl.errors.ProtocolMisuse` listing the registered ones."""
    entry = PROTOCOLS.get(name)
    if entry is None:
        raise ProtocolMisuse(
            f"protocol {name!r} is unknown; allowed: {', '.join(sorted(PROTOCOLS))}"
        )
    return entry


def protocols() -> tuple[ProtocolEntry, ...]:
    """Every registered protocol, by name."""
    return tuple(PROTOCOLS[n] for n in sorted(PROTOCOLS))


def scenarios() -> dict[str, Scenario]:
    """Every scenario of every protocol, by name."""
    return {s.name: s for e in protocols() for s in e.scenarios}


def scenario(name: str) -> Scenario:
    """The scenario called ``name`` (of whichever protocol registered it)."""
    found = scenarios().get(name)
    if found is None:
        raise ProtocolMisuse(
            f"scenario {name!r} is unknown; allowed: {', '.join(sorted(scenarios()))}"
        )
    return found
