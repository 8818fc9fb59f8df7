"""``gapless bench zmq``: the prefix trie and a forwarding device, beside real libzmq.

* ``trie_ops_per_s`` — subscription operations (alternating a new prefix's ``add`` and an
  old one's ``remove``, each a new persistent version) per second on a
  :class:`~gapless.impl.zmq.trie.PrefixTrie` holding 100,000 live prefixes (target >=
  100,000; wall-clock time, as every figure here); ``trie_ops_per_cpu_s`` — the same per
  second of this process's CPU time (informational: on a machine shared with other jobs the
  wall-clock figure also counts the time the process waited for a core, which
  ``python_ns_per_iteration`` shows too); ``trie_match_per_s`` — ``match`` calls per second
  on it (informational). The built trie is frozen out of the cyclic collector's way
  (``gc.freeze``) first: it is long-lived, and without that CPython's collector re-scans its
  containers every few hundred allocations and the figure measures the collector.
* ``device_msgs_per_s`` — data messages per second through a modelled device
  (:func:`gapless.impl.zmq.device.handle`: route each arriving message to every peer holding
  a matching prefix) holding 10,000 subscriptions of 50 peers.
* ``libzmq_device_msgs_per_s`` — the same through real libzmq on 127.0.0.1 in the same run:
  an XPUB publisher, libzmq's own proxy (``zmq_proxy_steerable``, in a thread) between an
  XSUB and an XPUB, and 10 SUBs holding the same 10,000 subscriptions; messages published per
  second of wall time until every expected copy arrived. ``model_vs_libzmq`` is their ratio
  (reported, not a target). Skipped (``None``) when pyzmq is missing.

Every figure comes with ``python_ns_per_iteration`` (added by ``gapless bench``).
"""

from __future__ import annotations

import gc
import random
import threading
import time
from typing import Any

from gapless.benchmarks._targets import target
from gapless.impl.inputs import LinkChanged, Receive
from gapless.impl.zmq import device
from gapless.impl.zmq.device import DeviceState
from gapless.impl.zmq.messages import Data, Subscription
from gapless.impl.zmq.trie import PrefixTrie

__all__ = ["SPEEDUP_KEYS", "run"]

SPEEDUP_KEYS = {
    "trie_ops_per_s": "higher",
    "trie_ops_per_cpu_s": "higher",
    "trie_match_per_s": "higher",
    "device_msgs_per_s": "higher",
}
"""The figures ``gapless bench zmq --baseline OLD`` compares (``speedup_vs_baseline``)."""

ALPHABET = b"ABCDEFGHIJKLMNOP"


def _prefixes(rng: random.Random, n: int) -> list[bytes]:
    seen: set[bytes] = set()
    while len(seen) < n:
        seen.add(bytes(rng.choice(ALPHABET) for _ in range(rng.randint(3, 7))))
    return sorted(seen, key=lambda _: rng.random())


def _trie(rng: random.Random, n: int = 100_000) -> dict[str, float]:
    live = _prefixes(rng, n + n // 10)
    trie = PrefixTrie.empty()
    for i, p in enumerate(live[:n]):
        trie, _ = trie.add(p, f"peer{i % 10}")
    # the 100,000-prefix trie is long-lived: keep the cyclic collector from re-scanning its
    # ~250,000 containers on every few allocations (CPython's gc.freeze, meant for this)
    gc.collect()
    gc.freeze()
    try:
        return _trie_ops(trie, live, n)
    finally:
        gc.unfreeze()


def _trie_ops(trie: PrefixTrie, live: list[bytes], n: int) -> dict[str, float]:
    fresh = live[n:]
    ops = 2 * len(fresh)
    c0, t0 = time.process_time(), time.perf_counter()
    t = trie
    for i, p in enumerate(fresh):
        t, _ = t.add(p, "peerX")
        t, _ = t.remove(live[i], f"peer{i % 10}")
    ops_s = ops / (time.perf_counter() - t0)
    ops_cpu_s = ops / max(time.process_time() - c0, 1e-9)
    probes = [p + b"xyz" for p in live[: n // 5]]
    t0 = time.perf_counter()
    for m in probes:
        trie.match(m)
    match_s = len(probes) / (time.perf_counter() - t0)
    return {
        "trie_ops_per_s": round(ops_s),
        "trie_ops_per_cpu_s": round(ops_cpu_s),
        "trie_match_per_s": round(match_s),
    }


def _device(subs: dict[str, list[bytes]], payloads: list[bytes]) -> float:
    state: Any = DeviceState(name="d", upstream=("p",))
    state, _ = device.handle(state, LinkChanged(neighbour="p", up=True), 0)
    for peer, prefixes in subs.items():
        state, _ = device.handle(state, LinkChanged(neighbour=peer, up=True), 0)
        for p in prefixes:
            msg = Subscription(subscribe=True, topic=p)
            state, _ = device.handle(state, Receive(sender=peer, msg=msg), 0)
    msgs = [
        Receive(sender="p", msg=Data(origin="p", seq=i, payload=m)) for i, m in enumerate(payloads)
    ]
    t0 = time.perf_counter()
    for inp in msgs:
        device.handle(state, inp, 0)
    return len(msgs) / (time.perf_counter() - t0)


def _expected_copies(subs: dict[str, list[bytes]], payloads: list[bytes]) -> int:
    return sum(
        1 for prefixes in subs.values() for m in payloads if any(m.startswith(p) for p in prefixes)
    )


def _libzmq(subs: dict[str, list[bytes]], payloads: list[bytes]) -> float | None:
    try:
        import zmq
    except ImportError:
        return None
    ctx = zmq.Context()
    try:
        return _libzmq_run(zmq, ctx, subs, payloads)
    finally:
        ctx.destroy(linger=0)


def _libzmq_run(zmq: Any, ctx: Any, subs: dict[str, list[bytes]], payloads: list[bytes]) -> float:
    pub = ctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.SNDHWM, 0)
    pub.bind("tcp://127.0.0.1:*")
    pub_addr = pub.getsockopt_string(zmq.LAST_ENDPOINT)
    ready = threading.Event()
    where: dict[str, str] = {}

    def proxy() -> None:
        xsub, xpub = ctx.socket(zmq.XSUB), ctx.socket(zmq.XPUB)
        ctl = ctx.socket(zmq.PAIR)
        for s in (xsub, xpub):
            s.setsockopt(zmq.SNDHWM, 0)
            s.setsockopt(zmq.RCVHWM, 0)
        xsub.connect(pub_addr)
        xpub.bind("tcp://127.0.0.1:*")
        ctl.bind("inproc://bench-control")
        where["addr"] = xpub.getsockopt_string(zmq.LAST_ENDPOINT)
        ready.set()
        zmq.proxy_steerable(xsub, xpub, None, ctl)
        for s in (xsub, xpub, ctl):
            s.close(linger=0)

    thread = threading.Thread(target=proxy, daemon=True)
    thread.start()
    ready.wait(10)
    socks = []
    distinct = {p for ps in subs.values() for p in ps}
    for prefixes in subs.values():
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.RCVHWM, 0)
        for p in prefixes:
            s.setsockopt(zmq.SUBSCRIBE, p)
        s.connect(where["addr"])
        socks.append(s)
    seen: set[bytes] = set()
    deadline = time.monotonic() + 30
    while len(seen) < len(distinct) and time.monotonic() < deadline:
        if pub.poll(100):
            seen.add(pub.recv()[1:])
    want = _expected_copies(subs, payloads)
    poller = zmq.Poller()
    for s in socks:
        poller.register(s, zmq.POLLIN)
    got = 0
    t0 = time.perf_counter()
    for m in payloads:
        pub.send(m)
    deadline = time.monotonic() + 60
    while got < want and time.monotonic() < deadline:
        for s, _ in poller.poll(100):
            while True:
                try:
                    s.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                got += 1
    elapsed = time.perf_counter() - t0
    ctl = ctx.socket(zmq.PAIR)
    ctl.connect("inproc://bench-control")
    ctl.send(b"TERMINATE")
    thread.join(10)
    for s in (*socks, pub, ctl):
        s.close(linger=0)
    return len(payloads) / elapsed if got >= want else 0.0


def run() -> dict[str, Any]:
    """Measure (see module doc)."""
    rng = random.Random(15)
    result: dict[str, Any] = _trie(rng)
    prefixes = _prefixes(rng, 10_000)
    subs = {f"peer{i:02d}": prefixes[i * 200 : (i + 1) * 200] for i in range(50)}
    payloads = [rng.choice(prefixes) + b"-%d" % i for i in range(20_000)]
    result["device_msgs_per_s"] = round(_device(subs, payloads))
    libzmq = _libzmq(subs, payloads)
    result["libzmq_device_msgs_per_s"] = None if libzmq is None else round(libzmq)
    result["model_vs_libzmq"] = (
        None if not libzmq else round(result["device_msgs_per_s"] / libzmq, 3)
    )
    result["subscriptions"] = 10_000
    result["targets"] = {
        "trie_ops_per_s": target(result["trie_ops_per_s"], 100_000, at_least=True),
    }
    return result
