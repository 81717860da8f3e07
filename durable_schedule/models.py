"""Django's entry point for the app's models; they live in the store (docs/architecture.md)."""

from durable_schedule.store.models import (  # noqa: F401
    Occurrence,
    ScheduleDefinition,
    ScheduleDispatch,
    ScheduleGeneration,
    ScheduleHistory,
    Scope,
    Store,
    Work,
    WorkDispatch,
    WorkHistory,
    WorkPermit,
    WorkQuarantine,
)
