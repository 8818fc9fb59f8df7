"""A rig that drives real libzmq and the model through the same operations, side by side.

Real side (127.0.0.1, one context): a publisher that is an XPUB with ``XPUB_VERBOSER`` (so
every subscription message reaching it is seen), a proxy — an XSUB connected to the
publisher and an XPUB the SUBs connect to, joined by this rig's own forwarding loop (so it
can be restarted, and in manual mode install what it is told) — and ``n`` SUBs.

Model side: ``gapless.models.zmq_net`` with the same topology, P -> D -> S1..Sn.

Synchronisation is by round-trips, never by sleeping: after each operation every live SUB
subscribes a fresh marker prefix (``\\xff<i>-<k>``, dropping the previous one) and the rig
polls until every marker reached the publisher (each SUB's connection is FIFO through the
proxy, so everything that SUB sent before has arrived); then the publisher publishes a data
marker (``\\xfe<k>``, which every SUB subscribes to from the start, in the model too) and the
rig polls until every connected SUB received it. A SUB's disconnection is awaited on the
proxy XPUB's monitor. Every wait is bounded (``TIMEOUT_S``). Subscription markers are
plumbing and are left out of both the comparison and the recorded trace.

The rig records libzmq's observable trace (subscription messages at the publisher, messages
at each SUB, the operations) as ``gapless.impl.trace.TraceRecord`` values so that the
invariants of ``gapless.invariants.zmq`` judge real libzmq too.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

from gapless.impl.effects import Deliver
from gapless.impl.trace import Fault, TraceRecord
from gapless.impl.zmq.messages import Post, Subscribe, Unsubscribe, ZmqWire, decode
from gapless.impl.zmq.policy import XpubOptions
from gapless.impl.zmq.records import (
    AppChange,
    Edge,
    LinkEvent,
    Posted,
    WireReceived,
    ZmqTopology,
)
from gapless.invariants.violation import Violation
from gapless.invariants.zmq_tracefile import check_zmq_trace_file, write_zmq_trace
from gapless.models.zmq_net import ZmqNet, build_states

TIMEOUT_S = 3.0
SYNC = b"\xfe"
MODES: dict[str, XpubOptions] = {
    "default": XpubOptions(),
    "verbose": XpubOptions(verbose=True),
    "verboser": XpubOptions(verboser=True),
    "manual": XpubOptions(manual=True),
    "welcome": XpubOptions(welcome=b"W-welcome"),
}


def topology(n: int) -> ZmqTopology:
    subs = tuple(f"S{i}" for i in range(n))
    return ZmqTopology(
        edges=(Edge(up="P", down="D"), *(Edge(up="D", down=s) for s in subs)),
        subscribers=subs,
        publishers=("P",),
        devices=("D",),
        observed=("P",),  # libzmq shows only what reaches the publisher's application
    )


class Mismatch(AssertionError):
    """libzmq and the model disagree after an operation: ``libzmq_only`` and
    ``model_only`` are the subscription messages at the publisher only one side saw;
    ``subs_differ`` the SUBs whose messages differ."""

    def __init__(
        self,
        text: str,
        libzmq_only: Counter[tuple[str, bytes]] | None = None,
        model_only: Counter[tuple[str, bytes]] | None = None,
        subs_differ: tuple[int, ...] = (),
    ) -> None:
        super().__init__(text)
        self.libzmq_only = libzmq_only or Counter()
        self.model_only = model_only or Counter()
        self.subs_differ = subs_differ


class Rig:
    """See module doc. ``ops`` is the list of operations applied so far (for messages)."""

    def __init__(self, n: int, mode: str) -> None:
        self.n = n
        self.mode = mode
        self.options = MODES[mode]
        self.topo = topology(n)
        self.ctx = zmq.Context()
        self.records: list[TraceRecord] = []
        self.clock = 0
        self.ops: list[tuple[Any, ...]] = []
        self.pub_seen: Counter[tuple[str, bytes]] = Counter()
        self.got: list[list[bytes]] = [[] for _ in range(n)]
        self.alive = [True] * n  # not closed
        self.connected = [True] * n
        self.lifetime = [1] * n
        self.seq = 0
        self.marker_round = 0
        self.markers: list[bytes | None] = [None] * n
        self.payload_seq: dict[bytes, int] = {}
        self.pub = self._socket(zmq.XPUB)
        self.pub.setsockopt(zmq.XPUB_VERBOSER, 1)
        self.pub.bind("tcp://127.0.0.1:*")
        self.pub_addr = self.pub.getsockopt_string(zmq.LAST_ENDPOINT)
        self.pub_mon = self.pub.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.proxy_addr = "tcp://127.0.0.1:*"
        self._start_proxy()
        self.subs: list[zmq.Socket[bytes]] = []
        for _ in range(n):
            s = self._socket(zmq.SUB)
            s.setsockopt(zmq.RECONNECT_IVL, 10)
            s.connect(self.proxy_addr)
            self.subs.append(s)
        self.model = ZmqNet(
            topo=self.topo,
            states=build_states(
                self.topo, options={"P": XpubOptions(verboser=True), "D": self.options}
            ),
        )
        for e in self.topo.edges:
            self._model(("link", e.up, e.down, True))
            self._record(e.up, "link", LinkEvent(up_node=e.up, down_node=e.down, up=True))
        for i in range(n):
            self.subscribe(i, SYNC)
        self.settle()  # every SUB connected, its first subscription at the publisher
        self.compare()

    # ---------------------------------------------------------------- plumbing
    def _socket(self, kind: int) -> zmq.Socket[bytes]:
        s = self.ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        return s

    def _start_proxy(self) -> None:
        self.xsub = self._socket(zmq.XSUB)
        self.xsub.connect(self.pub_addr)
        self.xpub = self._socket(zmq.XPUB)
        opts = self.options
        if opts.verbose:
            self.xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        if opts.verboser:
            self.xpub.setsockopt(zmq.XPUB_VERBOSER, 1)
        if opts.manual:
            self.xpub.setsockopt(zmq.XPUB_MANUAL, 1)
        if opts.welcome is not None:
            self.xpub.setsockopt(zmq.XPUB_WELCOME_MSG, opts.welcome)
        self.xpub_mon = self.xpub.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED)
        self.xpub.bind(self.proxy_addr)
        self.proxy_addr = self.xpub.getsockopt_string(zmq.LAST_ENDPOINT)

    def _record(self, node: str, kind: str, detail: Any) -> None:
        self.clock += 1
        self.records.append(
            TraceRecord(seq=len(self.records), time=self.clock, node=node, kind=kind, detail=detail)
        )

    def _model(self, action: tuple[Any, ...]) -> None:
        self.model.at(self.model.now + 10_000, action)
        self.model.run()

    def _pump_once(self, timeout_ms: int) -> None:
        poller = zmq.Poller()
        proxy = (self.xpub, self.xsub) if not self.xpub.closed else ()
        for s in (*proxy, self.pub, *self._live_subs()):
            poller.register(s, zmq.POLLIN)
        for sock, _ in poller.poll(timeout_ms):
            self._drain(sock)

    def _live_subs(self) -> list[zmq.Socket[bytes]]:
        return [s for i, s in enumerate(self.subs) if self.alive[i]]

    def _drain(self, sock: zmq.Socket[bytes]) -> None:
        while True:
            try:
                msg = sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if sock is self.xpub:
                sub = decode(msg)
                if self.options.manual and sub is not None:
                    opt = zmq.SUBSCRIBE if sub.subscribe else zmq.UNSUBSCRIBE
                    self.xpub.setsockopt(opt, sub.topic)
                self.xsub.send(msg)
            elif sock is self.xsub:
                self.xpub.send(msg)
            elif sock is self.pub:
                self._at_publisher(msg)
            else:
                self._at_sub(self.subs.index(sock), msg)

    def _at_publisher(self, msg: bytes) -> None:
        sub = decode(msg)
        if sub is None or sub.topic.startswith(b"\xff"):
            if sub is not None:
                self.pub_seen[("marker", sub.topic)] += 1 if sub.subscribe else 0
            return
        kind = "subscribe" if sub.subscribe else "unsubscribe"
        self.pub_seen[(kind, sub.topic)] += 1
        wire = ZmqWire(kind=kind, topic=sub.topic)
        self._record("P", "receive", WireReceived(sender="D", wire=wire))

    def _at_sub(self, i: int, msg: bytes) -> None:
        self.got[i].append(msg)
        deliver = Deliver(
            subscriber=f"S{i}",
            pubend="P",
            tick=self.payload_seq.get(msg, 0),
            payload=msg,
            connection=self.lifetime[i],
        )
        self._record(f"S{i}", "deliver", deliver)

    def wait_until(self, cond: Any, timeout_s: float = TIMEOUT_S) -> bool:
        """Pump until ``cond()`` holds or the bounded timeout passes."""
        deadline = time.monotonic() + timeout_s
        while not cond():
            if time.monotonic() > deadline:
                return False
            self._pump_once(10)
        return True

    def _await_disconnect(self, mon: zmq.Socket[bytes], event: int) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            self._pump_once(0)
            if mon.poll(10) and recv_monitor_message(mon)["event"] == event:
                return
        raise Mismatch(f"no monitor event {event} within {TIMEOUT_S}s after {self.ops[-1]}")

    # ---------------------------------------------------------------- operations
    def subscribe(self, i: int, topic: bytes) -> None:
        self.subs[i].setsockopt(zmq.SUBSCRIBE, topic)
        self._record(f"S{i}", "subscribe", AppChange(subscribe=True, topic=topic))
        self._model(("app", f"S{i}", Subscribe(topic=topic)))

    def unsubscribe(self, i: int, topic: bytes) -> None:
        self.subs[i].setsockopt(zmq.UNSUBSCRIBE, topic)
        self._record(f"S{i}", "subscribe", AppChange(subscribe=False, topic=topic))
        self._model(("app", f"S{i}", Unsubscribe(topic=topic)))

    def disconnect(self, i: int, close: bool = False) -> None:
        if close:
            self.subs[i].close()
            self.alive[i] = False
        else:
            self.subs[i].disconnect(self.proxy_addr)
        self.connected[i] = False
        self._record("D", "link", LinkEvent(up_node="D", down_node=f"S{i}", up=False))
        self._model(("link", "D", f"S{i}", False))
        self._await_disconnect(self.xpub_mon, zmq.EVENT_DISCONNECTED)

    def reconnect(self, i: int) -> None:
        self.subs[i].connect(self.proxy_addr)
        self.connected[i] = True
        self.lifetime[i] += 1
        self._record("D", "link", LinkEvent(up_node="D", down_node=f"S{i}", up=True))
        self._model(("link", "D", f"S{i}", True))

    def restart_proxy(self) -> None:
        self._model(("restart", "D"))
        self._record("D", "fault", Fault(kind="restart", target="D"))
        edges = [e for e in self.topo.edges if e.down == "D" or self.connected[int(e.down[1:])]]
        for e in edges:  # a disconnected SUB stays disconnected
            self._record(e.up, "link", LinkEvent(up_node=e.up, down_node=e.down, up=False))
        self.xpub.unbind(self.proxy_addr)
        self._await_disconnect(self.xpub_mon, zmq.EVENT_CLOSED)
        self.xpub.disable_monitor()
        self.xpub_mon.close()
        self.xpub.close()
        self.xsub.close()
        self._await_disconnect(self.pub_mon, zmq.EVENT_DISCONNECTED)
        expected = self.model_publisher()

        def gone_reported() -> bool:
            real = self.real_publisher()
            return all(real[k] >= n for k, n in expected.items() if k[0] == "unsubscribe")

        self.wait_until(gone_reported)  # bounded; a shortfall shows in the comparison
        for e in edges:
            self._record(e.up, "link", LinkEvent(up_node=e.up, down_node=e.down, up=True))
            if e.down != "D":
                self.lifetime[int(e.down[1:])] += 1
        self._start_proxy()

    def publish(self, payload: bytes) -> None:
        self.seq += 1
        self.payload_seq[payload] = self.seq
        self.pub.send(payload)
        self._record("P", "publish", Posted(seq=self.seq, payload=payload))
        self._model(("app", "P", Post(payload=payload)))

    def apply(self, op: tuple[Any, ...]) -> None:
        """Apply one operation to both sides, settle, compare (raises :class:`Mismatch`)."""
        name, args = op[0], op[1:]
        if name != "publish" and name != "restart_proxy":
            i = args[0]
            if not self.alive[i]:
                return  # a closed SUB takes no more operations
            if name == "reconnect" and self.connected[i]:
                return
            if name == "disconnect" and not self.connected[i]:
                return
        self.ops.append(op)
        getattr(self, name)(*args)
        self.settle()
        self.compare()

    # ---------------------------------------------------------------- settling
    def settle(self) -> None:
        self.marker_round += 1
        k = self.marker_round
        want: list[bytes] = []
        for i in range(self.n):
            if not self.connected[i]:
                continue
            old = self.markers[i]
            if old is not None:
                self.subs[i].setsockopt(zmq.UNSUBSCRIBE, old)
            marker = b"\xff%d-%d" % (i, k)
            self.subs[i].setsockopt(zmq.SUBSCRIBE, marker)
            self.markers[i] = marker
            want.append(marker)
        if not self.wait_until(lambda: all(self.pub_seen[("marker", m)] for m in want)):
            raise Mismatch(f"subscription markers lost after {self.ops}")
        token = SYNC + b"%d" % k
        self.publish(token)
        live = [i for i in range(self.n) if self.connected[i]]
        if not self.wait_until(lambda: all(token in self.got[i] for i in live)):
            raise Mismatch(f"data marker {token!r} lost after {self.ops}")

    def model_publisher(self) -> Counter[tuple[str, bytes]]:
        return Counter(  # a verboser XPUB's application sees every message it gets
            ("subscribe" if r.detail.message.subscribe else "unsubscribe", r.detail.message.topic)
            for r in self.model.records
            if r.kind == "notify" and r.node == "P"
        )

    def model_got(self, i: int) -> list[bytes]:
        return [
            r.detail.payload
            for r in self.model.records
            if r.kind == "deliver" and r.node == f"S{i}"
        ]

    def real_publisher(self) -> Counter[tuple[str, bytes]]:
        return Counter({k: v for k, v in self.pub_seen.items() if k[0] != "marker"})

    def compare(self) -> None:
        def same() -> bool:
            return self.real_publisher() == self.model_publisher() and all(
                Counter(self.got[i]) == Counter(self.model_got(i)) for i in range(self.n)
            )

        if same() or self.wait_until(same, 0.3):
            return
        real, model = self.real_publisher(), self.model_publisher()
        lines = [f"libzmq and the model disagree ({self.mode} mode) after {self.ops}:"]
        lines.append(
            f"  at the publisher: libzmq-only {dict(real - model)}, model-only {dict(model - real)}"
        )
        differ = tuple(
            i for i in range(self.n) if Counter(self.got[i]) != Counter(self.model_got(i))
        )
        for i in differ:
            lines.append(f"  S{i}: libzmq {self.got[i]} model {self.model_got(i)}")
        raise Mismatch("\n".join(lines), real - model, model - real, differ)

    def close(self) -> None:
        self.ctx.destroy(linger=0)

    def judge_from_file(self, path: Path) -> list[Violation]:
        """Write libzmq's observable trace as a ``gapless-trace`` file, read it back and
        judge it with the invariants (what ``gapless check FILE`` does)."""
        meta = {"libzmq": zmq.zmq_version(), "mode": self.mode, "ops": repr(self.ops)}
        write_zmq_trace(path, self.topo, self.records, meta=meta)
        _, violations = check_zmq_trace_file(path)
        return violations
