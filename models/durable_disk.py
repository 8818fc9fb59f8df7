"""The disks a durable store writes its PFS log files to: the real one, and a simulated one that
can lose power [DUR §4.2; issue 13 §4].

A process crash (SIGKILL) keeps the kernel's page cache, so it can never show a missing fsync.
:class:`SimDisk` can: it keeps, per file, the content made durable by the last fsync and the
operations since (appends, truncations), and per directory the names made durable by the last
directory fsync. :meth:`SimDisk.power_loss` then keeps, ALICE-style, any prefix of each file's
unsynced operations with the last append possibly torn (a prefix of its bytes) — or none of
them — and undoes unsynced creations and removals at random. The draws come from the caller's
``random.Random``, so a power-loss run replays from its seed.

Both disks have the same small interface (:class:`Disk`): names in one directory, whole-file
reads, appends, truncation, file and directory fsync, removal; both count the bytes written
(``bytes_written``). An fsync that fails raises :class:`OSError`; the store turns it into a
fatal error and never retries it.
"""

from __future__ import annotations

import errno
import os
import random
from typing import Protocol

import attrs

__all__ = ["Disk", "RealDisk", "SimDisk"]


class Disk(Protocol):
    """What the log-file store needs from a directory of files."""

    bytes_written: int

    def where(self, name: str) -> str: ...
    def names(self) -> list[str]: ...
    def read(self, name: str) -> bytes: ...
    def create(self, name: str) -> None: ...
    def append(self, name: str, data: bytes) -> None: ...
    def truncate(self, name: str, size: int) -> None: ...
    def remove(self, name: str) -> None: ...
    def sync(self, name: str) -> None: ...
    def sync_dir(self) -> None: ...
    def close(self) -> None: ...


class RealDisk:
    """Files in the directory ``root`` (created if missing, its parent then fsynced),
    appended with ``os.write`` on
    descriptors kept open, made durable with ``os.fsync`` (the directory too)."""

    def __init__(self, root: str) -> None:
        if not os.path.isdir(root):
            os.makedirs(root)
            parent = os.open(os.path.dirname(os.path.abspath(root)), os.O_RDONLY)
            try:  # the new directory's own entry, in its parent
                os.fsync(parent)
            finally:
                os.close(parent)
        self.root = root
        self.bytes_written = 0
        self.syncs = 0
        self._fds: dict[str, int] = {}

    def _path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def where(self, name: str) -> str:
        """The file's path, for error messages."""
        return self._path(name)

    def _fd(self, name: str) -> int:
        fd = self._fds.get(name)
        if fd is None:
            fd = os.open(self._path(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._fds[name] = fd
        return fd

    def names(self) -> list[str]:
        return sorted(os.listdir(self.root))

    def read(self, name: str) -> bytes:
        with open(self._path(name), "rb") as f:
            return f.read()

    def create(self, name: str) -> None:
        self._fd(name)

    def append(self, name: str, data: bytes) -> None:
        fd = self._fd(name)
        view = memoryview(data)
        while view:
            done = os.write(fd, view)
            view = view[done:]
        self.bytes_written += len(data)

    def truncate(self, name: str, size: int) -> None:
        os.truncate(self._path(name), size)

    def remove(self, name: str) -> None:
        fd = self._fds.pop(name, None)
        if fd is not None:
            os.close(fd)
        os.unlink(self._path(name))

    def sync(self, name: str) -> None:
        self.syncs += 1
        os.fsync(self._fd(name))

    def sync_dir(self) -> None:
        self.syncs += 1
        fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


@attrs.define
class _SimFile:
    durable: bytes = b""
    ops: list[tuple[str, bytes | int]] = attrs.Factory(list)

    def content(self) -> bytes:
        data = self.durable
        for kind, arg in self.ops:
            if kind == "append":
                assert isinstance(arg, bytes)
                data += arg
            else:
                assert isinstance(arg, int)
                data = data[:arg]
        return data


class SimDisk:
    """An in-memory disk that knows what an fsync made durable (see the module doc).
    ``fail_sync_at``: the number of the fsync (1 for the first) that fails with EIO."""

    def __init__(self, *, fail_sync_at: int | None = None) -> None:
        self.bytes_written = 0
        self.syncs = 0
        self.fail_sync_at = fail_sync_at
        self._files: dict[str, _SimFile] = {}
        self._durable_names: set[str] = set()
        self._removed: dict[str, _SimFile] = {}

    def where(self, name: str) -> str:
        """The file's name on this simulated disk, for error messages."""
        return f"sim:{name}"

    def names(self) -> list[str]:
        return sorted(self._files)

    def read(self, name: str) -> bytes:
        if name not in self._files:
            raise FileNotFoundError(errno.ENOENT, "no such file", name)
        return self._files[name].content()

    def create(self, name: str) -> None:
        self._files.setdefault(name, _SimFile())

    def append(self, name: str, data: bytes) -> None:
        self._files.setdefault(name, _SimFile()).ops.append(("append", bytes(data)))
        self.bytes_written += len(data)

    def truncate(self, name: str, size: int) -> None:
        self._files[name].ops.append(("truncate", size))

    def remove(self, name: str) -> None:
        self._removed[name] = self._files.pop(name)

    def _count_sync(self) -> None:
        self.syncs += 1
        if self.fail_sync_at is not None and self.syncs == self.fail_sync_at:
            raise OSError(errno.EIO, "simulated fsync failure")

    def sync(self, name: str) -> None:
        self._count_sync()
        f = self._files[name]
        f.durable, f.ops = f.content(), []

    def sync_dir(self) -> None:
        self._count_sync()
        self._durable_names = set(self._files)
        self._removed.clear()

    def close(self) -> None:
        """Nothing to release (the files stay, as on a real disk)."""

    def power_loss(self, rng: random.Random, *, torn: bool = True) -> None:
        """The machine loses power: every file keeps its durable content and a random prefix
        of its later operations (possibly none), the last kept append torn to a prefix of
        its bytes when ``torn``; unsynced creations vanish and unsynced removals come back,
        each at random."""
        files: dict[str, _SimFile] = {}
        candidates = dict(self._removed)
        candidates.update(self._files)
        for name in sorted(candidates):
            f = candidates[name]
            if name not in self._durable_names and rng.random() < 0.5:
                continue  # a creation whose directory entry never reached the disk
            if name in self._removed and name not in self._files and rng.random() < 0.5:
                continue  # the removal did reach the disk
            keep = rng.randint(0, len(f.ops))
            ops = list(f.ops[:keep])
            if torn and ops and ops[-1][0] == "append" and rng.random() < 0.5:
                data = ops[-1][1]
                assert isinstance(data, bytes)
                ops[-1] = ("append", data[: rng.randint(0, len(data))])
            kept = _SimFile(durable=f.durable, ops=ops)
            files[name] = _SimFile(durable=kept.content())
        self._files = files
        self._durable_names = set(files)
        self._removed = {}
