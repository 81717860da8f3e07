-- Read-only and maintenance queries of durable_schedule/operations (durable_status,
-- durable_partitions, durable_recover). Not a migration file.

-- name: routing_ids -- every routing id ever issued to a scope (the payload-free registry the
-- owner may read; operations/scopes.py resolves each through the runtime's routing lookup).
select routing_id from durable_schedule_routing order by 1

-- name: schedule_backlog -- due rows, the oldest lateness and expired leases of the schedule queue.
select count(*) filter (where due_at <= durable_schedule_clock('clock') and lease_owner is null),
       extract(epoch from durable_schedule_clock('clock')
               - min(due_at) filter (where lease_owner is null)),
       count(*) filter (where lease_owner is not null
                          and lease_expires_at <= durable_schedule_clock('clock'))
  from durable_schedule_dispatch

-- name: work_backlog -- the same three figures for the Work queue.
select count(*) filter (where due_at <= durable_schedule_clock('clock') and lease_owner is null),
       extract(epoch from durable_schedule_clock('clock')
               - min(due_at) filter (where lease_owner is null)),
       count(*) filter (where lease_owner is not null
                          and lease_expires_at <= durable_schedule_clock('clock'))
  from durable_work_dispatch

-- name: suspended_schedules -- suspended schedules of the current scope (RLS scoped).
-- The evidence's diagnostic code and short reason (a quarantine's DS114 invalid_spec, DS160
-- tz_unavailable, ...) say which repair applies; null for evidence without them.
select schedule_id, suspension_reason, suspended_at, revision, id,
       suspension_evidence->>'code', suspension_evidence->'context'->>'reason'
  from durable_schedule_definition where state = 'suspended' order by schedule_id

-- name: unlisted_queue_schedules -- live schedules of the current scope whose active
-- generation's target names a queue outside %(allowed)s (RLS scoped). A target stores its queue
-- only when it is not the default one (work/target.py), and the default queue is always allowed.
select d.schedule_id, g.target->>'queue'
  from durable_schedule_definition d
  join durable_schedule_generation g
    on g.scope_id = d.scope_id and g.schedule_id = d.schedule_id
   and g.generation = d.active_generation
 where d.state in ('active', 'paused') and g.target ? 'queue'
   and not (g.target->>'queue' = any(%(allowed)s))
 order by d.schedule_id

-- name: work_states -- Work counts by state, and by suspension reason for suspended Work, in
-- the current scope (RLS scoped).
select state, suspension_reason, count(*) from durable_work group by state, suspension_reason

-- name: partitions -- the months that have a history partition.
select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
 where i.inhparent = 'durable_schedule_history'::regclass order by 1

-- name: expected_partitions -- the partition names the current and next month need.
select 'durable_schedule_history_' || to_char(m, 'YYYYMM')
  from (select date_trunc('month', durable_schedule_clock('clock') at time zone 'UTC') as m
        union all
        select date_trunc('month', durable_schedule_clock('clock') at time zone 'UTC')
               + interval '1 month') months

-- name: ensure_partitions -- create the current and next month's history partitions.
select ensure_schedule_history_partitions()

-- name: try_partition_lock -- one runner at a time does partition maintenance.
select pg_try_advisory_xact_lock(%s)

-- name: bump_epoch -- a restore or a runtime handover: every schedule is fenced until released.
update durable_schedule_store set runtime_epoch = runtime_epoch + 1, updated_at = now()
 returning runtime_epoch

-- name: current_epoch -- the store's runtime epoch.
select runtime_epoch from durable_schedule_store

-- name: seconds_until_due -- for the idle sleep of a --loop runner.
select durable_schedule_seconds_until_due(%s)

-- name: scope_row -- one scope's routing id and generation (owner, inside that scope's
-- transaction-local setting: FORCE ROW LEVEL SECURITY binds a non-superuser owner too).
select routing_id, generation from durable_schedule_scope where scope_id = %(scope_id)s

-- name: lock_scope_row -- the same row FOR UPDATE (re-provisioning; waits for fence readers).
select routing_id, generation from durable_schedule_scope where scope_id = %(scope_id)s
   for update

-- name: bump_scope_generation -- re-provision a scope: its schedules fence themselves on their
-- next pass (scope_generation_mismatch). The row lock waits for scoped transactions holding the
-- scope row FOR SHARE (the processor's fence read), so no decision straddles the bump.
update durable_schedule_scope set generation = generation + 1, updated_at = now()
 where scope_id = %(scope_id)s
returning generation

-- name: scope_schedules -- the schedules of the current scope that are not deleted, with the
-- scope generation they are bound to (RLS scoped).
select schedule_id, state, scope_generation from durable_schedule_definition
 where scope_id = %(scope_id)s and state <> 'deleted' order by schedule_id

-- name: runners -- runner heartbeats (owner-only table, no RLS): running ones, and those that
-- stopped within the last hour; silent_seconds is the time since the last beat.
select runner_id, kind, lease_owner, host, pid, version, started_at, beat_at, last_pass_at,
       passes, last_counts, stopped_at,
       extract(epoch from durable_schedule_clock('clock') - beat_at)
  from durable_runner_heartbeat
 where stopped_at is null or stopped_at > durable_schedule_clock('clock') - interval '1 hour'
 order by kind, started_at, runner_id

-- name: work_finished_last_hour -- Work of the current scope that finished in the last hour, by state (RLS scoped).
select state, count(*) from durable_work
 where finished_at >= durable_schedule_clock('clock') - interval '1 hour'
 group by state

-- name: work_backlog_by_name -- due pending Work of the current scope per Work name, with its oldest lateness (RLS scoped).
select work_name, count(*),
       extract(epoch from durable_schedule_clock('clock') - min(due_at))
  from durable_work
 where state = 'pending' and due_at <= durable_schedule_clock('clock')
 group by work_name

-- name: bound_probe -- cap this transaction's lock_timeout and statement_timeout at %(ms)s
-- milliseconds (a lower one already in force is kept); returns each setting's previous value
-- (operations/probe.py: durable_status, the store gauges, the admin dashboard).
select name, setting,
       set_config(name, case when setting::bigint between 1 and %(ms)s::bigint then setting
                             else (%(ms)s::bigint)::text end, true)
  from pg_settings where name in ('lock_timeout', 'statement_timeout') order by name

-- name: restore_probe -- put back the values bound_probe replaced (a caller's transaction).
select set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true)
