-- Named queries of the Work runtime (issue 3, docs/protocol/work.md). Not a migration file: loaded with
-- store.sqlfiles.query("work_queries.sql", name). Scoped queries run as durable_runtime with the
-- transaction-local scope set, so row-level security admits only that scope's rows. Every state
-- change names the lease it expects (state, lease owner, lease generation) in its WHERE clause
-- and the caller checks the row count (docs/protocol/conventions.md rule C5).

-- name: store_floor -- schema version and compatibility floor, read before every claim.
SELECT schema_version, compatibility_floor FROM durable_schedule_store

-- name: claim -- lease due Work dispatch rows across scopes (SECURITY DEFINER); routing facts only.
SELECT scope_routing_id, work_ref, dispatch_revision
  FROM claim_work_dispatch(%(owner)s, make_interval(secs => %(lease_seconds)s), %(max_rows)s,
                           %(queues)s::text[])

-- name: lock_claimed -- one statement for a claimed row: lock the Work row (SKIP LOCKED) and its dispatch row, read its permit facts, then the clock.
-- SKIP LOCKED: a Work row locked by someone else (its holder renewing or recording an outcome,
-- an operator command) is left alone; this claim then lapses and the row is claimed again. So
-- this statement never waits, and the permit facts come from a snapshot taken with the lock.
WITH w AS (
    SELECT id, scope_id, work_id, command_id, idempotency_key, work_name, work_version, payload,
           provider_safety, fingerprint_schema, retry_policy, attempt_plan, execution_deadline,
           accepted_at, due_at, state, attempt, lease_owner, lease_expires_at, lease_generation,
           attempt_started_at, result, last_error, suspension_reason,
           execution_admission_closed_at, execution_admission_closed_reason,
           execution_deadline_reached_at, finished_at, source_occurrence_id
      FROM durable_work
     WHERE id = %(id)s
       FOR UPDATE SKIP LOCKED
), d AS (
    SELECT dispatch_revision, lease_owner FROM durable_work_dispatch
     WHERE work_ref = (SELECT id FROM w)
       FOR UPDATE
), p AS (
    SELECT max(permit_no) FILTER (WHERE outcome IS NULL) AS open_no,
           (array_agg(attempt ORDER BY permit_no DESC) FILTER (WHERE outcome IS NULL))[1]
               AS open_attempt,
           count(*) FILTER (WHERE outcome IS NULL) AS open_count,
           coalesce(max(permit_no), 0) AS last_no
      FROM durable_work_permit
     WHERE scope_id = (SELECT scope_id FROM w) AND work_id = (SELECT work_id FROM w)
)
SELECT w.*, p.open_no, p.open_attempt, p.open_count, p.last_no, d.dispatch_revision,
       d.lease_owner, durable_schedule_clock('clock')
  FROM w CROSS JOIN p LEFT JOIN d ON true

-- name: lock_leased -- one statement: lock a running Work row only while the named lease still holds it; permit facts, then the clock.
-- It may wait (the holder's own watchdog renewing). Whatever it waited for kept the state, owner
-- and lease generation (else the re-checked WHERE drops the row), so only this lease's holder
-- can have changed the permits: the facts are current.
WITH w AS (
    SELECT id, scope_id, work_id, command_id, idempotency_key, work_name, work_version, payload,
           provider_safety, fingerprint_schema, retry_policy, attempt_plan, execution_deadline,
           accepted_at, due_at, state, attempt, lease_owner, lease_expires_at, lease_generation,
           attempt_started_at, result, last_error, suspension_reason,
           execution_admission_closed_at, execution_admission_closed_reason,
           execution_deadline_reached_at, finished_at, source_occurrence_id
      FROM durable_work
     WHERE id = %(id)s AND state = 'running'
       AND lease_owner = %(lease_owner)s AND lease_generation = %(lease_generation)s
       FOR UPDATE
), p AS (
    SELECT max(permit_no) FILTER (WHERE outcome IS NULL) AS open_no,
           (array_agg(attempt ORDER BY permit_no DESC) FILTER (WHERE outcome IS NULL))[1]
               AS open_attempt,
           count(*) FILTER (WHERE outcome IS NULL) AS open_count,
           coalesce(max(permit_no), 0) AS last_no
      FROM durable_work_permit
     WHERE scope_id = (SELECT scope_id FROM w) AND work_id = (SELECT work_id FROM w)
)
SELECT w.*, p.open_no, p.open_attempt, p.open_count, p.last_no, NULL::bigint, NULL::text,
       durable_schedule_clock('clock')
  FROM w CROSS JOIN p

-- name: lock_by_work_id -- lock one Work row of the current scope by its public work id.
SELECT id, scope_id, work_id, command_id, idempotency_key, work_name, work_version, payload,
       provider_safety, fingerprint_schema, retry_policy, attempt_plan, execution_deadline,
       accepted_at, due_at, state, attempt, lease_owner, lease_expires_at, lease_generation,
       attempt_started_at, result, last_error, suspension_reason,
       execution_admission_closed_at, execution_admission_closed_reason,
       execution_deadline_reached_at, finished_at, source_occurrence_id
  FROM durable_work
 WHERE scope_id = %(scope_id)s AND work_id = %(work_id)s
   FOR UPDATE

-- name: facts -- read after the Work lock (fresh snapshot): permits, the locked dispatch row, then the clock.
WITH d AS (
    SELECT dispatch_revision, lease_owner
      FROM durable_work_dispatch
     WHERE work_ref = %(id)s
       FOR UPDATE
), p AS (
    SELECT max(permit_no) FILTER (WHERE outcome IS NULL) AS open_no,
           (array_agg(attempt ORDER BY permit_no DESC) FILTER (WHERE outcome IS NULL))[1]
               AS open_attempt,
           count(*) FILTER (WHERE outcome IS NULL) AS open_count,
           coalesce(max(permit_no), 0) AS last_no
      FROM durable_work_permit
     WHERE scope_id = %(scope_id)s AND work_id = %(work_id)s
)
SELECT p.open_no, p.open_attempt, p.open_count, p.last_no, d.dispatch_revision, d.lease_owner,
       durable_schedule_clock('clock')
  FROM p LEFT JOIN d ON true

-- name: transition -- move one locked Work row to its next state and apply every side effect in one guarded statement.
WITH moved AS (
    UPDATE durable_work w
       SET state = %(state)s,
           due_at = %(due_at)s,
           attempt = %(attempt)s,
           lease_owner = %(lease_owner)s,
           lease_expires_at = %(lease_expires_at)s,
           lease_generation = %(lease_generation)s,
           attempt_started_at = %(attempt_started_at)s,
           result = %(result)s::jsonb,
           last_error = %(last_error)s::jsonb,
           suspension_reason = %(suspension_reason)s,
           -- First-write closure facts (docs/protocol/work.md): an earlier cause is never overwritten.
           execution_admission_closed_reason = CASE
               WHEN w.execution_admission_closed_at IS NULL THEN %(closed_reason)s
               ELSE w.execution_admission_closed_reason END,
           execution_admission_closed_at = coalesce(w.execution_admission_closed_at,
                                                    %(closed_at)s::timestamptz),
           execution_deadline_reached_at = coalesce(w.execution_deadline_reached_at,
                                                    %(deadline_reached_at)s::timestamptz),
           finished_at = %(finished_at)s,
           updated_at = %(now)s
     WHERE w.id = %(id)s
       AND w.state = %(expect_state)s
       AND w.lease_owner IS NOT DISTINCT FROM %(expect_owner)s::text
       AND w.lease_generation = %(expect_generation)s
    RETURNING w.id, w.scope_id, w.work_id
), permit_new AS (
    INSERT INTO durable_work_permit (scope_id, work_id, permit_no, attempt, lease_generation,
                                     admitted_at)
    SELECT moved.scope_id, moved.work_id, %(new_permit_no)s, %(attempt)s, %(lease_generation)s,
           %(now)s
      FROM moved
     WHERE %(new_permit_no)s::integer IS NOT NULL
    RETURNING 1
), permit_resolved AS (
    UPDATE durable_work_permit p
       SET outcome = %(permit_outcome)s, resolved_at = %(now)s, resolved_by = %(resolved_by)s,
           resolution_source = %(resolution_source)s
      FROM moved
     WHERE p.scope_id = moved.scope_id AND p.work_id = moved.work_id
       AND p.permit_no = %(resolve_permit_no)s::integer AND p.outcome IS NULL
    RETURNING 1
), dispatch_upserted AS (
    INSERT INTO durable_work_dispatch AS d (scope_routing_id, work_ref, due_at)
    SELECT s.routing_id, moved.id, %(dispatch_due_at)s::timestamptz
      FROM moved JOIN durable_schedule_scope s ON s.scope_id = moved.scope_id
     WHERE %(dispatch)s = 'upsert'
    ON CONFLICT (work_ref) DO UPDATE
       SET due_at = EXCLUDED.due_at,
           lease_owner = %(dispatch_owner)s::text,
           lease_expires_at = %(dispatch_expires_at)s::timestamptz,
           dispatch_revision = d.dispatch_revision + 1
    RETURNING 1
), dispatch_deleted AS (
    DELETE FROM durable_work_dispatch d
     USING moved
     WHERE d.work_ref = moved.id AND %(dispatch)s = 'delete'
    RETURNING 1
), quarantined AS (
    INSERT INTO durable_work_quarantine (scope_id, work_id, attempt, lease_owner,
                                         lease_generation, reason, result, recorded_at)
    SELECT moved.scope_id, moved.work_id, %(quarantine_attempt)s, %(expect_owner)s,
           %(expect_generation)s, %(quarantine_reason)s, %(quarantine_result)s::jsonb, %(now)s
      FROM moved
     WHERE %(quarantine_reason)s::text IS NOT NULL
    RETURNING 1
), history AS (
    INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail,
                                      recorded_at)
    SELECT moved.scope_id, moved.work_id, %(event)s, %(event_attempt)s, %(actor)s,
           %(detail)s::jsonb, %(now)s
      FROM moved
    RETURNING 1
)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM permit_new),
       (SELECT count(*) FROM permit_resolved), (SELECT count(*) FROM quarantined)

-- name: renew -- extend the lease of a running Work (guarded) and move its dispatch row along.
WITH moved AS (
    UPDATE durable_work
       SET lease_expires_at = %(lease_expires_at)s, updated_at = %(now)s
     WHERE id = %(id)s AND state = 'running'
       AND lease_owner = %(lease_owner)s AND lease_generation = %(lease_generation)s
    RETURNING id
), dispatch AS (
    UPDATE durable_work_dispatch d
       SET due_at = %(lease_expires_at)s, lease_owner = %(lease_owner)s,
           lease_expires_at = %(lease_expires_at)s
      FROM moved
     WHERE d.work_ref = moved.id
)
SELECT count(*) FROM moved

-- name: quarantine_lost -- keep the outcome of an attempt whose lease was lost as evidence; the Work row is not touched.
WITH w AS (
    SELECT scope_id, work_id FROM durable_work WHERE id = %(id)s
), q AS (
    INSERT INTO durable_work_quarantine (scope_id, work_id, attempt, lease_owner,
                                         lease_generation, reason, result, recorded_at)
    SELECT w.scope_id, w.work_id, %(attempt)s, %(lease_owner)s, %(lease_generation)s,
           %(reason)s, %(result)s::jsonb, durable_schedule_clock('clock')
      FROM w
    RETURNING scope_id, work_id, recorded_at
)
INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail, recorded_at)
SELECT q.scope_id, q.work_id, 'result_quarantined', %(attempt)s, %(lease_owner)s,
       %(detail)s::jsonb, q.recorded_at
  FROM q

-- name: reconciliation_fenced -- keep a reconciler's verdict whose lease was lost as evidence (an Applied verdict's result in durable_work_quarantine, reason reconciliation_lost) and record it in the history; the Work row and its permits are not touched.
WITH w AS (
    SELECT scope_id, work_id FROM durable_work WHERE id = %(id)s
), q AS (
    INSERT INTO durable_work_quarantine (scope_id, work_id, attempt, lease_owner,
                                         lease_generation, reason, result, recorded_at)
    SELECT w.scope_id, w.work_id, %(attempt)s, %(lease_owner)s, %(lease_generation)s,
           'reconciliation_lost', %(result)s::jsonb, durable_schedule_clock('clock')
      FROM w
     WHERE %(result)s::text IS NOT NULL
    RETURNING 1
)
INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail, recorded_at)
SELECT w.scope_id, w.work_id, 'reconciliation_fenced', %(attempt)s, %(lease_owner)s,
       %(detail)s::jsonb || jsonb_build_object('result_quarantined', (SELECT count(*) FROM q) > 0),
       durable_schedule_clock('clock')
  FROM w

-- name: dispatch_reschedule -- under the Work lock: hand the dispatch row back, due again at due_at.
UPDATE durable_work_dispatch
   SET due_at = %(due_at)s, lease_owner = %(lease_owner)s::text,
       lease_expires_at = %(lease_expires_at)s::timestamptz,
       dispatch_revision = dispatch_revision + 1
 WHERE work_ref = %(id)s

-- name: dispatch_drop -- under the Work lock: a finished or suspended Work keeps no dispatch row.
DELETE FROM durable_work_dispatch WHERE work_ref = %(id)s

-- name: dispatch_release_claim -- give back a claimed row that this pass will not process.
UPDATE durable_work_dispatch
   SET due_at = durable_schedule_clock('clock'), lease_owner = NULL, lease_expires_at = NULL,
       dispatch_revision = dispatch_revision + 1
 WHERE work_ref = %(id)s AND dispatch_revision = %(dispatch_revision)s
   AND lease_owner = %(lease_owner)s

-- name: get -- one Work of the current scope with its immutable timing facts (no locks, no clock).
SELECT work_id, scope_id, command_id, idempotency_key, work_name, work_version, payload,
       provider_safety, fingerprint_schema, fingerprint_digest, retry_policy, attempt_plan,
       execution_deadline, accepted_at, due_at, state, attempt, lease_owner, lease_expires_at,
       attempt_started_at, result, last_error, suspension_reason,
       execution_admission_closed_at, execution_admission_closed_reason,
       execution_deadline_reached_at, source_occurrence_id, finished_at, updated_at
  FROM durable_work
 WHERE scope_id = %(scope_id)s AND work_id = %(work_id)s

-- name: list -- one page of the current scope's Work in acceptance order, after a work id (no locks, no clock).
SELECT w.work_id, w.scope_id, w.command_id, w.idempotency_key, w.work_name, w.work_version,
       w.payload, w.provider_safety, w.fingerprint_schema, w.fingerprint_digest,
       w.retry_policy, w.attempt_plan, w.execution_deadline, w.accepted_at, w.due_at, w.state,
       w.attempt, w.lease_owner, w.lease_expires_at, w.attempt_started_at, w.result,
       w.last_error, w.suspension_reason, w.execution_admission_closed_at,
       w.execution_admission_closed_reason, w.execution_deadline_reached_at,
       w.source_occurrence_id, w.finished_at, w.updated_at
  FROM durable_work w
 WHERE w.scope_id = %(scope_id)s
   AND (%(state)s::text IS NULL OR w.state = %(state)s::text)
   AND (%(after)s::uuid IS NULL
        OR w.id > (SELECT a.id FROM durable_work a
                    WHERE a.scope_id = %(scope_id)s AND a.work_id = %(after)s::uuid))
 ORDER BY w.id
 LIMIT %(page_size)s

-- name: attempts -- every admitted attempt of one Work of the current scope, in permit order, with the lease owner that ran it and the error its failure recorded (no locks, no clock).
-- The failure's error lives in the history row that ended the attempt (retry_scheduled, failed,
-- expired: detail->'error', written by every failure path); the admitted row names the owner.
-- A row that names its permit (detail->'permit_no') belongs to that permit only; one that names
-- none (a recovered lease) to the attempt admitted last before it. An attempt handed back
-- unstarted gives its number back, so the next permit runs under the same attempt number.
SELECT p.permit_no, p.attempt, p.lease_generation, p.admitted_at, p.outcome, p.resolved_at,
       p.resolution_source, a.actor, a.id, f.event, f.detail -> 'error'
  FROM durable_work_permit p
  LEFT JOIN LATERAL (
        SELECT h.id, h.actor FROM durable_work_history h
         WHERE h.scope_id = p.scope_id AND h.work_id = p.work_id AND h.event = 'admitted'
           AND h.detail ->> 'permit_no' = p.permit_no::text
         ORDER BY h.id LIMIT 1) a ON true
  LEFT JOIN LATERAL (
        SELECT h.event, h.detail FROM durable_work_history h
         WHERE h.scope_id = p.scope_id AND h.work_id = p.work_id AND h.id > a.id
           AND h.attempt = p.attempt AND h.detail ? 'error'
           AND (h.detail ->> 'permit_no' = p.permit_no::text
                OR (NOT h.detail ? 'permit_no'
                    AND NOT EXISTS (SELECT 1 FROM durable_work_history n
                                     WHERE n.scope_id = p.scope_id AND n.work_id = p.work_id
                                       AND n.event = 'admitted' AND n.id > a.id
                                       AND n.id < h.id)))
         ORDER BY h.id LIMIT 1) f ON true
 WHERE p.scope_id = %(scope_id)s AND p.work_id = %(work_id)s
 ORDER BY p.permit_no

-- name: lock_claimed_many -- the batch form of lock_claimed: lock claimed Work rows (SKIP LOCKED, in id order) and their dispatch rows, with each row's permit facts, then the clock.
-- Same rules as lock_claimed: it never waits, and a row locked by someone else is left alone
-- (its claim lapses and it is claimed again). Rows come back in id order (the lock order).
WITH w AS (
    SELECT id, scope_id, work_id, command_id, idempotency_key, work_name, work_version, payload,
           provider_safety, fingerprint_schema, retry_policy, attempt_plan, execution_deadline,
           accepted_at, due_at, state, attempt, lease_owner, lease_expires_at, lease_generation,
           attempt_started_at, result, last_error, suspension_reason,
           execution_admission_closed_at, execution_admission_closed_reason,
           execution_deadline_reached_at, finished_at, source_occurrence_id
      FROM durable_work
     WHERE id = ANY(%(ids)s::bigint[])
     ORDER BY id
       FOR UPDATE SKIP LOCKED
), d AS (
    SELECT work_ref, dispatch_revision, lease_owner FROM durable_work_dispatch
     WHERE work_ref IN (SELECT id FROM w)
     ORDER BY work_ref
       FOR UPDATE
)
SELECT w.*, p.open_no, p.open_attempt, p.open_count, p.last_no, d.dispatch_revision,
       d.lease_owner, durable_schedule_clock('clock')
  FROM w
  CROSS JOIN LATERAL (
        SELECT max(permit_no) FILTER (WHERE outcome IS NULL) AS open_no,
               (array_agg(attempt ORDER BY permit_no DESC) FILTER (WHERE outcome IS NULL))[1]
                   AS open_attempt,
               count(*) FILTER (WHERE outcome IS NULL) AS open_count,
               coalesce(max(permit_no), 0) AS last_no
          FROM durable_work_permit
         WHERE scope_id = w.scope_id AND work_id = w.work_id) p
  LEFT JOIN d ON d.work_ref = w.id
 ORDER BY w.id

-- name: lock_leased_many -- the batch form of lock_leased: lock running Work rows only while this owner's lease generation (one per row) still holds each; permit facts, then the clock.
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(generations)s::bigint[]) AS i(id, generation)
), w AS (
    SELECT dw.id, dw.scope_id, dw.work_id, dw.command_id, dw.idempotency_key, dw.work_name,
           dw.work_version, dw.payload, dw.provider_safety, dw.fingerprint_schema,
           dw.retry_policy, dw.attempt_plan, dw.execution_deadline, dw.accepted_at, dw.due_at,
           dw.state, dw.attempt, dw.lease_owner, dw.lease_expires_at, dw.lease_generation,
           dw.attempt_started_at, dw.result, dw.last_error, dw.suspension_reason,
           dw.execution_admission_closed_at, dw.execution_admission_closed_reason,
           dw.execution_deadline_reached_at, dw.finished_at, dw.source_occurrence_id
      FROM durable_work dw JOIN input i ON dw.id = i.id
     WHERE dw.state = 'running' AND dw.lease_owner = %(lease_owner)s
       AND dw.lease_generation = i.generation
     ORDER BY dw.id
       FOR UPDATE OF dw
)
SELECT w.*, p.open_no, p.open_attempt, p.open_count, p.last_no, NULL::bigint, NULL::text,
       durable_schedule_clock('clock')
  FROM w
  CROSS JOIN LATERAL (
        SELECT max(permit_no) FILTER (WHERE outcome IS NULL) AS open_no,
               (array_agg(attempt ORDER BY permit_no DESC) FILTER (WHERE outcome IS NULL))[1]
                   AS open_attempt,
               count(*) FILTER (WHERE outcome IS NULL) AS open_count,
               coalesce(max(permit_no), 0) AS last_no
          FROM durable_work_permit
         WHERE scope_id = w.scope_id AND work_id = w.work_id) p
 ORDER BY w.id

-- name: complete_many -- group commit of successful attempts (pgqueuer's UNNEST completion shape), lock included: one statement locks the rows whose lease (state, owner, lease generation) still holds, reads the clock after each lock, and completes those before their deadline -- resolves each permit, drops each dispatch row, writes each history row -- returning the ids it completed.
-- The caller sends every success of the batch for one scope; what this leaves (a lease lost, a
-- deadline reached) it locks again with lock_leased_many and records item by item in the same
-- transaction. The lock never skips (the holder's own watchdog may be renewing: READ COMMITTED
-- re-checks the guard on the newest row version after the wait, as lock_leased does); the
-- clock is sampled per row after its lock (the post-lock linearization point, as in
-- lock_leased), and the update re-checks the guard (docs/protocol/conventions.md rule C5). One
-- statement instead of lock_leased_many + the completion: one round trip and ten parsed rows
-- fewer per batch of ten (docs/benchmarks.md "Batched Work and acceptance").
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(generations)s::bigint[], %(permits)s::integer[],
                         %(results)s::text[])
        AS i(id, generation, permit_no, result)
), held AS MATERIALIZED (
    SELECT w.id, i.generation, i.permit_no, i.result, w.execution_deadline
      FROM durable_work w JOIN input i ON w.id = i.id
     WHERE w.state = 'running' AND w.lease_owner = %(lease_owner)s
       AND w.lease_generation = i.generation
     ORDER BY w.id
       FOR UPDATE OF w
), sampled AS MATERIALIZED (
    SELECT held.*, durable_schedule_clock('clock') AS now FROM held
), moved AS (
    UPDATE durable_work w
       SET state = 'succeeded', result = s.result::jsonb, finished_at = s.now,
           lease_owner = NULL, lease_expires_at = NULL, updated_at = s.now
      FROM sampled s
     WHERE w.id = s.id AND w.state = 'running' AND w.lease_owner = %(lease_owner)s
       AND w.lease_generation = s.generation
       -- the deadline closes ordinary success at or after D (docs/protocol/work.md)
       AND (s.execution_deadline IS NULL OR s.now < s.execution_deadline)
    RETURNING w.id, w.scope_id, w.work_id, w.attempt, s.permit_no, s.now
), permit_resolved AS (
    UPDATE durable_work_permit p
       SET outcome = 'succeeded', resolved_at = m.now, resolved_by = %(lease_owner)s,
           resolution_source = 'executor'
      FROM moved m
     WHERE p.scope_id = m.scope_id AND p.work_id = m.work_id AND p.permit_no = m.permit_no
       AND p.outcome IS NULL
    RETURNING 1
), dispatch_deleted AS (
    DELETE FROM durable_work_dispatch d USING moved m WHERE d.work_ref = m.id
    RETURNING 1
), history AS (
    INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail,
                                      recorded_at)
    SELECT m.scope_id, m.work_id, 'succeeded', m.attempt, %(lease_owner)s,
           jsonb_build_object('from', 'running', 'to', 'succeeded', 'permit_no', m.permit_no),
           m.now
      FROM moved m
    RETURNING 1
)
SELECT (SELECT coalesce(array_agg(id), '{}') FROM moved), (SELECT count(*) FROM permit_resolved)

-- name: admit_many -- batch admission (the set form of transition's pending -> running): for many locked rows, each guarded by its expected state, owner and lease generation, write the running state and new lease, insert each permit, move each (locked) dispatch row to the lease end and write each history row.
-- The caller decided every row with decisions.admit_pending under the lock in this transaction
-- and compares the counts (docs/protocol/conventions.md rule C5); a mismatch rolls the batch back.
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(expect_states)s::text[],
                         %(expect_owners)s::text[], %(expect_generations)s::bigint[],
                         %(attempts)s::integer[], %(expires)s::timestamptz[],
                         %(nows)s::timestamptz[], %(permits)s::integer[], %(details)s::text[])
        AS i(id, expect_state, expect_owner, expect_generation, attempt, expires, now,
             permit_no, detail)
), moved AS (
    UPDATE durable_work w
       SET state = 'running', attempt = i.attempt, lease_owner = %(lease_owner)s,
           lease_expires_at = i.expires, lease_generation = i.expect_generation + 1,
           attempt_started_at = i.now, updated_at = i.now
      FROM input i
     WHERE w.id = i.id AND w.state = i.expect_state
       AND w.lease_owner IS NOT DISTINCT FROM i.expect_owner
       AND w.lease_generation = i.expect_generation
    RETURNING w.id, w.scope_id, w.work_id, i.attempt, i.expires, i.now, i.permit_no,
              i.detail, w.lease_generation
), permit_new AS (
    INSERT INTO durable_work_permit (scope_id, work_id, permit_no, attempt, lease_generation,
                                     admitted_at)
    SELECT m.scope_id, m.work_id, m.permit_no, m.attempt, m.lease_generation, m.now
      FROM moved m
    RETURNING 1
), dispatch_moved AS (
    -- A plain UPDATE, not transition's upsert: lock_claimed_many locked each claimed dispatch
    -- row in this transaction and the caller verified its revision and owner, so the row
    -- exists. (An upsert ran the routing trigger and a speculative insertion per row only to
    -- find the conflict: measured 1.2 ms of the statement's 3.5 ms per batch of 10.) The
    -- count is compared like the others.
    UPDATE durable_work_dispatch d
       SET due_at = m.expires, lease_owner = %(lease_owner)s, lease_expires_at = m.expires,
           dispatch_revision = d.dispatch_revision + 1
      FROM moved m
     WHERE d.work_ref = m.id
    RETURNING 1
), history AS (
    INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail,
                                      recorded_at)
    SELECT m.scope_id, m.work_id, 'admitted', m.attempt, %(lease_owner)s, m.detail::jsonb,
           m.now
      FROM moved m
    RETURNING 1
)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM permit_new),
       (SELECT count(*) FROM dispatch_moved)

-- name: floor_and_claim -- the batch pipeline's first statement: the schema version and floor, and the claim (SECURITY DEFINER, routing facts only) in one round trip, then back to the connection's own role.
-- The caller refuses a store below its floor by raising, which rolls this transaction -- and so
-- the claim -- back: nothing is claimed by code that may not run against this schema.
-- The claim runs as durable_runtime (the role the caller switched to: the function's EXECUTE
-- grant is checked for it when the statement starts). The function scan runs to completion
-- before the first joined row is projected, so the set_config of the select list -- back to
-- the own role, which alone may execute durable_schedule_enter_routed, the next statement --
-- takes effect after the claim (the routed_batch switch back, one round trip fewer). The LEFT
-- JOIN always yields the floor row, so it always runs.
SELECT f.schema_version, f.compatibility_floor, c.scope_routing_id, c.work_ref,
       c.dispatch_revision, set_config('role', %(own_role)s, true)
  FROM (SELECT schema_version, compatibility_floor FROM durable_schedule_store) f
  LEFT JOIN claim_work_dispatch(%(owner)s, make_interval(secs => %(lease_seconds)s),
                                %(max_rows)s, %(queues)s::text[]) c ON true
