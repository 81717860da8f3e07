"""Every skipped instant is counted, also past the cron window's "at least" limit.

A cron window counts its instants one by one up to ``COUNT_LIMIT`` (10,000) and then reports
"at least"; the decision only needs one vs many. But a skip *records* its count (``missed``,
the history detail), and recorded the limit: an every-minute cron paused for two weeks and
resumed with ``catch_up="skip"`` counted 10,000 of its 20,160 skipped instants."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.evaluation.cron import Cron
from durable_schedule.evaluation.cron.evaluator import COUNT_LIMIT
from tests.schedules.conftest import SCOPE, create, definition, history, run_pass

pytestmark = pytest.mark.django_db
START = datetime(2030, 3, 20, 12, 0, 30, tzinfo=UTC)


def test_resume_skip__counts_every_instant_of_a_long_cron_pause(clock, target):
    clock.set(START)
    # Berlin springs forward on 31 March: the gap's wall minutes 02:00-02:59 shift into the
    # 03:00 instant, which is a match itself, so there is one instant per UTC minute.
    create("m", Cron("* * * * *", "Europe/Berlin"), target)
    schedules.pause(SCOPE, "m", "two weeks")
    clock.set(START + timedelta(days=14))
    info = schedules.resume(SCOPE, "m", catch_up="skip")
    expected = 14 * 24 * 60
    assert expected > COUNT_LIMIT
    assert info.missed == {"paused": expected}
    assert json.loads(definition("m")["missed"]) == {"paused": expected}
    event, _, detail = history("m")[-1]
    assert (event, detail["skipped"]["count"]) == ("resumed", expected)


def test_misfire_skip__counts_every_instant_of_a_long_cron_range(clock, target):
    clock.set(START)
    create("s", Cron("* * * * * *"), target, misfire="skip",
           safety_window=timedelta(days=1))
    run_pass(clock, START + timedelta(hours=5))  # 5 h of seconds, inside the window
    expected = 5 * 3600
    assert schedules.get(SCOPE, "s").missed == {"misfire": expected}
    skipped = [d for e, _, d in history("s") if e == "skipped"]
    assert [(d["count"], d["count_exact"]) for d in skipped] == [(expected, True)]
