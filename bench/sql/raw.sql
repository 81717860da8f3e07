-- Hand-written psycopg hot paths: the raw ceiling the runtime is compared with (issue 8).
-- They write the same rows the protocol writes (occurrence with its Work link, Work, Work
-- dispatch row, cursor move, dispatch release) with the fewest round trips SQL allows, as the
-- owner, without roles, scope settings, fences or history. Named blocks: `-- name: key --`.

-- name: claim schedules -- the claim function's statement, inlined (one round trip). The clock
-- is read once (a scalar subquery, like the function's now_ts variable), so it is an index
-- condition on the partial due index rather than a filter evaluated row by row.
WITH now AS (SELECT durable_schedule_clock('clock') AS ts)
UPDATE durable_schedule_dispatch d
   SET lease_owner = %(owner)s,
       lease_expires_at = (SELECT ts FROM now) + %(lease)s::interval,
       due_at = (SELECT ts FROM now) + %(lease)s::interval,
       lease_generation = d.lease_generation + 1,
       dispatch_revision = d.dispatch_revision + 1
 WHERE d.dispatch_id IN (
        SELECT q.dispatch_id FROM durable_schedule_dispatch q
         WHERE q.due_at IS NOT NULL AND q.due_at <= (SELECT ts FROM now)
         ORDER BY q.due_at
         LIMIT %(n)s
         FOR UPDATE SKIP LOCKED)
RETURNING d.scope_routing_id, d.schedule_id, d.dispatch_revision;

-- name: materialize -- one statement per transaction: for every claimed (routing id, schedule,
-- revision) it locks the definition, computes the next Every instant, inserts the occurrence
-- with its Work link, the Work and its dispatch row, moves the cursor and releases the lease.
WITH claimed AS (
    SELECT * FROM unnest(%(rids)s::bigint[], %(sids)s::text[], %(revs)s::bigint[])
        AS c(rid, sid, rev)
), d AS (
    SELECT def.id AS def_id, def.scope_id, def.schedule_id, def.cursor_utc, def.active_generation,
           c.rid, c.rev, g.target,
           make_interval(secs => (g.spec ->> 'interval_us')::bigint / 1e6) AS step
      FROM claimed c
      JOIN durable_schedule_scope s ON s.routing_id = c.rid
      JOIN durable_schedule_definition def
        ON def.scope_id = s.scope_id AND def.schedule_id = c.sid AND def.state = 'active'
      JOIN durable_schedule_generation g
        ON g.scope_id = def.scope_id AND g.schedule_id = def.schedule_id
       AND g.generation = def.active_generation
       FOR UPDATE OF def
), n AS (
    SELECT d.*, d.cursor_utc + d.step AS nominal, durable_schedule_clock('transaction') AS now_ts,
           md5(d.scope_id || '/' || d.schedule_id || '/' || d.active_generation || '/'
               || (d.cursor_utc + d.step)::text)::uuid AS work_id
      FROM d
), occ AS (
    INSERT INTO durable_schedule_occurrence (scope_id, schedule_id, generation, kind,
            first_nominal_utc, last_nominal_utc, state, work_id, work_command,
            work_idempotency_key, created_at, updated_at)
    SELECT scope_id, schedule_id, active_generation, 'nominal', nominal, nominal,
           'materialized', work_id, 'occ:' || schedule_id, work_id::text, now_ts, now_ts
      FROM n
    RETURNING id, scope_id, schedule_id
), w AS (
    INSERT INTO durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
            work_version, payload, provider_safety, fingerprint_schema, fingerprint_digest,
            retry_policy, accepted_at, due_at, source_occurrence_id, updated_at)
    SELECT n.scope_id, n.work_id, 'occ:' || n.schedule_id, n.work_id::text,
           coalesce(n.target ->> 'work_name', 'bench.noop'),
           coalesce(n.target ->> 'work_version', 'v1'),
           coalesce(n.target -> 'payload', '{}'::jsonb), 'idempotent', 'v1',
           md5(coalesce(n.target -> 'payload', '{}'::jsonb)::text), '{}'::jsonb,
           clock_timestamp(), n.now_ts, occ.id, n.now_ts
      FROM n JOIN occ ON occ.scope_id = n.scope_id AND occ.schedule_id = n.schedule_id
    RETURNING id, scope_id
), wd AS (
    INSERT INTO durable_work_dispatch (scope_routing_id, work_ref, due_at)
    SELECT s.routing_id, w.id, clock_timestamp()
      FROM w JOIN durable_schedule_scope s ON s.scope_id = w.scope_id
), moved AS (
    UPDATE durable_schedule_definition def
       SET cursor_utc = n.nominal, updated_at = n.now_ts
      FROM n WHERE def.id = n.def_id
)
UPDATE durable_schedule_dispatch x
   SET due_at = n.nominal + n.step, lease_owner = NULL, lease_expires_at = NULL,
       dispatch_revision = x.dispatch_revision + 1
  FROM n
 WHERE x.scope_routing_id = n.rid AND x.schedule_id = n.schedule_id
   AND x.lease_owner = %(owner)s AND x.dispatch_revision = n.rev;
