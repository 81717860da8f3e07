-- Bulk-loading Work: copies of one prototype accepted through the public API. Named blocks.

-- name: replicate work -- n copies of the prototype Work row and its dispatch row; only the
-- identity (work id, command, idempotency key) differs, the rest (payload, fingerprint,
-- policy, due time) is the prototype's.
WITH proto AS (
    SELECT w.*, d.scope_routing_id, d.due_at AS dispatch_due
      FROM durable_work w JOIN durable_work_dispatch d ON d.work_ref = w.id
     WHERE w.command_id = %(command)s
), copies AS (
    INSERT INTO durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
            work_version, payload, provider_safety, fingerprint_schema, fingerprint_digest,
            retry_policy, attempt_plan, execution_deadline, accepted_at, due_at, state, attempt,
            updated_at)
    SELECT p.scope_id, md5('bench-work-' || i)::uuid, 'bench-' || i, 'bench-key-' || i,
           p.work_name, p.work_version, p.payload, p.provider_safety, p.fingerprint_schema,
           p.fingerprint_digest, p.retry_policy, p.attempt_plan, p.execution_deadline,
           p.accepted_at, p.due_at, p.state, p.attempt, p.updated_at
      FROM proto p, generate_series(1, %(n)s::int) i
    RETURNING id
)
INSERT INTO durable_work_dispatch (scope_routing_id, work_ref, due_at)
SELECT p.scope_routing_id, c.id, p.dispatch_due FROM copies c, proto p;

-- name: started -- Work of the measured set that an executor started, and how many finished.
SELECT count(*) FILTER (WHERE attempt >= 1),
       count(*) FILTER (WHERE state = 'succeeded')
  FROM durable_work WHERE command_id LIKE 'bench-%%';

-- name: last error -- one error an executor attempt recorded (for the report).
SELECT state, last_error FROM durable_work
 WHERE command_id LIKE 'bench-%%' AND last_error IS NOT NULL LIMIT 1;
