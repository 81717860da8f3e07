"""Seeds one row per scoped table for two scopes, written as the owner (a superuser in
development, which bypasses RLS), so RLS tests have something to hide."""

from __future__ import annotations

import uuid

SCOPED_TABLES = (
    "durable_schedule_scope",
    "durable_schedule_definition",
    "durable_schedule_generation",
    "durable_schedule_occurrence",
    "durable_schedule_history",
    "durable_work",
    "durable_work_permit",
    "durable_work_quarantine",
    "durable_work_history",
)


def seed_scope(cur, scope: str, schedule_id: str = "nightly") -> dict:
    cur.execute(
        "insert into durable_schedule_scope (scope_id) values (%s) returning routing_id", (scope,)
    )
    routing_id = cur.fetchone()[0]
    cur.execute(
        """insert into durable_schedule_definition (scope_id, schedule_id, runtime_epoch,
               scope_generation, cursor_utc, created_at, updated_at)
           values (%s, %s, 1, 1, now(), now(), now())""",
        (scope, schedule_id),
    )
    cur.execute(
        """insert into durable_schedule_generation (scope_id, schedule_id, generation, kind, spec,
               accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,
               evaluator_version, created_by)
           values (%s, %s, 1, 'every', '{"interval_us": 60000000, "anchor": null}', now(),
                   '{}', 'queue_one', 'run_once', interval '1 hour', 'ds-eval-v1', '')""",
        (scope, schedule_id),
    )
    cur.execute(
        """insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,
               first_nominal_utc, last_nominal_utc, state, created_at, updated_at)
           values (%s, %s, 1, 'nominal', now(), now(), 'pending', now(), now()) returning id""",
        (scope, schedule_id),
    )
    occurrence = cur.fetchone()[0]
    cur.execute(
        """insert into durable_schedule_history (scope_id, schedule_id, generation, event,
               recorded_at) values (%s, %s, 1, 'created', now())""",
        (scope, schedule_id),
    )
    cur.execute(
        """insert into durable_schedule_dispatch (scope_routing_id, schedule_id, due_at)
           values (%s, %s, now() - interval '1 minute')""",
        (routing_id, schedule_id),
    )
    work_id = uuid.uuid4()
    cur.execute(
        """insert into durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
               work_version, payload, provider_safety, fingerprint_schema, fingerprint_digest,
               retry_policy, accepted_at, due_at, source_occurrence_id, updated_at)
           values (%s, %s, 'cmd-1', 'key-1', 'demo.noop', 'v1', '{}', 'idempotent', 'v1', 'x',
                   '{}', now(), now(), %s, now()) returning id""",
        (scope, work_id, occurrence),
    )
    work_ref = cur.fetchone()[0]
    cur.execute(
        """insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)
           values (%s, %s, now())""",
        (routing_id, work_ref),
    )
    cur.execute(
        """insert into durable_work_permit (scope_id, work_id, permit_no, attempt,
               lease_generation, admitted_at) values (%s, %s, 1, 1, 1, now())""",
        (scope, work_id),
    )
    cur.execute(
        """insert into durable_work_quarantine (scope_id, work_id, attempt, lease_owner,
               lease_generation, reason, recorded_at)
           values (%s, %s, 1, 'w', 1, 'late', now())""",
        (scope, work_id),
    )
    cur.execute(
        """insert into durable_work_history (scope_id, work_id, event, actor, detail, recorded_at)
           values (%s, %s, 'accepted', '', '{}', now())""",
        (scope, work_id),
    )
    return {"routing_id": routing_id, "work_id": work_id, "work_ref": work_ref}
