-- Public read paths of one schedule's past: its occurrences and the Work it produced
-- (durable_schedule/schedules/occurrences.py). Not a migration file. Each is ONE statement in
-- the scoped read form (RLS admits the current scope only): the definition row anchors it, so
-- "no such schedule" (no row) and "no occurrences yet" (one row of NULLs) are told apart
-- without a second query. Keyset paging on the occurrence id: no OFFSET, every page is an
-- index range scan however long the schedule's history.

-- name: occurrences_oldest_first -- a page of occurrences after an id, ascending.
SELECT o.id, o.generation, o.kind, o.first_nominal_utc, o.last_nominal_utc, o.state, o.work_id,
       o.created_at, o.updated_at
  FROM durable_schedule_definition d
  LEFT JOIN LATERAL (
        SELECT q.* FROM durable_schedule_occurrence q
         WHERE q.scope_id = d.scope_id AND q.schedule_id = d.schedule_id
           AND q.id > %(after)s
         ORDER BY q.id
         LIMIT %(limit)s) o ON true
 WHERE d.scope_id = %(scope_id)s AND d.schedule_id = %(schedule_id)s
 ORDER BY o.id

-- name: occurrences_newest_first -- a page of occurrences before an id, descending.
SELECT o.id, o.generation, o.kind, o.first_nominal_utc, o.last_nominal_utc, o.state, o.work_id,
       o.created_at, o.updated_at
  FROM durable_schedule_definition d
  LEFT JOIN LATERAL (
        SELECT q.* FROM durable_schedule_occurrence q
         WHERE q.scope_id = d.scope_id AND q.schedule_id = d.schedule_id
           AND q.id < %(before)s
         ORDER BY q.id DESC
         LIMIT %(limit)s) o ON true
 WHERE d.scope_id = %(scope_id)s AND d.schedule_id = %(schedule_id)s
 ORDER BY o.id DESC

-- name: produced_work -- a page of the Work the schedule's occurrences produced, in occurrence
-- order after an occurrence id; the same columns as work_queries.sql "get".
SELECT w.work_id, w.scope_id, w.command_id, w.idempotency_key, w.work_name, w.work_version,
       w.payload, w.provider_safety, w.fingerprint_schema, w.fingerprint_digest,
       w.retry_policy, w.attempt_plan, w.execution_deadline, w.accepted_at, w.due_at, w.state,
       w.attempt, w.lease_owner, w.lease_expires_at, w.attempt_started_at, w.result,
       w.last_error, w.suspension_reason, w.execution_admission_closed_at,
       w.execution_admission_closed_reason, w.execution_deadline_reached_at,
       w.source_occurrence_id, w.finished_at, w.updated_at
  FROM durable_schedule_definition d
  LEFT JOIN LATERAL (
        SELECT x.*, o.id AS occurrence_id
          FROM durable_schedule_occurrence o
          JOIN durable_work x ON x.scope_id = o.scope_id AND x.work_id = o.work_id
         WHERE o.scope_id = d.scope_id AND o.schedule_id = d.schedule_id
           AND o.work_id IS NOT NULL AND o.id > %(after)s
         ORDER BY o.id
         LIMIT %(limit)s) w ON true
 WHERE d.scope_id = %(scope_id)s AND d.schedule_id = %(schedule_id)s
 ORDER BY w.occurrence_id
