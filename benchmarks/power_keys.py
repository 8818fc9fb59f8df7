"""What a verdict of ``gapless bench power`` depends on: the code a judge loads (issue 18 §1).

Theory of operation
-------------------
A mutant's verdict is a fact about the code that produced it. ``gapless bench power``
stores verdicts so that a 60-mutant measure can span interruptions and sessions; a stored
verdict may be reused only while every file that could change it is unchanged. Hashing the
whole repository would be sound but useless (every commit anywhere discards hours of
judging); hashing a hand-picked list of folders, as the bench did before, is neither sound
(``cli/fuzz_cmd.py`` decides ``gapless fuzz``'s exit code and was not in it; the modules of
``impl/`` other than the mutated one were in no key at all) nor narrow (a change to a Z3
proof or the zoo's campaign discarded every campaign verdict).

The key here is the code a judge can *execute*:

1. **Import closure.** Python runs a gapless source file only when something imports it.
   Every import of a gapless module in the code base is an ``import`` or ``from ... import``
   statement (anywhere in a file: module level, inside a function, under ``TYPE_CHECKING``)
   or a string literal naming the module that is handed to ``importlib`` (the Spark
   daemon's preloads, a backend reference ``"module:factory"``, the CLI's command table).
   :func:`closure` follows both, from given roots, to a fixed point, with every enclosing
   package's ``__init__``. It over-approximates what runs: a statement in a function never
   called still counts, as does a string that only looks like a module name — so a file
   outside the closure cannot run, and cannot change a verdict. What it could miss (a module
   name computed at run time) does not occur in the code base; the unit test checks the
   closure against the modules a real campaign loads.
2. **The campaign verdict** (:func:`campaign_key`): the closure of ``gapless fuzz`` — the CLI
   entry (its own text, not its command table: ``gapless fuzz`` imports only the ``fuzz``
   command's module), ``gapless.cli.fuzz_cmd`` and the module Spark forks its Python
   workers from — minus ``gapless.impl`` (the judged code, see 4); the demo's TOML; every
   data file of the closure's packages (the log4j configuration...); the Python version and
   every installed distribution's version (pyspark, pyarrow, hypothesis...).
3. **The tests verdict** (:func:`tests_key`): every Python file of the fast tiers (tests and
   their helpers) and ``tests/conftest.py``, the closure of all of them minus
   ``gapless.impl``, every non-Python file of those folders, ``tests/``, ``campaigns/`` and
   the closure's packages (tests read campaign files and fixtures), ``pyproject.toml`` (pytest's
   configuration) and the versions as in 2. Tests run the CLI as a subprocess, so the
   CLI's command table *is* followed here.
4. **The judged code** (:func:`impl_key`): every file of ``impl/`` as the repository holds it.
   A mutant is staged as a copy of the whole of ``impl/`` with one module changed, so its
   verdicts depend on the other ``impl`` modules too; the mutant's own change is in the
   mutant's digest. Both stored verdicts carry this key.

So a change to the guided scheduler's planning still discards the campaign verdicts (the
campaign runner imports ``guided``), but a new Z3 proof, a zoo test, a plot or another
benchmark does not; a test added to the fast tiers discards the tests verdicts only.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Final

__all__ = [
    "CAMPAIGN_ROOTS",
    "campaign_key",
    "closure",
    "impl_key",
    "module_file",
    "tests_key",
]

#: Where ``gapless fuzz`` starts: the command it dispatches to, and the module Spark forks
#: its Python workers from (``spark.python.daemon.module``).
CAMPAIGN_ROOTS: Final = ("gapless.cli.fuzz_cmd", "gapless.spark_fuzz.spark_daemon")
#: Read but not followed: the CLI entry imports only the module of the command it runs.
_ENTRY: Final = ("gapless.cli", "gapless.cli.main")
_JUDGED: Final = "gapless.impl"
_NOT_DATA: Final = (".py", ".pyc", ".md")


def module_file(root: Path, name: str) -> Path | None:
    """The source file of gapless module ``name`` under ``root`` (``gapless.models.world`` ->
    ``models/world.py``, a package -> its ``__init__.py``), or None when there is none."""
    parts = name.split(".")
    if parts[0] != "gapless" or len(parts) < 2:
        return None
    base = root.joinpath(*parts[1:])
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def _package_of(root: Path, name: str) -> str:
    f = module_file(root, name)
    if f is not None and f.name == "__init__.py":
        return name
    return name.rpartition(".")[0]


def _named(root: Path, name: str, text: str, follow_strings: bool) -> set[str]:
    """The gapless modules under ``root`` that ``text`` (the source of module ``name``) imports
    or names."""
    return {
        m
        for m in _candidates(name, _package_of(root, name), text, follow_strings)
        if module_file(root, m) is not None
    }


@functools.lru_cache(maxsize=4096)
def _candidates(name: str, package: str, text: str, follow_strings: bool) -> frozenset[str]:
    """Every dotted name ``text`` imports (a name imported from a module may be a submodule)
    and, with ``follow_strings``, every string literal shaped like a gapless module name
    (``"gapless.a.b"`` or ``"gapless.a.b:attr"``). Cached: keys are computed often."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
        elif follow_strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            text_ = node.value.partition(":")[0]
            if text_.startswith("gapless.") and text_.replace(".", "").replace("_", "").isalnum():
                found.add(text_)
    return frozenset(found)


def closure(root: Path, roots: Iterable[str], read_only: Iterable[str] = ()) -> set[str]:
    """Every gapless module under ``root`` that ``roots`` can import (see the module doc),
    with their packages; ``read_only`` modules are included but not followed."""
    todo = [m for m in roots if module_file(root, m) is not None]
    seen: set[str] = set(read_only) | set(todo)
    for m in read_only:
        seen.update(_parents(m))
    while todo:
        name = todo.pop()
        f = module_file(root, name)
        assert f is not None
        for m in _named(root, name, f.read_text(), True):
            for n in (*_parents(m), m):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
    for m in list(seen):
        seen.update(_parents(m))
    return {m for m in seen if module_file(root, m) is not None}


@functools.lru_cache(maxsize=1)
def _versions() -> bytes:
    dists = sorted(
        f"{d.metadata['Name']}=={d.version}"
        for d in metadata.distributions()
        if d.metadata["Name"] and d.metadata["Name"].lower() != "gapless"
    )
    return f"python {sys.version_info[:3]}\n".encode() + "\n".join(dists).encode()


def _data_files(root: Path, dirs: Iterable[Path]) -> list[Path]:
    out: set[Path] = set()
    for d in dirs:
        for f in d.iterdir() if d.is_dir() else ():
            if f.is_file() and not f.name.endswith(_NOT_DATA) and f.name != "py.typed":
                out.add(f)
    return sorted(out)


def _digest(root: Path, files: Iterable[Path], extra: bytes = b"") -> str:
    h = hashlib.sha256(extra)
    for f in sorted(set(files)):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _outside_judged(root: Path, modules: Iterable[str]) -> list[Path]:
    files = []
    for m in modules:
        if m == _JUDGED or m.startswith(_JUDGED + "."):
            continue
        f = module_file(root, m)
        assert f is not None
        files.append(f)
    return files


def campaign_files(root: Path) -> list[Path]:
    """The files :func:`campaign_key` hashes (besides the versions)."""
    mods = closure(root, CAMPAIGN_ROOTS, _ENTRY)
    code = _outside_judged(root, mods)
    data = _data_files(root, {f.parent for f in code})
    return sorted({*code, *data, root / "campaigns" / "demo.toml"})


def campaign_key(root: Path) -> str:
    """16 hex digits: a stored campaign verdict holds while this is unchanged."""
    return _digest(root, campaign_files(root), _versions())


def tests_files(root: Path, tiers: Iterable[str]) -> list[Path]:
    """The files :func:`tests_key` hashes (besides the versions)."""
    tiers = list(tiers)
    tests = sorted(
        {root / "tests" / "conftest.py"} | {f for t in tiers for f in (root / t).rglob("*.py")}
    )
    roots: set[str] = set()
    for f in tests:
        roots |= _named(root, "tests." + f.stem, f.read_text(), True)
    mods = closure(root, sorted(roots))
    code = _outside_judged(root, mods)
    data_dirs = {f.parent for f in code}
    data_dirs |= {d for t in tiers for d in (root / t).rglob("*") if d.is_dir()}
    data_dirs |= {root / "tests", root / "campaigns", *(root / t for t in tiers)}
    data = _data_files(root, data_dirs)
    return sorted({*tests, *code, *data, root / "pyproject.toml"})


def tests_key(root: Path, tiers: Iterable[str]) -> str:
    """16 hex digits: a stored tests verdict holds while this is unchanged."""
    return _digest(root, tests_files(root, tiers), _versions())


def impl_key(root: Path) -> str:
    """16 hex digits over every file of ``impl/`` (the unmutated judged code)."""
    files = [f for f in (root / "impl").rglob("*") if f.is_file() and "__pycache__" not in f.parts]
    return _digest(root, files)
