"""Issue 17 item 5: the documentation site's configuration (the strict build itself runs in the
tox environment "docs"; these checks need no MkDocs)."""

from __future__ import annotations

import configparser
import re
import tomllib

from tests.docs.snippets import ROOT

READER_PATH = ["Getting started", "Concepts", "Schedules", "Work", "Tasks", "Operations",
               "Security", "Reliability", "Benchmarks", "API", "Diagnostics"]


def nav_sections() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text.split("\nnav:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  - ([^:]+):", nav, re.MULTILINE)


def test_site__the_nav_follows_the_readers_path():
    sections = nav_sections()
    expected = [s for s in READER_PATH if s != "Tasks" or (ROOT / "docs" / "tasks.md").exists()]
    # Whatever else the nav holds (Development) comes after the reader's path.
    assert sections[:len(expected)] == expected, (
        f"mkdocs.yml's top-level nav must start with {expected} (a docs/tasks.md page is the "
        f"section 'Tasks' between 'Work' and 'Operations'); it is {sections}")


def test_site__tox_builds_it_with_the_docs_extra_and_make_test_runs_it():
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    assert "docs" in tox["tox"]["env_list"].split()
    env = tox["testenv:docs"]
    assert "--strict" in env["commands"]
    deps = [d.strip() for d in env["deps"].strip().splitlines()]
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["docs"]
    assert deps == extra, "keep tox.ini's docs deps in step with pyproject's docs extra"


def test_site__every_docs_page_is_in_the_nav():
    text = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    missing = [p for p in pages if not re.search(rf"(: |- ){re.escape(p)}$", text, re.MULTILINE)]
    assert not missing, missing
