-- Queries of schedules declared in code (durable_schedule/schedules/declared.py). Not a
-- migration file.

-- name: sync_lock -- one sync_schedules at a time, for the length of its transaction.
SELECT pg_advisory_xact_lock(%s)

-- name: schedule_routing_ids -- every scope that has a schedule (read by the owner: payload-free).
SELECT DISTINCT scope_routing_id FROM durable_schedule_dispatch ORDER BY 1
