-- Bench seeding that is not a copy of a prototype. Named blocks: `-- name: key --`.

-- name: history -- a store that has been running: n finished occurrences, each with succeeded
-- Work, of retired schedules (no definition or dispatch row), and what running them left behind:
-- one resolved permit and the accepted / admitted / succeeded history rows per Work. Without them
-- the occurrence, Work, permit and history tables start empty, each backend caches its plans
-- (foreign-key checks, the permit facts the Work locks read) as sequential scans of an empty
-- table, and every later statement pays a scan that grows with the run (measured: the raw batch
-- of 100 went from 16 ms to 130 ms over 10,000 schedules; the Work pipeline's two lock
-- statements from 0.2 ms to 1.2 ms per batch of 10 over 2,000 Work, docs/benchmarks.md).
WITH occ AS (
    INSERT INTO durable_schedule_occurrence (scope_id, schedule_id, generation, kind,
            first_nominal_utc, last_nominal_utc, state, work_id, work_command,
            work_idempotency_key, created_at, updated_at)
    SELECT %(scope)s, 'retired-' || i, 1, 'nominal', %(at)s::timestamptz, %(at)s::timestamptz,
           'materialized', md5('retired-' || i)::uuid, 'occ:retired-' || i,
           md5('retired-' || i), %(at)s::timestamptz, %(at)s::timestamptz
      FROM generate_series(1, %(n)s::int) i
    RETURNING id, scope_id, work_id, work_command, work_idempotency_key
), work AS (
    INSERT INTO durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
            work_version, payload, provider_safety, fingerprint_schema, fingerprint_digest,
            retry_policy, accepted_at, due_at, state, attempt, source_occurrence_id,
            finished_at, updated_at)
    SELECT scope_id, work_id, work_command, work_idempotency_key, 'bench.noop', 'v1', '{}',
           'idempotent', 'v1', md5('{}'), '{}', %(at)s::timestamptz, %(at)s::timestamptz,
           'succeeded', 1, id, %(at)s::timestamptz, %(at)s::timestamptz
      FROM occ
    RETURNING scope_id, work_id
), permits AS (
    INSERT INTO durable_work_permit (scope_id, work_id, permit_no, attempt, lease_generation,
            admitted_at, outcome, resolved_at, resolved_by, resolution_source)
    SELECT scope_id, work_id, 1, 1, 1, %(at)s::timestamptz, 'succeeded', %(at)s::timestamptz,
           'bench', 'executor'
      FROM work
)
INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail, recorded_at)
SELECT w.scope_id, w.work_id, e.event, e.attempt, 'bench', '{}', %(at)s::timestamptz
  FROM work w,
       (VALUES ('accepted', NULL::integer), ('admitted', 1), ('succeeded', 1)) AS e(event, attempt);
