"""``schedules.declare`` validates at once, like ``create`` (docs/schedules.md "Schedules
declared in code"): what ``create`` refuses fails at import time, not in the deploy's sync."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import work as demo_work

from durable_schedule import schedules
from durable_schedule.errors import DurableError
from durable_schedule.schedules import declared

HOUR = timedelta(hours=1)


def test_declare__jitter_on_a_planned_target_is_refused_like_create():
    # billing.send_invoice has an attempt plan: its slots are acceptance-relative.
    planned = demo_work.send_invoice.target(payload={"n": 1})
    try:
        with pytest.raises(DurableError) as caught:
            schedules.declare("planned-jitter", schedules.Every(HOUR), target=planned,
                              scope="acme", jitter=timedelta(minutes=1))
        assert caught.value.code == "DS149"
        assert ("acme", "planned-jitter") not in {d.key for d in declared.declarations()}
    finally:
        declared.forget("acme", "planned-jitter")
