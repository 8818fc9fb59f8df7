"""DFT messages, partition ids, and the protocol's own wire summary [DFT §III "Message types"].

Theory of operation
-------------------
Four message types travel between brokers [DFT §III]: subscriptions (:class:`SubMsg`),
publications (:class:`PubMsg`), confirmations of either (:class:`SubConfirm`,
:class:`PubConfirm`), and partition-information messages (:class:`PartitionInfo`).
Subscriptions, confirmations and publications may carry ``tags``, a set of partition ids
(:class:`Pid`) meaning "forwarding of this message was prematurely affected by these
partitions" [DFT §III].

Every forwarded subscription and publication carries ``trail``, the brokers that forwarded
it so far, source first. The roles read only its last DSEQ entries (the paper's SPath,
[DFT §V]); the whole trail is on the wire so that the ``legitimate_propagation`` invariant can
judge a message's path from the trace alone. Publications also carry their sequence vector
``seqvec`` [DFT §VII] (see :mod:`gapless.impl.dft.seqvec`).

:func:`wire` is the protocol's own wire summary (:class:`DFTWire`): what an invariant may
read about a message on the wire, without the role's internal state.
"""

from __future__ import annotations

from typing import Any, Final, final

import attrs
from pyrsistent import PMap, pmap

from gapless.impl.inputs import as_pmap

__all__ = [
    "WIRE_KINDS",
    "DFTWire",
    "PartitionHealed",
    "PartitionInfo",
    "Pid",
    "PubConfirm",
    "PubMsg",
    "RecoveryNotifier",
    "SubConfirm",
    "SubMsg",
    "SyncStart",
    "SyncSummary",
    "SyncTransfer",
    "wire",
]


@final
@attrs.frozen(kw_only=True, order=True)
class Pid:
    """A partition id (pd, i, pnodes): the detector, its counter, and the primary path of
    partition nodes starting next to the detector [DFT §III, Figure 4]."""

    detector: str
    counter: int
    pnodes: tuple[str, ...]


@final
@attrs.frozen(kw_only=True)
class SubMsg:
    """A subscription: id ``sid``, issued at source broker ``source`` with ``filter``
    [DFT §V]. ``island`` marks an upstream copy sent into a partition island [DFT §V-B]."""

    sid: str
    source: str
    filter: str
    trail: tuple[str, ...] = ()
    tags: frozenset[Pid] = frozenset()
    island: bool = False


@final
@attrs.frozen(kw_only=True)
class SubConfirm:
    """c_s: subscription ``sid`` is processed in the sender's subtree; ``tags`` are the
    barriers that kept it from part of that subtree [DFT §V-A, §V-C]."""

    sid: str
    tags: frozenset[Pid] = frozenset()
    #: The sender's stamp counter when it accepted ``sid`` (our addition, spec/dft.md
    #: "Releases after recovery"): every publication it stamped at or below it, it had
    #: processed before accepting ``sid``, so never matched against it [DFT §VI (ii)].
    stamp: int | None = None


@final
@attrs.frozen(kw_only=True)
class PubMsg:
    """A publication: the ``number``-th of source broker ``source`` [DFT §VI]. ``seqvec`` is
    its sequence vector: ``(broker, stamp, low-water mark)`` for the forwarders among the
    last DSEQ brokers of its primary path [DFT §VII]."""

    source: str
    number: int
    attributes: PMap[str, Any] = attrs.field(factory=pmap, converter=as_pmap)
    trail: tuple[str, ...] = ()
    seqvec: tuple[tuple[str, int, int], ...] = ()
    tags: frozenset[Pid] = frozenset()
    #: Subscriptions this copy must not be matched for (our addition, spec/dft.md
    #: "Releases after recovery"): a broker of its path processed it before accepting
    #: them, so the safety condition of [DFT §VI] fails for them wherever it goes.
    not_for: frozenset[str] = frozenset()

    @property
    def key(self) -> tuple[str, int]:
        """The publication's identity, used to match confirmations to queue entries."""
        return (self.source, self.number)


@final
@attrs.frozen(kw_only=True)
class PubConfirm:
    """c_p: publication ``key`` reached every matching subscriber in the sender's subtree
    [DFT §VI]."""

    key: tuple[str, int]


@final
@attrs.frozen(kw_only=True)
class PartitionInfo:
    """A partition-information message carrying a newly formed ``pid`` [DFT §III, §IV]."""

    pid: Pid


@final
@attrs.frozen(kw_only=True)
class PartitionHealed:
    """Partial recovery, step (v): partition ``pid`` has recovered; brokers within DPT of
    its detector remove it from their partition tables [DFT §VIII-A]."""

    pid: Pid


@final
@attrs.frozen(kw_only=True)
class RecoveryNotifier:
    """p_rec, the partition-recovery notifier of step (iv) [DFT §VIII-A]: in subscription
    ``sid``'s confirmation tags, ``pid`` is replaced by ``tags`` (the barriers that remain
    downstream of the recovered broker). It travels towards ``source``, the subscription's
    source broker, over the active sessions on the primary path."""

    pid: Pid
    sid: str
    source: str
    tags: frozenset[Pid] = frozenset()


@final
@attrs.frozen(kw_only=True)
class SyncStart:
    """Partial recovery, step (i): the sender's session to the receiver is now active and
    the sender is its sync-point [DFT §VIII-A]. ``recovering``: the sender restarted and
    asks the receiver to be its sync-point too [DFT §VIII-B]."""

    recovering: bool = False


@final
@attrs.frozen(kw_only=True)
class SyncSummary:
    """Partial recovery, step (ii): the ids of the subscriptions the recovering broker has
    accepted (its SRT) [DFT §VIII-A]."""

    sids: frozenset[str] = frozenset()
    #: Per sid of ``sids``, the recovering broker's confirmation tags (our addition: what
    #: a partition-recovery notifier puts in place of a recovered pid, step iv).
    tags: tuple[tuple[str, frozenset[Pid]], ...] = ()


@final
@attrs.frozen(kw_only=True)
class SyncTransfer:
    """Partial recovery, step (iii): the sync-point's accepted subscriptions missing at the
    recovering broker [DFT §VIII-A]. ``subs``: those the recovering broker is downstream of,
    each as SendSubTo would send it (Figure 5); ``upstream``: those whose source lies beyond
    the recovering broker — the sync-point routes their publications through it — with the
    trail cut to the brokers before it. Sent even when empty, so the recovering broker
    knows this sync-point is done."""

    subs: tuple[SubMsg, ...] = ()
    upstream: tuple[SubMsg, ...] = ()


WIRE_KINDS: Final = (
    "sub",
    "sub_confirm",
    "pub",
    "pub_confirm",
    "partition_info",
    "partition_healed",
    "recovery_notifier",
    "sync_start",
    "sync_summary",
    "sync_transfer",
)


@final
@attrs.frozen(kw_only=True)
class DFTWire:
    """What a DFT message says on the wire (the protocol's wire-summary schema): ``kind``
    (one of :data:`WIRE_KINDS`), the message ``key`` (sid, or (source, number)), its
    ``source`` broker, ``trail``, ``tags`` and, for subscriptions, ``island``."""

    kind: str
    key: Any
    source: str = ""
    trail: tuple[str, ...] = ()
    tags: frozenset[Pid] = frozenset()
    island: bool = False
    #: Always False: DFT has no retransmission in GD's sense (kept so the kit's run
    #: counters read every protocol's summary alike).
    retransmission: bool = False


def wire(msg: Any) -> DFTWire | None:
    """The wire summary of a DFT message (None for anything else)."""
    if isinstance(msg, PubMsg):
        return DFTWire(kind="pub", key=msg.key, source=msg.source, trail=msg.trail, tags=msg.tags)
    if isinstance(msg, SubMsg):
        return DFTWire(
            kind="sub",
            key=msg.sid,
            source=msg.source,
            trail=msg.trail,
            tags=msg.tags,
            island=msg.island,
        )
    if isinstance(msg, SubConfirm):
        return DFTWire(kind="sub_confirm", key=msg.sid, tags=msg.tags)
    if isinstance(msg, PubConfirm):
        return DFTWire(kind="pub_confirm", key=msg.key)
    if isinstance(msg, PartitionInfo):
        return DFTWire(kind="partition_info", key=msg.pid, source=msg.pid.detector)
    if isinstance(msg, PartitionHealed):
        return DFTWire(kind="partition_healed", key=msg.pid, source=msg.pid.detector)
    if isinstance(msg, RecoveryNotifier):
        return DFTWire(kind="recovery_notifier", key=msg.sid, source=msg.source, tags=msg.tags)
    if isinstance(msg, SyncStart):
        return DFTWire(kind="sync_start", key=None)
    if isinstance(msg, SyncSummary):
        return DFTWire(kind="sync_summary", key=len(msg.sids))
    if isinstance(msg, SyncTransfer):
        return DFTWire(kind="sync_transfer", key=tuple(s.sid for s in (*msg.subs, *msg.upstream)))
    return None
