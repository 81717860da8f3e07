-- Named queries of the acceptance path (durable_schedule/work/acceptance.py).

-- name: accept -- 1..n enqueue requests in one statement: role and scope entry, rows, compare-or-return, the caller's role and scope restored (0008_acceptance.sql).
SELECT item, status, work_id, state, accepted_at, facts
  FROM durable_schedule_accept_work(%s, %s::jsonb, %s)
