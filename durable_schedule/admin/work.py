"""Read-only admin pages of the Work side: Work (state, attempts, next eligibility, deadline,
admission closure facts), its dispatch rows, permits, quarantined evidence and history.

Recording Applied / NotApplied proof on suspended Work is an operation in
:mod:`durable_schedule.admin.actions`.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import OuterRef, Subquery

from durable_schedule.admin import actions, scoping, timeline
from durable_schedule.admin.base import ReadOnlyScopedAdmin, RoutedReadOnlyAdmin, admin_link
from durable_schedule.admin.filters import DistinctValuesFilter, choices_filter
from durable_schedule.store.models import (
    Work,
    WorkDispatch,
    WorkHistory,
    WorkPermit,
    WorkQuarantine,
)

WORK_STATES = ("pending", "running", "suspended", "succeeded", "failed", "expired", "canceled")
PERMIT_OUTCOMES = ("succeeded", "failed", "applied", "not_applied", "proven_no_effect",
                   "quarantined")


def _distinct(title: str, field: str):
    return type(f"{field.title().replace('_', '')}Filter", (DistinctValuesFilter,),
                {"title": title, "parameter_name": field, "field": field})


@admin.register(Work)
class WorkAdmin(actions.WorkOperations, ReadOnlyScopedAdmin):
    list_display = ("scope_id", "work_id", "work", "state", "attempt", "next_eligibility",
                    "execution_deadline", "execution_admission_closed_at",
                    "execution_admission_closed_reason", "execution_deadline_reached_at")
    list_display_links = ("work_id",)
    list_filter = (choices_filter("state", "state", WORK_STATES),
                   choices_filter("provider safety", "provider_safety",
                                  ("idempotent", "reconcile_before_retry")),
                   _distinct("admission closed", "execution_admission_closed_reason"),
                   _distinct("work name", "work_name"))
    search_fields = ("=scope_id", "=command_id", "=idempotency_key", "work_name")
    uuid_search_field = "work_id"
    list_deferred = ("payload", "result", "last_error")
    search_help_text = "Exact scope, command or idempotency key; part of a work name; a work id."
    ordering = ("-accepted_at", "-id")
    fieldsets = (
        (None, {"fields": ("scope_id", "work_id", "command_id", "idempotency_key", "work_name",
                           "work_version", "provider_safety")}),
        ("State", {"fields": ("state", "attempt", "due_at", "attempt_started_at", "lease_owner",
                              "lease_expires_at", "lease_generation", "suspension_reason",
                              "finished_at")}),
        ("Policy and deadline", {"fields": ("retry_policy", "attempt_plan", "execution_deadline",
                                            "accepted_at")}),
        ("Admission closure", {"fields": ("execution_admission_closed_at",
                                          "execution_admission_closed_reason",
                                          "execution_deadline_reached_at")}),
        ("Facts", {"fields": ("payload_json", "result_json", "last_error_json",
                              "fingerprint_schema", "fingerprint_digest", "source_occurrence_id",
                              "updated_at")}),
    )
    readonly_fields = ("payload_json", "result_json", "last_error_json")

    # A payload may be 32 MiB: the page shows its first part and says how large it is.
    @admin.display(description="payload")
    def payload_json(self, obj):
        return timeline.json_preview(obj.payload, ascii_only=False)

    @admin.display(description="result")
    def result_json(self, obj):
        return "-" if obj.result is None else timeline.json_preview(obj.result, ascii_only=False)

    @admin.display(description="last error")
    def last_error_json(self, obj):
        return "-" if obj.last_error is None else timeline.json_preview(obj.last_error,
                                                                         ascii_only=False)

    @admin.display(description="work", ordering="work_name")
    def work(self, obj):
        return f"{obj.work_name}@{obj.work_version}"

    @admin.display(description="next eligibility (due at)", ordering="due_at")
    def next_eligibility(self, obj):
        # due_at is when the next attempt may be claimed (the next planned slot or backoff);
        # for finished Work it is history, so it is not shown as an eligibility.
        if obj.state in ("succeeded", "failed", "expired", "canceled"):
            return "—"
        return obj.due_at

    def detail_context(self, request, object_id, scope_id):
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return {}
        # The page is titled by what the Work is, not by the model's name (docs/admin.md).
        return {"work_timeline": timeline.work_timeline(obj, request),
                "operations": self.operations_for(request, obj),
                "title": f"{obj.work_name}@{obj.work_version}", "subtitle": str(obj.work_id)}


class _ByWork(ReadOnlyScopedAdmin):
    """Rows that belong to one Work: link back to it, search by its id."""

    uuid_search_field = "work_id"

    def get_queryset(self, request):
        work = scoping.store_rows(Work).filter(scope_id=OuterRef("scope_id"),
                                               work_id=OuterRef("work_id"))
        return super().get_queryset(request).annotate(work_pk=Subquery(work.values("id")[:1]))

    @admin.display(description="work", ordering="work_id")
    def work(self, obj):
        if obj.work_pk is None:
            return str(obj.work_id)
        return admin_link(Work, obj.work_pk, str(obj.work_id), obj.scope_id)


@admin.register(WorkPermit)
class WorkPermitAdmin(_ByWork):
    """One row per admitted invocation; an unresolved one is an effect of unknown outcome."""

    list_display = ("scope_id", "work", "permit_no", "attempt", "lease_generation",
                    "admitted_at", "outcome", "resolved_at", "resolved_by", "resolution_source")
    list_filter = (choices_filter("outcome", "outcome", PERMIT_OUTCOMES,
                                  none_label="unresolved"),
                   choices_filter("resolution source", "resolution_source",
                                  ("executor", "reconciler", "operator", "runtime")))
    search_fields = ("=scope_id", "=resolved_by")
    ordering = ("-admitted_at", "-id")


@admin.register(WorkQuarantine)
class WorkQuarantineAdmin(_ByWork):
    """Late or fenced-off results kept as evidence, never as success (docs/protocol/work.md)."""

    verbose_name_plural = "work quarantine"
    list_display = ("scope_id", "work", "attempt", "lease_owner", "lease_generation", "reason",
                    "recorded_at")
    list_filter = (_distinct("reason", "reason"),)
    search_fields = ("=scope_id", "=lease_owner")
    ordering = ("-recorded_at", "-id")
    list_deferred = ("result",)
    exclude = ("result",)
    readonly_fields = ("result_json",)

    @admin.display(description="result")
    def result_json(self, obj):
        return "-" if obj.result is None else timeline.json_preview(obj.result, ascii_only=False)


@admin.register(WorkHistory)
class WorkHistoryAdmin(_ByWork):
    list_display = ("recorded_at", "scope_id", "work", "event", "attempt", "actor")
    list_filter = (_distinct("event", "event"),)
    search_fields = ("=scope_id", "=actor")
    ordering = ("-recorded_at", "-id")


@admin.register(WorkDispatch)
class WorkDispatchAdmin(RoutedReadOnlyAdmin):
    """Payload-free Work queue rows, scoped through the routing id."""

    list_display = ("scope", "work", "due_at", "lease_owner", "lease_expires_at",
                    "lease_generation", "dispatch_revision")
    search_fields = ("lease_owner",)
    ordering = ("due_at", "dispatch_id")


    @admin.display(description="work", ordering="work_ref")
    def work(self, obj):
        return admin_link(Work, obj.work_ref, f"#{obj.work_ref}", obj.scope_name)
