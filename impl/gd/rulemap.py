"""The map of GD's rules to code, rendered from the dispatch table [GD §2-4].

Theory of operation
-------------------
``spec/gd.md`` maps the paper to the code. Its tables are not kept by hand: :func:`render`
builds them from the rooms (one module per role or paper section, each naming the sections it
follows in its docstring), from the dispatch tables of :mod:`gapless.impl.gd.node`, whose
every handler names its paper sections as ``[GD §x]`` tags, and from ``GDConfig``'s
defaults. :func:`sections` reads those
tags. A test renders the map and compares it with the committed file, so the page cannot
drift from the code; ``python benchmarks/gd_rule_map.py --write`` rewrites it. Pure: this
module returns text and touches no file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

import attrs

from gapless.impl.gd import (
    best_effort,
    broker,
    build,
    forwarding,
    istream,
    node,
    pubend,
    routing,
    state,
    step,
    subend,
)
from gapless.impl.gd.config import GDConfig

__all__ = ["BEGIN", "END", "ROOMS", "handlers", "render", "sections"]

#: The rooms of the GD roles, in reading order.
ROOMS: Final[tuple[ModuleType, ...]] = (
    node,
    build,
    state,
    step,
    routing,
    istream,
    forwarding,
    pubend,
    broker,
    subend,
    best_effort,
)
BEGIN: Final = "<!-- BEGIN GENERATED: python benchmarks/gd_rule_map.py --write -->"
END: Final = "<!-- END GENERATED -->"

_TAG = re.compile(r"\[GD ([^\]]*)\]")
_SECTION = re.compile(r"§\d+(?:\.\d+)*(?:-\d+)?")


def sections(doc: str | None) -> tuple[str, ...]:
    """The paper sections a docstring's ``[GD §x]`` tags name, in order of first mention."""
    found: list[str] = []
    for tag in _TAG.findall(doc or ""):
        for sec in _SECTION.findall(tag):
            if sec not in found:
                found.append(sec)
    return tuple(found)


def _order(sec: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.split(r"[.\-]", sec[1:]))


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"


def handlers() -> list[tuple[type, str, Callable[..., Any]]]:
    """Every ``(role, input, handler)`` of the dispatch tables, role by role, in table order;
    ``input`` reads ``Publish``, ``Receive(Nack)`` or ``TimerFired(gct)``."""
    rows: list[tuple[type, str, Callable[..., Any]]] = []
    for role in state.ROLE_TYPES:
        rows += [(role, t.__name__, h) for (r, t), h in node.ON_INPUT.items() if r is role]
        rows += [
            (role, f"Receive({t.__name__})", h)
            for (r, t), h in node.ON_MESSAGE.items()
            if r is role
        ]
        rows += [(role, f"TimerFired({k})", h) for (r, k), h in node.ON_TIMER.items() if r is role]
    return rows


def _title(module: ModuleType) -> str:
    doc = module.__doc__ or ""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def _rooms() -> list[str]:
    lines = ["| module | what | paper |", "|---|---|---|"]
    for m in ROOMS:
        path = "impl/gd/" + m.__name__.rsplit(".", 1)[-1] + ".py"
        secs = sorted(sections(m.__doc__), key=_order)
        lines.append(f"| `{path}` | {_title(m)} | {', '.join(secs)} |")
    return lines


def _dispatch() -> list[str]:
    lines = ["| role | input | rule | paper |", "|---|---|---|---|"]
    for role, what, h in handlers():
        title = f"{role.__name__} ({role.TITLE})"  # type: ignore[attr-defined]
        lines.append(f"| {title} | `{what}` | `{_name(h)}` | {', '.join(sections(h.__doc__))} |")
    return lines


def _by_section() -> list[str]:
    where: dict[str, list[str]] = {}
    for _role, _what, h in handlers():
        for sec in sections(h.__doc__):
            entry = f"`{_name(h)}`"
            if entry not in where.setdefault(sec, []):
                where[sec].append(entry)
    lines = ["| paper | rules |", "|---|---|"]
    for sec in sorted(where, key=_order):
        lines.append(f"| {sec} | {', '.join(where[sec])} |")
    return lines


def _constants() -> list[str]:
    lines = ["| `GDConfig` field | default |", "|---|---|"]
    for field in attrs.fields(GDConfig):
        value = field.default
        shown = "∞ (None)" if value is None else f"{value:_}" if type(value) is int else value
        unit = " µs" if field.name.endswith("_us") and value is not None else ""
        lines.append(f"| `{field.name}` | {shown}{unit} |")
    return lines


def render() -> str:
    """The generated part of ``spec/gd.md``, between :data:`BEGIN` and :data:`END`."""
    parts = [
        BEGIN,
        "",
        "### Rooms",
        "",
        *_rooms(),
        "",
        "### Dispatch: (role, input) -> rule",
        "",
        "Any other input is rejected (a `Rejected` effect naming the role, the input and what",
        "the role accepts; `Publish`, `Connect` and `Disconnect` raise `ProtocolMisuse`).",
        "",
        *_dispatch(),
        "",
        "### Rules by paper section",
        "",
        *_by_section(),
        "",
        "### Constants",
        "",
        *_constants(),
        "",
        END,
    ]
    return "\n".join(parts) + "\n"
