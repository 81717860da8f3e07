-- Named queries of the batched schedule pass (docs/architecture.md "One batched pass"): the
-- claimed schedules of one scope read and written with one statement per step instead of one
-- per schedule. Not a migration: loaded at runtime with
-- sqlfiles.query("schedule_batch_queries.sql", name), like schedule_queries.sql, whose
-- single-schedule statements these mirror row for row: every guard of a single-schedule write
-- is in the WHERE clause of its multi-row form, and each statement RETURNS the schedule ids it
-- matched so the caller checks every row's count (docs/protocol/conventions.md C5), not just a total.
--
-- The rows of a multi-row write travel as one jsonb array of objects, unpacked by
-- jsonb_to_recordset with the column types named here (each value goes through its type's
-- input function, as a bound parameter would): one parameter instead of a dozen arrays, which
-- the driver would otherwise encode element by element in Python. "n" is the row's position.
--
-- Lock order is the single-schedule order: fences (the caller reuses "lock fences"), then per
-- schedule, in schedule_id order, definition, dispatch row, slot Work and pending occurrence
-- ("lock batch"), so two batches that overlap (a lease takeover) lock in the same order and
-- cannot deadlock each other. New rows are inserted in claim order (due time), as one pass
-- per schedule would.

-- name: lock fences in scope -- "lock fences" of schedule_queries.sql for the scope this
-- transaction entered: the scope is read from the transaction-local setting, not passed, so the
-- statement can be sent with the routed scope entry in one pipeline, before the scope id is
-- known (store/transactions.py routed_pipelined). No scope entered: no row.
SELECT st.runtime_epoch, st.schema_version, st.compatibility_floor, sc.generation, sc.routing_id,
       durable_schedule_clock('clock')
  FROM durable_schedule_store st
 CROSS JOIN durable_schedule_scope sc
 WHERE st.id = 1
   AND sc.scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), '')
   FOR SHARE OF st, sc

-- name: lock batch -- every lock a pass of its own takes before it decides, for the whole batch
-- in one statement: per claimed schedule, in schedule_id order (the caller sorts the ids), its
-- definition with the active generation FOR UPDATE ("lock definition"), its dispatch row FOR
-- UPDATE (which claims still carry our lease?), then -- only for a claim still ours on an active
-- definition -- the Work of its latest linked occurrence FOR SHARE ("lock slot") and its
-- pending coalesced occurrence FOR UPDATE ("lock pending coalesced"). One row per claimed id;
-- a part that matched nothing is null. Each part is a LATERAL subquery with its own locking
-- clause, so it runs once per schedule in a nested loop, after the parts it references; each
-- part references the one before it (where it needs no column of it, "(v IS NULL OR v IS NOT
-- NULL)": always true, and unlike coalesce() it keeps the key an index condition under
-- row-level security), so a schedule's rows are locked in the single step's order
-- (definition, dispatch row, slot Work, occurrence) and the schedules one after the other in
-- schedule_id order. Two batches
-- that overlap (a lease takeover) take their locks in the same total order and cannot
-- deadlock each other. (A claim the processor then hands to the single step or defers -- a
-- fence mismatch, a fenced or unevaluable generation -- had its slot and pending rows locked
-- too, which its single step would not have done: a few more locks, in the same order, held
-- until the batch commits.) The scope is the transaction's (its setting, as in "lock fences in
-- scope"): the statement goes with the scope entry and the fences in one pipeline.
SELECT c.schedule_id,
       d.id, d.state, d.revision, d.active_generation, d.runtime_epoch, d.scope_generation,
       d.cursor_utc, d.suspension_reason, d.suspension_evidence, d.suspended_at,
       d.created_at, d.updated_at, d.kind, d.spec, d.accepted_at_utc, d.target,
       d.overlap_policy, d.misfire_policy, d.safety_window, d.evaluator_version, d.created_by,
       d.schedule_id, d.paused_at, d.paused_by, d.pause_note, d.resumed_at, d.missed,
       d.start_at, d.end_at, d.max_runs, d.jitter,
       x.lease_owner, x.dispatch_revision,
       s.work_id, s.state,
       p.id, p.generation, p.first_nominal_utc, p.last_nominal_utc
  FROM unnest(%(schedule_ids)s::text[], %(revisions)s::bigint[]) WITH ORDINALITY
       AS c(schedule_id, revision, n)
  LEFT JOIN LATERAL (
        SELECT d.id, d.state, d.revision, d.active_generation, d.runtime_epoch,
               d.scope_generation, d.cursor_utc, d.suspension_reason,
               d.suspension_evidence::text AS suspension_evidence, d.suspended_at,
               d.created_at, d.updated_at, g.kind, g.spec::text AS spec, g.accepted_at_utc,
               g.target::text AS target, g.overlap_policy, g.misfire_policy,
               -- clamped as in "lock definition" (schedule_queries.sql)
               CASE WHEN g.safety_window > interval '999999999 days' THEN interval '999999999 days' ELSE g.safety_window END
                 AS safety_window,
               g.evaluator_version, g.created_by, d.schedule_id, d.paused_at, d.paused_by,
               d.pause_note, d.resumed_at, d.missed::text AS missed, g.start_at, g.end_at,
               g.max_runs,
               -- clamped as in "lock definition" (schedule_queries.sql)
               CASE WHEN g.jitter > interval '999999999 days' THEN interval '999999999 days' ELSE g.jitter END
                 AS jitter
          FROM durable_schedule_definition d
          LEFT JOIN durable_schedule_generation g
            ON g.scope_id = d.scope_id AND g.schedule_id = d.schedule_id
           AND g.generation = d.active_generation
         WHERE d.scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), '') AND d.schedule_id = c.schedule_id
           FOR UPDATE OF d) d ON true
  LEFT JOIN LATERAL (
        SELECT x.lease_owner, x.dispatch_revision
          FROM durable_schedule_dispatch x
         WHERE x.scope_routing_id = %(routing_id)s AND x.schedule_id = c.schedule_id
           AND (d.id IS NULL OR d.id IS NOT NULL)  -- after the definition part
           FOR UPDATE) x ON true
  LEFT JOIN LATERAL (
        SELECT w.work_id, w.state
          FROM (SELECT o.scope_id, o.work_id FROM durable_schedule_occurrence o
                 WHERE o.scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), '') AND o.schedule_id = d.schedule_id
                   AND o.work_id IS NOT NULL
                 ORDER BY o.id DESC
                 LIMIT 1) o
          JOIN durable_work w ON w.scope_id = o.scope_id AND w.work_id = o.work_id
         WHERE d.state = 'active' AND x.lease_owner = %(lease_owner)s::text
           AND x.dispatch_revision = c.revision
           FOR SHARE OF w) s ON true
  LEFT JOIN LATERAL (
        SELECT p.id, p.generation, p.first_nominal_utc, p.last_nominal_utc
          FROM durable_schedule_occurrence p
         WHERE p.scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), '') AND p.schedule_id = d.schedule_id
           AND p.kind = 'coalesced' AND p.state = 'pending'
           AND d.state = 'active' AND x.lease_owner = %(lease_owner)s::text
           AND x.dispatch_revision = c.revision
           AND (s.work_id IS NULL OR s.work_id IS NOT NULL)  -- after the slot part
           FOR UPDATE) p ON true
 ORDER BY c.n

-- name: bridge occurrences -- the batch's new nominal and recovery occurrences and their Work
-- in one statement: each occurrence identity inserted already linked to the Work identity
-- derived from it (processor/bridge.py: a pure function of the identity, so the link is known
-- before the Work exists), then "accept" of work_queries.sql for those rows: the Work, its
-- dispatch row and its accepted history row. The guard is "accept"'s proof of role and scope
-- (the single step's runtime proof) and gates both inserts. The Work's foreign key to its
-- source occurrence is checked at the end of the statement, when both rows exist.
-- Both inserts are plain INSERTs, with no conflict clause: the batch only writes when every
-- occurrence and every Work of it is new (processor/batch_work.py WorkBatch.resolve), so an
-- identity or a Work key that exists already -- or is being inserted by a transaction that
-- then commits -- raises a unique violation (23505) instead of being skipped: the whole batch
-- rolls back and its schedules run alone (processor.process_due), where the single step
-- bridges each, compare or return, as it did when the skip abandoned the batch. A conflict
-- clause pre-checks its arbiter indexes and takes a speculative-insertion lock per row, which
-- the raw shape of the same writes does not pay (docs/benchmarks.md "Batched schedule passes,
-- fifth round").
-- What the Work rows of one target share (validated request, fingerprint, policies, queue and
-- priority: the processor's template) travels once per target in "templates"; each row names its template
-- by "t" and carries only its identity, so the parameter is ~0.35 kB per schedule, not ~1.2.
-- The accepted history detail is the one accept_in_scope writes (work/enqueue.py): the
-- request's identity, name, version and fingerprint schema, and the source occurrence.
WITH guard AS (
    SELECT current_user = 'durable_runtime'
           AND NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), '')
               = %(scope_id)s AS ok
), clock AS (
    SELECT durable_schedule_clock('clock') AS now
), tpl AS (
    SELECT * FROM jsonb_to_recordset(%(templates)s::jsonb)
           AS t(t integer, work_name text, work_version text, payload jsonb,
                provider_safety text, fingerprint_schema text, fingerprint_digest text,
                retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
                due_at timestamptz, queue_name text, priority smallint)
), req AS (
    SELECT r.*, t.work_name, t.work_version, t.payload, t.provider_safety,
           t.fingerprint_schema, t.fingerprint_digest, t.retry_policy, t.attempt_plan,
           t.execution_deadline, t.due_at, t.queue_name, t.priority
      FROM jsonb_to_recordset(%(rows)s::jsonb)
           AS r(n integer, t integer, schedule_id text, generation integer, kind text,
                first timestamptz, last timestamptz, work_id uuid, command_id text,
                idempotency_key text)
      JOIN tpl t ON t.t = r.t
), occ AS (
    INSERT INTO durable_schedule_occurrence (scope_id, schedule_id, generation, kind,
            first_nominal_utc, last_nominal_utc, state, work_id, work_command,
            work_idempotency_key, created_at, updated_at)
    SELECT %(scope_id)s, r.schedule_id, r.generation, r.kind, r.first, r.last, 'materialized',
           r.work_id, r.command_id, r.idempotency_key, %(now)s, %(now)s
      FROM req r, guard
     WHERE guard.ok
     ORDER BY r.n
    RETURNING id, schedule_id
), work AS (
    INSERT INTO durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
                              work_version, payload, provider_safety, fingerprint_schema,
                              fingerprint_digest, retry_policy, attempt_plan, execution_deadline,
                              accepted_at, due_at, accepted_due_at, source_occurrence_id,
                              updated_at, queue_name, priority)
    SELECT %(scope_id)s, r.work_id, r.command_id, r.idempotency_key, r.work_name,
           r.work_version, r.payload, r.provider_safety, r.fingerprint_schema,
           r.fingerprint_digest, r.retry_policy, r.attempt_plan,
           r.execution_deadline, clock.now, coalesce(r.due_at, clock.now),
           coalesce(r.due_at, clock.now), occ.id, clock.now, r.queue_name, r.priority
      FROM occ JOIN req r ON r.schedule_id = occ.schedule_id, clock
     ORDER BY r.n
    RETURNING id, scope_id, work_id, due_at, accepted_at, state, source_occurrence_id
), dispatch AS (
    INSERT INTO durable_work_dispatch (scope_routing_id, work_ref, due_at)
    SELECT s.routing_id, work.id, work.due_at
      FROM work JOIN durable_schedule_scope s ON s.scope_id = work.scope_id
), history AS (
    INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail,
                                      recorded_at)
    SELECT work.scope_id, work.work_id, 'accepted', NULL, '',
           jsonb_build_object('command_id', r.command_id, 'idempotency_key', r.idempotency_key,
                              'work_name', r.work_name, 'work_version', r.work_version,
                              'fingerprint_schema', r.fingerprint_schema,
                              'source_occurrence_id', work.source_occurrence_id),
           work.accepted_at
      FROM work JOIN req r ON r.work_id = work.work_id
)
SELECT guard.ok, occ.schedule_id, occ.id, work.work_id IS NOT NULL
  FROM guard
  LEFT JOIN occ ON true
  LEFT JOIN work ON work.source_occurrence_id = occ.id

-- name: finish steps -- "finish step" of schedule_queries.sql for the whole batch: the cursor
-- moves, the Work links the single bridge left to write (an occurrence that existed already), the dispatch releases (next due time, lease
-- cleared, revision bumped: also the "finish claim" of a no-op or suspended schedule) and the
-- history rows, each part with its single-schedule guard. A null value skips that part for
-- that schedule. Returns, per part, the schedule ids it matched; the caller compares them
-- with what it asked for and raises on any difference (rolling the whole batch back).
-- "= ANY (ARRAY(SELECT schedule_id FROM steps))" repeats the join key as an index condition:
-- the planner cannot see how many rows jsonb_to_recordset yields (it assumes 100) and joined
-- the steps to a sequential scan of every definition and every dispatch row, which at 10,000
-- schedules was 6 of the statement's 8 ms (EXPLAIN ANALYZE, docs/benchmarks.md "Batched
-- schedule passes"); as an array it becomes an index scan of the batch's keys.
WITH steps AS (
    SELECT * FROM jsonb_to_recordset(%(rows)s::jsonb)
           AS s(schedule_id text, revision bigint, old_cursor timestamptz,
                new_cursor timestamptz, link_id bigint, work_id uuid, command text,
                idempotency_key text, dispatch_revision bigint, due_at timestamptz,
                generation integer, event text, detail jsonb)
), cursor_moved AS (
    UPDATE durable_schedule_definition d
       SET cursor_utc = s.new_cursor, updated_at = %(now)s::timestamptz
      FROM steps s
     WHERE s.new_cursor IS NOT NULL
       AND d.scope_id = %(scope_id)s::text AND d.schedule_id = s.schedule_id
       AND d.schedule_id = ANY (ARRAY(SELECT schedule_id FROM steps))
       AND d.revision = s.revision AND d.state = 'active'
       AND d.cursor_utc = s.old_cursor AND s.new_cursor > d.cursor_utc
    RETURNING d.schedule_id
), linked AS (
    UPDATE durable_schedule_occurrence o
       SET work_id = s.work_id, work_command = s.command,
           work_idempotency_key = s.idempotency_key, state = 'materialized',
           updated_at = %(now)s::timestamptz
      FROM steps s
     WHERE s.link_id IS NOT NULL
       AND o.scope_id = %(scope_id)s::text AND o.id = s.link_id AND o.state = 'pending'
       AND o.work_id IS NULL
    RETURNING o.schedule_id
), released AS (
    UPDATE durable_schedule_dispatch x
       SET due_at = s.due_at, lease_owner = NULL, lease_expires_at = NULL,
           dispatch_revision = x.dispatch_revision + 1
      FROM steps s
     WHERE x.scope_routing_id = %(routing_id)s AND x.schedule_id = s.schedule_id
       AND x.schedule_id = ANY (ARRAY(SELECT schedule_id FROM steps))
       AND x.lease_owner = %(lease_owner)s::text AND x.dispatch_revision = s.dispatch_revision
    RETURNING x.schedule_id
), history AS (
    INSERT INTO durable_schedule_history (scope_id, schedule_id, generation, event, actor,
            detail, recorded_at)
    SELECT %(scope_id)s::text, s.schedule_id, s.generation, s.event, %(actor)s::text,
           s.detail, %(recorded_at)s::timestamptz
      FROM steps s
     WHERE s.event IS NOT NULL
)
SELECT ARRAY(SELECT schedule_id FROM cursor_moved), ARRAY(SELECT schedule_id FROM linked),
       ARRAY(SELECT schedule_id FROM released)
