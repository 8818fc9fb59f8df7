"""The ``targets`` shape shared by every ``gapless bench``."""

from __future__ import annotations

from typing import Any


def target(value: float, wanted: float, *, at_least: bool) -> dict[str, Any]:
    """One target: ``{"value", "target", "met"}``; ``target`` is a string like ``">= 1.7"``."""
    met = value >= wanted if at_least else value <= wanted
    return {"value": value, "target": f"{'>=' if at_least else '<='} {wanted:g}", "met": bool(met)}
