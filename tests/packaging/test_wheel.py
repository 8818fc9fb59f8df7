"""The wheel holds every module under the mapped root folders (NOTES.md: setuptools cannot
discover mapped packages, so a nested package left out of pyproject.toml would silently be
missing from the wheel while still importing in the editable install)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "spec": "gapless.spec",
    "impl": "gapless.impl",
    "invariants": "gapless.invariants",
    "models": "gapless.models",
    "spark_fuzz": "gapless.spark_fuzz",
    "cli": "gapless.cli",
    "benchmarks": "gapless.benchmarks",
}


def _expected_modules() -> set[str]:
    expected = set()
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(ROOT / folder)
            expected.add("gapless/" + package.split(".", 1)[1] + "/" + rel.as_posix())
    return expected


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build_dir = tmp_path_factory.mktemp("build")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        cwd=build_dir,
    )
    wheels = list(out.glob("gapless-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_every_module_is_in_the_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_expected_modules() - names)
    assert not missing, (
        f"modules missing from the wheel (list their packages in pyproject): {missing}"
    )


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    mapping = config["tool"]["setuptools"]["package-dir"]
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            name = package if rel == Path(".") else package + "." + ".".join(rel.parts)
            assert name in listed, f"{name} ({init.parent}) is not in [tool.setuptools] packages"
            assert name in mapping, f"{name} has no [tool.setuptools.package-dir] entry"


def test_typed_marker_and_console_script(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in FOLDERS.values():
        marker = package.replace(".", "/") + "/py.typed"
        assert marker in names, f"{marker} missing from the wheel"
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "gapless = gapless.cli.main:main" in text
