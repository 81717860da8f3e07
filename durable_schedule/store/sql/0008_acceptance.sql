-- durable_schedule store, schema 7: acceptance in one statement (docs/work.md "Accepting Work").
-- Released files are never edited.

-- name: accepted due time -- the due time fixed at acceptance, kept apart from the moving due_at.
-- durable_work.due_at moves with every retry, so it cannot prove what was requested. This column
-- is written once by the acceptance and never granted for UPDATE to the runtime: the compare of
-- a duplicate checks it against the request. Rows accepted before schema 7 keep NULL (the
-- original due time is not known any more) and their due time is then checked by the digest only.
ALTER TABLE durable_work ADD COLUMN accepted_due_at timestamptz;

-- name: accept rows -- insert Work + dispatch + history for every new item, then compare the rest.
-- Runs as durable_runtime inside the scope (the caller below proves both). One INSERT ... SELECT
-- for all items, ON CONFLICT DO NOTHING; the items it did not insert are compared with the row
-- that holds their identity (compare-or-return, never a blind second write). The comparison is
-- the re-fingerprint of the stored immutable facts: the request's digest equals the stored one,
-- so every fact the fingerprint covers must equal the request's; a fact that differs means the
-- row was changed after acceptance ('tampered', DS233). jsonb equality is PostgreSQL's own
-- (numbers compare by value), so a legitimate duplicate is never refused for a number spelling.
CREATE FUNCTION durable_schedule_accept_rows(p_scope text, p_items jsonb)
RETURNS TABLE (item integer, status text, work_id uuid, state text, accepted_at timestamptz,
               facts text[])
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
DECLARE
    c_item integer[];
    c_id uuid[];
    c_state text[];
    c_at timestamptz[];
BEGIN
    WITH req AS (
        SELECT * FROM jsonb_to_recordset(p_items) AS r(
            item integer, work_id uuid, explicit boolean, command_id text,
            idempotency_key text, work_name text, work_version text, payload jsonb,
            provider_safety text, fingerprint_schema text, fingerprint_digest text,
            retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
            due_at timestamptz, source_occurrence_id bigint)
    ), clock AS (
        SELECT durable_schedule_clock('clock') AS now
    ), work AS (
        INSERT INTO durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
                                  work_version, payload, provider_safety, fingerprint_schema,
                                  fingerprint_digest, retry_policy, attempt_plan,
                                  execution_deadline, accepted_at, due_at, accepted_due_at,
                                  source_occurrence_id, updated_at)
        SELECT p_scope, req.work_id, req.command_id, req.idempotency_key, req.work_name,
               req.work_version, req.payload, req.provider_safety, req.fingerprint_schema,
               req.fingerprint_digest, req.retry_policy, req.attempt_plan,
               req.execution_deadline, clock.now, coalesce(req.due_at, clock.now),
               coalesce(req.due_at, clock.now), req.source_occurrence_id, clock.now
          FROM req, clock
         -- one global insertion order (the identity key), whatever the caller's order: two
         -- batches that share identities wait on each other in the same order, never deadlock
         ORDER BY req.command_id, req.idempotency_key
        ON CONFLICT DO NOTHING
        RETURNING id, work_id, command_id, idempotency_key, source_occurrence_id, due_at,
                  accepted_at, state, fingerprint_schema, work_name, work_version
    ), dispatch AS (
        INSERT INTO durable_work_dispatch (scope_routing_id, work_ref, due_at)
        SELECT s.routing_id, work.id, work.due_at
          FROM work JOIN durable_schedule_scope s ON s.scope_id = p_scope
    ), history AS (
        INSERT INTO durable_work_history (scope_id, work_id, event, attempt, actor, detail,
                                          recorded_at)
        SELECT p_scope, work.work_id, 'accepted', NULL, '',
               jsonb_build_object('command_id', work.command_id,
                                  'idempotency_key', work.idempotency_key,
                                  'work_name', work.work_name,
                                  'work_version', work.work_version,
                                  'fingerprint_schema', work.fingerprint_schema,
                                  'source_occurrence_id', work.source_occurrence_id),
               work.accepted_at
          FROM work
    )
    SELECT array_agg(req.item), array_agg(work.work_id), array_agg(work.state),
           array_agg(work.accepted_at)
      INTO c_item, c_id, c_state, c_at
      FROM work JOIN req ON req.work_id = work.work_id;

    RETURN QUERY SELECT u.item, 'created'::text, u.work_id, u.state, u.accepted_at,
                        NULL::text[]
                   FROM unnest(c_item, c_id, c_state, c_at) AS u(item, work_id, state,
                                                                 accepted_at);
    IF coalesce(cardinality(c_item), 0) = jsonb_array_length(p_items) THEN
        RETURN;
    END IF;

    -- A new statement: it sees the rows a concurrent transaction committed while the INSERT
    -- waited on them (READ COMMITTED; under REPEATABLE READ the INSERT raised 40001 instead).
    RETURN QUERY
    WITH req AS (
        SELECT * FROM jsonb_to_recordset(p_items) AS r(
            item integer, work_id uuid, explicit boolean, command_id text,
            idempotency_key text, work_name text, work_version text, payload jsonb,
            provider_safety text, fingerprint_schema text, fingerprint_digest text,
            retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
            due_at timestamptz, source_occurrence_id bigint)
    )
    SELECT req.item,
           CASE
               WHEN w.id IS NULL THEN 'work_id_taken'
               WHEN (w.fingerprint_schema, w.fingerprint_digest)
                    IS DISTINCT FROM (req.fingerprint_schema, req.fingerprint_digest)
                   THEN 'conflict'
               WHEN cardinality(d.facts) > 0 THEN 'tampered'
               WHEN req.explicit AND w.work_id <> req.work_id THEN 'other_work_id'
               ELSE 'duplicate' END,
           coalesce(w.work_id, req.work_id), w.state, w.accepted_at, d.facts
      FROM req
      LEFT JOIN durable_work w
        ON w.scope_id = p_scope AND w.command_id = req.command_id
       AND w.idempotency_key = req.idempotency_key
     CROSS JOIN LATERAL (SELECT array_remove(ARRAY[
           CASE WHEN w.work_name IS DISTINCT FROM req.work_name THEN 'work_name' END,
           CASE WHEN w.work_version IS DISTINCT FROM req.work_version THEN 'work_version' END,
           CASE WHEN w.payload IS DISTINCT FROM req.payload THEN 'payload' END,
           CASE WHEN w.provider_safety IS DISTINCT FROM req.provider_safety
                THEN 'provider_safety' END,
           CASE WHEN w.retry_policy IS DISTINCT FROM req.retry_policy THEN 'retry_policy' END,
           CASE WHEN w.attempt_plan IS DISTINCT FROM req.attempt_plan THEN 'attempt_plan' END,
           CASE WHEN w.execution_deadline IS DISTINCT FROM req.execution_deadline
                THEN 'execution_deadline' END,
           -- not requested: the due time fixed at acceptance is the acceptance instant
           CASE WHEN w.accepted_due_at IS DISTINCT FROM coalesce(req.due_at, w.accepted_at)
                     AND w.accepted_due_at IS NOT NULL THEN 'due_at' END
       ]::text[], NULL) AS facts) d
     WHERE req.item <> ALL (coalesce(c_item, '{}'));
END
$fn$;

-- name: accept -- the acceptance entry point: role, scope, rows, and the caller's role back.
-- One statement for 1..n requests. With p_enter it switches to durable_runtime (SET LOCAL ROLE,
-- proven), sets the transaction-local scope, creates the scope on this first write into it, and
-- restores the caller's role and scope before it returns, so the caller's next statement runs
-- exactly as before. Without p_enter (the schedule bridge, already inside a scoped runtime
-- transaction) it only proves role and scope and answers 'not_scoped' when they do not hold.
-- Several items are all-or-nothing: when any item is refused, the block's subtransaction rolls
-- back every row this call inserted and the statuses are returned (nothing written, no error,
-- so the caller's transaction stays usable). One item needs no block: a refused item inserted
-- nothing. Unexpected errors (a constraint, a lock timeout) propagate as errors.
CREATE FUNCTION durable_schedule_accept_work(p_scope text, p_items jsonb, p_enter boolean)
RETURNS TABLE (item integer, status text, work_id uuid, state text, accepted_at timestamptz,
               facts text[])
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
DECLARE
    previous_role text := current_user;
    previous_scope text := coalesce(current_setting('durable_schedule.scope_id', true), '');
    o_item integer[];
    o_status text[];
    o_id uuid[];
    o_state text[];
    o_at timestamptz[];
    o_facts text[];  -- each item's changed facts, comma-joined (arrays of arrays must be even)
BEGIN
    IF p_enter THEN
        PERFORM set_config('role', 'durable_runtime', true);
        IF current_user <> 'durable_runtime' THEN
            RAISE EXCEPTION 'DS302: scoped work must run as durable_runtime, current_user is %',
                current_user USING ERRCODE = '42501';
        END IF;
        PERFORM set_config('durable_schedule.scope_id', p_scope, true);
        IF NOT EXISTS (SELECT 1 FROM durable_schedule_scope s WHERE s.scope_id = p_scope) THEN
            INSERT INTO durable_schedule_scope (scope_id) VALUES (p_scope) ON CONFLICT DO NOTHING;
        END IF;
    ELSIF previous_role <> 'durable_runtime' OR previous_scope <> p_scope THEN
        RETURN QUERY SELECT 0, 'not_scoped'::text, NULL::uuid, NULL::text, NULL::timestamptz,
                            NULL::text[];
        RETURN;
    END IF;

    IF jsonb_array_length(p_items) = 1 THEN
        RETURN QUERY SELECT * FROM durable_schedule_accept_rows(p_scope, p_items);
    ELSE
        BEGIN
            SELECT array_agg(r.item ORDER BY r.item), array_agg(r.status ORDER BY r.item),
                   array_agg(r.work_id ORDER BY r.item), array_agg(r.state ORDER BY r.item),
                   array_agg(r.accepted_at ORDER BY r.item),
                   array_agg(array_to_string(r.facts, ',') ORDER BY r.item)
              INTO o_item, o_status, o_id, o_state, o_at, o_facts
              FROM durable_schedule_accept_rows(p_scope, p_items) r;
            IF NOT o_status <@ ARRAY['created', 'duplicate'] THEN
                -- caught right below: undoes this call's inserts, keeps the statuses
                RAISE EXCEPTION 'refused items' USING ERRCODE = 'DSR01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'DSR01' THEN
            o_status := array_replace(o_status, 'created', 'rolled_back');
        END;
        RETURN QUERY SELECT u.item, u.status, u.work_id, u.state, u.accepted_at,
                            string_to_array(nullif(u.facts, ''), ',')
                       FROM unnest(o_item, o_status, o_id, o_state, o_at, o_facts)
                            AS u(item, status, work_id, state, accepted_at, facts);
    END IF;

    IF p_enter THEN
        PERFORM set_config('durable_schedule.scope_id', previous_scope, true);
        PERFORM set_config('role', previous_role, true);
    END IF;
END
$fn$;

REVOKE ALL ON FUNCTION durable_schedule_accept_rows(text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_schedule_accept_work(text, jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_schedule_accept_rows(text, jsonb),
    durable_schedule_accept_work(text, jsonb, boolean) TO durable_runtime;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_accept_rows(text, jsonb) '
                   'SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION durable_schedule_accept_work(text, jsonb, boolean) '
                   'SET search_path = %I, pg_temp', current_schema());
END
$pin$;

-- name: version -- schema 7. The floor is 7: older code would still accept Work with the
-- digest-only compare-or-return, which returns a tampered row as the original.
UPDATE durable_schedule_store SET schema_version = 7, compatibility_floor = 7, updated_at = now();
