-- durable_schedule store, schema 12: overlap policy buffer_all (docs/schedules.md "Overlap
-- policies"). Released files are never edited.

-- name: buffer limit -- per generation, immutable like the rest of the row: how many instants a
-- buffer_all generation keeps waiting behind the held slot (each its own pending occurrence).
-- Set exactly for buffer_all; the API refuses anything else (DS154) before it writes.
ALTER TABLE durable_schedule_generation
    ADD COLUMN buffer_limit integer CHECK (buffer_limit BETWEEN 1 AND 1000),
    ADD CONSTRAINT durable_schedule_generation_buffer
        CHECK ((overlap_policy = 'buffer_all') = (buffer_limit IS NOT NULL));

-- name: terminal work requeue -- as in schema 3 (0004_schedule_protocol.sql), but a pending
-- occurrence of any scheduled kind in the active generation makes the dispatch row due: the
-- pending coalesced occurrence of queue_one, or the oldest buffered occurrence of buffer_all,
-- runs as soon as the Work holding the slot reaches a terminal state. A pending manual
-- occurrence never outlives its own transaction, so it is excluded only to keep the meaning
-- exact. CREATE OR REPLACE keeps owner, grants and the trigger; the search_path is pinned again.
CREATE OR REPLACE FUNCTION durable_schedule_requeue_coalesced()
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
                      AND p.kind IN ('coalesced', 'nominal', 'recovery')
                      AND p.state = 'pending');
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

-- name: version -- schema 12 is readable by code of schema >= 12 only (older code would
-- quarantine a buffer_all generation and never run its buffered occurrences).
UPDATE durable_schedule_store SET schema_version = 12, compatibility_floor = 12, updated_at = now();
