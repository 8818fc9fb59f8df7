"""The doctests of the campaign modules run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name", ["gapless.spark_fuzz.store", "gapless.spark_fuzz.shrink", "gapless.spark_fuzz.session"]
)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
