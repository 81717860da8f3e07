-- Retention queries of durable_prune (durable_schedule/operations/retention.py). Not a
-- migration file. The scoped ones run as the migration owner inside one scope's transaction
-- (transaction-local durable_schedule.scope_id): row-level security admits that scope only,
-- and the owner, who owns the tables, may delete. What is kept and why: docs/operations.md
-- "Retention".

-- name: enter_scope_as_owner -- transaction-local scope for the owner's own statements.
select set_config('durable_schedule.scope_id', %s, true)

-- name: ignore_work_history_protection -- lets this transaction delete Work history rows:
-- django-pgtrigger's append-only trigger skips the triggers named in pgtrigger.ignore.
select set_config('pgtrigger.ignore', '{' || string_agg(tgname, ',') || '}', true)
  from pg_trigger
 where tgrelid = 'durable_work_history'::regclass and tgname like 'pgtrigger_%%'

-- name: mark_position -- the scope's retention mark, and whether it lies after the clock
-- seam's now (the database clock went back past it). No row: the scope was never pruned.
SELECT finished_at, work_ref, finished_at > durable_schedule_clock('clock')
  FROM durable_work_retention_mark WHERE scope_id = %(scope_id)s

-- name: forget_mark -- drop a mark that lies after now: it says nothing true about what is
-- pruned any more; this run scans the scope in full and writes the mark anew.
DELETE FROM durable_work_retention_mark WHERE scope_id = %(scope_id)s

-- name: prune_work_batch -- one batch of terminal Work finished before the cutoff, after the
-- key (after_at, after_ref), that still has permits, quarantine rows or history: delete them
-- and move the mark forward (never back). The first batch of a run starts one margin before
-- the mark (or at the start: a full scan), each further batch after the previous batch's last
-- Work. Work in that margin already pruned has nothing left and is not selected again.
-- The durable_work row itself is kept (the identity compare-or-return needs).
WITH victims AS MATERIALIZED (
    SELECT w.id, w.scope_id, w.work_id, w.finished_at
      FROM durable_work w
     WHERE w.scope_id = %(scope_id)s AND w.finished_at IS NOT NULL
       AND (w.finished_at, w.id) > (coalesce(%(after_at)s::timestamptz, '-infinity'),
                                    %(after_ref)s::bigint)
       AND w.finished_at < %(cutoff)s
       AND w.state IN ('succeeded', 'failed', 'expired', 'canceled')
       AND (EXISTS (SELECT 1 FROM durable_work_history h
                     WHERE h.scope_id = w.scope_id AND h.work_id = w.work_id)
            OR EXISTS (SELECT 1 FROM durable_work_permit p
                        WHERE p.scope_id = w.scope_id AND p.work_id = w.work_id)
            OR EXISTS (SELECT 1 FROM durable_work_quarantine q
                        WHERE q.scope_id = w.scope_id AND q.work_id = w.work_id))
     ORDER BY w.finished_at, w.id
     LIMIT %(batch)s
), permits AS (
    DELETE FROM durable_work_permit p USING victims v
     WHERE p.scope_id = v.scope_id AND p.work_id = v.work_id RETURNING 1
), quarantine AS (
    DELETE FROM durable_work_quarantine q USING victims v
     WHERE q.scope_id = v.scope_id AND q.work_id = v.work_id RETURNING 1
), history AS (
    DELETE FROM durable_work_history h USING victims v
     WHERE h.scope_id = v.scope_id AND h.work_id = v.work_id RETURNING 1
), last AS (
    SELECT finished_at, id FROM victims ORDER BY finished_at DESC, id DESC LIMIT 1
), moved AS (
    INSERT INTO durable_work_retention_mark AS m (scope_id, finished_at, work_ref)
    SELECT %(scope_id)s, finished_at, id FROM last
    ON CONFLICT (scope_id) DO UPDATE
       SET finished_at = EXCLUDED.finished_at, work_ref = EXCLUDED.work_ref, updated_at = now()
     WHERE (EXCLUDED.finished_at, EXCLUDED.work_ref) > (m.finished_at, m.work_ref)
    RETURNING 1
)
SELECT (SELECT count(*) FROM victims), (SELECT count(*) FROM permits),
       (SELECT count(*) FROM quarantine), (SELECT count(*) FROM history),
       (SELECT count(*) FROM moved), (SELECT finished_at FROM last), (SELECT id FROM last)

-- name: mark_after_full_scan -- a full scan of a scope whose mark was forgotten found nothing
-- left to remove: every terminal Work before the cutoff is pruned, so the mark goes on the
-- last of them (else the next run would scan the scope in full again).
INSERT INTO durable_work_retention_mark (scope_id, finished_at, work_ref)
SELECT w.scope_id, w.finished_at, w.id
  FROM durable_work w
 WHERE w.scope_id = %(scope_id)s AND w.finished_at IS NOT NULL AND w.finished_at < %(cutoff)s
   AND w.state IN ('succeeded', 'failed', 'expired', 'canceled')
 ORDER BY w.finished_at DESC, w.id DESC
 LIMIT 1
ON CONFLICT (scope_id) DO NOTHING

-- name: preview_work -- what prune_work_batch would remove in this scope, all batches of a run
-- together (the same start key, the same "something left" test).
WITH victims AS MATERIALIZED (
    SELECT w.scope_id, w.work_id
      FROM durable_work w
     WHERE w.scope_id = %(scope_id)s AND w.finished_at IS NOT NULL
       AND (w.finished_at, w.id) > (coalesce(%(after_at)s::timestamptz, '-infinity'),
                                    %(after_ref)s::bigint)
       AND w.finished_at < %(cutoff)s
       AND w.state IN ('succeeded', 'failed', 'expired', 'canceled')
       AND (EXISTS (SELECT 1 FROM durable_work_history h
                     WHERE h.scope_id = w.scope_id AND h.work_id = w.work_id)
            OR EXISTS (SELECT 1 FROM durable_work_permit p
                        WHERE p.scope_id = w.scope_id AND p.work_id = w.work_id)
            OR EXISTS (SELECT 1 FROM durable_work_quarantine q
                        WHERE q.scope_id = w.scope_id AND q.work_id = w.work_id))
)
SELECT (SELECT count(*) FROM victims),
       (SELECT count(*) FROM durable_work_permit p JOIN victims v USING (scope_id, work_id)),
       (SELECT count(*) FROM durable_work_quarantine q JOIN victims v USING (scope_id, work_id)),
       (SELECT count(*) FROM durable_work_history h JOIN victims v USING (scope_id, work_id))

-- name: jit_off -- the dry run's counts walk every Work of the margin (as the real run's batches
-- do, in pieces): with all of it in one statement the planner's cost passes the JIT thresholds,
-- and compiling costs far more than the walk. Transaction-local; returns the value before.
WITH before AS MATERIALIZED (SELECT current_setting('jit') AS jit)
SELECT jit, set_config('jit', 'off', true) FROM before

-- name: jit_restore -- the value jit_off returned, for the rest of the caller's transaction.
SELECT set_config('jit', %s, true)

-- name: prune_occurrences_batch -- occurrences no Work and no future pass can need: skipped,
-- superseded or canceled, last touched before the cutoff, wholly behind their schedule's
-- cursor (a pass never evaluates before the cursor again), and named by no Work row.
WITH victims AS (
    SELECT o.id
      FROM durable_schedule_occurrence o
      JOIN durable_schedule_definition d
        ON d.scope_id = o.scope_id AND d.schedule_id = o.schedule_id
     WHERE o.scope_id = %(scope_id)s
       AND o.state IN ('skipped', 'superseded', 'canceled') AND o.updated_at < %(cutoff)s
       AND o.last_nominal_utc < d.cursor_utc
       AND NOT EXISTS (SELECT 1 FROM durable_work w
                        WHERE w.scope_id = o.scope_id AND w.source_occurrence_id = o.id)
     ORDER BY o.updated_at
     LIMIT %(batch)s
)
DELETE FROM durable_schedule_occurrence x USING victims v WHERE x.id = v.id

-- name: preview_occurrences -- how many occurrences prune_occurrences_batch would remove.
SELECT count(*)
  FROM durable_schedule_occurrence o
  JOIN durable_schedule_definition d ON d.scope_id = o.scope_id AND d.schedule_id = o.schedule_id
 WHERE o.scope_id = %(scope_id)s
   AND o.state IN ('skipped', 'superseded', 'canceled') AND o.updated_at < %(cutoff)s
   AND o.last_nominal_utc < d.cursor_utc
   AND NOT EXISTS (SELECT 1 FROM durable_work w
                    WHERE w.scope_id = o.scope_id AND w.source_occurrence_id = o.id)

-- name: prune_heartbeats -- heartbeats of runners that stopped or died before the cutoff.
DELETE FROM durable_runner_heartbeat WHERE beat_at < %(cutoff)s

-- name: preview_heartbeats -- how many heartbeat rows prune_heartbeats would remove.
SELECT count(*) FROM durable_runner_heartbeat WHERE beat_at < %(cutoff)s

-- name: cutoff -- now (the clock seam) minus the retention age.
SELECT durable_schedule_clock('clock') - make_interval(secs => %s)

-- name: history_partitions -- attached monthly partitions with their lower bound (default excluded).
select c.relname, (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz
  from pg_inherits i join pg_class c on c.oid = i.inhrelid
 where i.inhparent = 'durable_schedule_history'::regclass
   and c.relname ~ '^durable_schedule_history_[0-9]{6}$'
 order by 1

-- name: detached_history_tables -- archived (detached) monthly history tables not yet dropped.
select c.relname from pg_class c
 where c.relkind = 'r' and c.relname ~ '^durable_schedule_history_[0-9]{6}$'
   and c.relnamespace = current_schema()::regnamespace
   and not exists (select 1 from pg_inherits i where i.inhrelid = c.oid)
 order by 1

-- name: current_month -- the first instant of the current month (UTC, clock seam).
select (date_trunc('month', durable_schedule_clock('clock') at time zone 'UTC')) at time zone 'UTC'
