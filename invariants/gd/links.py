"""GD's link-bundle rule as a plug-in: no knowledge or nack on a link known down [GD §3.1].

Theory of operation
-------------------
"A virtual link in the virtual topology corresponds to a *link-bundle* [...] The multiple
brokers and multiple connections are used both to share load and to provide rapid backup on
failure [...] if one physical broker loses connectivity to a downstream cell, it may be able to
route messages to that cell via another broker in its cell" [GD §3.1]. Knowledge goes down
along an available link of the bundle, sideways through a cell neighbour when the broker has
none; acks and nacks go up to the last sender, or to every broker of the upstream cell it
still reaches. So a broker never puts a knowledge (data or silence) or nack message on a link
it knows is down while the bundle towards the destination's cell offers it an up path: the
message would be lost for nothing, and the repair waits for the link to heal.

``down_link_routing`` judges it from the trace: the ``fault`` records give which links and
brokers are down (mirroring the world: a ``link_fail``, or a ``stall_link`` that failed, takes
a link down until its end, a ``partition`` every link crossing it; a ``crash``, a ``fail`` or
a ``stall_broker`` that failed takes a broker down, and with it every link it has, until it
restarts — never for ``fail``). Brokers are told of a link's failure the instant it happens
(``LinkChanged``), so a broker *knows* a link is down from then on, except during the instant
it restarts: it learns its links then, one by one, and sends nothing judged at that instant.
For every ``send`` of a ``data``,
``silence`` or ``nack`` message from ``a`` to ``b`` in another cell over a link that is down,
the bundle offers an up path when ``a`` has an up link to another broker of ``b``'s cell, or
an up link to a cell neighbour that has one; the violation names the link, since when it is
down, and the up path. A down link with no alternative is not judged (the message is lost
either way; ``liveness`` judges the outcome).

Retransmitted knowledge is judged like first-time knowledge. This invariant found the
roles answering a curious broker straight over a link that had failed after it nacked (demo
seeds 195 and 233 of 300, campaign `guided`, seed 43); ``forwarding._serve_curious`` now
skips such a broker, which keeps its curiosity and asks again over an up link. The physical
links come from the check context (``CheckContext.links``); without them the rule is not
judged.
"""

from __future__ import annotations

from typing import ClassVar, Final, final

from gapless.impl.trace import TraceRecord, Wire
from gapless.invariants.plugin import Ledger, Plugin, Report

__all__ = ["JUDGED_KINDS", "NAMES", "GDDownLinkRouting"]

NAMES: Final = ("down_link_routing",)

#: the wire kinds the rule judges: knowledge (data, silence) and nacks [GD §3.1]
JUDGED_KINDS: Final = frozenset({"data", "silence", "nack"})


def _link(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


@final
class GDDownLinkRouting(Plugin):
    """``down_link_routing`` (see the module doc)."""

    names: ClassVar[tuple[str, ...]] = NAMES
    kinds: ClassVar[frozenset[str]] = frozenset({"send", "fault"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        ctx = self.ctx
        self.cell_of = dict(ctx.cell_of)
        self.adj: dict[str, set[str]] = {}
        for a, b in ctx.links:
            self.adj.setdefault(a, set()).add(b)
            self.adj.setdefault(b, set()).add(a)
        self.enabled = bool(self.adj)
        #: link -> how many link faults hold it down (the world's counter), and the fault
        #: record that last took it down
        self.down: dict[tuple[str, str], int] = {}
        self.down_by: dict[tuple[str, str], TraceRecord] = {}
        #: brokers down (crashed, failed, stalled to failure) and the record that did it
        self.dead: dict[str, TraceRecord] = {}
        self.failed: set[str] = set()
        #: broker -> the instant it last restarted (it learns its links then)
        self.restarted: dict[str, int] = {}

    # ------------------------------------------------------------------ facts

    def _up(self, a: str, b: str) -> bool:
        return not self.down.get(_link(a, b)) and a not in self.dead and b not in self.dead

    def _link_fault(self, r: TraceRecord, target: str, up: bool) -> None:
        a, _, b = target.partition("|")
        key = _link(a, b)
        if up:
            left = self.down.get(key, 0) - 1
            if left > 0:
                self.down[key] = left
            else:  # healed: no entry, so an empty map means every link is up
                self.down.pop(key, None)
        else:
            self.down[key] = self.down.get(key, 0) + 1
            self.down_by[key] = r

    def _on_fault(self, r: TraceRecord) -> None:
        d = r.detail
        kind, target, phase = d.kind, d.target, d.phase
        if kind == "link_fail" or (kind == "stall_link" and phase != "start"):
            self._link_fault(r, target, phase == "end")
        elif kind == "partition":
            side = set(target.split(","))
            for a, b in self.ctx.links:
                if (a in side) != (b in side):
                    self._link_fault(r, f"{a}|{b}", phase == "end")
        elif kind in ("crash", "fail") or (kind == "stall_broker" and phase != "start"):
            if phase == "end":
                if kind != "fail" and target in self.dead and target not in self.failed:
                    del self.dead[target]
                    self.restarted[target] = r.time
            else:
                self.dead.setdefault(target, r)
                if kind == "fail":
                    self.failed.add(target)

    # ------------------------------------------------------------------ judgement

    def observe(self, r: TraceRecord) -> bool:
        if not self.enabled:
            return False
        if r.kind == "fault":
            self._on_fault(r)
            return False
        if not self.down and not self.dead:
            return False  # every link and broker up: nothing to route around
        w: Wire = r.detail.wire
        if w.kind not in JUDGED_KINDS:
            return False
        a, b = r.node, r.detail.to
        if b not in self.adj.get(a, ()) or self._up(a, b) or a in self.dead:
            return False
        if self.restarted.get(a) == r.time:
            return False  # restarting: it learns its links at this instant
        cell = self.cell_of.get(b, b)
        if cell == self.cell_of.get(a, a):
            return False  # inside a cell: no bundle to route around
        path = self._up_path(a, cell)
        if path is None:
            return False
        return self._reject(r, w, a, b, cell, path)

    def _up_path(self, a: str, cell: str) -> str | None:
        """An up path from ``a`` into ``cell`` through the bundle, described; None if none."""
        mine = self.cell_of.get(a, a)
        adj = self.adj.get(a, set())
        for b in sorted(adj):
            if self.cell_of.get(b, b) == cell and self._up(a, b):
                return f"the up link {a}-{b}"
        for nb in sorted(adj):
            if self.cell_of.get(nb, nb) != mine or not self._up(a, nb):
                continue
            for c in sorted(self.adj.get(nb, ())):
                if self.cell_of.get(c, c) == cell and self._up(nb, c):
                    return f"the up link {a}-{nb} to its cell neighbour, which reaches {c}"
        return None

    def _reject(self, r: TraceRecord, w: Wire, a: str, b: str, cell: str, path: str) -> bool:
        key = _link(a, b)
        cause = self.down_by.get(key) if self.down.get(key) else None
        if cause is None:
            cause = self.dead.get(b)
        since = (
            f" since {cause.time}µs ({cause.detail.kind} of {cause.detail.target})" if cause else ""
        )
        what = "nack" if w.kind == "nack" else f"{w.kind} knowledge"
        if w.retransmission:
            what = "repeated " + what
        return self.report.fail(
            "down_link_routing",
            a,
            f"{a} sent a {what} message of {w.pubend} to {b} on the link {a}-{b}, known down"
            f"{since}, while the link bundle towards cell {cell} offered {path}; a broker "
            "routes around a failed member of a bundle (the message is lost for nothing)",
            r,
            pubend=w.pubend,
            events=(cause,),
        )
