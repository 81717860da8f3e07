"""Schedules the demo app declares in code (docs/schedules.md "Schedules declared in code");
``manage.py sync_schedules`` creates them, and a deploy that changes nothing changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from demo.work import touch
from durable_schedule import schedules

schedules.declare(
    "demo-hourly-touch",
    schedules.Every(timedelta(hours=1), anchor=datetime(2030, 1, 1, tzinfo=UTC)),
    target=touch.target(payload={"declared": True}),
    scope="demo",
)
