"""DFT's partition tables and tags, judged from the trace alone [DFT §III-VI, §VIII-A].

Theory of operation
-------------------
The world records what brokers *send* (and what the network drops), not what they
receive, so a broker's partition table (PT) is read from two kinds of evidence:

* *told*: a partition-information message (``PartitionInfo``) sent to the broker since its
  last restart and not dropped — it arrives, at a time the trace does not show [DFT §IV];
* *held*: the broker itself sent ``PartitionInfo(pid)`` — it announces a pid it detected,
  relays one it was told, or passes its table to a broker it syncs — so from that record on
  its table holds the pid [DFT §IV].

A restarted broker keeps only the pids it detected (its stable storage, spec/dft.md
"Recovery"). Once any broker has announced a pid healed (``PartitionHealed`` or a
``RecoveryNotifier``, step (iv)-(v) [DFT §VIII-A]) the pid may leave any table and is judged
no further. :class:`DFTTables` owns the invariant ``partition_tables``:

* *scope* [DFT §IV]: no broker sends a pid to a broker farther than DPT = 2δ from its
  detector;
* *completeness* [DFT §IV]: once the partition messages have settled (at the first fault
  at least ``DFTContext.grace`` after the pid's announcement, or at the end of the run;
  with no ``grace``, a hand-built run, at the end only), every broker within DPT of the
  detector that stayed connected to it — up, and linked by sessions (primary distance at
  most Δ = δ + 1, link not failed) through brokers within DPT that were all up, since the
  announcement — was told the pid or holds it;
* *relearning* (our addition, spec/dft.md "Partition tables"): a broker that opens a sync
  with another first tells it every pid it holds whose detector is within DPT of it — a
  restarted broker's table is rebuilt from its sync-points (the restarted broker's own
  first requests ask to be told and tell nothing);
* *publication tags* [Figure 8 l. 11-12]: a publication a broker sends carries every pid
  the broker held before the publication could first reach it (its first copy sent to the
  broker; for its source, its publication) whose pnodes its source is on or beyond;
* *subscription tags* [Figure 5 l. 21-23]: a subscription sent to a broker beyond a pid
  the sender holds carries it, unless the sender is itself on or beyond the partition (our
  reading, spec/dft.md "Modelling decisions");
* *confirmation tags* [Figure 5 l. 33-35]: a broker's first confirmation of a subscription
  upstream (towards its source: its acceptance) carries every pid it detected and holds
  whose pnodes are off the subscription's path from its source.

"Held" is a lower bound of the real table (a broker with no session to relay to shows
nothing), so the tag rules may miss a bug, never accuse a correct broker. The tags' effect on
delivery (a publication excluded where its tags meet the acceptance tags) stays ``safety``'s.
DPT and Δ are the paper's (2δ, δ + 1), not a variant's: the ``dpt-delta`` variant (DPT = δ)
fails *completeness* and *relearning*.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Final

from gapless.impl.dft.messages import (
    PartitionHealed,
    PartitionInfo,
    Pid,
    PubMsg,
    RecoveryNotifier,
    SubConfirm,
    SubMsg,
    SyncStart,
)
from gapless.impl.dft.tree import PrimaryTree
from gapless.impl.trace import TraceRecord
from gapless.invariants.plugin import Ledger, Plugin, Report

__all__ = ["TABLES", "DFTTables"]

TABLES: Final = "partition_tables"


class DFTTables(Plugin):
    """``partition_tables`` (see the module doc)."""

    names = (TABLES,)
    kinds = frozenset({"send", "drop", "publish", "fault"})

    def __init__(self, ledger: Ledger, report: Report) -> None:
        super().__init__(ledger, report)
        self.f: Any = ledger.proto  # DFTFacts (it imports this module: no cycle)
        ctx = self.f.ctx
        self.tree: PrimaryTree = ctx.tree
        self.dpt = 2 * ctx.delta
        self.big_delta = ctx.delta + 1
        self.settle = ctx.grace
        self.late: frozenset[str] = ctx.late
        #: Per broker: the pids it holds (it sent them) and the record (seq) it first did.
        self.held: dict[str, dict[Pid, int]] = {}
        #: Per broker: the pids sent to it since its last restart, not dropped.
        self.told: dict[str, set[Pid]] = {}
        self.incarnation: dict[str, int] = {}
        #: (broker, incarnation, publication) -> the record (seq) at which the publication
        #: could first reach the broker: its first copy sent there (for its source: published).
        self.first_in: dict[tuple[str, int, tuple[str, int]], int] = {}
        #: Pids sent from one broker to another since the sender's last SyncStart to it.
        self.info_sent: dict[tuple[str, str], set[Pid]] = {}
        self.confirmed: set[tuple[str, int, str]] = set()
        #: Pids announced and awaiting the completeness judgement: pid -> announce time.
        self.pending: dict[Pid, int] = {}
        self.announced: set[Pid] = set()
        #: Pids some broker announced healed: judged no further.
        self.healed: set[Pid] = set()
        #: Per broker (per link): the last time it went down or came back up — it has been
        #: up without a break since t0 only if that is before t0 and it is up now.
        self.down_since: dict[str, int] = {}
        self.link_down_since: dict[frozenset[str], int] = {}
        #: When each late broker (``DFTContext.late``) first sent: its join.
        self.joined: dict[str, int] = {}
        #: Brokers restarted that sent nothing since: their SyncStarts ask to be told.
        self.asking: set[str] = set()
        #: (broker, source) -> (its held table, its size, the held pids the source is on or
        #: beyond): recomputed when the table changes.
        self._covers: dict[tuple[str, str], tuple[dict[Pid, int], int, list[Pid]]] = {}
        #: How many (pid, broker) table entries completeness judged (non-vacuity).
        self.judged = 0

    # ---- records -------------------------------------------------------------------
    def observe(self, r: TraceRecord) -> bool:
        kind = r.kind
        if kind == "send":
            return self._on_send(r)
        if kind == "drop":
            msg = r.detail.msg
            if isinstance(msg, PartitionInfo):
                self.told.get(r.detail.to, set()).discard(msg.pid)
            return False
        if kind == "publish":
            inc = self.incarnation.get(r.node, 0)
            key = (r.detail.pubend, len(self.f.pubs[r.detail.pubend]))
            self.first_in.setdefault((r.node, inc, key), r.seq)
            return False
        return self._on_fault(r)

    def _on_send(self, r: TraceRecord) -> bool:
        msg, b, to = r.detail.msg, r.node, r.detail.to
        if b in self.late:
            self.joined.setdefault(b, r.time)
        if isinstance(msg, PubMsg):
            self.first_in.setdefault((to, self.incarnation.get(to, 0), msg.key), r.seq)
            return self._pub_tags(r, b, msg)
        if isinstance(msg, SubMsg):
            return not msg.island and self._sub_tags(r, b, to, msg)
        if isinstance(msg, SubConfirm):
            return self._confirm_tags(r, b, to, msg)
        if isinstance(msg, PartitionInfo):
            return self._info(r, b, to, msg.pid)
        if isinstance(msg, PartitionHealed | RecoveryNotifier):
            self.healed.add(msg.pid)
        elif isinstance(msg, SyncStart):
            if msg.recovering and b in self.asking:
                return False  # a restarted broker asking its sessions for a recovery
            return self._relearn(r, b, to)
        return False

    def _info(self, r: TraceRecord, b: str, to: str, pid: Pid) -> bool:
        self.asking.discard(b)
        far = self.tree.distance(to, pid.detector)
        if far > self.dpt:
            return self.report.fail(
                TABLES,
                b,
                f"{b} told {to} of {pid}, whose detector is {far} primary links from {to}: "
                f"more than DPT = 2δ = {self.dpt} [DFT §IV]",
                r,
            )
        if pid.detector == b and pid not in self.announced:
            self.announced.add(pid)
            self.pending[pid] = r.time
        self.held.setdefault(b, {}).setdefault(pid, r.seq)
        self.told.setdefault(to, set()).add(pid)
        self.info_sent.setdefault((b, to), set()).add(pid)
        return False

    def _needs(self, b: str, before: int) -> list[Pid]:
        """The pids ``b`` held before record ``before`` that are not healed."""
        held = self.held.get(b)
        if not held:
            return []
        return [p for p, seq in held.items() if seq < before and p not in self.healed]

    def _pub_tags(self, r: TraceRecord, b: str, msg: PubMsg) -> bool:
        held = self.held.get(b)
        if not held:
            return False
        source = msg.source
        key = (b, source)
        got = self._covers.get(key)
        if got is None or got[0] is not held or got[1] != len(held):
            tree = self.tree
            covering = [p for p in held if tree.on_or_beyond(p.detector, p.pnodes, source)]
            got = self._covers[key] = (held, len(held), covering)
        if not got[2]:
            return False
        first = self.first_in.get((b, self.incarnation.get(b, 0), msg.key))
        if first is None:
            return False
        healed, tags = self.healed, msg.tags
        missing = sorted(p for p in got[2] if held[p] < first and p not in tags and p not in healed)
        if missing:
            return self.report.fail(
                TABLES,
                b,
                f"{b} sent {msg.key} without tags {missing}: it held them before the "
                f"publication reached it, and its source {source} is on or beyond them "
                f"[Figure 8 l. 11-12]",
                r,
            )
        return False

    def _sub_tags(self, r: TraceRecord, b: str, to: str, msg: SubMsg) -> bool:
        if not self.held.get(b):
            return False
        tree = self.tree
        missing = sorted(
            p
            for p in self._needs(b, r.seq)
            if p not in msg.tags
            and tree.beyond(p.detector, p.pnodes, to)
            and not tree.on_or_beyond(p.detector, p.pnodes, b)
        )
        if missing:
            return self.report.fail(
                TABLES,
                b,
                f"{b} sent subscription {msg.sid} to {to}, beyond {missing}, without those tags "
                f"[Figure 5 l. 21-23]",
                r,
            )
        return False

    def _confirm_tags(self, r: TraceRecord, b: str, to: str, msg: SubConfirm) -> bool:
        once = (b, self.incarnation.get(b, 0), msg.sid)
        if once in self.confirmed:
            return False
        if not self.held.get(b):
            self.confirmed.add(once)  # nothing held: nothing owed, now or on a later copy
            return False
        sub = self.f.subs.get(msg.sid)
        if sub is None:
            return False
        spath = self.tree.path(sub.broker, b)[:-1]
        if to not in spath:
            return False  # a partial recovery's confirmation to a sync-point downstream
        self.confirmed.add(once)
        on_path = set(spath)
        missing = sorted(
            p
            for p in self._needs(b, r.seq)
            if p.detector == b and p not in msg.tags and not on_path.intersection(p.pnodes)
        )
        if missing:
            return self.report.fail(
                TABLES,
                b,
                f"{b} accepted {msg.sid} and confirmed it without its barrier pids {missing} "
                f"(pnodes off the subscription's path) [Figure 5 l. 33-35]",
                r,
            )
        return False

    def _relearn(self, r: TraceRecord, b: str, to: str) -> bool:
        self.asking.discard(b)
        sent = self.info_sent.pop((b, to), set())
        tree, dpt = self.tree, self.dpt
        missing = sorted(
            p
            for p in self._needs(b, r.seq)
            if p not in sent and p.detector in tree and tree.distance(to, p.detector) <= dpt
        )
        if missing:
            return self.report.fail(
                TABLES,
                b,
                f"{b} opened a sync with {to} without telling it {missing}, pids it holds "
                f"whose detector is within DPT = {dpt} of {to} (relearning, spec/dft.md "
                f"'Partition tables')",
                r,
            )
        return False

    # ---- faults and completeness ---------------------------------------------------
    def _on_fault(self, r: TraceRecord) -> bool:
        fault = r.detail
        target, t = fault.target, r.time
        if fault.kind in ("crash", "fail") and fault.phase != "end":
            self.down_since[target] = t
            self.incarnation[target] = self.incarnation.get(target, 0) + 1
            own = {p: s for p, s in self.held.get(target, {}).items() if p.detector == target}
            self.held[target] = own
            self.told[target] = set()
        elif fault.kind == "restart" or (fault.kind == "crash" and fault.phase == "end"):
            self.asking.add(target)
            self.down_since[target] = t  # down until now: not up since any earlier t0
        elif fault.kind in ("link_fail", "link_heal"):  # its start and its end (the heal)
            self.link_down_since[frozenset(target.split("|"))] = t
        return self._complete(r)

    def finish(self, end: TraceRecord) -> bool:
        return self._complete(end, final=True)

    def _complete(self, r: TraceRecord, final: bool = False) -> bool:
        """Judge every announced pid whose messages had time to settle."""
        if not self.pending:
            return False
        for pid, t0 in sorted(self.pending.items(), key=lambda kv: kv[1]):
            if not final and (self.settle <= 0 or r.time - t0 < self.settle):
                continue  # no settling time known (a hand-built run): judged at the end
            del self.pending[pid]
            if pid in self.healed:
                continue
            for b in sorted(self._connected(pid.detector, t0)):
                self.judged += 1
                if pid not in self.told.get(b, ()) and pid not in self.held.get(b, {}):
                    return self.report.fail(
                        TABLES,
                        b,
                        f"{b}, within DPT = {self.dpt} of {pid.detector} and connected to it "
                        f"since t={t0}, was never told {pid} [DFT §IV]",
                        r,
                    )
        return False

    def _up_since(self, b: str, t0: int) -> bool:
        if b in self.late and self.joined.get(b, t0) >= t0:
            return False  # joined after t0 (or not yet): not expected to hold it
        return b not in self.f.crashed and self.down_since.get(b, -1) < t0 and b in self.tree

    def _connected(self, d: str, t0: int) -> set[str]:
        """The brokers within DPT of ``d`` linked to it by sessions through brokers within
        DPT, every one of them and every link up since ``t0``."""
        if not self._up_since(d, t0):
            return set()
        tree, failed = self.tree, self.f.failed
        seen = {d}
        queue = deque([d])
        while queue:
            a = queue.popleft()
            for b in sorted(tree.neighbourhood(a, self.big_delta)):
                if b in seen or tree.distance(b, d) > self.dpt or not self._up_since(b, t0):
                    continue
                link = frozenset((a, b))
                if link in failed or self.link_down_since.get(link, -1) >= t0:
                    continue
                seen.add(b)
                queue.append(b)
        return seen
