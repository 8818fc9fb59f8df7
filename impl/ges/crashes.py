"""A GES node's crash: what survives it [GES "Stable storages": a stable storage that fails
recovers].

Theory of operation
-------------------
A node keeps exactly its completed writes (``disk``): the outbox, and for a storage its logs,
registrations, releases, the cluster storages it recorded and the system-level events it
holds, from which the storage is rebuilt (:func:`gapless.impl.ges.storage.recover`,
:func:`gapless.impl.ges.tier.add_unit`, :func:`gapless.impl.ges.syslink.rebuild`). Sessions,
suspicions, news and in-flight writes are lost; clients reconnect and present their tokens.
"""

from __future__ import annotations

from pyrsistent import pmap

from gapless.impl.ges.node import NodeState
from gapless.impl.ges.storage import recover
from gapless.impl.ges.syslink import rebuild
from gapless.impl.ges.tier import add_unit

__all__ = ["crash"]


def crash(s: NodeState) -> NodeState:
    """The node after a crash: only its completed writes survive (see module doc)."""
    outbox = {(k[1], k[2]): v for k, v in s.disk.items() if k[0] == "outbox"}
    pub_next: dict[str, int] = {}
    for pubend, seq in outbox:
        pub_next[pubend] = max(pub_next.get(pubend, 0), seq + 1)
    st = None
    if s.store is not None:
        logs = {k[2]: v[0] for k, v in s.disk.items() if k[0] == "log"}
        released = {k[2] for k in s.disk if k[0] == "release"}
        records = {k[2]: v.record for k, v in s.disk.items() if k[0] == "client"}
        st = recover(s.name, logs, released, records, s.net.boot_fine_of)
        for key in sorted(k for k in s.disk if k[0] == "unit"):
            st = add_unit(st, s.net.hierarchy, key[2], s.policy)
        sysin = [(k[2], k[3]) for k in s.disk if k[0] == "sysin"]
        st = rebuild(st, logs.values(), sysin)
    return NodeState(
        name=s.name,
        net=s.net,
        config=s.config,
        policy=s.policy,
        pub_next=pmap(pub_next),
        outbox=pmap(outbox),
        store=st,
        disk=s.disk,
    )
