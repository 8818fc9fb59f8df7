"""Output paths checked before any work: a command that will write a file refuses, with exit
code 2 and nothing written, a path it could not write at the end of its run (issue 12).

Permission bits do not stop root, and ``os.access`` says yes for ``/sys`` and ``/proc``;
so the check creates, then removes, a probe file in the target's directory.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

__all__ = ["require_writable", "unwritable_reason"]


def unwritable_reason(path: str | Path) -> str | None:
    """Why ``path`` cannot be written as a file, or ``None`` if it can. Creates nothing."""
    target = Path(path)
    if target.is_dir():
        return "it is a directory"
    parent = target.resolve().parent
    if not parent.is_dir():
        return f"directory {str(target.parent)!r} does not exist"
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".gapless-probe-")
    except OSError as exc:
        return f"no file can be created in {str(parent)!r} ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(probe)
    if target.exists() and not os.access(target, os.W_OK):
        return "the file exists and is read-only"
    return None


def require_writable(command: str, option: str, path: str | Path | None) -> None:
    """Exit 2 naming ``option`` unless ``path`` (if given) can be written."""
    if path is None:
        return
    reason = unwritable_reason(path)
    if reason is not None:
        click.echo(
            f"gapless {command}: {option} {str(path)!r} cannot be written: {reason}; expected "
            "a file path in an existing writable directory",
            err=True,
        )
        raise SystemExit(2)
