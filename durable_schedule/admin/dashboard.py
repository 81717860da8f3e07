"""The health dashboard: the admin page of the runner heartbeats (docs/admin.md "Health").

One page, read-only, for users with the view permission on runners: live, dead and recently
stopped runners; backlog, lag and expired leases per queue; due Work per Work name; suspended
schedules with the one action that fixes each; last hour's throughput. Facts come from
``durable_schedule.operations.status.collect`` (each scope read in its own runtime transaction),
then filtered to the scopes the user may see (``ADMIN_SCOPES``); runners and queue totals are
not tenant data. The Work backlog is one row for the Work of every queue together.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.db import DatabaseError
from django.template.response import TemplateResponse
from django.urls import reverse

from durable_schedule.admin import scoping
from durable_schedule.admin.actions import REISSUE_REASONS
from durable_schedule.operations.recovery import RELEASABLE_REASON
from durable_schedule.operations.status import collect, unreachable
from durable_schedule.store.models import RunnerHeartbeat, ScheduleDefinition

#: What fixes each suspension reason that one admin action cannot (docs/schedules.md).
NEEDS_UPDATE = "schedules.update() with a corrected definition (a new generation)"


def _fix(request, s, schedule_admin) -> dict:
    """The one action for a suspended schedule: release after recovery for an epoch mismatch,
    re-issue as a new generation for the others (docs/admin.md), else its detail page. Each
    link is offered only to a user who can open it: the operation page needs the operation's
    permission *and* the view permission on schedules (``has_operation_permission``), the
    detail page the view permission; without them the row names the fix in words."""
    scope_q = urlencode({scoping.SCOPE_PARAM: s.scope_id})
    detail = None
    if schedule_admin.has_view_permission(request):
        detail = reverse("admin:durable_schedule_scheduledefinition_change",
                         args=[s.definition_pk]) + f"?{scope_q}"
    query = urlencode({"ids": s.definition_pk, scoping.SCOPE_PARAM: s.scope_id,
                       "next": request.get_full_path()})
    if s.reason == RELEASABLE_REASON:
        if schedule_admin.has_operation_permission(request, schedule_admin.operations["release"]):
            url = reverse("admin:durable_schedule_scheduledefinition_operate", args=["release"])
            return {"label": "Release after recovery…", "url": f"{url}?{query}",
                    "detail": detail}
        return {"label": "needs release after recovery", "url": None, "detail": detail}
    if s.reason in REISSUE_REASONS and schedule_admin.has_operation_permission(
            request, schedule_admin.operations["reissue"]):
        # The confirmation page shows the next instants, or why the row must be fixed in code.
        url = reverse("admin:durable_schedule_scheduledefinition_operate", args=["reissue"])
        return {"label": "Re-issue as a new generation…", "url": f"{url}?{query}",
                "detail": detail}
    return {"label": f"needs {NEEDS_UPDATE}", "url": None, "detail": detail}


@admin.register(RunnerHeartbeat)
class HealthDashboardAdmin(admin.ModelAdmin):
    """The runners' admin page is the dashboard (no change list, no detail pages)."""

    def get_urls(self):
        """Only the dashboard: heartbeat rows have no add, change, delete or history pages."""
        from django.urls import path

        name = f"{self.opts.app_label}_{self.opts.model_name}_changelist"
        return [path("", self.admin_site.admin_view(self.changelist_view), name=name)]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied
        try:
            report = collect()
        except DatabaseError as exc:
            report = unreachable(exc)
        seen = scoping.visibility(request)
        if not seen.everything:
            try:
                _keep_visible(report, seen)
            except DatabaseError as exc:  # as for the first read: the store did not answer
                report = unreachable(exc)
        schedule_admin = self.admin_site.get_model_admin(ScheduleDefinition)
        suspended = [{"s": s, "fix": _fix(request, s, schedule_admin)}
                     for s in report.suspended_schedules]
        queues = [
            {"queue": "schedules", "kind": "schedule", "health": report.schedules},
            # Every Work queue together: the Work dispatch rows of all queues (named queues
            # included) are one backlog here; due Work per Work name is below.
            {"queue": "all queues", "kind": "work", "health": report.work},
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Runners and health",
            "opts": self.opts,
            "report": report,
            "queues": queues,
            "suspended": suspended,
            "by_name": sorted(report.work_backlog_by_name.items()) if seen.everything else [],
            "throughput": sorted(report.finished_last_hour.items()) if seen.everything else [],
            "everything": seen.everything,
            "schedule_opts": ScheduleDefinition._meta,
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/durable_schedule/runnerheartbeat/dashboard.html",
                                context)


def _keep_visible(report, seen) -> None:
    """Per-scope facts of other scopes must not leak through the problem list either: keep the
    visible scopes' suspensions, drop the cross-scope Work aggregates. Nothing on the page may
    depend on how many were left out, not even the wording of an empty table."""
    report.suspended_schedules = [s for s in report.suspended_schedules
                                  if seen.admits(s.scope_id)]
    report.unlisted_queue_schedules = [u for u in report.unlisted_queue_schedules
                                       if seen.admits(u.scope_id)]
    report.tz_rules_mismatches = _visible_tz_mismatches(report, seen)
    report.work_by_state, report.finished_last_hour = {}, {}
    report.suspended_work = {}
    report.work_backlog_by_name = {}


def _visible_tz_mismatches(report, seen) -> list[str]:
    """The report names cron schedules with changed tz rules as ``scope/schedule`` text, which
    cannot be split back safely (a scope id may contain ``/``): read the inventory again and
    keep the visible scopes' schedules only."""
    if not report.tz_rules_mismatches:
        return []
    from durable_schedule.operations import probe, tz_rules

    # Bounded like every read of the page (operations/probe.py): a lock held on a store table
    # must make the page say "not answering", not hang it.
    affected = tz_rules.collect(timeout=probe.DEFAULT_TIMEOUT_SECONDS).affected
    return [f"{s.scope_id}/{s.schedule_id}" for s in affected if seen.admits(s.scope_id)]
