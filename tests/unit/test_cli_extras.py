"""A command whose extra is missing says which extra to install, with exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gapless.cli.main import missing_extra_message

BLOCK = (
    "import sys; sys.modules[{mod!r}] = None; "
    "sys.argv = ['gapless'] + {args!r}; "
    "from gapless.cli.main import main; main()"
)


@pytest.mark.parametrize(("module", "extra"), [("z3", "prove"), ("pyspark", "fuzz")])
def test_message_names_the_extra(module: str, extra: str) -> None:
    exc = ModuleNotFoundError(f"No module named {module!r}", name=module)
    message = missing_extra_message("x", exc)
    assert f"gapless[{extra}]" in message
    assert module in message


def test_prove_without_z3_exits_2_naming_the_extra() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK.format(mod="z3", args=["prove"])],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "gapless[prove]" in proc.stderr
