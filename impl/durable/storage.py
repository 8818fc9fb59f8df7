"""Storage effects of a subscriber hosting broker: what the pure roles ask stable storage to do.

Theory of operation
-------------------
An SHB keeps two kinds of durable state [DUR §4.1, §4.2]:

* the **persistent filtering subsystem** (PFS): one append-only log stream per pubend, one
  record per timestamp that matched at least one subscriber (:mod:`gapless.impl.durable.pfs`);
* **tables**: ``latestDelivered(p)``, ``released(s, p)``, ``CT(s, p)`` when the SHB keeps the
  subscriber's checkpoint token (the second acknowledgement mode [DUR §5.2]) and the PFS
  metadata (``lastTimestamp``, ``lastIndex(s)``, the first live index after a chop).

The core does no I/O: its operations return the effects below, in the order they must be
carried out, and :mod:`gapless.models.durable_store` carries them out on real files and SQLite
(or in memory, or on a simulated disk). The order encodes the paper's durability rules:

* a record is durable only after a :class:`PfsSync` covering its index (the log's fsync);
* the table puts (:class:`PutLatestDelivered`, :class:`PutReleased`, :class:`PutCheckpoint`,
  :class:`PutPfsMeta`, :class:`PutMove`, :class:`DropSubscriber`) since the previous
  :class:`Flush` become durable together, atomically, at the next :class:`Flush` (one
  database transaction per flush [DUR §5.2]);
* ``latestDelivered(p)`` may be flushed only once every PFS record at or below it has been
  synced: delivery to the PFS completes only when the record is on stable storage [DUR §4.1];
* a :class:`PfsChop` may discard records only up to a release point already flushed:
  ``released(p) = min(latestDelivered(p), min_s released(s, p))`` [DUR §4.1] as the *durable*
  tables say, so a crash can never bring back a release point below chopped records.

A store checks the last two rules and raises :class:`StorageOrderError` (a caller's mistake)
when an effect sequence breaks them.
"""

from __future__ import annotations

from typing import final

import attrs

from gapless.impl.errors import GaplessError

__all__ = [
    "NO_INDEX",
    "CorruptLog",
    "DropSubscriber",
    "FatalStorageError",
    "Flush",
    "PfsAppend",
    "PfsChop",
    "PfsRecord",
    "PfsSync",
    "PutCheckpoint",
    "PutLatestDelivered",
    "PutMove",
    "PutPfsMeta",
    "PutReleased",
    "StorageEffect",
    "StorageOrderError",
    "SubscriberId",
]

SubscriberId = int
"""A durable subscriber's number at its SHB: the PFS writes it in 8 bytes [DUR §4.2]."""

NO_INDEX = -1
"""The back-pointer of a subscriber's first record: no earlier record (the paper's ``_``)."""


@final
@attrs.frozen(kw_only=True)
class PfsRecord:
    """One PFS record [DUR §4.2, Figure 2]: the ``timestamp`` of a Q tick and, for each
    subscriber it is Q for, ``(subscriber, previous index)`` — the index of that subscriber's
    previous record, or :data:`NO_INDEX`. Encoded in ``8 + 16 n`` bytes (the paper's
    footnote 2) by :func:`gapless.impl.durable.pfs.encode_record`."""

    timestamp: int
    entries: tuple[tuple[SubscriberId, int], ...]


@final
@attrs.frozen(kw_only=True)
class PfsAppend:
    """Append ``record`` to pubend ``pubend``'s log stream; it is assigned ``index`` (the
    stream's next index, monotonic from 0). Not durable until a :class:`PfsSync` covers it."""

    pubend: str
    index: int
    record: PfsRecord


@final
@attrs.frozen(kw_only=True)
class PfsSync:
    """Make every record of ``pubend``'s log up to ``upto_index`` durable (fsync)."""

    pubend: str
    upto_index: int


@final
@attrs.frozen(kw_only=True)
class PfsChop:
    """Discard ``pubend``'s records with index ``< first_index`` [DUR §4.2 "chopping"]; they
    hold only timestamps ``<= released`` — the release point this chop depends on, which must
    already be durable."""

    pubend: str
    first_index: int
    released: int


@final
@attrs.frozen(kw_only=True)
class PutLatestDelivered:
    """``latestDelivered(pubend) = timestamp`` [DUR §4.1], durable at the next :class:`Flush`."""

    pubend: str
    timestamp: int


@final
@attrs.frozen(kw_only=True)
class PutReleased:
    """``released(subscriber, pubend) = timestamp`` [DUR §4.1], durable at the next flush."""

    subscriber: SubscriberId
    pubend: str
    timestamp: int


@final
@attrs.frozen(kw_only=True)
class PutCheckpoint:
    """``CT(subscriber, pubend) = timestamp`` kept by the SHB (the second acknowledgement
    mode [DUR §5.2]), durable at the next flush."""

    subscriber: SubscriberId
    pubend: str
    timestamp: int


@final
@attrs.frozen(kw_only=True)
class PutMove:
    """Subscriber ``subscriber`` (called ``name``, with ``filter``) moved here from SHB
    ``previous`` (None once that SHB confirmed dropping its record) by its move number
    ``generation``, presenting ``start`` (``(pubend, tick)`` pairs: where its pending record
    sits) and refiltering up to ``refilter_upto`` (the ``latestDelivered(p)`` of the
    registration: the PFS here names it in no record at or below it) [DUR §1 item 5]
    (``spec/durable.md``, "Reconnect-anywhere"). Durable at the next flush; recovery takes a
    moved subscriber with no ``released(s, p)`` row to be still pending at ``start``."""

    subscriber: SubscriberId
    name: str
    filter: str
    previous: str | None
    generation: int
    start: tuple[tuple[str, int], ...]
    refilter_upto: tuple[tuple[str, int], ...]


@final
@attrs.frozen(kw_only=True)
class DropSubscriber:
    """Subscriber ``subscriber`` unsubscribed durably (or moved away): its ``released(s, p)``,
    ``CT(s, p)`` and move rows go, durable at the next flush, so that the durable ``released(p)``
    no longer counts it [DUR §3 "a subscriber joining or leaving"]."""

    subscriber: SubscriberId


@final
@attrs.frozen(kw_only=True)
class PutPfsMeta:
    """The PFS metadata of ``pubend`` [DUR §4.2]: ``first_index`` (the first live record),
    ``next_index`` (records below it were synced), ``last_timestamp`` and ``last_index``
    (``lastIndex(s)`` pairs, sorted by subscriber). With ``changed_only`` False they are every
    subscriber's (the stored ones are replaced); with ``changed_only`` True only those that
    changed since the previous put for this pubend (the stored ones are updated, the others
    kept): a sync point then writes what the matching subscribers number, not what the SHB
    hosts."""

    pubend: str
    first_index: int
    next_index: int
    last_timestamp: int
    last_index: tuple[tuple[SubscriberId, int], ...]
    changed_only: bool = False


@final
@attrs.frozen(kw_only=True)
class Flush:
    """Commit every table put since the previous flush in one transaction [DUR §5.2]."""


StorageEffect = (
    PfsAppend
    | PfsSync
    | PfsChop
    | PutLatestDelivered
    | PutReleased
    | PutCheckpoint
    | PutPfsMeta
    | PutMove
    | DropSubscriber
    | Flush
)
"""Every effect a store carries out."""


class StorageOrderError(GaplessError, RuntimeError):
    """Effects in an order that breaks a durability rule (see the module doc): flushing
    ``latestDelivered`` above an unsynced PFS record, or chopping past the durable release
    point."""


class CorruptLog(GaplessError, RuntimeError):
    """A PFS log file is corrupt before its tail, or lost records the tables say were synced.
    Recovery refuses rather than guess; the message names the file and the byte offset."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        super().__init__(f"{path}: corrupt at byte offset {offset}: {reason}")
        self.path = path
        self.offset = offset
        self.reason = reason


class FatalStorageError(GaplessError, RuntimeError):
    """An fsync (or write) failed. Fatal, never retried: after a failed fsync the kernel may
    have dropped the dirty pages, so a retry that succeeds proves nothing. The store refuses
    every later call; the process must restart and recover from what is on disk."""
