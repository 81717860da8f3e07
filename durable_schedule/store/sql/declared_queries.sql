-- Queries of schedules declared in code (durable_schedule/schedules/declared.py). Not a
-- migration file.

-- name: sync_lock -- one sync_schedules at a time, for the length of its transaction.
SELECT pg_advisory_xact_lock(%s)

-- name: schedule_routing_ids -- every scope that has a schedule (read by the owner: payload-free).
SELECT DISTINCT scope_routing_id FROM durable_schedule_dispatch ORDER BY 1

-- name: synced_schedule_ids -- the schedules of the current scope that sync created or updated
-- from a declaration (any generation written under its actor), so a later generation written by
-- someone else (an operator's re-issue, durable_tz_rules --apply) leaves them managed. RLS
-- scoped; read inside the sync transaction, after its advisory lock.
SELECT DISTINCT schedule_id FROM durable_schedule_generation
 WHERE scope_id = %(scope_id)s AND created_by = %(actor)s
