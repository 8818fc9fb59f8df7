"""GES scenarios (filled in below)."""

from __future__ import annotations

from typing import Final

from gapless.models.registry import Scenario

SCENARIOS: Final[dict[str, Scenario]] = {}
