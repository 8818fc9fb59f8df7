"""``gapless bench durable``: the PFS microbenchmark of [DUR §5.1.2] on real files, and the SHB's
storage killed with SIGKILL under load [issue 13 §4, §6].

1. **PFS against one event log per subscriber**, same run, same framing (length + CRC-32 per
   record, :func:`gapless.models.durable_store.frame`), same directory rules (a segment's
   directory entry fsynced before its first record, the directory fsynced after a removal),
   the paper's workload: 800 events/s for ``seconds`` (100) seconds of workload, run as fast
   as the disk allows; 100 subscribers, each event matching 25 of them (200 events/s each);
   418-byte events.

   * PFS: :class:`~gapless.models.durable_store.LogStore` (segment files + SQLite, WAL,
     ``synchronous=FULL``) driven like the constream: one record per event, a sync point
     every second of workload (200 events per subscriber): fsync the PFS, then flush
     latestDelivered, every subscriber's ``released(s, p)`` (each has acknowledged all but
     its last 1000 events: the last 5 s, 4000 events of the pubend) and the PFS metadata in
     one transaction; then chop what that release point allows.
   * Baseline: each subscriber's own log of the full 418-byte events, fsynced every 200 of its
     events, keeping its last 1000 (segments of 1000 events; older segments removed).

   Figures: ``pfs_s`` / ``log_s`` (wall-clock seconds; fsync is wall time) and
   ``*_runqueue_wait_s``, the part of it the process spent runnable but waiting for a core
   (``/proc/self/schedstat``: on a shared 2-core machine with a load of 6-15, most of the PFS
   run's wall time is that wait); ``pfs_time_ratio`` = the log's time over the PFS's, each
   without its run-queue wait (target >= 5; paper "over 5x"), ``pfs_time_ratio_wall`` the
   same from raw wall-clock time (informational); bytes that reached the
   disk for each (``/proc/self/io`` ``write_bytes``: the block layer, the SQLite WAL and
   database included; ``*_wchar`` the bytes passed to ``write``), ``pfs_bytes_ratio``
   (target >= 20; paper 25x); ``record_bytes_per_event`` (bytes of PFS records per event as
   written, framing included) against ``paper_record_bytes_per_event`` = 8 + 16 n with the
   mean n; the file system type; the fsync counts.

   ``pfs_write_us_100`` / ``pfs_write_us_10000``: CPU µs of one PFS write (the pure
   :meth:`~gapless.impl.durable.pfs.PfsStream.write`) with 25 matching subscribers when the
   SHB hosts 100 or 10,000, and their ratio ``pfs_write_cost_ratio_10000`` (informational:
   the PFS's share of the issue's ``constream_cost_ratio_10000``, which needs the SHB roles).

2. **Process crash, for real** (``kills``, default 100): a child process runs the storage of
   an SHB with 4 pubends and 20 subscribers under load (``python -m
   gapless.benchmarks.durable child ROOT``) and is killed with SIGKILL at a random moment.
   The child records, in a one-byte memory-mapped file, which storage operation it is in, so
   the figure ``crash_interrupted`` counts what each kill interrupted. After each kill the
   parent recovers the directory and checks: recovery succeeds; latestDelivered and every
   ``released(s, p)`` are at least what the child had reported durable (it reports only
   after ``apply`` returned); every subscriber's PFS ticks up to latestDelivered are exactly
   the matching timestamps (matching is a pure function of pubend, timestamp and subscriber).
   ``crash_acknowledged_lost`` (target 0) and ``crash_inconsistent`` (target 0).

3. **Constream cost against hosted subscribers** (:func:`constream_cost`): the SHB role's CPU
   per event with 10,000 connected non-catchup subscribers against 100, each event matching
   25 of them, every delivered event acknowledged: ``constream_us_100``,
   ``constream_us_10000`` and ``constream_cost_ratio_10000`` (target <= 1.3: the cost grows
   with the matching subscribers, not with all of them). ``--param constream_events=N``.

Every result carries ``python_ns_per_iteration`` (added by ``gapless bench``).
"""

from __future__ import annotations

import collections
import gc
import json
import mmap
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Any, Final

from gapless.benchmarks._targets import target
from gapless.impl.durable.ct import CheckpointToken
from gapless.impl.durable.pfs import PfsStream
from gapless.impl.durable.shb import (
    Ack,
    Emit,
    ShbConfig,
    Subscribe,
    on_ack,
    on_knowledge,
    on_subscribe,
    shb_start,
)
from gapless.impl.gd.messages import Data, Knowledge
from gapless.models.durable_disk import RealDisk
from gapless.models.durable_store import (
    LogStore,
    Recovered,
    SqliteMeta,
    StorageDriver,
    frame,
)

__all__ = ["TAKES_PARAMS", "constream_cost", "crash_campaign", "run"]

TAKES_PARAMS: Final = True

EVENTS_PER_S: Final = 800
SUBSCRIBERS: Final = 100
MATCHING: Final = 25  # 100 subscribers x 200 events/s / 800 events/s
EVENT_BYTES: Final = 418
KEEP: Final = 1000  # per subscriber: 5 s at 200 events/s
KEEP_PUBEND: Final = KEEP * SUBSCRIBERS // MATCHING  # the same 5 s of the pubend's events
SEGMENT: Final = 1000
TICK_US: Final = 1_000_000 // EVENTS_PER_S


def _io() -> dict[str, int]:
    """This process's I/O counters (zeros where ``/proc/self/io`` is missing)."""
    try:
        with open("/proc/self/io") as f:
            pairs = (line.split(":") for line in f)
            return {k.strip(): int(v) for k, v in pairs}
    except OSError:
        return collections.defaultdict(int)


def _fs_type(path: str) -> str:
    real = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                _dev, mnt, fstype, *_ = line.split()
                if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
                    best, kind = mnt, fstype
    except OSError:
        pass
    return kind


def _workload(seconds: int, seed: int) -> list[tuple[int, tuple[int, ...]]]:
    rng = random.Random(seed)
    subs = range(SUBSCRIBERS)
    return [
        ((i + 1) * TICK_US, tuple(sorted(rng.sample(subs, MATCHING))))
        for i in range(seconds * EVENTS_PER_S)
    ]


def _pfs_run(root: str, events: list[tuple[int, tuple[int, ...]]]) -> dict[str, Any]:
    store, rec = LogStore.open(root, segment_records=4 * SEGMENT)
    driver = StorageDriver(store, rec)
    for s in range(SUBSCRIBERS):
        driver.ack(s, "P0", 0)
    for i, (t, subs) in enumerate(events, start=1):
        driver.deliver("P0", t, subs)
        if i % EVENTS_PER_S == 0:
            keep_from = events[i - KEEP_PUBEND][0] - 1 if i > KEEP_PUBEND else 0
            for s in range(SUBSCRIBERS):  # every subscriber acknowledged all but its last 5 s
                driver.ack(s, "P0", keep_from)
            driver.sync_point()
            driver.chop("P0")
    assert isinstance(store.disk, RealDisk)
    syncs = store.disk.syncs
    record_bytes = store.disk.bytes_written
    store.close()
    return {"syncs": syncs, "record_bytes": record_bytes}


def _log_run(root: str, events: list[tuple[int, tuple[int, ...]]], seed: int) -> dict[str, Any]:
    disk = RealDisk(root)
    payload = random.Random(seed).randbytes(EVENT_BYTES)
    counts = [0] * SUBSCRIBERS
    segs: list[list[int]] = [[] for _ in range(SUBSCRIBERS)]
    for t, subs in events:
        record = frame(t.to_bytes(8, "little") + payload[8:])
        for s in subs:
            n, mine = counts[s], segs[s]
            if n % SEGMENT == 0:
                if mine:  # the full segment is durable before the next one starts
                    disk.sync(f"sub-{s}-{mine[-1]:012d}.log")
                disk.create(f"sub-{s}-{n:012d}.log")
                disk.sync_dir()
                mine.append(n)
                while len(mine) > 1 and mine[1] <= n - KEEP:  # keep the last 1000 events
                    disk.remove(f"sub-{s}-{mine.pop(0):012d}.log")
                    disk.sync_dir()
            name = f"sub-{s}-{mine[-1]:012d}.log"
            disk.append(name, record)
            counts[s] = n + 1
            if (n + 1) % 200 == 0:
                disk.sync(name)
    syncs = disk.syncs
    disk.close()
    return {"syncs": syncs}


def _runqueue_wait_s() -> float:
    """Seconds this process has spent runnable but waiting for a core (Linux schedstat)."""
    try:
        with open("/proc/self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _measure(fn: Any, *args: Any) -> dict[str, Any]:
    io0, w0, t0 = _io(), _runqueue_wait_s(), time.perf_counter()
    out: dict[str, Any] = fn(*args)
    seconds = time.perf_counter() - t0
    wait = _runqueue_wait_s() - w0
    io1 = _io()
    return {
        **out,
        "s": seconds,
        "wait": wait,
        "write_bytes": io1["write_bytes"] - io0["write_bytes"],
        "wchar": io1["wchar"] - io0["wchar"],
    }


def microbenchmark(seconds: int = 100, seed: int = 13) -> dict[str, Any]:
    """The §5.1.2 microbenchmark (see the module doc)."""
    events = _workload(seconds, seed)
    base = tempfile.mkdtemp(prefix="gapless-bench-durable-")
    try:
        pfs = _measure(_pfs_run, os.path.join(base, "pfs"), events)
        log = _measure(_log_run, os.path.join(base, "logs"), events, seed)
        fs = _fs_type(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    n = sum(len(subs) for _t, subs in events) / len(events)
    disk_bytes = pfs["write_bytes"] > 0 and log["write_bytes"] > 0
    pfs_b = pfs["write_bytes"] if disk_bytes else pfs["wchar"]
    log_b = log["write_bytes"] if disk_bytes else log["wchar"]
    return {
        "events": len(events),
        "mean_matching": n,
        "file_system": fs,
        "bytes_measured_at": "block layer (write_bytes)" if disk_bytes else "write calls (wchar)",
        "pfs_s": round(pfs["s"], 3),
        "log_s": round(log["s"], 3),
        "pfs_runqueue_wait_s": round(pfs["wait"], 3),
        "log_runqueue_wait_s": round(log["wait"], 3),
        "pfs_time_ratio_wall": round(log["s"] / pfs["s"], 2),
        "pfs_time_ratio": round((log["s"] - log["wait"]) / (pfs["s"] - pfs["wait"]), 2),
        "pfs_disk_bytes": pfs["write_bytes"],
        "log_disk_bytes": log["write_bytes"],
        "pfs_wchar": pfs["wchar"],
        "log_wchar": log["wchar"],
        "pfs_bytes_ratio": round(log_b / pfs_b, 2),
        "record_bytes_per_event": round(pfs["record_bytes"] / len(events), 1),
        "paper_record_bytes_per_event": 8 + 16 * n,
        "pfs_fsyncs": pfs["syncs"],
        "log_fsyncs": log["syncs"],
    }


def pfs_write_cost(hosted: int, *, matching: int = MATCHING, writes: int = 4000) -> float:
    """CPU µs of one :meth:`PfsStream.write` (best of 3) when the SHB hosts ``hosted``
    subscribers, every one with a record already, and each event matches ``matching``."""
    rng = random.Random(hosted)
    pfs, t = PfsStream.empty("P0"), 0
    for first in range(0, hosted, matching):
        t += 1
        pfs, _ = pfs.write(t, range(first, min(first + matching, hosted)))
    events = [(t + i + 1, rng.sample(range(hosted), matching)) for i in range(writes)]
    best = float("inf")
    for _ in range(3):
        p = pfs
        c0 = time.process_time()
        for ts, subs in events:
            p, _ = p.write(ts, subs)
        best = min(best, time.process_time() - c0)
    return round(best / writes * 1e6, 2)


def _constream_shb(hosted: int, matching: int) -> Any:
    """An SHB on one pubend hosting ``hosted`` connected durable subscribers, none in catchup,
    in groups of ``matching`` with the same equality filter (``g == k``)."""
    state = shb_start(ShbConfig(shb="shb", upstream="phb", pubends=("P0",)))
    groups = hosted // matching
    for i in range(hosted):
        sub = Subscribe(subscriber=f"s{i}", filter=f"g == {i % groups}", connection=i)
        state, _ = on_subscribe(state, sub, 0)
    return state


def _constream_events(state: Any, groups: int, events: int, seed: int) -> tuple[Any, float]:
    """Feed ``events`` events (one upstream message each, each matching one group), each
    followed by the acknowledgement of every subscriber it was delivered to; CPU seconds."""
    rng = random.Random(seed)
    first = state.latest_delivered("P0") + 1
    msgs = [
        Knowledge(
            pubend="P0", data=Data(pubend="P0", tick=t, attributes={"g": rng.randrange(groups)})
        )
        for t in range(first, first + events)
    ]
    gc.collect()  # not the garbage of whatever ran before (the collector stays enabled)
    c0 = time.process_time()
    for msg in msgs:
        state, fx = on_knowledge(state, msg, 0)
        ct = CheckpointToken.of({"P0": msg.data.tick})  # type: ignore[union-attr]
        for e in fx:
            if isinstance(e, Emit) and e.kind == "dur_message":
                state, _ = on_ack(state, Ack(subscriber=e.detail.subscriber, ct=ct), 0)
    return state, time.process_time() - c0


def constream_cost(
    *,
    large: int = 10_000,
    small: int = 100,
    matching: int = MATCHING,
    events: int = 400,
    repeats: int = 3,
) -> dict[str, Any]:
    """The SHB's CPU per event with ``large`` connected non-catchup subscribers against
    ``small``, each event matching ``matching`` of them [issue 13 §6]: the pure role
    (:func:`~gapless.impl.durable.shb.on_knowledge`, then :func:`~gapless.impl.durable.shb.on_ack`
    for each subscriber the event was delivered to, with every storage effect it emits),
    best of ``repeats`` interleaved runs of ``events`` events each, from ``time.process_time``
    (the garbage collector's work included; a ``gc.collect()`` before each run, so that no
    run pays for garbage left by the one before). The timer (``on_tick``: a silence to every
    subscriber that matched nothing, once per period, not per event) is not part of it."""
    states = {n: _constream_shb(n, matching) for n in (small, large)}
    best = {small: float("inf"), large: float("inf")}
    for rep in range(repeats):
        for n in (small, large):
            states[n], s = _constream_events(states[n], n // matching, events, seed=rep)
            best[n] = min(best[n], s / events)
    us_small, us_large = best[small] * 1e6, best[large] * 1e6
    return {
        f"constream_us_{small}": round(us_small, 1),
        f"constream_us_{large}": round(us_large, 1),
        f"constream_cost_ratio_{large}": round(us_large / us_small, 2),
        "constream_events": events,
        "constream_matching": matching,
    }


# ---- process crash: the child, and the parent that kills it -----------------------------

PUBENDS: Final = ("P0", "P1", "P2", "P3")
CRASH_SUBS: Final = 20
PHASES: Final = {
    b"o": "recovery",
    b"a": "append",
    b"s": "segment fsync",
    b"d": "directory fsync",
    b"c": "SQLite commit",
    b"r": "segment removal",
    b"t": "truncation",
    b"p": "between storage calls",
}


def matches(pubend: str, timestamp: int) -> tuple[int, ...]:
    """The subscribers the event at ``timestamp`` of ``pubend`` matches: a pure function, so
    the parent knows what the PFS must hold."""
    return tuple(
        s for s in range(CRASH_SUBS) if zlib.crc32(f"{pubend}:{timestamp}:{s}".encode()) % 4 == 0
    )


class _PhaseDisk(RealDisk):
    """A real disk that writes which operation it is in to a one-byte mapped file."""

    def __init__(self, root: str, phase: mmap.mmap) -> None:
        super().__init__(root)
        self.phase = phase

    def _in(self, code: bytes) -> None:
        self.phase[0:1] = code

    def append(self, name: str, data: bytes) -> None:
        self._in(b"a")
        super().append(name, data)
        self._in(b"p")

    def sync(self, name: str) -> None:
        self._in(b"s")
        super().sync(name)
        self._in(b"p")

    def sync_dir(self) -> None:
        self._in(b"d")
        super().sync_dir()
        self._in(b"p")

    def remove(self, name: str) -> None:
        self._in(b"r")
        super().remove(name)
        self._in(b"p")

    def truncate(self, name: str, size: int) -> None:
        self._in(b"t")
        super().truncate(name, size)
        self._in(b"p")


class _PhaseMeta(SqliteMeta):
    def __init__(self, path: str, phase: mmap.mmap) -> None:
        super().__init__(path)
        self.phase = phase

    def commit(self, puts: Any) -> None:
        self.phase[0:1] = b"c"
        super().commit(puts)
        self.phase[0:1] = b"p"


def child(root: str, seed: int) -> None:
    """Recover ``root``, then deliver, sync, acknowledge and chop until killed; after every
    sync point print the durable latestDelivered and released(s, p) as one JSON line."""
    with open(os.path.join(root, "phase"), "r+b") as f:
        phase = mmap.mmap(f.fileno(), 1)
    phase[0:1] = b"o"
    disk = _PhaseDisk(os.path.join(root, "pfs"), phase)
    store, rec = LogStore.open_on(disk, _PhaseMeta(os.path.join(root, "tables.db"), phase))
    phase[0:1] = b"p"
    driver = StorageDriver(store, rec)
    rng = random.Random(seed)
    t = {p: max(0, rec.tables.latest.get(p, 0)) for p in PUBENDS}  # ticks start at 1
    print("ready", flush=True)
    while True:
        for _ in range(rng.randint(20, 80)):
            p = rng.choice(PUBENDS)
            t[p] += 1
            driver.deliver(p, t[p], matches(p, t[p]))
        for s in range(CRASH_SUBS):
            for p in PUBENDS:
                driver.ack(s, p, t[p] - rng.randint(0, 200))
        driver.sync_point()
        released = {f"{s},{p}": v for (s, p), v in driver.durable_released.items()}
        print(json.dumps({"latest": driver.durable_latest, "released": released}), flush=True)
        for p in PUBENDS:
            driver.chop(p)


def _check(rec: Recovered, acked: dict[str, Any]) -> tuple[int, int]:
    """(acknowledged things lost, inconsistent PFS reads) of a recovered state."""
    lost = sum(rec.tables.latest.get(p, -1) < v for p, v in acked.get("latest", {}).items())
    for key, v in acked.get("released", {}).items():
        s, p = key.split(",")
        lost += rec.tables.released.get((int(s), p), -1) < v
    bad = 0
    for p, pfs in rec.pfs.items():
        latest = rec.tables.latest.get(p, -1)
        lost_upto = min(latest, pfs.chopped_through)
        matched = {t: matches(p, t) for t in range(max(lost_upto + 1, 1), latest + 1)}
        for s in range(CRASH_SUBS):
            r = pfs.read(s, after=-1, upto=latest)
            want = tuple(t for t in matched if t > r.lost_upto and s in matched[t])
            bad += r.q != want or r.known_upto != latest or r.lost_upto != lost_upto
    return lost, bad


def _one_kill(root: str, rng: random.Random, k: int) -> dict[str, Any]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gapless.benchmarks.durable", "child", root, str(k)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if first.strip() != "ready":
        proc.kill()
        proc.wait()
        raise RuntimeError(f"crash child {k} did not start (said {first!r})")
    time.sleep(rng.uniform(0.005, 0.25))
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    acked = json.loads(lines[-1]) if lines else {}
    with open(os.path.join(root, "phase"), "rb") as f:
        interrupted = PHASES.get(f.read(1), "unknown")
    store, rec = LogStore.open(root)
    try:
        lost, bad = _check(rec, acked)
    finally:
        store.close()
    return {
        "interrupted": interrupted,
        "lost": lost,
        "bad": bad,
        "notes": rec.notes,
        "syncs": len(lines),
    }


def crash_campaign(kills: int, seed: int = 0, root: str | None = None) -> dict[str, Any]:
    """Kill the storage child ``kills`` times (see the module doc) and tally the outcome."""
    rng = random.Random(seed)
    own = root is None
    base = root if root is not None else tempfile.mkdtemp(prefix="gapless-crash-")
    with open(os.path.join(base, "phase"), "wb") as f:
        f.write(b"p")
    interrupted: collections.Counter[str] = collections.Counter()
    lost = bad = torn = dropped = syncs = 0
    try:
        for k in range(kills):
            one = _one_kill(base, rng, k)
            interrupted[one["interrupted"]] += 1
            lost += one["lost"]
            bad += one["bad"]
            syncs += one["syncs"]
            torn += sum("torn" in n for n in one["notes"])
            dropped += sum("above latestDelivered" in n for n in one["notes"])
    finally:
        if own:
            shutil.rmtree(base, ignore_errors=True)
    return {
        "crash_kills": kills,
        "crash_interrupted": dict(sorted(interrupted.items())),
        "crash_acknowledged_lost": lost,
        "crash_inconsistent": bad,
        "crash_torn_tails_dropped": torn,
        "crash_recoveries_dropping_records_above_latest": dropped,
        "crash_sync_points_acknowledged": syncs,
    }


def run(**given: str) -> dict[str, Any]:
    """``--param seconds=100 kills=100 seed=13 constream_events=400``."""
    allowed = {"seconds", "kills", "seed", "constream_events"}
    unknown = set(given) - allowed
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    try:
        seconds = int(given.get("seconds", 100))
        kills = int(given.get("kills", 100))
        seed = int(given.get("seed", 13))
        constream_events = int(given.get("constream_events", 400))
    except ValueError:
        raise ValueError(
            f"seconds, kills, seed and constream_events are integers; got {given}"
        ) from None
    constream = constream_cost(events=constream_events)  # first: a fresh process heap
    result = microbenchmark(seconds, seed)
    result["pfs_write_us_100"] = pfs_write_cost(100)
    result["pfs_write_us_10000"] = pfs_write_cost(10_000)
    result["pfs_write_cost_ratio_10000"] = round(
        result["pfs_write_us_10000"] / result["pfs_write_us_100"], 2
    )
    result.update(crash_campaign(kills, seed))
    result.update(constream)
    result["targets"] = {
        "constream_cost_ratio_10000": target(
            result["constream_cost_ratio_10000"], 1.3, at_least=False
        ),
        "pfs_bytes_ratio": target(result["pfs_bytes_ratio"], 20, at_least=True),
        "pfs_time_ratio": target(result["pfs_time_ratio"], 5, at_least=True),
        "crash_acknowledged_lost": target(result["crash_acknowledged_lost"], 0, at_least=False),
        "crash_inconsistent": target(result["crash_inconsistent"], 0, at_least=False),
    }
    return result


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit("usage: python -m gapless.benchmarks.durable child ROOT SEED")
