"""Read-only admin pages of the schedule side: definitions (with their timeline), generations,
occurrences, dispatch rows, history and scopes.

The definition page's operations (suspend, release after recovery, delete) live in
:mod:`durable_schedule.admin.actions`; the change list's actions only select rows for them.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import OuterRef, Subquery

from durable_schedule.admin import actions, scoping, timeline
from durable_schedule.admin.base import ReadOnlyScopedAdmin, RoutedReadOnlyAdmin, admin_link
from durable_schedule.admin.filters import DistinctValuesFilter, choices_filter
from durable_schedule.store.models import (
    Occurrence,
    ScheduleDefinition,
    ScheduleDispatch,
    ScheduleGeneration,
    ScheduleHistory,
    Scope,
    Work,
)

SCHEDULE_STATES = ("active", "suspended", "paused", "deleted", "completed")
OCCURRENCE_STATES = ("pending", "claimed", "materialized", "skipped", "superseded", "canceled",
                     "suspended")
OCCURRENCE_KINDS = ("nominal", "recovery", "coalesced", "manual")
#: The spec kinds of a generation (0007_cron_schedules.sql's CHECK constraint).
GENERATION_KINDS = ("at", "after", "every", "cron")


def _active_generation(field: str) -> Subquery:
    return Subquery(
        scoping.store_rows(ScheduleGeneration).filter(
            scope_id=OuterRef("scope_id"),
            schedule_id=OuterRef("schedule_id"),
            generation=OuterRef("active_generation"),
        ).values(field)[:1]
    )


def _dispatch(field: str) -> Subquery:
    routing = scoping.store_rows(Scope).filter(
        scope_id=OuterRef(OuterRef("scope_id"))).values("routing_id")
    return Subquery(
        scoping.store_rows(ScheduleDispatch).filter(
            scope_routing_id=Subquery(routing[:1]), schedule_id=OuterRef("schedule_id")
        ).values(field)[:1]
    )


class SuspensionReasonFilter(DistinctValuesFilter):
    title = "suspension reason"
    parameter_name = "suspension_reason"
    field = "suspension_reason"


@admin.register(ScheduleDefinition)
class ScheduleDefinitionAdmin(actions.ScheduleOperations, ReadOnlyScopedAdmin):
    list_display = ("scope_id", "schedule_id", "spec", "state", "next_due", "lateness",
                    "suspension_reason")
    list_display_links = ("schedule_id",)
    list_filter = (choices_filter("state", "state", SCHEDULE_STATES), SuspensionReasonFilter)
    search_fields = ("=scope_id", "schedule_id")
    search_help_text = "Exact scope id, or part of a schedule id."
    ordering = ("scope_id", "schedule_id")
    fieldsets = (
        (None, {"fields": ("scope_id", "schedule_id", "state", "revision", "active_generation")}),
        ("Cursor and fences", {"fields": ("cursor_utc", "runtime_epoch", "scope_generation")}),
        ("Suspension", {"fields": ("suspension_reason", "suspension_evidence", "suspended_at")}),
        ("Pause", {"fields": ("paused_at", "paused_by", "pause_note", "resumed_at")}),
        ("Missed instants", {"fields": ("missed",)}),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            gen_kind=_active_generation("kind"),
            gen_spec=_active_generation("spec"),
            gen_evaluator=_active_generation("evaluator_version"),
            gen_accepted_at=_active_generation("accepted_at_utc"),
            dispatch_due_at=_dispatch("due_at"),
            # "now" for lateness is the database clock seam (docs/protocol/conventions.md rule C3),
            # one value per statement.
            db_now=timeline.DATABASE_NOW,
        )

    @admin.display(description="kind", ordering="gen_kind")
    def kind(self, obj):
        return obj.gen_kind

    @admin.display(description="schedule", ordering="gen_kind")
    def spec(self, obj):
        """The spec as an operator reads it ("every 10 min"), the raw JSON only when the stored
        spec cannot be read back."""
        return timeline.stored_spec_text(obj.gen_kind, obj.gen_spec, obj.gen_evaluator)

    def _next_due(self, obj):
        return timeline.next_due(obj.state, obj.gen_kind, obj.gen_spec, obj.gen_evaluator,
                                 obj.gen_accepted_at, obj.cursor_utc)

    @admin.display(description="next due", ordering="dispatch_due_at")
    def next_due(self, obj):
        if obj.state == "paused":
            return "paused"
        return timeline.stamp(self._next_due(obj))

    @admin.display(description="lateness")
    def lateness(self, obj):
        # Only an active schedule can be late: a paused or suspended one is waiting for an
        # operator, which its state already says (docs/admin.md).
        if obj.state != "active":
            return "—"
        return timeline.format_duration(timeline.lateness(self._next_due(obj), obj.db_now))

    def detail_context(self, request, object_id, scope_id):
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return {}
        return {"timeline": timeline.schedule_timeline(obj, request),
                "operations": self.operations_for(request, obj)}


@admin.register(ScheduleGeneration)
class ScheduleGenerationAdmin(ReadOnlyScopedAdmin):
    """Append-only generations (a trigger refuses UPDATE/DELETE); newest first."""

    list_display = ("scope_id", "schedule_id", "generation", "kind", "accepted_at_utc",
                    "overlap_policy", "buffer_limit", "misfire_policy", "start_at", "end_at",
                    "max_runs", "jitter", "evaluator_version", "created_by")
    list_filter = (choices_filter("kind", "kind", GENERATION_KINDS),)
    search_fields = ("=scope_id", "schedule_id")
    ordering = ("-accepted_at_utc", "-generation")
    list_deferred = ("target",)  # holds the Work payload, up to 32 MiB
    exclude = ("target",)
    readonly_fields = ("target_json",)

    @admin.display(description="target")
    def target_json(self, obj):
        return timeline.json_preview(obj.target, ascii_only=False)


@admin.register(Occurrence)
class OccurrenceAdmin(ReadOnlyScopedAdmin):
    list_display = ("scope_id", "schedule_id", "generation", "kind", "first_nominal_utc",
                    "last_nominal_utc", "state", "jitter_us", "request_id", "work")
    list_filter = (choices_filter("state", "state", OCCURRENCE_STATES),
                   choices_filter("kind", "kind", OCCURRENCE_KINDS))
    search_fields = ("=scope_id", "schedule_id", "work_command", "work_idempotency_key")
    uuid_search_field = "work_id"
    ordering = ("-first_nominal_utc", "-id")

    def get_queryset(self, request):
        work = scoping.store_rows(Work).filter(scope_id=OuterRef("scope_id"),
                                               work_id=OuterRef("work_id"))
        return super().get_queryset(request).annotate(
            work_pk=Subquery(work.values("id")[:1]),
            work_state=Subquery(work.values("state")[:1]),
        )

    @admin.display(description="work")
    def work(self, obj):
        if obj.work_id is None:
            return "—"
        if obj.work_pk is None:
            return str(obj.work_id)
        return admin_link(Work, obj.work_pk, f"{obj.work_id} ({obj.work_state})", obj.scope_id)


@admin.register(ScheduleDispatch)
class ScheduleDispatchAdmin(RoutedReadOnlyAdmin):
    """Payload-free queue rows: no scope id, so they are scoped through the routing id."""

    list_display = ("scope", "schedule_id", "due_at", "lease_owner", "lease_expires_at",
                    "lease_generation", "dispatch_revision")
    search_fields = ("schedule_id", "lease_owner")
    ordering = ("due_at", "dispatch_id")



@admin.register(ScheduleHistory)
class ScheduleHistoryAdmin(ReadOnlyScopedAdmin):
    """The audit trail (append-only, partitioned by month): who did what, when."""

    list_display = ("recorded_at", "scope_id", "schedule_id", "generation", "event", "actor")
    list_filter = (type("EventFilter", (DistinctValuesFilter,),
                        {"title": "event", "parameter_name": "event", "field": "event"}),)
    search_fields = ("=scope_id", "schedule_id", "=actor")
    ordering = ("-recorded_at", "-id")


@admin.register(Scope)
class ScopeAdmin(ReadOnlyScopedAdmin):
    list_display = ("scope_id", "routing_id", "generation", "created_at", "updated_at")
    search_fields = ("=scope_id",)
    ordering = ("scope_id",)
