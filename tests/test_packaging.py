"""The wheel a user installs (``pip install ./durable_schedule``, not editable) ships every file
the package needs: pyproject.toml's ``packages.find`` takes only folders with an
``__init__.py``, and ``package-data`` only the files its globs match. A new SQL file, template
or module folder outside them works in this checkout (the tests import from it) and is missing
from every installation; this test fails first. (Checked against a real wheel built from this
tree at the time of writing: the installed file list equalled ``git ls-files durable_schedule``.)
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "durable_schedule"
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _files() -> list[Path]:
    return [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and p.suffix != ".pyc"]


def _matches(relative: str, pattern: str) -> bool:
    # setuptools' package-data globs: ``**`` spans folders.
    return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(
        relative, pattern.replace("**/", ""))


def test_packaging__every_module_folder_is_a_package_the_wheel_takes():
    assert CONFIG["packages"]["find"]["include"] == ["durable_schedule*"]
    for path in _files():
        if path.suffix == ".py":
            for folder in path.relative_to(ROOT).parents[:-1]:
                assert (ROOT / folder / "__init__.py").exists(), (
                    f"{path.relative_to(ROOT)}: {folder} has no __init__.py, so the wheel "
                    "leaves it out")


def test_packaging__every_data_file_matches_package_data():
    patterns = CONFIG["package-data"]["durable_schedule"]
    data = [p.relative_to(PACKAGE).as_posix() for p in _files() if p.suffix != ".py"]
    assert "py.typed" in data and any(d.startswith("store/sql/") for d in data)
    for relative in data:
        assert any(_matches(relative, pattern) for pattern in patterns), (
            f"durable_schedule/{relative} is not in pyproject.toml's package-data: the wheel "
            "leaves it out")
