-- Queries of the cron tz-rules inventory (operations/tz_rules.py): read inside one scope's
-- runtime transaction, so row-level security admits that scope's rows only.

-- name: active_cron_generations -- the active generation of every live cron schedule.
select d.schedule_id, d.state, d.revision, d.cursor_utc, d.suspension_reason, g.generation,
       g.spec::text, g.evaluator_version
from durable_schedule_definition d
join durable_schedule_generation g
  on g.scope_id = d.scope_id and g.schedule_id = d.schedule_id
 and g.generation = d.active_generation
where g.kind = 'cron' and d.state in ('active', 'suspended', 'completed')
order by d.schedule_id
