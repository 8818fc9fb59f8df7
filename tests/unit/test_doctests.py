"""Doctests of the verified core's value types run in CI (as pyrsistent does)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gapless.impl

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(gapless.impl.__path__, prefix="gapless.impl.")
)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"


def test_core_value_types_have_doctests() -> None:
    attempted = 0
    for name in ("gapless.impl.knowledge", "gapless.impl.curiosity"):
        attempted += doctest.testmod(importlib.import_module(name)).attempted
    assert attempted >= 5
