-- durable_schedule store, schema 3: the Schedule protocol (docs/protocol/schedules.md). Released files are never edited.

-- name: version -- schema 3 is readable by code of schema >= 3 only.
UPDATE durable_schedule_store SET schema_version = 3, compatibility_floor = 3, updated_at = now();

-- name: occurrence indexes -- the processor's slot lookup reads the latest linked occurrence of
-- one schedule, and update/delete retire its pending occurrences: both through small indexes
-- led by scope_id, so neither grows with a schedule's history (PERFORMANCE.md).
CREATE INDEX durable_schedule_occurrence_linked
    ON durable_schedule_occurrence (scope_id, schedule_id, id) WHERE work_id IS NOT NULL;
CREATE INDEX durable_schedule_occurrence_pending
    ON durable_schedule_occurrence (scope_id, schedule_id) WHERE state = 'pending';

-- name: terminal work requeue -- docs/protocol/schedules.md "Occurrence materialization": when a
-- materialized Work target reaches a terminal state, the same transaction makes the schedule's
-- dispatch row due now if a pending coalesced occurrence exists in the active generation.
-- Runs as the invoker (the runtime role inside its scoped transaction), so row-level security
-- admits only that scope's rows. A leased dispatch row is left alone: its holder computes the
-- next due time itself (the processor locks the slot's Work FOR SHARE, so the holder either
-- sees the terminal state or this trigger runs after the holder committed and cleared the
-- lease). Retries, suspension and other nonterminal states never fire it. It changes only
-- dispatch eligibility: occurrence identity, cursor and Work acceptance stay the processor's.
CREATE FUNCTION durable_schedule_requeue_coalesced()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
    UPDATE durable_schedule_dispatch d
       SET due_at = LEAST(d.due_at, durable_schedule_clock('clock')),
           dispatch_revision = d.dispatch_revision + 1
      FROM durable_schedule_occurrence o
      JOIN durable_schedule_definition def
        ON def.scope_id = o.scope_id AND def.schedule_id = o.schedule_id
      JOIN durable_schedule_scope s ON s.scope_id = o.scope_id
     WHERE o.scope_id = NEW.scope_id AND o.id = NEW.source_occurrence_id
       AND def.state = 'active'
       AND d.scope_routing_id = s.routing_id AND d.schedule_id = o.schedule_id
       AND d.lease_owner IS NULL
       AND EXISTS (SELECT 1 FROM durable_schedule_occurrence p
                    WHERE p.scope_id = def.scope_id AND p.schedule_id = def.schedule_id
                      AND p.generation = def.active_generation
                      AND p.kind = 'coalesced' AND p.state = 'pending');
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_requeue_coalesced() FROM PUBLIC;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_requeue_coalesced() SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;
CREATE TRIGGER durable_work_terminal_requeue
    AFTER UPDATE OF state ON durable_work
    FOR EACH ROW
    WHEN (NEW.source_occurrence_id IS NOT NULL
          AND NEW.state IN ('succeeded', 'failed', 'expired', 'canceled')
          AND OLD.state NOT IN ('succeeded', 'failed', 'expired', 'canceled'))
    EXECUTE FUNCTION durable_schedule_requeue_coalesced();
