"""GES configuration and the static network every node starts from [GES "The broker
organization", "Stable storages"].

Theory of operation
-------------------
:class:`Network` is what the organisation of the broker network tells every node: the
hierarchy (addresses, links), which nodes host clients, which nodes host the system stable
storages, which storage serves each node (the storage of its top-level unit), and the
replication granularity of ``spec/ges.md``: ``fine_of``, the storage of each node's cluster
(the finer tier, :mod:`gapless.impl.ges.tier`), empty at ``super-cluster`` granularity; and
whether the system storages exchange sequence numbers and acknowledgements
(``system_links``, :mod:`gapless.impl.ges.syslink`).
:class:`GESConfig` holds the timing: how often a
node retransmits what is unconfirmed (``retry_us``) and how long a stable-storage write takes
(``write_delay_us``; one delay for every write, so a node's writes complete in the order they
were asked for).
"""

from __future__ import annotations

from typing import final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.ges.addressing import Hierarchy

__all__ = ["GESConfig", "Network"]


@final
@attrs.frozen(kw_only=True)
class GESConfig:
    """Timing (see module doc)."""

    retry_us: int = 300_000
    write_delay_us: int = 2_000

    def __attrs_post_init__(self) -> None:
        if self.retry_us <= 0 or self.write_delay_us < 0:
            raise ProtocolMisuse(
                f"GESConfig: need retry_us > 0 and write_delay_us >= 0; got {self.retry_us}, "
                f"{self.write_delay_us}"
            )


@final
@attrs.frozen(kw_only=True, cache_hash=True)
class Network:
    """The static network (see module doc)."""

    hierarchy: Hierarchy
    storages: tuple[str, ...]
    storage_of: PMap[str, str]
    brokers: tuple[str, ...]
    fine_of: PMap[str, str] = attrs.field(factory=pmap)
    system_links: bool = False
    """Whether system storages number and acknowledge the events they destine into each
    other's top-level units (:mod:`gapless.impl.ges.syslink`)."""
    joins: PMap[str, int] = attrs.field(factory=pmap)
    """Cluster storages *added while the run goes*: each joins at the time given (µs); until
    then the system storages do not know it, and it learns nothing (storage addition,
    :mod:`gapless.impl.ges.tier`)."""

    @property
    def boot_fine_of(self) -> PMap[str, str]:
        """``fine_of`` as the system storages know it at boot: without the cluster storages
        that join later (they are learned from their ``Retrieve``)."""
        return pmap({n: f for n, f in self.fine_of.items() if f not in self.joins})

    @property
    def fine_storages(self) -> tuple[str, ...]:
        """The cluster storages (the finer tier), by name."""
        return tuple(sorted(set(self.fine_of.values())))

    def __attrs_post_init__(self) -> None:
        nodes = self.hierarchy.nodes
        h = self.hierarchy
        wrong = [
            n
            for n, f in self.fine_of.items()
            if n not in nodes or f not in nodes or h.unit(n, 1) != h.unit(f, 1)
        ]
        if wrong:
            raise ProtocolMisuse(
                f"Network: a cluster storage must be a node of the cluster it serves; wrong for "
                f"{sorted(wrong)}"
            )
        late = sorted(f for f, at in self.joins.items() if f not in self.fine_storages or at < 0)
        if late:
            raise ProtocolMisuse(
                f"Network: only a cluster storage can join while the run goes, at a time >= 0; "
                f"wrong for {late}; cluster storages: {', '.join(self.fine_storages) or 'none'}"
            )
        bad = [s for s in (*self.storages, *self.storage_of.values()) if s not in nodes]
        missing = [n for n in nodes if n not in self.storage_of]
        if bad or missing or set(self.storage_of.values()) - set(self.storages):
            raise ProtocolMisuse(
                f"Network: storages must be nodes and serve every node; unknown {bad}, "
                f"unserved {missing}"
            )
