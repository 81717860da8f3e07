"""Loads the versioned SQL files shipped in ``store/sql`` (procrastinate's layout,
docs/protocol/conventions.md rule C2).

Migration files name the SQL file they run; a released SQL file is never edited, so a migration
replays the same bytes forever. Named queries inside a file start with ``-- name: key --``.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

_NAME = re.compile(r"^-- name: (?P<name>[a-z0-9_ ]+?) --.*$", re.MULTILINE)


def read(filename: str) -> str:
    """The full text of one SQL file of the package."""
    return files("durable_schedule.store").joinpath("sql", filename).read_text(encoding="utf-8")


def available() -> list[str]:
    """Every SQL file shipped in the package, sorted."""
    folder = files("durable_schedule.store").joinpath("sql")
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))


@cache
def queries(filename: str) -> dict[str, str]:
    """The named blocks of a query file: ``{name: sql}`` (text up to the next name header)."""
    text = read(filename)
    marks = list(_NAME.finditer(text))
    out: dict[str, str] = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() : end].strip()
        out[mark.group("name").strip().replace(" ", "_")] = body
    return out


def query(filename: str, name: str) -> str:
    """One named query of a query file; KeyError names the file when it is missing."""
    try:
        return queries(filename)[name]
    except KeyError:
        raise KeyError(f"no query named {name!r} in store/sql/{filename}") from None
