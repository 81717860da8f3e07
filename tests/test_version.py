"""Issue 17 item 6: one version, in durable_schedule.__version__, agreed on by the package
metadata, pyproject.toml and CHANGELOG.md (docs/compatibility.md)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version

from packaging.version import Version

import durable_schedule
from tests.docs.snippets import ROOT


def test_version__is_written_once_and_pyproject_reads_it():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "durable_schedule.__version__"}


def test_version__the_installed_metadata_agrees():
    assert version("durable-schedule") == durable_schedule.__version__, (
        "the installed metadata is stale: reinstall (pip install -e .)")


def test_version__the_changelog_names_it():
    ours = Version(durable_schedule.__version__)
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.MULTILINE)
    assert headings[0] == "Unreleased"
    released = [Version(h) for h in headings[1:]]
    assert released == sorted(released, reverse=True), "newest release first"
    if ours.is_devrelease or ours.is_prerelease:
        # A development build of the next release: newer than every released one, and the
        # Unreleased section says which version it will be.
        assert ours > released[0]
        unreleased = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
        assert f"`{ours}`" in unreleased
    else:
        assert ours == released[0]
