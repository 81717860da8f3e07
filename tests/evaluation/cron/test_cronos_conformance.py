"""The evaluator against the Cronos test suite, the reference of grammar ``cronos-v1``
(docs/schedules.md "Cron": its grammar and DST semantics are those of Cronos): 745 rows of
Cronos's own GetNextOccurrence theories (``cronos_cases.txt``: DST transitions in New York,
Amman, Santiago and Lord Howe, and the L, W, #, ? and reversed-range forms) give the same next
instant here.

Two rows differ on purpose (docs/schedules.md "Where Cronos and the Python peers disagree"):
a search that starts exactly at a spring-forward transition. Cronos reads that instant's wall
time (the gap's end) and searches on from it, so the gap's wall times -- which shift to that
very instant -- are lost; the evaluator here defines the instants as a set and returns the
shifted one (tests/evaluation/cron/test_review7a_search_start.py), which is what a cursor one
second before the transition needs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from durable_schedule.evaluation.cron.evaluator import Evaluator
from durable_schedule.evaluation.cron.parser import parse
from durable_schedule.evaluation.cron.zones import load

CASES = Path(__file__).with_name("cronos_cases.txt")
#: Source line -> the instant the set semantics gives instead of Cronos's (see the docstring):
#: Asia/Amman springs forward at 2017-03-30T22:00Z / 2018-03-29T22:00Z (00:00 -> 01:00), and
#: 00:30 on the last day (``L``, ``LW``) lies in that gap.
SET_SEMANTICS = {"L1672": "2017-03-30T22:00:00", "L1674": "2018-03-29T22:00:00"}


def _second(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def _rows() -> list[tuple[str, ...]]:
    lines = CASES.read_text().splitlines()
    return [
        tuple(part.strip() for part in line.split("|"))
        for line in lines
        if line and not line.startswith("#")
    ]


ROWS = _rows()


def test_the_case_file_holds_every_row():
    assert len(ROWS) == 745
    assert {row[5] for row in ROWS} >= set(SET_SEMANTICS)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row[5])
def test_next_occurrence_is_cronos_s(row):
    tz, expression, start, inclusive, expected, line = row
    evaluator = Evaluator(parse(expression, 0), load(tz))
    s = _second(start) + (0 if inclusive == "inclusive" else 1)
    occ = evaluator.next_at_or_after(s)
    want = SET_SEMANTICS.get(line, expected)
    assert (None if occ is None else occ.utc) == (None if want == "none" else _second(want))
