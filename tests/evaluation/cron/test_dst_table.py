"""The DST table: fixed-time and wildcard expressions on transition days, with the expected UTC
instants written out by hand from the zones' published rules (docs/schedules.md "DST policy").

Each row: zone, expression, DST policy, the UTC instant to look after, and the exact next UTC
instants. The comment on each row says which local wall times they are.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_schedule.evaluation.cron import Cron


def z(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


ROWS = [
    # ---- Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET
    # 02:30 does not exist on 29 March: shifted to 03:00 CEST, the first valid instant.
    ("Europe/Berlin", "30 2 * * *", "shift", "first", "2026-03-27T12:00Z",
     ["2026-03-28T01:30Z", "2026-03-29T01:00Z", "2026-03-30T00:30Z"]),
    ("Europe/Berlin", "30 2 * * *", "skip", "first", "2026-03-27T12:00Z",
     ["2026-03-28T01:30Z", "2026-03-30T00:30Z", "2026-03-31T00:30Z"]),
    # Interval expression in the gap: 02:00 and 02:30 collapse with 03:00 into one run.
    ("Europe/Berlin", "*/30 * * * *", "shift", "first", "2026-03-28T23:59Z",
     ["2026-03-29T00:00Z", "2026-03-29T00:30Z", "2026-03-29T01:00Z", "2026-03-29T01:30Z"]),
    # 02:30 happens twice on 25 October: once, in the first (CEST) pass ...
    ("Europe/Berlin", "30 2 * * *", "shift", "first", "2026-10-23T12:00Z",
     ["2026-10-24T00:30Z", "2026-10-25T00:30Z", "2026-10-26T01:30Z"]),
    # ... or in the second (CET) pass; never twice.
    ("Europe/Berlin", "30 2 * * *", "shift", "second", "2026-10-23T12:00Z",
     ["2026-10-24T00:30Z", "2026-10-25T01:30Z", "2026-10-26T01:30Z"]),
    # Interval expression: both passes (02:00, 02:30 CEST, then 02:00, 02:30 CET).
    ("Europe/Berlin", "*/30 * * * *", "shift", "first", "2026-10-24T23:00Z",
     ["2026-10-24T23:30Z", "2026-10-25T00:00Z", "2026-10-25T00:30Z", "2026-10-25T01:00Z",
      "2026-10-25T01:30Z", "2026-10-25T02:00Z"]),
    # Cronos's non-interval example "0 0,45 1,2 * * *": 02:00 and 02:45 only in the first pass.
    ("Europe/Berlin", "0 0,45 1,2 * * *", "shift", "first", "2026-10-24T22:30Z",
     ["2026-10-24T23:00Z", "2026-10-24T23:45Z", "2026-10-25T00:00Z", "2026-10-25T00:45Z",
      "2026-10-26T00:00Z"]),
    # ---- America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST
    ("America/New_York", "30 2 * * *", "shift", "first", "2026-03-07T00:00Z",
     ["2026-03-07T07:30Z", "2026-03-08T07:00Z", "2026-03-09T06:30Z"]),
    ("America/New_York", "30 1 * * *", "shift", "first", "2026-10-31T00:00Z",
     ["2026-10-31T05:30Z", "2026-11-01T05:30Z", "2026-11-02T06:30Z"]),
    ("America/New_York", "30 1 * * *", "shift", "second", "2026-10-31T00:00Z",
     ["2026-10-31T05:30Z", "2026-11-01T06:30Z", "2026-11-02T06:30Z"]),
    # "0 * * * *" is an interval expression (hour is *): 01:00 EDT and 01:00 EST both run.
    ("America/New_York", "0 * * * *", "shift", "first", "2026-11-01T03:30Z",
     ["2026-11-01T04:00Z", "2026-11-01T05:00Z", "2026-11-01T06:00Z", "2026-11-01T07:00Z"]),
    # ---- Australia/Lord_Howe (30-minute shift): 2026-04-05 02:00 +11 -> 01:30 +10:30;
    # 2026-10-04 02:00 +10:30 -> 02:30 +11
    ("Australia/Lord_Howe", "45 1 * * *", "shift", "first", "2026-04-03T12:00Z",
     ["2026-04-03T14:45Z", "2026-04-04T14:45Z", "2026-04-05T15:15Z"]),
    ("Australia/Lord_Howe", "45 1 * * *", "shift", "second", "2026-04-03T12:00Z",
     ["2026-04-03T14:45Z", "2026-04-04T15:15Z", "2026-04-05T15:15Z"]),
    ("Australia/Lord_Howe", "*/15 * * * *", "shift", "first", "2026-04-04T14:20Z",
     ["2026-04-04T14:30Z", "2026-04-04T14:45Z", "2026-04-04T15:00Z", "2026-04-04T15:15Z",
      "2026-04-04T15:30Z"]),
    ("Australia/Lord_Howe", "15 2 * * *", "shift", "first", "2026-10-02T12:00Z",
     ["2026-10-02T15:45Z", "2026-10-03T15:30Z", "2026-10-04T15:15Z"]),
    ("Australia/Lord_Howe", "15 2 * * *", "skip", "first", "2026-10-02T12:00Z",
     ["2026-10-02T15:45Z", "2026-10-04T15:15Z"]),
    # ---- America/Santiago: 2026-04-05 00:00 -03 -> 04-04 23:00 -04; 2026-09-06 00:00 -04 ->
    # 01:00 -03 (midnight does not exist on 6 September)
    ("America/Santiago", "0 0 * * *", "shift", "first", "2026-09-04T12:00Z",
     ["2026-09-05T04:00Z", "2026-09-06T04:00Z", "2026-09-07T03:00Z"]),
    ("America/Santiago", "0 0 * * *", "skip", "first", "2026-09-04T12:00Z",
     ["2026-09-05T04:00Z", "2026-09-07T03:00Z"]),
    ("America/Santiago", "30 23 * * *", "shift", "first", "2026-04-03T12:00Z",
     ["2026-04-04T02:30Z", "2026-04-05T02:30Z", "2026-04-06T03:30Z"]),
    ("America/Santiago", "30 23 * * *", "shift", "second", "2026-04-03T12:00Z",
     ["2026-04-04T02:30Z", "2026-04-05T03:30Z", "2026-04-06T03:30Z"]),
    # ---- Antarctica/Troll (2-hour shift): 2026-03-29 01:00 +00 -> 03:00 +02;
    # 2026-10-25 03:00 +02 -> 01:00 +00
    # 01:30 and 02:30 both fall in the 2-hour gap: several collapse into one run at 01:00Z.
    ("Antarctica/Troll", "30 1,2 * * *", "shift", "first", "2026-03-28T00:00Z",
     ["2026-03-28T01:30Z", "2026-03-28T02:30Z", "2026-03-29T01:00Z", "2026-03-29T23:30Z",
      "2026-03-30T00:30Z"]),
    ("Antarctica/Troll", "30 2 * * *", "shift", "first", "2026-10-24T00:00Z",
     ["2026-10-24T00:30Z", "2026-10-25T00:30Z", "2026-10-26T02:30Z"]),
    ("Antarctica/Troll", "30 2 * * *", "shift", "second", "2026-10-24T00:00Z",
     ["2026-10-24T00:30Z", "2026-10-25T02:30Z", "2026-10-26T02:30Z"]),
    ("Antarctica/Troll", "0 * * * *", "shift", "first", "2026-10-24T23:30Z",
     ["2026-10-25T00:00Z", "2026-10-25T01:00Z", "2026-10-25T02:00Z", "2026-10-25T03:00Z"]),
    # ---- Pacific/Apia: 2011-12-30 does not exist (-10 -> +14 at 2011-12-30T10:00Z)
    ("Pacific/Apia", "0 12 * * *", "shift", "first", "2011-12-29T00:00Z",
     ["2011-12-29T22:00Z", "2011-12-30T10:00Z", "2011-12-30T22:00Z"]),
    ("Pacific/Apia", "0 12 * * *", "skip", "first", "2011-12-29T00:00Z",
     ["2011-12-29T22:00Z", "2011-12-30T22:00Z", "2011-12-31T22:00Z"]),
    ("Pacific/Apia", "0 0 30 12 *", "shift", "first", "2011-06-01T00:00Z",
     ["2011-12-30T10:00Z", "2012-12-29T10:00Z"]),
    ("Pacific/Apia", "0 0 30 12 *", "skip", "first", "2011-06-01T00:00Z",
     ["2012-12-29T10:00Z"]),
    # ---- Asia/Kolkata: +05:30 all year, nothing shifts
    ("Asia/Kolkata", "30 2 * * *", "shift", "first", "2026-03-28T00:00Z",
     ["2026-03-28T21:00Z", "2026-03-29T21:00Z", "2026-03-30T21:00Z"]),
    ("Asia/Kolkata", "0 0 * * *", "shift", "second", "2026-10-24T00:00Z",
     ["2026-10-24T18:30Z", "2026-10-25T18:30Z"]),
]


@pytest.mark.parametrize(("tz", "expression", "gap", "fold", "after", "expected"), ROWS,
                         ids=[f"{r[0]}|{r[1]}|{r[2]}|{r[3]}" for r in ROWS])
def test_dst_table__next_instants_are_the_hand_written_utc_instants(
        tz, expression, gap, fold, after, expected):
    ev = Cron(expression, tz, dst_gap=gap, dst_fold=fold).evaluator()
    start = int(z(after).timestamp())
    got = [datetime.fromtimestamp(o.utc, UTC) for o in ev.upcoming(start, len(expected))]
    assert got == [z(e) for e in expected]


@pytest.mark.parametrize(("tz", "expression", "gap", "fold", "after", "expected"), ROWS,
                         ids=[f"{r[0]}|{r[1]}|{r[2]}|{r[3]}" for r in ROWS])
def test_dst_table__backward_search_finds_the_same_instants(
        tz, expression, gap, fold, after, expected):
    ev = Cron(expression, tz, dst_gap=gap, dst_fold=fold).evaluator()
    instants = [int(z(e).timestamp()) for e in expected]
    for previous, current in zip(instants, instants[1:], strict=False):
        assert ev.prev_at_or_before(current - 1).utc == previous
        assert ev.prev_at_or_before(current).utc == current


def test_shifted_occurrence_keeps_its_local_wall_time_and_fold():
    ev = Cron("30 2 * * *", "Europe/Berlin").evaluator()
    shifted = ev.next_after(int(z("2026-03-28T12:00Z").timestamp()))
    assert shifted.shifted is True and shifted.fold == 0
    assert datetime.fromtimestamp(shifted.wall, UTC).replace(tzinfo=None) == \
        datetime(2026, 3, 29, 2, 30)
    second = Cron("30 2 * * *", "Europe/Berlin", dst_fold="second").evaluator()
    repeat = second.next_after(int(z("2026-10-24T12:00Z").timestamp()))
    assert (repeat.fold, repeat.shifted) == (1, False)
    assert datetime.fromtimestamp(repeat.wall, UTC).replace(tzinfo=None) == \
        datetime(2026, 10, 25, 2, 30)
