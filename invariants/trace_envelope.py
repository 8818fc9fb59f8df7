"""The envelope every ``gapless-trace`` file shares, whatever its protocol: a header line, one
record per line, an end record; written atomically, read with its truncation detected.

Theory of operation
-------------------
A trace file is UTF-8 JSON Lines:

* line 1, the header ``{"format": "gapless-trace", "version": V, "protocol": NAME, ...}``
  (the rest of the header — ``context``, ``meta`` — is the protocol's);
* one JSON object per record;
* the last line, the end record ``{"end": {"records": N, "sha256": HEX}}``: the number of
  records and the SHA-256 of every line before it (the header included), each line's text
  without its terminator followed by one ``"\\n"``.

A file without the end record was cut short (``head -n``, a full disk) and is refused, never
judged: a prefix of a run reads as lost messages. A count or digest that disagrees, or a line
after the end record, is refused too. This is the part of GD's version-2 format
(:mod:`gapless.invariants.tracefile`) that does not depend on the protocol, lifted so that a
protocol's trace module writes only its header context and its records
(:mod:`gapless.invariants.durable.tracefile` uses it; the DFT, GES and ZeroMQ modules predate
it and keep their own copies of the same rules). A malformed file raises
:class:`~gapless.invariants.tracefile.TraceFileError` naming the line and what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, final

import attrs

from gapless.invariants.tracefile import FORMAT, TraceFileError

__all__ = ["Envelope", "read_envelope", "write_envelope"]


@final
@attrs.frozen(kw_only=True)
class Envelope:
    """A read trace file: its ``header`` object and its records as ``(line number, object)``
    pairs, in file order (the end record checked and left out)."""

    header: Mapping[str, Any]
    rows: tuple[tuple[int, Mapping[str, Any]], ...]


def _line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def write_envelope(
    path: str | os.PathLike[str], header: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]
) -> int:
    """Write ``header`` (which must name ``format``, ``version`` and ``protocol``), then
    ``rows``, then the end record, to ``path`` atomically (a temporary file in the same
    directory, then a rename); the number of records written."""
    for key in ("format", "version", "protocol"):
        if key not in header:
            raise TraceFileError(f"write_envelope: the header needs {key!r}")
    lines = [_line(header), *(_line(r) for r in rows)]
    digest = hashlib.sha256()
    for text in lines:
        digest.update(text.encode("utf-8") + b"\n")
    lines.append(_line({"end": {"records": len(lines) - 1, "sha256": digest.hexdigest()}}))
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or Path("."), prefix=".trace-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(lines) - 2


def _fail(line: int, message: str) -> TraceFileError:
    return TraceFileError(f"line {line}: {message}")


def _object(line: int, text: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(line, f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise _fail(line, f"a JSON object was expected, not {type(obj).__name__}")
    return obj


def read_envelope(
    path: str | os.PathLike[str], *, protocol: str, versions: tuple[int, ...]
) -> Envelope:
    """Read ``path``: a ``gapless-trace`` header naming ``protocol`` and one of ``versions``,
    its records, and an end record that agrees with them (module doc)."""
    p = Path(path)
    if not p.is_file():
        raise TraceFileError(f"{p}: no such trace file")
    texts = [t.rstrip("\r\n") for t in p.read_text(encoding="utf-8").splitlines()]
    if not texts:
        raise TraceFileError(f"{p}: empty file; a trace starts with its header line")
    header = _object(1, texts[0])
    got = (header.get("format"), header.get("version"), header.get("protocol"))
    if got[0] != FORMAT or got[2] != protocol or got[1] not in versions:
        allowed = ", ".join(str(v) for v in versions)
        raise _fail(
            1,
            f"the header says format {got[0]!r}, version {got[1]!r}, protocol {got[2]!r}; "
            f"this reader takes format {FORMAT!r}, protocol {protocol!r}, version {allowed}",
        )
    digest = hashlib.sha256()
    digest.update(texts[0].encode("utf-8") + b"\n")
    rows: list[tuple[int, Mapping[str, Any]]] = []
    for i, text in enumerate(texts[1:], start=2):
        obj = _object(i, text)
        if set(obj) == {"end"}:
            if i != len(texts):
                raise _fail(i + 1, "a line after the end record")
            _check_end(i, obj["end"], len(rows), digest.hexdigest())
            return Envelope(header=header, rows=tuple(rows))
        digest.update(text.encode("utf-8") + b"\n")
        rows.append((i, obj))
    raise TraceFileError(
        f"{p}: incomplete: no end record after {len(rows)} records; the file was cut short "
        "(a truncated trace is refused, not judged)"
    )


def _check_end(line: int, end: Any, records: int, digest: str) -> None:
    if not isinstance(end, dict):
        raise _fail(line, 'the end record must be {"end": {"records": N, "sha256": HEX}}')
    if end.get("records") != records:
        raise _fail(
            line,
            f"the end record says {end.get('records')!r} records, the file holds {records}; "
            "the file was cut or edited",
        )
    if end.get("sha256") != digest:
        raise _fail(
            line,
            "the end record's sha256 does not match the lines before it; the file was edited "
            "or corrupted",
        )
