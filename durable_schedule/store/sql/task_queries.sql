-- Queries of the django.tasks backend (durable_schedule/tasks/results.py). Loaded at run time,
-- never by a migration.

-- name: attempts -- the history rows a TaskResult is built from: admissions (who ran which attempt, when), admissions handed back uninvoked, and outcomes.
SELECT event, attempt, actor, detail, recorded_at
  FROM durable_work_history
 WHERE scope_id = %(scope_id)s AND work_id = %(work_id)s
   AND event IN ('admitted', 'not_invoked', 'retry_scheduled', 'succeeded', 'failed', 'expired',
                 'canceled', 'suspended', 'late_result_quarantined')
 ORDER BY id

-- name: routing -- the queue, priority and due time the Work was accepted with (TaskResult.task shows them).
SELECT queue_name, priority, accepted_due_at FROM durable_work
 WHERE scope_id = %(scope_id)s AND work_id = %(work_id)s
