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


#: One test per zone (all its rows in one test, every mismatch reported at once).
ZONES = sorted({row[0] for row in ROWS})


def _mismatch(row: tuple[str, ...]) -> str | None:
    """None when the evaluator gives the row's instant, else a line naming the row and both."""
    tz, expression, start, inclusive, expected, line = row
    want = SET_SEMANTICS.get(line, expected)
    want_s = None if want == "none" else _second(want)
    try:
        evaluator = Evaluator(parse(expression, 0), load(tz))
        s = _second(start) + (0 if inclusive == "inclusive" else 1)
        occ = evaluator.next_at_or_after(s)
    except Exception as exc:  # reported with the row, like every other mismatch
        return f"{line}: {tz} {expression!r} from {start} ({inclusive}) raised {exc!r}"
    got = None if occ is None else occ.utc
    if got == want_s:
        return None
    shown = "none" if got is None else datetime.fromtimestamp(got, UTC).isoformat()[:19]
    return f"{line}: {tz} {expression!r} from {start} ({inclusive}): got {shown}, want {want}"


@pytest.mark.parametrize("tz", ZONES)
def test_next_occurrence_is_cronos_s(tz):
    """Every row of the zone gives Cronos's next instant (or the set semantics' one); all the
    rows are checked and every mismatch is reported at once."""
    rows = [row for row in ROWS if row[0] == tz]
    assert rows
    mismatches = [m for m in map(_mismatch, rows) if m is not None]
    report = "\n".join(mismatches)
    assert not mismatches, f"{len(mismatches)} of {len(rows)} rows differ:\n{report}"
