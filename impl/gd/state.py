"""The GD roles' state values: streams, ostreams, the pubend's stable log, one state type per
role [GD §2.2, §3.1, §4.1].

Theory of operation
-------------------
All values are frozen attrs classes with pyrsistent containers. A node's whole state is one
value whose *type is its role*: :class:`PHBState`, :class:`IBState`, :class:`SHBState`, and in
best-effort mode [GD §4.1] :class:`BestEffortPHB`, :class:`BestEffortIB`,
:class:`BestEffortSHB` (:data:`NodeState` is their union). Each holds only what its role
uses. The static part every handler needs (topology-derived routing tables,
compiled edge filters, the configuration and the policy) is :class:`NodeCtx`, shared by
reference and excluded from equality.

A stream's knowledge is one verified :class:`~gapless.impl.streams.KnowledgeStream`
(``Stream.knowledge``): ticks ``0..fin`` are F (and, by the linkage, A [GD §2.1.1]); above
``fin`` its runs hold F (silence), D(a) / D*(a) with the :class:`Data` message ``a`` as
payload, and Q. Its curiosity — istream C with the time it became C, per-broker C, per-cell
F, the cells' A prefixes — is one verified :class:`~gapless.impl.ledger.CuriosityLedger`
(``Stream.ledger``). The roles read and change both only through their methods, which are
differentially tested against ``gapless.spec.reference_stream`` and ``gapless.spec.ledger``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar, final

import attrs
from pyrsistent import PMap, PSet, pmap, pset

from gapless.impl.errors import ProtocolMisuse
from gapless.impl.filters import Filter, FilterIndex
from gapless.impl.fmap import FMap
from gapless.impl.gd.config import GDConfig
from gapless.impl.gd.messages import Data
from gapless.impl.gd.policy import GDPolicy
from gapless.impl.gd.topology import GDTopology
from gapless.impl.ledger import CuriosityLedger
from gapless.impl.streams import KnowledgeStream
from gapless.impl.ticksets import TickSet

__all__ = [
    "ROLE_TYPES",
    "BestEffortIB",
    "BestEffortNode",
    "BestEffortPHB",
    "BestEffortSHB",
    "EdgeFilter",
    "GDNode",
    "GroupState",
    "IBState",
    "LogBatch",
    "LogRecord",
    "NodeCtx",
    "NodeState",
    "PHBState",
    "PubendLog",
    "SHBState",
    "Stream",
    "evolve",
]


@final
@attrs.frozen(kw_only=True)
class LogRecord:
    """What a pubend writes to stable storage per message [GD §2.2]: the message and the highest
    tick it has assigned or pre-assigned F so far (so a restart never reuses a tick)."""

    data: Data
    reserved: int


@final
@attrs.frozen(kw_only=True, slots=False)
class LogBatch:
    """One group-commit write of a pubend (``GDConfig.group_commit``): the records of the
    messages written together, ascending by tick [GD §2.2, §4.1]."""

    records: tuple[LogRecord, ...]


@final
@attrs.frozen(kw_only=True, slots=False)
class PubendLog:
    """A pubend's stable storage [GD §2.2]: logged messages above ``floor`` (ticks ``0..floor``
    were acknowledged and released) and the highest tick ever reserved."""

    #: ``(tick, Data)`` pairs, ascending
    entries: tuple[tuple[int, Data], ...] = ()
    floor: int = -1
    reserved: int = -1


_NO_KNOWLEDGE: Final = KnowledgeStream()


@final
@attrs.frozen(kw_only=True, slots=False)
class Stream:
    """One pubend's stream at a node: ``istream[P]`` at a PHB or IB [GD §3.1], the consolidated
    subend stream at an SHB [GD §2.3, §4.1]. Fields past ``ledger`` are the SHB's liveness
    state [GD §3.2]."""

    #: the pubend's knowledge here [GD §2.1]: D ticks carry their :class:`Data` as payload
    knowledge: KnowledgeStream = _NO_KNOWLEDGE
    #: the stream's curiosity [GD §3.1]: istream C with the time it became C, and one cell
    #: ledger (``ostream[P, c]``) per downstream cell, in the order of
    #: ``NodeCtx.children[pubend]``
    ledger: CuriosityLedger = attrs.field(factory=CuriosityLedger)
    last_sender: str | None = None
    acked_sent: int = -1
    forget_armed: bool = False
    # -- SHB only ----------------------------------------------------------------------
    nacked: TickSet = ()
    nack_at: int | None = None
    repeated: bool = False
    srtt: int | None = None
    rttvar: int = 0
    rto_est: int = 0
    rto_cur: int = 0
    nrt_armed: bool = False
    gct_mark: int | None = None
    ack_armed: bool = False

    @property
    def fin(self) -> int:
        """The last tick of the acknowledged prefix (-1: none): ticks ``0..fin`` are F and A
        [GD §2.1.1] (``knowledge.fin``)."""
        return self.knowledge.fin


@final
@attrs.frozen(kw_only=True, slots=False)
class GroupState:
    """A total-order merge at an SHB [GD §2.3]: ticks below ``merged`` were delivered to the
    group's subscribers; ``buffer`` holds resolved D ticks of the members not yet merged."""

    merged: int = 0
    buffer: tuple[tuple[int, str, Data], ...] = ()
    index: FilterIndex = attrs.field(factory=FilterIndex)


@final
@attrs.frozen(eq=False)
class EdgeFilter:
    """The filter of the edge into a downstream cell [GD §3.1]: an explicit filter, or the
    disjunction of the subscriptions below (an index, so 10,000 equality subscriptions cost a
    lookup)."""

    explicit: Filter | None
    below: FilterIndex

    def matches(self, attributes: Mapping[str, Any]) -> bool:
        if self.explicit is not None:
            return self.explicit.matches(attributes)
        return self.below.any_match(attributes)


@final
@attrs.frozen(kw_only=True, eq=False)
class NodeCtx:
    """Static, topology-derived facts about one broker (shared, never compared; its maps are
    read-only views of plain dicts, for fast lookups on every step)."""

    name: str
    cell: str
    topology: GDTopology
    config: GDConfig
    policy: GDPolicy
    #: pubends whose tree holds this node's cell, sorted
    pubends: tuple[str, ...]
    #: pubends this node hosts (PHB), sorted
    hosted: tuple[str, ...]
    #: pubend -> its position in ``pubends`` (and in ``NodeState.streams``)
    index: Mapping[str, int]
    #: (pubend, downstream cell) -> its position in ``children[pubend]`` (and in ``ledger.cells``)
    child_index: Mapping[tuple[str, str], int]
    numbers: Mapping[str, int]
    parent: Mapping[str, str | None]
    children: Mapping[str, tuple[str, ...]]
    filters: Mapping[tuple[str, str], EdgeFilter]
    cell_brokers: Mapping[str, tuple[str, ...]]
    neighbours: tuple[str, ...]
    cell_neighbours: tuple[str, ...]
    #: SHB: the total-order groups read here and their member pubends
    groups: Mapping[str, tuple[str, ...]]
    #: SHB: pubend -> the groups read here that merge it
    groups_of: Mapping[str, tuple[str, ...]]
    #: SHB: subscriber -> group (topology's choice), None for publisher order
    sub_groups: Mapping[str, str | None]
    #: (pubend, downstream cell) -> that cell's own downstream cells (link-status routing)
    grandchildren: Mapping[tuple[str, str], tuple[str, ...]]
    #: broker -> its cell, for every broker of the topology
    broker_cells: Mapping[str, str] = attrs.field(factory=dict)
    #: the pubend's in-order publication shortcut applies (``fast_paths`` on and the rules it
    #: builds in are the policy's; see ``pubend.fast_policy``)
    fast_publish: bool = False
    #: transparent memos of pure functions of this node's inputs (routes, subscriber
    #: cohorts): same inputs, same answer, checked by identity. They live as long as this
    #: context — one run — never in a module-level cache that outlives it.
    memo: dict[str, dict[Any, Any]] = attrs.field(
        factory=lambda: {"routes": {}, "cohorts": {}}, repr=False
    )


@attrs.frozen(kw_only=True, slots=False)
class _Node:
    """What every broker state holds, whatever its role: the static context, whether it is up
    (False between a crash and the next ``Restart``), the incarnation (``epoch``, counted by
    restarts; a timer of an earlier incarnation is ignored) and the link facts it routes by
    [GD §3.1]. Private: each role's state class below is final."""

    #: the role's name in the topology, for messages (``"PHB"``, ``"IB"``, ``"SHB"``)
    ROLE: ClassVar[str] = ""
    #: the role's long name, for messages and the rule map
    TITLE: ClassVar[str] = ""

    ctx: NodeCtx = attrs.field(eq=False, repr=False)
    up: bool = True
    epoch: int = 0
    links_down: PSet[str] = attrs.field(factory=pset)
    status: FMap[str, tuple[str, ...]] = attrs.field(factory=FMap)

    @property
    def name(self) -> str:
        return self.ctx.name

    @property
    def role(self) -> str:
        return self.ROLE


@attrs.frozen(kw_only=True, slots=False)
class _StreamNode(_Node):
    """A guaranteed-delivery broker: one stream per pubend of ``NodeCtx.pubends``, in that
    order (empty until the node boots) [GD §3.1]."""

    streams: tuple[Stream, ...] = ()

    def stream(self, pubend: str) -> Stream:
        """The node's stream of ``pubend`` (istream at a PHB/IB, subend stream at an SHB)."""
        return self.streams[self.ctx.index[pubend]]


@final
@attrs.frozen(kw_only=True, slots=False)
class PHBState(_StreamNode):
    """A pubend hosting broker [GD §2.2, §3.2]: its streams, its pubends' stable ``log`` (kept
    by a crash; everything else is soft), the messages being logged (``pending``) and the
    highest tick assigned or pre-assigned per pubend."""

    ROLE: ClassVar[str] = "PHB"
    TITLE: ClassVar[str] = "pubend hosting broker"

    log: FMap[str, PubendLog] = attrs.field(factory=FMap)
    #: pubend -> messages being logged, ``(tick, Data)`` ascending
    pending: FMap[str, tuple[tuple[int, Data], ...]] = attrs.field(factory=FMap)
    assigned: FMap[str, int] = attrs.field(factory=FMap)
    #: group commit only: pubend -> the highest tick of its write in flight (soft state)
    writing: FMap[str, int] = attrs.field(factory=FMap)


@final
@attrs.frozen(kw_only=True, slots=False)
class IBState(_StreamNode):
    """An intermediate broker [GD §3.1]: ``istream[P]`` and its ostreams per pubend."""

    ROLE: ClassVar[str] = "IB"
    TITLE: ClassVar[str] = "intermediate broker"


@final
@attrs.frozen(kw_only=True, slots=False)
class SHBState(_StreamNode):
    """A subscriber hosting broker [GD §2.3, §3.2, §4.1]: one consolidated stream per pubend,
    the subscribers' filter ``index`` and connections, and the total-order merges."""

    ROLE: ClassVar[str] = "SHB"
    TITLE: ClassVar[str] = "subscriber hosting broker"

    index: FilterIndex = attrs.field(factory=FilterIndex)
    connections: PMap[str, int] = attrs.field(factory=pmap)
    groups: FMap[str, GroupState] = attrs.field(factory=FMap)


@final
@attrs.frozen(kw_only=True, slots=False)
class BestEffortPHB(_Node):
    """A pubend hosting broker in best-effort mode [GD §4.1]: only the tick assignment."""

    ROLE: ClassVar[str] = "PHB"
    TITLE: ClassVar[str] = "best-effort pubend hosting broker"

    assigned: FMap[str, int] = attrs.field(factory=FMap)


@final
@attrs.frozen(kw_only=True, slots=False)
class BestEffortIB(_Node):
    """An intermediate broker in best-effort mode [GD §4.1]: no stream at all."""

    ROLE: ClassVar[str] = "IB"
    TITLE: ClassVar[str] = "best-effort intermediate broker"


@final
@attrs.frozen(kw_only=True, slots=False)
class BestEffortSHB(_Node):
    """A subscriber hosting broker in best-effort mode [GD §4.1]: subscribers and their
    connections; a message is delivered on arrival."""

    ROLE: ClassVar[str] = "SHB"
    TITLE: ClassVar[str] = "best-effort subscriber hosting broker"

    index: FilterIndex = attrs.field(factory=FilterIndex)
    connections: PMap[str, int] = attrs.field(factory=pmap)


#: A guaranteed-delivery broker of any role (the roles that keep streams).
GDNode = PHBState | IBState | SHBState
#: A best-effort broker of any role [GD §4.1].
BestEffortNode = BestEffortPHB | BestEffortIB | BestEffortSHB
#: The whole state of one physical broker: its role is its type.
NodeState = PHBState | IBState | SHBState | BestEffortPHB | BestEffortIB | BestEffortSHB
#: Every role state class, guaranteed delivery first.
ROLE_TYPES: tuple[type[NodeState], ...] = (
    PHBState,
    IBState,
    SHBState,
    BestEffortPHB,
    BestEffortIB,
    BestEffortSHB,
)


_FIELDS: dict[type, frozenset[str]] = {}
_T = TypeVar("_T")


def _fields(cls: type) -> frozenset[str]:
    names = frozenset(a.name for a in attrs.fields(cls))
    _FIELDS[cls] = names
    return names


def evolve(inst: _T, **changes: Any) -> _T:
    """A changed copy of one of this module's frozen values — what ``attrs.evolve`` returns
    for classes without validators or converters (none of these has any), several times
    faster: the state classes keep their fields in an instance ``__dict__`` (``slots=False``),
    so a copy is two C-level dict updates however many fields the class has. The GD handlers
    copy these values on every step. A name that is not a field is a misuse."""
    cls = type(inst)
    names = _FIELDS.get(cls) or _fields(cls)
    if not names.issuperset(changes):
        raise ProtocolMisuse(
            f"evolve: {cls.__name__} has no field {sorted(set(changes) - names)!r}; "
            f"allowed: {sorted(names)}"
        )
    new = object.__new__(cls)
    d = new.__dict__
    d.update(inst.__dict__)
    d.update(changes)
    return new


#: The pubend's log and pending messages [GD §2.2]: ``(tick, Data)`` pairs, ascending.
Rows = tuple[tuple[int, Data], ...]


# Rows are bisected with the probe ``(tick,)``: a 1-tuple sorts before every ``(tick, Data)``
# of the same tick and after those of lower ticks, so only ints are ever compared.


def data_get(rows: Rows, tick: int) -> Data | None:
    """The D at ``tick`` in ascending ``rows``, or None."""
    i = bisect_left(rows, (tick,))
    if i < len(rows) and rows[i][0] == tick:
        return rows[i][1]
    return None


def data_put(rows: Rows, d: Data) -> Rows:
    """``rows`` with ``d`` at its tick (a tick already present is kept)."""
    if not rows or rows[-1][0] < d.tick:
        return (*rows, (d.tick, d))
    i = bisect_left(rows, (d.tick,))
    if i < len(rows) and rows[i][0] == d.tick:
        return rows
    return (*rows[:i], (d.tick, d), *rows[i:])


def data_remove(rows: Rows, tick: int) -> Rows:
    """``rows`` without ``tick``."""
    i = bisect_left(rows, (tick,))
    if i < len(rows) and rows[i][0] == tick:
        return rows[1:] if i == 0 else (*rows[:i], *rows[i + 1 :])
    return rows


def data_above(rows: Rows, fin: int) -> Rows:
    """The rows with tick > ``fin`` (``rows`` itself when that is all of them)."""
    if not rows or rows[0][0] > fin:
        return rows
    return rows[bisect_left(rows, (fin + 1,)) :]
