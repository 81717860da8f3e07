-- durable_schedule store, schema 13: the same trigger guarantees at a lower cost per inserted
-- row (issue 16; measured in docs/benchmarks.md "Triggers"). Released files are never edited.

-- name: identifier rule, checked in the trigger's WHEN -- the BEFORE INSERT triggers of
-- 0009_hardening.sql stay BEFORE INSERT FOR EACH ROW and keep their function, which still
-- chooses the field to name and raises the same DS115 / DS301 text (SQLSTATE 23514), so a bad
-- row still refuses its whole statement before any constraint of that row is checked, ON
-- CONFLICT included. What changes: the rule is evaluated in the WHEN clause, where PostgreSQL
-- inlines durable_schedule_is_identifier (a plain SQL expression, 0009), so a good row no
-- longer pays a PL/pgSQL call with a search_path switch; the function runs only for a row that
-- breaks the rule. NOT x is NULL for a NULL value, exactly as the function's own tests were:
-- a NULL never fires the trigger (the NOT NULL constraints refuse it, as before).
DROP TRIGGER durable_schedule_scope_identifier ON durable_schedule_scope;
CREATE TRIGGER durable_schedule_scope_identifier BEFORE INSERT ON durable_schedule_scope
    FOR EACH ROW
    WHEN (NOT durable_schedule_is_identifier(NEW.scope_id))
    EXECUTE FUNCTION durable_schedule_refuse_bad_identifiers();
DROP TRIGGER durable_schedule_definition_identifier ON durable_schedule_definition;
CREATE TRIGGER durable_schedule_definition_identifier BEFORE INSERT ON durable_schedule_definition
    FOR EACH ROW
    WHEN (NOT durable_schedule_is_identifier(NEW.schedule_id))
    EXECUTE FUNCTION durable_schedule_refuse_bad_identifiers();
DROP TRIGGER durable_work_identifiers ON durable_work;
CREATE TRIGGER durable_work_identifiers BEFORE INSERT ON durable_work
    FOR EACH ROW
    WHEN (NOT durable_schedule_is_identifier(NEW.command_id)
          OR NOT durable_schedule_is_identifier(NEW.idempotency_key)
          OR NOT durable_schedule_is_identifier(NEW.work_name)
          OR NOT durable_schedule_is_identifier(NEW.work_version))
    EXECUTE FUNCTION durable_schedule_refuse_bad_identifiers();

-- name: notify per queue, once per statement -- replaces the per-row AFTER INSERT trigger of
-- 0010_work_queues.sql: one call per INSERT statement reads the statement's inserted dispatch
-- rows (a transition table, final values: queue_name as the routing trigger copied it) and
-- sends one pg_notify('durable_work_due', queue) per distinct queue among the rows with a due
-- time. Listeners see exactly what they saw: PostgreSQL delivers identical notifications of
-- one transaction once, so the per-row form already sent one per distinct queue; rows without
-- due_at still send nothing, and a statement that inserts nothing (ON CONFLICT, an empty
-- SELECT) sends nothing. The AFTER UPDATE OF due_at "sooner" trigger stays per row: a
-- statement-level form would need an UPDATE transition table, which PostgreSQL refuses with a
-- column list, so it would capture every updated dispatch row of the Work runtime's leases.
CREATE FUNCTION durable_work_notify_inserted_queues()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    PERFORM pg_notify('durable_work_due', q.queue_name)
       FROM (SELECT DISTINCT n.queue_name FROM new_dispatch n WHERE n.due_at IS NOT NULL) q;
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION durable_work_notify_inserted_queues() FROM PUBLIC;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_work_notify_inserted_queues() '
                   'SET search_path = %I, pg_temp', current_schema());
END
$pin$;
DROP TRIGGER durable_work_dispatch_notify_insert ON durable_work_dispatch;
CREATE TRIGGER durable_work_dispatch_notify_insert
    AFTER INSERT ON durable_work_dispatch
    REFERENCING NEW TABLE AS new_dispatch
    FOR EACH STATEMENT
    EXECUTE FUNCTION durable_work_notify_inserted_queues();

-- name: version -- schema 13. The floor stays: code of schema 12 inserts the same rows and
-- maps the same refusals, so old and new processes may share the store during a rolling
-- deploy (docs/compatibility.md).
UPDATE durable_schedule_store SET schema_version = 13, updated_at = now();
