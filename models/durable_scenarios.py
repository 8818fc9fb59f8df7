"""Durable subscriptions' scenarios [DUR §5]."""

from __future__ import annotations

from typing import Final

from gapless.models.registry import Scenario

__all__ = ["SCENARIOS"]

SCENARIOS: Final[dict[str, Scenario]] = {}
