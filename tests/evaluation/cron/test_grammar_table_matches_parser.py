"""docs/schedules.md's cron grammar table and the parser agree: every special character a field's
row lists is accepted in that field, and every one it does not list is refused there (DS125).

``?`` is Cronos's "any value" in every field, not only the two day fields: its parser reads
``?`` exactly as ``*`` in the second, minute, hour, day-of-month, month and day-of-week fields
(step included), and its own test theories run ``? ? ? ? ? ?`` and ``? ? ? ? ?`` as every
second / every minute (the conformance rows from its lines 1107 and 2307 in
``cronos_cases.txt``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from durable_schedule.errors import InvalidCronExpression
from durable_schedule.evaluation.cron import parse

DOCS = Path(__file__).resolve().parents[3] / "docs" / "schedules.md"
FIELDS = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
# One token per special character, written as that field would take it if it took it at all.
TOKENS = {"*": "*", ",": "1,2", "-": "1-2", "/": "*/2", "H": "H", "?": "?", "W": "5W",
          "#": "5#2"}


def _token(char: str, field: str) -> str:
    if char == "L":
        return "L" if field == "day-of-month" else "5L"
    return TOKENS[char]


def _table() -> dict[str, set[str]]:
    """The special characters each field's row of the grammar table lists."""
    out: dict[str, set[str]] = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (second|minute|hour|day-of-month|month|day-of-week)\b[^|]* \|"
                     r"[^|]*\| `([^`]*)` \|$", line)
        if m:
            out[m.group(1)] = set(m.group(2).split())
    return out


def _accepted(char: str, field: str) -> bool:
    parts = ["0", "0", "0", "*", "*", "*"]
    parts[FIELDS.index(field)] = _token(char, field)
    try:
        parse(" ".join(parts))
    except InvalidCronExpression:
        return False
    return True


def test_the_table_has_a_row_for_every_field():
    assert set(_table()) == set(FIELDS)


@pytest.mark.parametrize("field", FIELDS)
def test_the_table_lists_exactly_the_special_characters_the_parser_accepts(field):
    listed = _table()[field]
    accepted = {c for c in (*TOKENS, "L") if _accepted(c, field)}
    assert listed == accepted


@pytest.mark.parametrize("position", range(6))
def test_question_mark_means_star_in_every_field_step_included(position):
    for plain, question in (("*", "?"), ("*/2", "?/2")):
        star = ["*"] * 6
        star[position] = plain
        mark = ["*"] * 6
        mark[position] = question
        a, b = parse(" ".join(star)), parse(" ".join(mark))
        for attr in ("seconds", "minutes", "hours", "days", "months", "weekdays", "interval",
                     "dom_any", "dow_any"):
            assert getattr(a, attr) == getattr(b, attr), (plain, question, attr)
