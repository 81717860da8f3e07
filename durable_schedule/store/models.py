"""Django models for every table of the store (docs/protocol/storage.md).

The DDL lives in the versioned ``store/sql/*.sql`` files run by the migrations, because the
contract needs what the ORM cannot express (composite keys led by ``scope_id``, row-level
security, partitioning, column grants). The models are therefore ``managed = False`` mirrors:
the admin and inspection read through them, and a test keeps every model field in step with the
live columns. Writes go through the public API, never through ``Model.save()``.
"""

from __future__ import annotations

import pgtrigger
from django.db import models

#: The append-only trigger (docs/protocol/storage.md: "a trigger refuses UPDATE and DELETE").
#: django-pgtrigger installs triggers through migrations only for managed models, so the two
#: append-only tables whose rows are written by the runtime (generations, Work history) are the
#: managed ones; the partitioned schedule history gets the same protection in SQL (0002), since
#: Django cannot create a partitioned table.
APPEND_ONLY = pgtrigger.Protect(
    name="append_only", operation=pgtrigger.Update | pgtrigger.Delete
)


class _Unmanaged:
    managed = False
    app_label = "durable_schedule"
    default_permissions = ("view",)


class Store(models.Model):
    id = models.SmallIntegerField(primary_key=True)
    runtime_epoch = models.BigIntegerField()
    schema_version = models.IntegerField()
    compatibility_floor = models.IntegerField()
    updated_at = models.DateTimeField()

    class Meta(_Unmanaged):
        db_table = "durable_schedule_store"
        verbose_name = "store"


class Scope(models.Model):
    routing_id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField(unique=True)
    generation = models.BigIntegerField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta(_Unmanaged):
        db_table = "durable_schedule_scope"

    def __str__(self) -> str:
        return self.scope_id


class ScheduleDefinition(models.Model):
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    schedule_id = models.TextField()
    state = models.TextField()
    revision = models.BigIntegerField()
    active_generation = models.IntegerField()
    runtime_epoch = models.BigIntegerField()
    scope_generation = models.BigIntegerField()
    cursor_utc = models.DateTimeField()
    suspension_reason = models.TextField(null=True)
    suspension_evidence = models.JSONField(null=True)
    suspended_at = models.DateTimeField(null=True)
    paused_at = models.DateTimeField(null=True)
    paused_by = models.TextField(null=True)
    pause_note = models.TextField(null=True)
    resumed_at = models.DateTimeField(null=True)
    missed = models.JSONField(default=dict)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta(_Unmanaged):
        db_table = "durable_schedule_definition"
        verbose_name = "schedule"
        default_permissions = ("view",)
        permissions = [
            ("suspend_schedule", "Can suspend a schedule"),
            ("release_schedule", "Can release a schedule after recovery"),
            ("delete_schedule", "Can delete a schedule (terminal)"),
            ("pause_schedule", "Can pause and resume a schedule"),
            ("trigger_schedule", "Can run a schedule now"),
            ("reissue_schedule", "Can re-issue a suspended schedule as a new generation"),
        ]

    def __str__(self) -> str:
        return f"{self.scope_id}/{self.schedule_id}"


class ScheduleGeneration(models.Model):
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    schedule_id = models.TextField()
    generation = models.IntegerField()
    kind = models.TextField()
    spec = models.JSONField()
    accepted_at_utc = models.DateTimeField()
    target = models.JSONField()
    overlap_policy = models.TextField(default="queue_one")
    misfire_policy = models.TextField(default="run_once")
    safety_window = models.DurationField()
    evaluator_version = models.TextField()
    created_by = models.TextField(default="", blank=True)
    start_at = models.DateTimeField(null=True)
    end_at = models.DateTimeField(null=True)
    max_runs = models.IntegerField(null=True)
    jitter = models.DurationField(null=True)
    buffer_limit = models.IntegerField(null=True)

    class Meta:
        app_label = "durable_schedule"
        db_table = "durable_schedule_generation"
        default_permissions = ("view",)
        triggers = [APPEND_ONLY]
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "schedule_id", "generation"],
                name="durable_schedule_generation_identity",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["at", "after", "every", "cron"]),
                name="durable_schedule_generation_kind",
            ),
            models.CheckConstraint(
                condition=models.Q(generation__gte=1), name="durable_schedule_generation_positive"
            ),
        ]


class Occurrence(models.Model):
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    schedule_id = models.TextField()
    generation = models.IntegerField()
    kind = models.TextField()
    first_nominal_utc = models.DateTimeField()
    last_nominal_utc = models.DateTimeField()
    state = models.TextField()
    work_id = models.UUIDField(null=True)
    work_command = models.TextField(null=True)
    work_idempotency_key = models.TextField(null=True)
    request_id = models.TextField(null=True)  # manual occurrences (run now)
    jitter_us = models.BigIntegerField(null=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta(_Unmanaged):
        db_table = "durable_schedule_occurrence"


class ScheduleDispatch(models.Model):
    dispatch_id = models.BigAutoField(primary_key=True)
    scope_routing_id = models.BigIntegerField()
    schedule_id = models.TextField()
    due_at = models.DateTimeField(null=True)
    lease_owner = models.TextField(null=True)
    lease_expires_at = models.DateTimeField(null=True)
    lease_generation = models.BigIntegerField()
    dispatch_revision = models.BigIntegerField()

    class Meta(_Unmanaged):
        db_table = "durable_schedule_dispatch"
        verbose_name = "schedule dispatch"
        verbose_name_plural = "schedule dispatches"


class ScheduleHistory(models.Model):
    # The table's primary key is (recorded_at, id) because it is partitioned by month; id alone
    # is unique (one identity sequence), which is what Django needs to address a row.
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    schedule_id = models.TextField()
    generation = models.IntegerField(null=True)
    event = models.TextField()
    actor = models.TextField()
    detail = models.JSONField()
    recorded_at = models.DateTimeField()

    class Meta(_Unmanaged):
        db_table = "durable_schedule_history"
        verbose_name_plural = "schedule history"


class Work(models.Model):
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    work_id = models.UUIDField()
    command_id = models.TextField()
    idempotency_key = models.TextField()
    work_name = models.TextField()
    work_version = models.TextField()
    payload = models.JSONField()
    provider_safety = models.TextField()
    fingerprint_schema = models.TextField()
    fingerprint_digest = models.TextField()
    retry_policy = models.JSONField()
    attempt_plan = models.JSONField(null=True)
    execution_deadline = models.DateTimeField(null=True)
    accepted_at = models.DateTimeField()
    due_at = models.DateTimeField()
    # The due time fixed at acceptance (immutable; due_at moves with retries). NULL for Work
    # accepted before schema 7.
    accepted_due_at = models.DateTimeField(null=True)
    state = models.TextField()
    attempt = models.IntegerField()
    lease_owner = models.TextField(null=True)
    lease_expires_at = models.DateTimeField(null=True)
    lease_generation = models.BigIntegerField()
    attempt_started_at = models.DateTimeField(null=True)
    result = models.JSONField(null=True)
    last_error = models.JSONField(null=True)
    suspension_reason = models.TextField(null=True)
    execution_admission_closed_at = models.DateTimeField(null=True)
    execution_admission_closed_reason = models.TextField(null=True)
    execution_deadline_reached_at = models.DateTimeField(null=True)
    source_occurrence_id = models.BigIntegerField(null=True)
    finished_at = models.DateTimeField(null=True)
    updated_at = models.DateTimeField()
    queue_name = models.TextField(default="default")
    priority = models.SmallIntegerField(default=0)

    class Meta(_Unmanaged):
        db_table = "durable_work"
        verbose_name = "work"
        verbose_name_plural = "work"
        permissions = [("record_work_proof", "Can record Applied/NotApplied proof for Work"),
                       ("cancel_work", "Can cancel pending or suspended Work"),
                       ("resume_work", "Can resume Work suspended for a missing definition")]


class WorkDispatch(models.Model):
    dispatch_id = models.BigAutoField(primary_key=True)
    scope_routing_id = models.BigIntegerField()
    work_ref = models.BigIntegerField(unique=True)
    due_at = models.DateTimeField(null=True)
    lease_owner = models.TextField(null=True)
    lease_expires_at = models.DateTimeField(null=True)
    lease_generation = models.BigIntegerField()
    dispatch_revision = models.BigIntegerField()
    queue_name = models.TextField(default="default")
    priority = models.SmallIntegerField(default=0)

    class Meta(_Unmanaged):
        db_table = "durable_work_dispatch"
        verbose_name = "work dispatch"
        verbose_name_plural = "work dispatches"


class WorkPermit(models.Model):
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    work_id = models.UUIDField()
    permit_no = models.IntegerField()
    attempt = models.IntegerField()
    lease_generation = models.BigIntegerField()
    admitted_at = models.DateTimeField()
    outcome = models.TextField(null=True)
    resolved_at = models.DateTimeField(null=True)
    resolved_by = models.TextField(null=True)
    resolution_source = models.TextField(null=True)

    class Meta(_Unmanaged):
        db_table = "durable_work_permit"


class WorkQuarantine(models.Model):
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    work_id = models.UUIDField()
    attempt = models.IntegerField()
    lease_owner = models.TextField()
    lease_generation = models.BigIntegerField()
    reason = models.TextField()
    result = models.JSONField(null=True)
    recorded_at = models.DateTimeField()

    class Meta(_Unmanaged):
        db_table = "durable_work_quarantine"
        verbose_name_plural = "work quarantine"


class WorkHistory(models.Model):
    id = models.BigAutoField(primary_key=True)
    scope_id = models.TextField()
    work_id = models.UUIDField()
    event = models.TextField()
    attempt = models.IntegerField(null=True)
    actor = models.TextField(default="", blank=True)
    detail = models.JSONField(default=dict)
    recorded_at = models.DateTimeField()

    class Meta:
        app_label = "durable_schedule"
        db_table = "durable_work_history"
        verbose_name_plural = "work history"
        default_permissions = ("view",)
        triggers = [APPEND_ONLY]



class RunnerHeartbeat(models.Model):
    """One runner process's heartbeat (docs/operations.md "Health"): not tenant data, no RLS;
    written only through ``durable_runner_beat()``. Its admin page is the health dashboard."""

    runner_id = models.UUIDField(primary_key=True)
    kind = models.TextField()
    lease_owner = models.TextField()
    host = models.TextField()
    pid = models.IntegerField()
    version = models.TextField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField()
    last_pass_at = models.DateTimeField(null=True)
    passes = models.BigIntegerField()
    last_counts = models.JSONField()
    stopped_at = models.DateTimeField(null=True)

    class Meta(_Unmanaged):
        db_table = "durable_runner_heartbeat"
        verbose_name = "runner"
        verbose_name_plural = "runners and health"
