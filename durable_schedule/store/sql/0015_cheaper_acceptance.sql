-- durable_schedule store, schema 14: the identifier rule of a Work row at a lower cost per
-- INSERT statement (issue 16; measured in docs/benchmarks.md "Acceptance, fourth look").
-- Released files are never edited.

-- name: identifier rule of a Work row, one cached call in the trigger's WHEN -- the WHEN clause
-- of 0014_cheaper_triggers.sql called durable_schedule_is_identifier four times. PostgreSQL
-- prepares a trigger's WHEN once per statement (not per row): it inlined the SQL function four
-- times, parsing its body with the two long bracket expressions each time, about 0.1 ms of
-- server CPU per statement on the reference machine, which a one-row enqueue paid in full. The
-- WHEN now calls one PL/pgSQL function: its expression is planned once per session (PL/pgSQL
-- caches it, with durable_schedule_is_identifier inlined there), so a statement only reads a
-- four-argument call. The rule itself is unchanged and still written once, in
-- durable_schedule_is_identifier (0009_hardening.sql): the function returns that function's
-- answer for the four fields joined by AND, which is the old WHEN negated (NOT a OR NOT b ...
-- is NOT (a AND b ...) in SQL's three-valued logic, NULL included: a NULL field alone never
-- fires the trigger, the NOT NULL constraints refuse it, as before). The trigger stays BEFORE
-- INSERT FOR EACH ROW with the same function, so a bad row refuses its whole statement with the
-- same DS115 text (SQLSTATE 23514) before any constraint of that row is checked. The call is
-- schema-qualified (written with the migration's schema), so the function needs no pinned
-- search_path, whose per-call GUC switch would cost more than the call: nothing in it is
-- resolved through the caller's search path (the inlined body qualifies its operators).
DO $make$
BEGIN
    EXECUTE format($def$
CREATE FUNCTION durable_work_identifiers_ok(p_command_id text, p_idempotency_key text,
                                            p_work_name text, p_work_version text)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $fn$
BEGIN
    RETURN %1$I.durable_schedule_is_identifier(p_command_id)
       AND %1$I.durable_schedule_is_identifier(p_idempotency_key)
       AND %1$I.durable_schedule_is_identifier(p_work_name)
       AND %1$I.durable_schedule_is_identifier(p_work_version);
END
$fn$$def$, current_schema());
END
$make$;
REVOKE ALL ON FUNCTION durable_work_identifiers_ok(text, text, text, text) FROM PUBLIC;
-- The insert trigger below calls it as the inserting role (the runtime).
GRANT EXECUTE ON FUNCTION durable_work_identifiers_ok(text, text, text, text) TO durable_runtime;
DROP TRIGGER durable_work_identifiers ON durable_work;
CREATE TRIGGER durable_work_identifiers BEFORE INSERT ON durable_work
    FOR EACH ROW
    WHEN (NOT durable_work_identifiers_ok(NEW.command_id, NEW.idempotency_key, NEW.work_name,
                                          NEW.work_version))
    EXECUTE FUNCTION durable_schedule_refuse_bad_identifiers();

-- name: version -- schema 14. The floor stays: code of schema 13 inserts the same rows and
-- maps the same refusals, so old and new processes may share the store during a rolling
-- deploy (docs/compatibility.md).
UPDATE durable_schedule_store SET schema_version = 14, updated_at = now();
