"""The ``gapless`` command: a thin layer of argument parsing, output and exit codes.

Subcommands are imported lazily, so ``gapless --help`` stays fast and a command whose extra
is not installed fails with a message naming the extra to install (exit code 2).

Exit codes mean one thing each, in every command (``EXIT_CODES``; ``gapless --help``):

* ``0`` pass — for ``bench``: it ran, whatever its targets say (they are in its JSON);
* ``1`` a violation or a failed pass mark (a law refuted, a counterexample not reproduced);
* ``2`` bad input, with nothing written (a usage error, a malformed file, an unwritable path,
  a missing extra);
* ``3`` an internal error — an exception nobody expected, a Spark job that failed: neither a
  verdict on the protocol nor bad input. One paragraph names what failed and where; the full
  traceback goes to a file (``GAPLESS_TRACEBACK=1`` prints it on the terminal as well);
* ``130`` interrupted (Ctrl-C); ``gapless fuzz`` keeps its finished chunks.
"""

from __future__ import annotations

import datetime
import importlib
import os
import tempfile
import traceback
from pathlib import Path
from typing import Any, Final

import click

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_PASS",
    "cli",
    "internal_error",
    "main",
]

EXIT_PASS: Final = 0
EXIT_FAILED: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_INTERNAL: Final = 3
EXIT_INTERRUPTED: Final = 130

EXIT_CODES: Final[dict[int, str]] = {
    EXIT_PASS: "pass (bench: it ran; its targets are in its output)",
    EXIT_FAILED: "a violation or a failed pass mark",
    EXIT_BAD_INPUT: "bad input; nothing written",
    EXIT_INTERNAL: "internal error (the traceback is written to a file named on stderr)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}

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

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; map what it did not expect onto the exit codes above."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("gapless: interrupted", err=True)
            raise SystemExit(EXIT_INTERRUPTED) from None
        except ModuleNotFoundError as exc:
            top = (exc.name or "").split(".")[0]
            if top not in _EXTRA_OF_MODULE:
                raise SystemExit(internal_error(_command_name(ctx), exc)) from None
            click.echo(missing_extra_message(_command_name(ctx), exc), err=True)
            raise SystemExit(EXIT_BAD_INPUT) from None
        except Exception as exc:
            raise SystemExit(internal_error(_command_name(ctx), exc)) from None


def _command_name(ctx: click.Context) -> str:
    return ctx.invoked_subcommand or "gapless"


def _where(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame: where the exception was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "an unknown place"
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def _first_line(exc: BaseException, limit: int = 400) -> str:
    """The exception's first line — and its second when that names an exception, as a Py4J
    error's does (the first only says which JVM call failed, the second why)."""
    text = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    line = text[0] if text else ""
    if len(text) > 1 and "Exception" in text[1]:
        line = f"{line} {text[1]}"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def internal_error(command: str, exc: BaseException) -> int:
    """Report an unexpected exception as one paragraph, write its traceback to a file, and
    return :data:`EXIT_INTERNAL`. The file goes to ``GAPLESS_CRASH_DIR`` (default: the
    system's temporary directory); ``GAPLESS_TRACEBACK=1`` also prints it on stderr."""
    text = "".join(traceback.format_exception(exc))
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = Path(os.environ.get("GAPLESS_CRASH_DIR") or tempfile.gettempdir())
    path = folder / f"gapless-{command}-{stamp}-{os.getpid()}.traceback.txt"
    try:
        path.write_text(text, encoding="utf-8")
        kept = f"The full traceback was written to {path}"
    except OSError as write_exc:
        kept = f"The traceback could not be written to {path} ({write_exc.strerror}); it follows"
        os.environ["GAPLESS_TRACEBACK"] = "1"
    click.echo(
        f"gapless {command}: internal error: {type(exc).__name__}: {_first_line(exc)} "
        f"(raised at {_where(exc)}). This is not a verdict on the protocol and not a "
        f"problem with your input: it is a failure of gapless or of its environment (Spark, "
        f"Java, the disk). {kept}; set GAPLESS_TRACEBACK=1 to print it here. Exit code "
        f"{EXIT_INTERNAL}.",
        err=True,
    )
    if os.environ.get("GAPLESS_TRACEBACK") == "1":
        click.echo(text, err=True)
    return EXIT_INTERNAL


def _exit_code_help() -> str:
    rows = "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES.items())
    return f"\b\nExit codes (every command):\n{rows}"


@click.group(cls=LazyGroup, epilog=_exit_code_help())
@click.version_option(package_name="gapless")
def cli() -> None:
    """gapless — a formally checked protocol kit for exactly-once, gapless pub/sub."""


def main() -> None:
    """Console entry point (the exit codes are mapped in :meth:`LazyGroup.invoke`)."""
    cli.main(standalone_mode=True)
