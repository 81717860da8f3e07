"""The schedule API (docs/architecture.md "schedules API"; docs/schedules.md).

``create`` / ``update`` / ``delete`` / ``release_after_recovery`` / ``suspend`` / ``pause`` /
``resume`` / ``trigger`` (run now) / ``backfill`` change a schedule; ``get`` / ``list`` read;
``occurrences`` / ``produced_work`` read a schedule's past (paged). Every call runs in the
scoped transaction form and nests in the caller's ``transaction.atomic()``. ``declare`` records
a schedule declared in code and ``sync`` (``manage.py sync_schedules``) applies the
declarations. Specs: ``At(when)``, ``After(delay)``,
``Every(interval, anchor=None)``, ``Cron(expression, tz="UTC", *, dst_gap="shift",
dst_fold="first")``. ``next_instants(spec, after, count=10, ...)`` previews any spec (pure).
"""

from durable_schedule.evaluation.cron.spec import Cron
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
from durable_schedule.schedules.occurrences import OccurrenceInfo, occurrences, produced_work
from durable_schedule.schedules.preview import next_instants

__all__ = [
    "After",
    "At",
    "Backfilled",
    "Cron",
    "Every",
    "OccurrenceInfo",
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
    "next_instants",
    "occurrences",
    "produced_work",
    "release_after_recovery",
    "resume",
    "suspend",
    "sync",
    "trigger",
    "update",
]
