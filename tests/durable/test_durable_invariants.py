"""The durable trace invariants [DUR §2-4] on hand-built traces: clean runs (with a
reconnection presenting an older CT, and early release) pass; each planted break is caught by
exactly the invariant it is for, and explained."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.messages import EventMessage, GapMessage, SilenceMessage
from gapless.impl.durable.records import (
    DurAck,
    DurConnect,
    DurCrash,
    DurDisconnect,
    DurEvent,
    DurJoin,
    DurLeave,
    DurMessage,
    DurRelease,
    DurSwitchover,
)
from gapless.impl.durable.release import ReleaseReport
from gapless.impl.trace import TraceRecord
from gapless.invariants.checker import check_trace
from gapless.invariants.durable import INVARIANTS, PLUGINS
from gapless.invariants.durable.facts import uncovered
from gapless.invariants.plugin import CheckContext
from gapless.invariants.violation import Violation


def _matches(flt: str, attrs: Mapping[str, Any]) -> bool:
    return flt == "all" or attrs.get("k") == flt


CTX = CheckContext(
    subscriptions=(),
    cell_of={},
    cell_tree=(),
    pubend_host={"p": "phb"},
    merged=(),
    roles={"b0": "shb", "b1": "shb", "phb": "phb"},
    min_repetition_us=0,
    matches=_matches,
    logged=lambda _p: None,
    payload_attributes=lambda _x: None,
)


def ct(t: int | None = None) -> CheckpointToken:
    return CheckpointToken.of({} if t is None else {"p": t})


class Trace:
    """Builds a trace record by record."""

    def __init__(self) -> None:
        self.records: list[TraceRecord] = []

    def add(self, node: str, kind: str, detail: Any) -> Trace:
        n = len(self.records)
        self.records.append(TraceRecord(seq=n, time=10 * n, node=node, kind=kind, detail=detail))
        return self

    def event(self, t: int, k: str) -> Trace:
        return self.add("phb", "dur_event", DurEvent(pubend="p", tick=t, attributes={"k": k}))

    def join(self, s: str, shb: str, flt: str, start: int | None = None) -> Trace:
        return self.add(shb, "dur_join", DurJoin(subscriber=s, shb=shb, filter=flt, ct=ct(start)))

    def msg(self, s: str, shb: str, m: Any) -> Trace:
        return self.add(shb, "dur_message", DurMessage(subscriber=s, shb=shb, message=m))

    def ev(self, s: str, shb: str, t0: int, t: int) -> Trace:
        return self.msg(s, shb, EventMessage(pubend="p", t0=t0, t=t, payload=f"m{t}"))

    def silence(self, s: str, shb: str, t0: int, t: int) -> Trace:
        return self.msg(s, shb, SilenceMessage(pubend="p", t0=t0, t=t))

    def gap(self, s: str, shb: str, t0: int, t: int) -> Trace:
        return self.msg(s, shb, GapMessage(pubend="p", t0=t0, t=t))

    def ack(self, s: str, shb: str, t: int) -> Trace:
        return self.add(shb, "dur_ack", DurAck(subscriber=s, shb=shb, ct=ct(t)))

    def report(self, node: str, released: int, delivered: int) -> Trace:
        rep = ReleaseReport(node=node, pubend="p", released=released, delivered=delivered)
        return self.add(node, "dur_report", rep)

    def release(self, through: int, tr: int, td: int, clock: int, mr: int | None = None) -> Trace:
        d = DurRelease(pubend="p", through=through, tr=tr, td=td, clock=clock, max_retain=mr)
        return self.add("phb", "dur_release", d)

    def connect(self, s: str, shb: str, start: int, catchup: bool = True) -> Trace:
        d = DurConnect(
            subscriber=s, shb=shb, ct=ct(start), catchup=frozenset({"p"} if catchup else ())
        )
        return self.add(shb, "dur_connect", d)

    def check(self, names: tuple[str, ...] = (), live_end: bool = True) -> Violation | None:
        return check_trace(CTX, self.records, names, live_end=live_end, plugins=PLUGINS)


def clean_older_ct() -> Trace:
    """Two subscribers; s2 disconnects and reconnects elsewhere presenting an older CT: it
    gets a gap for what it had acknowledged, then the rest; no early release."""
    t = Trace().join("s1", "b0", "a").join("s2", "b1", "all")
    t.event(1, "a").event(2, "b").event(3, "a")
    t.ev("s1", "b0", -1, 1).silence("s1", "b0", 1, 2).ev("s1", "b0", 2, 3)
    t.ev("s2", "b1", -1, 1).ev("s2", "b1", 1, 2).ev("s2", "b1", 2, 3)
    t.ack("s1", "b0", 3).ack("s2", "b1", 2)
    t.report("b0", 3, 3).report("b1", 2, 3)
    t.release(2, 2, 3, 3)
    t.add("b1", "dur_disconnect", DurDisconnect(subscriber="s2", shb="b1"))
    t.event(4, "a").event(5, "b")
    t.ev("s1", "b0", 3, 4).silence("s1", "b0", 4, 5)
    t.connect("s2", "b0", 0)
    t.gap("s2", "b0", 0, 2).ev("s2", "b0", 2, 3).ev("s2", "b0", 3, 4)
    t.add("b0", "dur_switchover", DurSwitchover(subscriber="s2", pubend="p"))
    t.ev("s2", "b0", 4, 5)
    return t


def clean_early_release() -> Trace:
    """maxRetain 2: a subscriber away since tick 1 is early-released past and gets one gap."""
    t = Trace().join("s", "b0", "all").join("x", "b1", "b")
    t.release(-1, -1, -1, -1, mr=2)
    t.event(1, "a").ev("s", "b0", -1, 1).ack("s", "b0", 1)
    t.add("b0", "dur_crash", DurCrash(shb="b0"))
    for i in range(2, 11):
        t.event(i, "a")
    t.silence("x", "b1", -1, 10).ack("x", "b1", 10)
    t.report("b0", 1, 10).report("b1", 10, 10)
    t.release(7, 1, 10, 10, mr=2)
    t.connect("s", "b0", 1)
    t.gap("s", "b0", 1, 7)
    for i in range(8, 11):
        t.ev("s", "b0", i - 1, i)
    return t


def test_names() -> None:
    assert INVARIANTS == ("release_horizon", "release_rule", "gap_legal", "durable_exactly_once")


@pytest.mark.parametrize("build", [clean_older_ct, clean_early_release])
def test_clean_traces_pass(build: Any) -> None:
    assert build().check() is None


def _caught(t: Trace, name: str, fragment: str, live_end: bool = False) -> Violation:
    """``t`` breaks ``name`` (first violation, explained) and no other invariant."""
    v = t.check(live_end=live_end)
    assert v is not None, name
    assert v.invariant == name, v.explain()
    assert fragment in v.message, v.message
    assert v.explain().startswith(f"{name} violated")
    others = tuple(n for n in INVARIANTS if n != name)
    assert t.check(others, live_end=live_end) is None
    return v


# -- release_horizon ---------------------------------------------------------------------


def test_horizon_report_released_above_delivered() -> None:
    t = clean_older_ct()
    t.report("b1", 5, 4)
    v = _caught(t, "release_horizon", "above latestDelivered")
    assert v.subject == "b1"


def test_horizon_pubend_claims_more_than_its_shbs() -> None:
    t = Trace().join("s", "b0", "all").event(1, "a").ev("s", "b0", -1, 1).ack("s", "b0", 1)
    t.report("b0", 1, 1).report("b1", 0, 1)
    t.release(0, 1, 1, 1)  # Tr = 1 claimed; b1 reported released 0
    _caught(t, "release_horizon", "reported at most Tr=0")


def test_horizon_node_reports_above_its_shbs() -> None:
    import attrs

    ctx = attrs.evolve(
        CTX,
        cell_of={"b0": "c0", "b1": "c1", "n": "cn"},
        cell_tree=(("cn", "c0"), ("cn", "c1")),
        roles={**CTX.roles, "n": "ib"},
    )
    t = Trace().report("b0", 3, 5).report("b1", 2, 4).report("n", 2, 4)
    assert check_trace(ctx, t.records, live_end=False, plugins=PLUGINS) is None
    t.report("n", 3, 4)  # released 3 > min(3, 2)
    v = check_trace(ctx, t.records, live_end=False, plugins=PLUGINS)
    assert v is not None
    assert v.invariant == "release_horizon"
    assert "SHBs below it" in v.message
    others = tuple(n for n in INVARIANTS if n != "release_horizon")
    assert check_trace(ctx, t.records, others, live_end=False, plugins=PLUGINS) is None


# -- release_rule ------------------------------------------------------------------------


def test_rule_l_above_td() -> None:
    t = Trace().join("s", "b0", "all").release(-1, -1, -1, -1, mr=0)
    for i in range(1, 6):
        t.event(i, "a")
    t.report("b0", -1, 2).report("b1", -1, 2)
    t.release(4, -1, 2, 6, mr=0)  # early release, but 4 > Td = 2
    _caught(t, "release_rule", "above Td=2")


def test_rule_l_above_an_unacknowledged_tick() -> None:
    t = Trace().join("s", "b0", "all").event(1, "a").event(2, "a")
    t.ev("s", "b0", -1, 1).ack("s", "b0", 1)
    t.report("b0", 2, 2).report("b1", 2, 2)  # b0 over-reports what s acknowledged
    t.release(2, 2, 2, 2)
    _caught(t, "release_rule", "acknowledged CT 1")


def test_rule_l_above_tr_without_early_release() -> None:
    t = Trace().join("s", "b0", "all").event(1, "a").event(2, "a")
    t.ev("s", "b0", -1, 1).ev("s", "b0", 1, 2).ack("s", "b0", 2)
    t.report("b0", 1, 2).report("b1", 1, 2)
    t.release(2, 1, 2, 2)
    _caught(t, "release_rule", "above Tr=1 without early release")


# -- gap_legal ---------------------------------------------------------------------------


def test_gap_to_a_subscriber_not_in_catchup() -> None:
    t = clean_early_release()
    t.records = t.records[:-4]  # up to the reconnection
    t.connect("s", "b0", 1, catchup=False)  # replaces nothing: a second connect, no catchup
    t.gap("s", "b0", 1, 7)
    _caught(t, "gap_legal", "not in catchup")


def test_gap_over_ticks_not_released() -> None:
    t = clean_early_release()
    t.records = t.records[:-4]
    t.gap("s", "b0", 1, 8)
    _caught(t, "gap_legal", "not L (L through 7)")


def test_gap_above_the_acknowledged_ct_not_early_released() -> None:
    t = clean_older_ct()
    # s1 acknowledged 3; reconnecting with CT 0, a gap up to 3 (L by the normal rule) is legal
    t.add("b0", "dur_disconnect", DurDisconnect(subscriber="s1", shb="b0"))
    t.ack("s2", "b0", 3).report("b0", 3, 5).report("b1", 3, 5).release(3, 3, 5, 5)
    t.connect("s1", "b0", 0).gap("s1", "b0", 0, 3)
    assert t.check(live_end=False) is None
    # the same gap to s2, which acknowledged only 2 when tick 3 became L by the normal rule:
    # the L step broke release_rule, and the gap is judged illegal on its own
    t2 = clean_older_ct()
    t2.add("b0", "dur_disconnect", DurDisconnect(subscriber="s2", shb="b0"))
    t2.report("b0", 3, 5).report("b1", 3, 5).release(3, 3, 5, 5)
    t2.connect("s2", "b0", 0).gap("s2", "b0", 0, 3)
    v = t2.check(("gap_legal",), live_end=False)
    assert v is not None
    assert "tick 3 is above the acknowledged CT 2" in v.message
    assert t2.check(("durable_exactly_once", "release_horizon"), live_end=False) is None
    rule = t2.check(("release_rule",), live_end=False)
    assert rule is not None
    assert "acknowledged CT 2" in rule.message


def test_gap_after_reconnecting_with_latest_ct_and_small_lag() -> None:
    """A pubend that early-releases with a smaller maxRetain than its policy gaps a subscriber
    that came back with its latest CT within maxRetain: judged by gap_legal alone."""
    t = Trace().join("s", "b0", "all").release(-1, -1, -1, -1, mr=100)
    for i in range(1, 11):
        t.event(i, "a")
    t.ev("s", "b0", -1, 1).ev("s", "b0", 1, 2).ack("s", "b0", 2)
    t.add("b0", "dur_disconnect", DurDisconnect(subscriber="s", shb="b0"))
    t.report("b0", 2, 10).report("b1", 2, 10)
    t.release(5, 2, 10, 10, mr=0)  # breaks the policy (release_rule), early-releases 3..5
    t.connect("s", "b0", 2).gap("s", "b0", 2, 5)
    v = t.check(("gap_legal",), live_end=False)
    assert v is not None
    assert "latest CT" in v.message
    assert t.check(("durable_exactly_once", "release_horizon"), live_end=False) is None
    rule = t.check(("release_rule",), live_end=False)
    assert rule is not None
    assert "policy" in rule.message


# -- durable_exactly_once ----------------------------------------------------------------


def test_once_hole_in_the_chain() -> None:
    t = clean_older_ct()
    t.event(6, "a").event(7, "a").ev("s1", "b0", 6, 7)  # t0 = 6 but the chain is at 5
    _caught(t, "durable_exactly_once", "a hole")


def test_once_duplicate() -> None:
    t = clean_older_ct()
    t.ev("s2", "b0", 4, 5)  # delivered twice
    _caught(t, "durable_exactly_once", "overlap")


def test_once_silence_hides_a_matching_event() -> None:
    t = clean_older_ct()
    t.event(6, "a").event(7, "b").silence("s1", "b0", 5, 7)
    _caught(t, "durable_exactly_once", "matching event at 6 left out")


def test_once_event_that_does_not_match() -> None:
    t = clean_older_ct()
    t.event(6, "b").ev("s1", "b0", 5, 6)
    _caught(t, "durable_exactly_once", "does not match")


def test_once_ct_advanced_before_consumption() -> None:
    t = clean_older_ct()
    t.event(6, "a").ack("s1", "b0", 6)  # not delivered yet
    _caught(t, "durable_exactly_once", "CT advanced before consumption")


def test_once_loss_found_after_drain() -> None:
    t = clean_older_ct()
    t.event(6, "a")  # never delivered to s1 or s2
    v = _caught(t, "durable_exactly_once", "never delivered", live_end=True)
    assert v.tick == 6
    t.add("b0", "dur_leave", DurLeave(subscriber="s1")).ev("s2", "b0", 5, 6)
    assert t.check() is None  # s1 left; s2 got it


def test_uncovered() -> None:
    rs = [(2, 4), (6, 9)]
    assert uncovered(2, 4, rs) is None
    assert uncovered(3, 5, rs) == 5
    assert uncovered(0, 3, rs) == 0
    assert uncovered(6, 9, rs) is None
    assert uncovered(7, 7, []) == 7
    assert uncovered(8, 7, []) is None


def test_every_record_kind_is_judged() -> None:
    from gapless.impl.durable.records import DURABLE_RECORDS
    from gapless.invariants.plugin import Ledger, Report

    plugin = PLUGINS[0](Ledger(CTX), Report(dict.fromkeys(INVARIANTS, True)))
    assert set(plugin.judges()) == set(DURABLE_RECORDS) == set(plugin.kinds)
