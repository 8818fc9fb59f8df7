"""GD's minimal-traffic invariant as a plug-in over the ledger [GD §2.4, §3.1].

Theory of operation
-------------------
GD sends a message's data down an edge of a pubend's knowledge tree only if the edge's filter
passes it; a filter turns any other D into F, which travels as a silence range instead
[GD §2.4]. The roles derive each edge's filter from the subscriptions below it
(``impl/gd/roles.py``, ``initial_states``: the edge into cell ``c`` of pubend ``p``'s tree is
the disjunction of the filters of the subscribers hosted in ``c``'s subtree that read ``p``)
[GD §3.1]. So no data tick ever crosses an edge whose filter rejects it — not first-time
data, not a retransmission, not a nack's answer. The other invariants do not see it: an SHB
that receives an unwanted D simply delivers it to no one.

``minimal_traffic`` checks, for every ``send`` record whose wire summary
(:class:`~gapless.impl.trace.Wire`) carries data ticks (``data_ticks``, first-time or
``retransmission``), each data tick ``t`` of pubend ``p`` sent from broker ``a`` to broker
``b``:

* the message at ``(p, t)`` is the one ``p`` durably logged there (or, not yet logged, the one
  it last asked stable storage to log); a tick it never asked to log is ``no_e``'s to judge
  and is skipped here;
* the *edge* is found in the check context's cell tree: with ``A``, ``B`` the cells of ``a``
  and ``b``, and ``p``'s tree the cells reachable downward from the cell of ``p``'s host,

  - ``A`` in ``p``'s tree and ``(A, B)`` a tree edge (``b`` downstream): the edge's filter is
    the disjunction of the filters of the subscriptions at SHBs in ``B`` or below that read
    ``p`` — a subscription reads every pubend, except that a total-order subscription reads
    only the merged pubends when the topology merges some (as the binding derives it);
  - ``A == B`` (sideways routing to a cell neighbour [GD §3.1]; the wire summary does not
    say which downstream cell the message is for): the disjunction of the filters of the
    edges out of ``A``, i.e. of the subscriptions in ``A``'s downstream subtrees reading ``p``;
  - anything else (upstream, or off ``p``'s tree): no data may cross, the filter is false;

* the tick is legitimate only if the message matches that filter, evaluated with the
  reference evaluator (``CheckContext.matches``). Otherwise the violation names the edge, the
  tick, the message and the filter.

Explicit edge filters (``GDTopology.edge_filters``) are not part of the check context; the
models' topologies never set them, so every edge filter is derived as above. The filters are
the workload's subscriptions, as the roles' are: they do not change when a subscriber
disconnects.
"""

from __future__ import annotations

from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.plugin import CheckContext, Ledger, Plugin, Report

__all__ = ["NAMES", "Edge", "GDMinimalTraffic", "readers"]

NAMES: Final = ("minimal_traffic",)


def readers(ctx: CheckContext) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per pubend, ``(shb, filter)`` of every subscription that reads it: all of them, except
    that a total-order subscription reads only the merged pubends when the topology merges
    some (as the binding derives the roles' edge filters) [GD §2.3, §3.1]."""
    merged = set(ctx.merged)
    return {
        p: tuple(
            (s.shb, s.filter)
            for s in ctx.subscriptions
            if not (s.order == "total" and merged) or p in merged
        )
        for p in ctx.pubend_host
    }


def tree_cells(ctx: CheckContext, ledger: Ledger, pubend: str) -> frozenset[str]:
    """The cells of ``pubend``'s tree: those reachable downward from its host's cell."""
    host = ctx.pubend_host.get(pubend)
    cells: set[str] = set()
    todo = [ctx.cell_of.get(host, host)] if host is not None else []
    while todo:
        c = todo.pop()
        if c not in cells:
            cells.add(c)
            todo.extend(ledger.down_cells.get(c, ()))
    return frozenset(cells)


@final
class Edge:
    """The filter of one directed broker pair for one pubend: ``scope`` (the cache key: the
    downstream cell, ``"~"`` + the cell for a sideways edge, ``""`` when nothing may cross),
    the distinct filter texts whose disjunction it is (``single``: the only one, if so), and
    how to name it."""

    __slots__ = ("filters", "label", "scope", "single")

    def __init__(self, scope: str, filters: tuple[str, ...], label: str) -> None:
        self.scope = scope
        self.filters = filters
        self.label = label
        self.single = filters[0] if len(filters) == 1 else None

    def describe(self, pubend: str) -> str:
        if not self.filters:
            return f"false (no subscription reads {pubend} below it)"
        return " or ".join(f"({f})" for f in self.filters)


@final
class GDMinimalTraffic(Plugin):
    """``minimal_traffic``: no data tick crosses an edge whose filter rejects it (see the
    module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"send"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        ctx = self.ctx
        self._readers = readers(ctx)
        self._tree_edges = set(ctx.cell_tree)
        self._trees: dict[str, frozenset[str]] = {}
        self._edges: dict[tuple[str, str, str], Edge] = {}
        self._passes: dict[tuple[str, int, str], bool] = {}
        self._logged = ledger.logged
        self._matches = ledger.matches

    def observe(self, r: TraceRecord) -> bool:
        w: Wire = r.detail.wire
        ticks = w.data_ticks
        pubend = w.pubend
        if not ticks or pubend is None:
            return False
        key = (r.node, r.detail.to, pubend)
        edge = self._edges.get(key)
        if edge is None:
            edge = self._edges[key] = self._edge(r.node, r.detail.to, pubend)
        logged = self._logged.get(pubend, {})
        for t in ticks:
            if t in logged:
                # what is logged at a tick never changes: match through the ledger's cache
                # (the other edges and the deliveries share it)
                if edge.single is not None:
                    ok = self._matches(edge.single, pubend, t)
                else:
                    pk = (pubend, t, edge.scope)
                    got = self._passes.get(pk)
                    if got is None:
                        got = self._passes[pk] = self._passes_logged(edge, pubend, t)
                    ok = got
            else:
                attrs_ = self.ledger.attributes(pubend, t)
                if attrs_ is None:
                    continue  # never asked to be logged: no_e's to judge
                ok = any(self.ctx.matches(f, attrs_) for f in edge.filters)
            if not ok:
                return self._reject(r, w, edge, pubend, t)
        return False

    def _passes_logged(self, edge: Edge, pubend: str, t: int) -> bool:
        matches = self.ledger.matches
        return any(matches(f, pubend, t) for f in edge.filters)

    def _reject(self, r: TraceRecord, w: Wire, edge: Edge, pubend: str, t: int) -> bool:
        attrs_ = self.ledger.attributes(pubend, t)
        entry = self.ledger.logged.get(pubend, {}).get(t)
        what = "retransmitted data" if w.retransmission else "data"
        return self.report.fail(
            "minimal_traffic",
            r.node,
            f"{what} tick {t} of {pubend} crossed {edge.label}, but the message "
            f"{dict(attrs_ or {})!r} does not match that edge's filter "
            f"{edge.describe(pubend)} (D through a rejecting filter must become F)",
            r,
            pubend=pubend,
            tick=t,
            events=(entry[2] if entry is not None else None,),
        )

    # ------------------------------------------------------------------ edges

    def _tree(self, pubend: str) -> frozenset[str]:
        """The cells of ``pubend``'s tree: those reachable downward from its host's cell."""
        got = self._trees.get(pubend)
        if got is None:
            got = self._trees[pubend] = tree_cells(self.ctx, self.ledger, pubend)
        return got

    def _below(self, pubend: str, cells: tuple[str, ...]) -> tuple[str, ...]:
        """The distinct filters of the subscriptions reading ``pubend`` at SHBs in ``cells``
        or below them, sorted."""
        shbs: set[str] = set()
        for c in cells:
            shbs.update(self.ledger.shbs_below(c))
        return tuple(sorted({f for shb, f in self._readers.get(pubend, ()) if shb in shbs}))

    def _edge(self, src: str, to: str, pubend: str) -> Edge:
        cell_of = self.ctx.cell_of
        a, b = cell_of.get(src, src), cell_of.get(to, to)
        name = f"the edge {src} -> {to}"
        if a in self._tree(pubend):
            if (a, b) in self._tree_edges:
                return Edge(b, self._below(pubend, (b,)), f"{name} into cell {b}")
            if a == b:
                down = self.ledger.down_cells.get(a, ())
                return Edge(
                    "~" + a,
                    self._below(pubend, down),
                    f"{name} (sideways in cell {a}, towards {', '.join(sorted(down)) or 'none'})",
                )
            return Edge("", (), f"{name} (cell {a} -> {b}: not a downstream edge of {pubend})")
        return Edge("", (), f"{name} (cell {a} is off the tree of {pubend})")
