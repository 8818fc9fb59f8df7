"""Reconnect-anywhere at the durable SHB [DUR §1 item 5; ``spec/durable.md``]: two SHBs under
one intermediate node under one scripted pubend, subscribers that move between them.

A Hypothesis state machine: the pubend publishes (its knowledge goes to both SHBs), answers
nacks (data, silence, or L for released ticks) and turns ticks L by the release rule from the
node's minimum over the two SHBs' reports; links lose messages (knowledge, nacks, reports and
the SHBs' ``Unregister``/``Unregistered``); subscribers subscribe at either SHB, disconnect,
reconnect at their SHB, *move* to the other one presenting their current CT or an older
acknowledged one (:class:`~gapless.impl.durable.shb.MoveIn`), and acknowledge what they
consumed; the intermediate node crashes (its view restarts empty). Both SHBs' storage
effects run on :class:`MemoryStore` (which refuses a wrong
order). Every ``dur_*`` record is judged online by the durable invariants (Tr <= Td, the L
rule, gap legality, exactly once), and after every step the safety the design promises is
checked directly: no tick above what a subscriber acknowledged is L unless early release
allowed it, and a moved subscriber keeps an active record somewhere. At the end everyone
reconnects, the run drains, every move completes (one record left, at the new SHB) and each
subscriber's last connection received exactly the matching events after the CT it presented,
minus the gap ranges. A planted bug (the old SHB drops its record as soon as the subscriber
moves, before the new one is active) is caught."""

from __future__ import annotations

from collections import deque
from typing import Any

import attrs
import pytest
from _dur_harness import Judge, ScriptedPubend, carry_out, context, expected_events
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from gapless.impl.durable import release as rl
from gapless.impl.durable import shb_move
from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.messages import EventMessage
from gapless.impl.durable.records import DurCrash
from gapless.impl.durable.shb import (
    Ack,
    CheckpointAnswer,
    CheckpointQuery,
    Lost,
    MoveIn,
    ShbConfig,
    ShbState,
    Subscribe,
    Tick,
    Unregister,
    Unregistered,
    on_ack,
    on_checkpoint_answer,
    on_checkpoint_query,
    on_connect,
    on_disconnect,
    on_knowledge,
    on_lost,
    on_move_in,
    on_subscribe,
    on_tick,
    on_unregister,
    on_unregistered,
    shb_recover,
    shb_start,
)
from gapless.impl.effects import Rejected, Send
from gapless.impl.gd.messages import Nack
from gapless.impl.inputs import Connect, Disconnect
from gapless.models.durable_store import MemoryStore

P = "p"
SHBS = ("b0", "b1")
NODE = "n"
FILTERS = {"s0": "*", "s1": 'k == "a"', "s2": 'k == "b"'}

CTX = context(
    (P,),
    {"b0": "shb", "b1": "shb", NODE: "ib", "phb": "phb"},
    cell_of={"b0": "c0", "b1": "c1", NODE: "cn"},
    cell_tree=(("cn", "c0"), ("cn", "c1")),
)


@attrs.define
class Sub:
    """A subscriber's own model (as in ``test_dur_shb.py``) and the SHB it is at."""

    home: str
    ct: int
    acked: list[int]
    connected: bool = True
    presented: int = -1
    log: list[Any] = attrs.Factory(list)
    moves: int = 0  # how many moves it made (a MoveIn's generation) [spec/durable.md]
    #: ack mode SHB: the SHB it is moving from while the new one fetches its CT
    fetching_from: str | None = None


class MoveMachine(RuleBasedStateMachine):
    """Two SHBs, one node, one pubend (module doc)."""

    early_drop = False  # planted: the old SHB drops the record as soon as the subscriber moves
    answer_delivered = False  # planted (ack mode SHB): the old SHB answers its latestDelivered

    def __init__(self) -> None:
        super().__init__()
        self.pub = ScriptedPubend(P)
        self.node = rl.NodeRelease.over(NODE, P, SHBS)
        self.shb: dict[str, ShbState] = {}
        self.store = {b: MemoryStore() for b in SHBS}
        self.down: dict[str, deque[Any]] = {b: deque() for b in SHBS}
        self.up: deque[tuple[str, Any]] = deque()  # (from SHB, message)
        self.subs: dict[str, Sub] = {}
        self.judge = Judge(CTX)
        self.moves = 0
        self.mode = rl.AckMode.SUBSCRIBER
        self.last_crash = 0
        self.node_crashes = 0

    # ---------------------------------------------------------------- plumbing

    @property
    def seq(self) -> int:
        return self.judge.seq

    @seq.setter
    def seq(self, value: int) -> None:
        self.judge.seq = value

    def record(self, node: str, kind: str, detail: object) -> None:
        self.judge.record(node, kind, detail)

    def consume(self, name: str, m: Any) -> None:
        s = self.subs[name]
        s.ct = m.t
        s.log.append(m)

    def run(self, b: str, handler: Any, inp: Any) -> list[Rejected]:
        self.shb[b], effects = handler(self.shb[b], inp, self.seq)
        return carry_out(
            b,
            effects,
            judge=self.judge,
            store=self.store[b],
            message=self.consume,
            send=lambda e: self.up.append((b, e)),
            emitted=lambda e: self.connected(b, e),
        )

    # ---------------------------------------------------------------- rules

    @initialize(mr=st.sampled_from([None, 3]), mode=st.sampled_from(list(rl.AckMode)))
    def configure(self, mr: int | None, mode: rl.AckMode = rl.AckMode.SUBSCRIBER) -> None:
        """maxRetain, and who keeps CT [DUR §2, §5.2]: in mode SHB a moving subscriber
        presents none and the new SHB fetches the one the old SHB keeps."""
        self.pub = ScriptedPubend(P, max_retain=mr)
        self.mode = mode
        for b in SHBS:
            cfg = ShbConfig(shb=b, upstream="phb", pubends=(P,), window=3, ack_mode=mode)
            self.shb[b] = shb_start(cfg)

    @precondition(lambda self: len(self.subs) < len(FILTERS))
    @rule(b=st.sampled_from(SHBS))
    def subscribe(self, b: str) -> None:
        name = sorted(FILTERS)[len(self.subs)]
        start = self.shb[b].latest_delivered(P)
        self.subs[name] = Sub(home=b, ct=start, acked=[start], presented=start)
        self.run(b, on_subscribe, Subscribe(subscriber=name, filter=FILTERS[name]))

    @rule(k=st.sampled_from("ab"), skip=st.integers(0, 2))
    def publish(self, k: str, skip: int) -> None:
        msg = self.pub.publish(self.judge, k, skip)
        for b in SHBS:
            self.down[b].append(msg)

    @rule()
    def heartbeat(self) -> None:
        msg = self.pub.heartbeat()
        for b in SHBS:
            self.down[b].append(msg)

    @rule(b=st.sampled_from(SHBS), drop=st.booleans())
    def to_shb(self, b: str, drop: bool) -> None:
        if not self.down[b]:
            return
        msg = self.down[b].popleft()
        if not drop:
            self.run(b, on_lost if isinstance(msg, Lost) else on_knowledge, msg)

    @precondition(lambda self: bool(self.up))
    @rule(drop=st.booleans())
    def route(self, drop: bool) -> None:
        """The next message an SHB sent: to the pubend (nack, report) or the other SHB."""
        b, send = self.up.popleft()
        if drop:
            return
        msg = send.msg
        if isinstance(msg, Nack):
            self.down[b].extend(self.pub.answer(msg.start, msg.end))
        elif isinstance(msg, Unregister):
            self.run(send.to, on_unregister, msg)
        elif isinstance(msg, Unregistered):
            self.run(send.to, on_unregistered, msg)
        elif isinstance(msg, CheckpointQuery):
            self.run(send.to, on_checkpoint_query, msg)
        elif isinstance(msg, CheckpointAnswer):
            if self.answer_delivered:  # planted: what the old SHB delivered, not its kept CT
                ld = self.shb[msg.shb].latest_delivered(P)
                msg = attrs.evolve(msg, ct=CheckpointToken.of({P: ld}))
            self.run(send.to, on_checkpoint_answer, msg)
        else:
            self.node, rej = rl.node_on_report(self.node, msg)
            assert not rej, rej
            self.record(NODE, "dur_report", self.node.report())
            self.pub.hear(self.judge, self.node.report(), (NODE,))

    @rule(b=st.sampled_from(SHBS))
    def tick(self, b: str) -> None:
        self.run(b, on_tick, Tick())

    def pick(self, i: int, connected: bool) -> str | None:
        names = sorted(n for n, s in self.subs.items() if s.connected == connected)
        return names[i % len(names)] if names else None

    @rule(i=st.integers(0, 2))
    def disconnect(self, i: int) -> None:
        name = self.pick(i, connected=True)
        if name is None:
            return
        s = self.subs[name]
        s.connected = False
        self.run(s.home, on_disconnect, Disconnect(subscriber=name))
        if s.fetching_from is not None:  # its CT was still being fetched: the move is off
            s.home, s.fetching_from = s.fetching_from, None

    def resume(self, name: str, ct: int) -> int:
        """Where a reconnection at its SHB resumes: the CT presented, or in ack mode SHB the
        one that SHB keeps, ``released(s, p)`` [DUR §2, §5.2]."""
        if self.mode is rl.AckMode.SHB:
            return self.shb[self.subs[name].home].views[P].release.records[name].released
        return ct

    def connected(self, b: str, e: Any) -> None:
        """A move waiting for its CT registered (ack mode SHB): the connection starts at the
        CT the old SHB kept."""
        if e.kind != "dur_connect":
            return
        s = self.subs[e.detail.subscriber]
        if s.fetching_from is not None and s.home == b:
            ct = e.detail.ct.at(P)
            s.fetching_from, s.log, s.ct, s.presented = None, [], ct, ct

    def _start(self, name: str, ct: int) -> Sub:
        s = self.subs[name]
        s.connected, s.log, s.ct, s.presented = True, [], ct, ct
        return s

    @rule(i=st.integers(0, 2), back=st.integers(0, 2))
    def reconnect(self, i: int, back: int) -> None:
        name = self.pick(i, connected=False)
        if name is None:
            return
        s = self.subs[name]
        ct = self.resume(name, s.ct if back == 0 else s.acked[max(0, len(s.acked) - back)])
        self._start(name, ct)
        resume = CheckpointToken.of({P: ct})
        inp = Connect(subscriber=name, filter=FILTERS[name], resume=resume)
        assert not self.run(s.home, on_connect, inp)

    def registered(self, name: str) -> list[str]:
        return [b for b in SHBS if name in self.shb[b].subs]

    @rule(i=st.integers(0, 2), back=st.integers(0, 2))
    def move(self, i: int, back: int) -> None:
        """Reconnect-anywhere: a subscriber whose last move is complete leaves its SHB (if
        connected) and connects to the other one presenting the CT it last acknowledged or an
        older acknowledged one (the pending record is registered at it, so it must be one the
        subscriber acknowledged: ``spec/durable.md``)."""
        names = sorted(self.subs)
        name = names[i % len(names)] if names else None
        if name is None or len(self.registered(name)) != 1 or self.subs[name].fetching_from:
            return
        s = self.subs[name]
        if s.connected:
            s.connected = False
            self.run(s.home, on_disconnect, Disconnect(subscriber=name))
        to = SHBS[1 - SHBS.index(s.home)]
        # its durable CT: one it acknowledged (the last, or ``back`` acks before) [DUR §2]
        ct = s.acked[max(0, len(s.acked) - 1 - back)]
        fetch = self.mode is rl.AckMode.SHB  # it has no CT: the new SHB asks the old one
        inp = MoveIn(
            subscriber=name,
            filter=FILTERS[name],
            previous=s.home,
            ct=None if fetch else CheckpointToken.of({P: ct}),
            generation=s.moves + 1,
        )
        before = (s.connected, s.log, s.ct, s.presented)
        if fetch:
            s.connected, s.log, s.fetching_from = True, [], s.home
            s.home = to  # where its messages will come from once registered
        else:
            self._start(name, ct)
        rejected = self.run(to, on_move_in, inp)
        if rejected:  # the new SHB has not delivered that far yet: retry later
            assert "beyond latestDelivered" in rejected[0].reason, rejected
            s.connected, s.log, s.ct, s.presented = before
            return
        old, s.home = s.fetching_from or s.home, to
        self.moves += 1
        s.moves += 1
        if self.early_drop:  # planted: unregister before the new record is active
            self.run(old, on_unregister, Unregister(subscriber=name, by=to, generation=s.moves))

    @precondition(lambda self: self.seq - self.last_crash >= 25)  # rarer than the rest
    @rule(b=st.sampled_from(SHBS))
    def crash(self, b: str) -> None:
        """SHB ``b`` crashes and restarts from its store [DUR §4.1]. A move still pending there
        is forgotten (the subscriber is back at the SHB it came from, which kept its record);
        for an active moved subscriber the caller supplies where it came from and its
        ``refilter_upto`` (``spec/durable.md``: not kept by the store)."""
        self.record(b, "dur_crash", DurCrash(shb=b))
        self.last_crash = self.seq
        self.down[b].clear()
        st_ = self.shb[b]
        pending = set().union(*(v.release.pending for v in st_.views.values()))
        for name, s in self.subs.items():
            if s.home == b:
                s.connected = False
                if s.fetching_from is not None:  # the move was not registered: off
                    s.home, s.fetching_from = s.fetching_from, None
                elif name in pending:
                    previous = st_.subs[name].previous
                    assert previous is not None
                    s.home = previous
        keep = sorted(n for n in st_.subs if n not in pending)
        moved = {
            n: (st_.subs[n].previous, st_.subs[n].refilter_upto, st_.subs[n].generation)
            for n in keep
            if st_.subs[n].refilter_upto
        }
        self.store[b], got = self.store[b].restart()
        self.shb[b] = shb_recover(
            st_.config,
            [(n, st_.subs[n].number, FILTERS[n]) for n in keep],
            latest=got.tables.latest,
            released=got.tables.released,
            pfs=got.pfs,
            moved=moved,
        )

    @rule()
    def node_crash(self) -> None:
        """The intermediate broker crashes and restarts at once [DUR §3]: its view of the
        SHBs is soft state and restarts at ``(-1, -1)`` per child (what it forwarded stands:
        the pubend merges reports by maximum); the reports in flight to it are lost."""
        self.node = rl.NodeRelease.over(NODE, P, SHBS)
        self.up = deque(
            (b, send) for b, send in self.up if not isinstance(send.msg, rl.ReleaseReport)
        )
        self.node_crashes += 1

    @rule(i=st.integers(0, 2))
    def ack(self, i: int) -> None:
        name = self.pick(i, connected=True)
        if name is None or self.subs[name].fetching_from is not None:
            return
        s = self.subs[name]
        s.acked.append(s.ct)
        self.run(s.home, on_ack, Ack(subscriber=name, ct=CheckpointToken.of({P: s.ct})))

    @rule(n=st.integers(1, 5))
    def time_passes(self, n: int) -> None:
        """Events delivered to both SHBs, then a release round of both."""
        for j in range(n):
            self.publish("ab"[j % 2], 0)
        for b in SHBS:
            while self.down[b]:
                self.to_shb(b, drop=False)
            self.tick(b)
        while self.up:
            self.route(drop=False)

    # ---------------------------------------------------------------- checks

    @invariant()
    def durable_state_matches_the_store(self) -> None:
        for b, st_ in self.shb.items():
            rel = st_.views[P].release
            assert self.store[b].order.tables.latest.get(P, -1) == rel.latest_delivered

    @invariant()
    def nothing_a_subscriber_needs_is_released(self) -> None:
        """Tr(p) never passes what a subscriber acknowledged (early release aside): some
        active record at or below its acknowledged CT holds it down [DUR §1 item 5]."""
        if self.early_drop:
            return  # the planted bug is judged by the trace invariants alone
        for name, s in self.subs.items():
            acked = max(s.acked)
            rel = self.pub.rel
            if rel.max_retain is None:
                assert rel.released_through <= acked, (name, acked, rel)
            active = [
                self.shb[b].views[P].release.records[name]
                for b in self.registered(name)
                if self.shb[b].views[P].release.records[name].active
            ]
            assert any(r.released <= acked for r in active), (name, acked, active)

    def reconnect_all(self) -> None:
        """Everyone disconnected reconnects at its SHB presenting its CT. One that consumed
        more at an SHB it moved to, whose move was then lost in that SHB's crash, may present
        a CT its own SHB has not delivered yet: refused, it retries once that SHB caught up."""
        for name, s in sorted(self.subs.items()):
            if s.connected:
                continue
            before = (s.log, s.ct, s.presented)
            self._start(name, self.resume(name, s.ct))
            resume = CheckpointToken.of({P: s.ct})
            inp = Connect(subscriber=name, filter=FILTERS[name], resume=resume)
            rejected = self.run(s.home, on_connect, inp)
            if rejected:
                why = rejected[0].reason
                assert "unknown subscriber" not in why, f"{name} is hosted nowhere: {why}"
                assert "beyond latestDelivered" in why, rejected
                s.connected = False
                s.log, s.ct, s.presented = before

    def drain(self) -> None:
        self.heartbeat()
        for _ in range(200):
            self.reconnect_all()
            before = dict(self.shb)
            for b in SHBS:
                self.tick(b)
            while self.up or any(self.down.values()):
                for b in SHBS:
                    while self.down[b]:
                        self.to_shb(b, drop=False)
                while self.up:
                    self.route(drop=False)
            for name, s in self.subs.items():  # everyone acknowledges what it has
                if s.connected and s.fetching_from is None:
                    s.acked.append(s.ct)
                    ack = Ack(subscriber=name, ct=CheckpointToken.of({P: s.ct}))
                    self.run(s.home, on_ack, ack)
            connected = all(s.connected and not s.fetching_from for s in self.subs.values())
            if connected and all(self.shb[b] == before[b] for b in SHBS):
                return
        raise AssertionError("the SHBs did not go quiet")

    def teardown(self) -> None:
        if self.judge.checker.violation is not None or not self.shb:
            return
        self.drain()
        self.judge.finish()
        for name, s in self.subs.items():
            assert self.registered(name) == [s.home], (name, self.registered(name))
            assert not self.shb[s.home].moving
            assert not self.shb[s.home].fetching
            got, want = expected_events(self.pub.events, s.presented, FILTERS[name], s.log, P)
            assert got == want, (name, s.presented, got, want)
            assert self.shb[s.home].position(name, P) == self.shb[s.home].latest_delivered(P)


TestMove = MoveMachine.TestCase
TestMove.settings = settings(max_examples=60, stateful_step_count=50, deadline=None)


class EarlyDrop(MoveMachine):
    """Planted: the old SHB drops the record at once (reconnect-anywhere step 4 too early)."""

    early_drop = True

    @initialize(mr=st.sampled_from([None, 3]))
    def configure(self, mr: int | None, mode: rl.AckMode = rl.AckMode.SUBSCRIBER) -> None:
        super().configure(mr, rl.AckMode.SUBSCRIBER)


def test_moves_happen() -> None:
    """Non-vacuity of the machine: a scripted run moves a subscriber, which is then served
    by the new SHB (events it missed are refiltered there) and unregistered at the old one."""
    m = MoveMachine()
    m.configure(None)
    m.subscribe("b0")
    m.time_passes(3)
    m.disconnect(0)
    m.time_passes(2)
    m.move(0, 0)
    assert m.moves == 1
    assert m.registered("s0") == ["b0", "b1"]
    assert not m.shb["b1"].views[P].release.records["s0"].active
    m.time_passes(2)
    m.ack(0)
    m.time_passes(1)
    m.ack(0)
    m.time_passes(1)
    assert m.registered("s0") == ["b1"]
    got = [x.t for x in m.subs["s0"].log if isinstance(x, EventMessage)]
    assert got
    assert got[0] > m.subs["s0"].presented
    m.teardown()


def test_planted_early_unregister_is_caught() -> None:
    runs = settings(
        max_examples=300,
        stateful_step_count=50,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
    )
    # Tr(p) passes what the subscriber acknowledged (release_rule), or — when the pending
    # record is then lost in the new SHB's crash — no SHB hosts the subscriber any more
    with pytest.raises(AssertionError, match=r"release_rule violated|hosted nowhere"):
        run_state_machine_as_test(EarlyDrop, settings=runs)


def test_unregister_is_idempotent() -> None:
    st_ = shb_start(ShbConfig(shb="b0", upstream="phb", pubends=(P,)))
    new, fx = on_unregister(st_, Unregister(subscriber="zz", by="b1"), 0)
    assert new is st_
    assert fx == (Send(to="b1", msg=Unregistered(subscriber="zz", shb="b0")),)
    assert on_unregistered(st_, Unregistered(subscriber="zz", shb="b1"), 0) == (st_, ())
    assert shb_move.__all__


def test_a_late_unregister_from_an_earlier_move_drops_nothing() -> None:
    """Non-vacuity of the move generations: a subscriber moved b1 -> b0 (generation 1), then
    back b0 -> b1 (generation 2). b0's late ``Unregister`` of generation 1 reaching b1 must not
    drop b1's newer record (the two-SHB machine found that a name alone is not enough: with it
    both records went and Tr(p) passed what the subscriber had acknowledged)."""
    b1 = shb_start(ShbConfig(shb="b1", upstream="phb", pubends=(P,)))
    move = MoveIn(
        subscriber="s", filter="*", previous="b0", ct=CheckpointToken.of({P: -1}), generation=2
    )
    b1, _ = on_move_in(b1, move, 0)
    late, fx = on_unregister(b1, Unregister(subscriber="s", by="b0", generation=1), 0)
    assert late is b1
    assert fx == (Send(to="b0", msg=Unregistered(subscriber="s", shb="b1")),)
    dropped, _ = on_unregister(b1, Unregister(subscriber="s", by="b0", generation=3), 0)
    assert "s" not in dropped.subs
    assert "s" not in dropped.views[P].release.records
