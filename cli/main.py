"""The ``gapless`` command: a thin layer of argument parsing, output and exit codes.

Subcommands are imported lazily, so ``gapless --help`` stays fast and a command whose extra
is not installed fails with a message naming the extra to install (exit code 2).

Exit codes: 0 success; 1 a check failed (a law refuted, a violation found); 2 bad input.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

__all__ = ["cli", "main"]

# name -> (module, attribute, extra that provides its third-party imports)
COMMANDS: dict[str, tuple[str, str, str | None]] = {
    "prove": ("gapless.cli.prove_cmd", "prove", "prove"),
    "bench": ("gapless.cli.bench_cmd", "bench", None),
    "check": ("gapless.cli.check_cmd", "check", None),
    "fuzz": ("gapless.cli.fuzz_cmd", "fuzz", "fuzz"),
    "replay": ("gapless.cli.replay_cmd", "replay", None),
    "report": ("gapless.cli.report_cmd", "report", "report"),
    "zoo": ("gapless.cli.zoo_cmd", "zoo", "fuzz"),
    "simulate": ("gapless.cli.simulate_cmd", "simulate", None),
    "protocols": ("gapless.cli.protocols_cmd", "protocols", None),
}

_EXTRA_OF_MODULE = {
    "z3": "prove",
    "pyspark": "fuzz",
    "pyarrow": "fuzz",
    "matplotlib": "report",
    "hypothesis": "dev",
}


def missing_extra_message(command: str, exc: ModuleNotFoundError) -> str:
    """The message shown when a command's third-party dependency is not installed."""
    top = (exc.name or "").split(".")[0]
    extra = _EXTRA_OF_MODULE.get(top)
    if extra is None:
        return f"gapless {command}: cannot import {exc.name!r}: {exc}"
    return (
        f"gapless {command} needs the '{extra}' extra ({top} is not installed); "
        f"install it with: pip install 'gapless[{extra}]'"
    )


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _extra = COMMANDS[cmd_name]
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("gapless"):
                raise
            message = missing_extra_message(cmd_name, exc)

            @click.command(name=cmd_name, context_settings={"ignore_unknown_options": True})
            @click.argument("args", nargs=-1, type=click.UNPROCESSED)
            def unavailable(args: Any) -> None:
                click.echo(message, err=True)
                raise SystemExit(2)

            return unavailable
        command = getattr(mod, attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup)
@click.version_option(package_name="gapless")
def cli() -> None:
    """gapless — a formally checked protocol kit for exactly-once, gapless pub/sub."""


def main() -> None:
    """Console entry point: a third-party module missing at run time names its extra (exit 2)."""
    import sys

    try:
        cli.main(standalone_mode=True)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in _EXTRA_OF_MODULE:
            raise
        command = next((a for a in sys.argv[1:] if not a.startswith("-")), "gapless")
        click.echo(missing_extra_message(command, exc), err=True)
        raise SystemExit(2) from None
