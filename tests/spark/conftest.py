"""Fixtures for the campaign tests."""

from __future__ import annotations

import os

import pytest
from spark_helpers import HERE


@pytest.fixture
def fake_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the fake backend importable here and in Spark workers started from this process."""
    monkeypatch.syspath_prepend(str(HERE))
    paths = (str(HERE), os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
