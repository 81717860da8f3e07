-- Queries of the cron tz-rules inventory (operations/tz_rules.py): read inside one scope's
-- runtime transaction, so row-level security admits that scope's rows only.

-- name: active_cron_generations -- the active generation of every cron schedule the
-- processor will still evaluate: active, suspended (a repair re-issues it) and paused (resume
-- keeps its grid). A completed one has no instant left (an update that gives it one binds the
-- rules in force then), so its rules cannot move anything.
select d.schedule_id, d.state, d.revision, d.cursor_utc, d.suspension_reason, g.generation,
       g.spec::text, g.evaluator_version
from durable_schedule_definition d
join durable_schedule_generation g
  on g.scope_id = d.scope_id and g.schedule_id = d.schedule_id
 and g.generation = d.active_generation
where g.kind = 'cron' and d.state in ('active', 'suspended', 'paused')
order by d.schedule_id
