"""Issue 17 item 2: every reference points at a file that ships in this repository.

Comments, docstrings and docs cite the rules they implement in docs/protocol/ (see
docs/protocol/conventions.md rule C10). Two checks over every tracked text file:

* no citation of documents that do not ship (the design notes, protocol and style texts the
  project was written from, or anything under ``../``);
* every path-like reference (``docs/work.md``, ``store/sql/0002_security.sql``, a Markdown link)
  names a file or folder that exists, relative to the repository, the package, or the citing
  file's own folder.

Released migration files are never edited (docs/protocol/storage.md "Migrations and
compatibility"), so the ones released before this rule existed are listed below and exempt from
the first check only; any newer file is checked in full.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import django

from tests.docs.snippets import ROOT

RELEASED_BEFORE_THE_RULE = {
    "durable_schedule/migrations/0001_initial.py",
    "durable_schedule/store/sql/0001_tables.sql",
    "durable_schedule/store/sql/0002_security.sql",
    "durable_schedule/store/sql/0003_work_runtime.sql",
    "durable_schedule/store/sql/0004_schedule_protocol.sql",
    "durable_schedule/store/sql/0005_runner.sql",
}
THIS_FILE = "tests/docs/test_references.py"

UNSHIPPED = re.compile(
    r"\.\./shared|\.\./spec|\bDESIGN\b|DESIGN\.md|STYLE\.md|\bSTYLE \d|PERFORMANCE\.md|"
    r"\b[Ss]pec \d{3}\b|\bspec/\d{3}|§")
PATH = re.compile(r"(?<![\w./:-])((?:\.\./|\./)*[\w-]+(?:/[\w.-]+)*/[\w-]+\.(?:md|py|sql|sh|html|"
                  r"txt|toml|ini|yml|yaml|json|png))\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# The user's project in examples (docs/getting-started.md builds mysite with the app reports).
EXAMPLE_PROJECTS = ("myproject/", "myapp/", "mysite/", "reports/")
# Files the docs build generates into the site (scripts/mkdocs_hooks.py), not repository files.
SITE_FILES = {"img/bench/latest.png"}
# Template names resolve against the package's templates and Django admin's own.
TEMPLATE_DIRS = (ROOT / "durable_schedule" / "templates",
                 Path(django.__file__).parent / "contrib" / "admin" / "templates")
SUFFIXES = (".py", ".md", ".sql", ".sh", ".html", ".txt", ".toml", ".ini", ".yml", ".yaml",
            ".cfg", ".json", "Makefile", "run", ".gitignore")


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [f for f in out if f.endswith(SUFFIXES) and (ROOT / f).is_file()]


def _in_repo(path: Path) -> bool:
    """``path`` is a tracked file or a folder holding one (a generated file does not count)."""
    files = _tracked_paths()
    try:
        rel = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return False
    return rel in files or any(f.startswith(rel + "/") for f in files)


@functools.cache
def _tracked_paths() -> frozenset[str]:
    return frozenset(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                                    text=True, check=True).stdout.split())


def _exists(ref: str, citing: str) -> bool:
    ref = ref.split("#", 1)[0].split("?", 1)[0]
    if not ref:
        return True  # an anchor in the same page
    # mkdocs.yml names pages relative to docs/.
    bases = [ROOT, ROOT / "durable_schedule", (ROOT / citing).parent, ROOT / "docs"]
    return (any(_in_repo(base / ref) for base in bases)
            or any((base / ref).is_file() for base in TEMPLATE_DIRS))


def _placeholder(ref: str) -> bool:
    # Patterns and examples, not files: sql/*.sql, 00NN_<topic>.py, a user's myapp/work.py.
    return bool(re.search(r"[*<>{}]|NN|MM|/path/to/", ref)) or ref.startswith(EXAMPLE_PROJECTS)


def test_references__nothing_cites_documents_that_do_not_ship():
    found = []
    for f in tracked():
        if f in RELEASED_BEFORE_THE_RULE or f == THIS_FILE:
            continue
        for n, line in enumerate((ROOT / f).read_text().splitlines(), 1):
            if UNSHIPPED.search(line):
                found.append(f"{f}:{n}: {line.strip()}")
    assert not found, "cite docs/protocol/... instead:\n" + "\n".join(found)


def test_references__every_referenced_file_exists():
    missing = []
    for f in tracked():
        if f == THIS_FILE:
            continue
        text = (ROOT / f).read_text()
        refs = set(PATH.findall(text))
        if f.endswith(".md"):
            refs |= {r for r in LINK.findall(text) if not re.match(r"[a-z]+:", r)}
        for ref in refs:
            if not _placeholder(ref) and ref not in SITE_FILES and not _exists(ref, f):
                missing.append(f"{f}: {ref}")
    assert not missing, "references to files that are not in the repository:\n" + "\n".join(
        sorted(missing))


def test_references__the_checks_catch_what_they_are_for():
    # The two patterns themselves: a citation of an unshipped text and a missing file.
    assert UNSHIPPED.search("the bridge (DESIGN §4.7)")
    assert UNSHIPPED.search("see spec 001 and ../shared/spec/000")
    assert UNSHIPPED.search("(STYLE 4)")
    assert not UNSHIPPED.search("docs/protocol/schedules.md rule S7")
    assert PATH.findall("see docs/nowhere.md and store/sql/0002_security.sql.") == [
        "docs/nowhere.md", "store/sql/0002_security.sql"]
    assert not _exists("docs/nowhere.md", "README.md")
    assert _exists("store/sql/0002_security.sql", "docs/security.md")
