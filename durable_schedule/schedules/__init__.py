"""The schedule API (docs/architecture.md "schedules API"; docs/schedules.md).

``create`` / ``update`` / ``delete`` / ``release_after_recovery`` / ``suspend`` / ``pause`` /
``resume`` / ``trigger`` (run now) change a schedule;
``get`` / ``list`` read. Every call runs in the scoped transaction form and nests in the
caller's ``transaction.atomic()``. ``declare`` records a schedule declared in code and ``sync``
(``manage.py sync_schedules``) applies the declarations. Specs: ``At(when)``, ``After(delay)``,
``Every(interval, anchor=None)``.
"""

from durable_schedule.evaluation.timeline import After, At, Every
from durable_schedule.schedules.api import (
    create,
    delete,
    get,
    release_after_recovery,
    suspend,
    update,
)
from durable_schedule.schedules.api import list_schedules as list
from durable_schedule.schedules.backfill import Backfilled, backfill
from durable_schedule.schedules.declared import SyncReport, declare, sync
from durable_schedule.schedules.info import ScheduleInfo
from durable_schedule.schedules.lifecycle import Triggered, pause, resume, trigger

__all__ = [
    "After",
    "At",
    "Backfilled",
    "Every",
    "ScheduleInfo",
    "backfill",
    "SyncReport",
    "Triggered",
    "create",
    "declare",
    "delete",
    "get",
    "list",
    "pause",
    "release_after_recovery",
    "resume",
    "suspend",
    "sync",
    "trigger",
    "update",
]
