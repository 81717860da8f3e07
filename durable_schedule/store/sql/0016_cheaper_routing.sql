-- durable_schedule store, schema 15: the dispatch routing copy at a lower cost per inserted
-- row (issue 16; measured in docs/benchmarks.md "Acceptance, fifth look"). Released files are
-- never edited.

-- name: dispatch routing, unpinned -- the BEFORE INSERT FOR EACH ROW trigger of
-- 0010_work_queues.sql stays (every insert path still gets the Work row's queue and priority
-- copied into its dispatch row, whatever it wrote, and the runtime role still needs no grant
-- on those columns), with the same body. What changes: the function carried a pinned
-- search_path, so every call -- one per dispatch row, a hundred for enqueue_many of 100 --
-- went through PostgreSQL's SET-clause path (a GUC save, switch and restore per call), which
-- costs more than the function's one index lookup. Now the table is schema-qualified (written
-- with the migration's schema) and the comparison operator is pg_catalog's, so nothing in the
-- body is resolved through the caller's search path and the pin is not needed. CREATE OR
-- REPLACE keeps the owner, the grants (none: EXECUTE stays revoked from PUBLIC) and the
-- trigger, and drops the SET clause.
DO $make$
BEGIN
    EXECUTE format($def$
CREATE OR REPLACE FUNCTION durable_work_dispatch_routing()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    SELECT w.queue_name, w.priority INTO NEW.queue_name, NEW.priority
      FROM %1$I.durable_work w WHERE w.id OPERATOR(pg_catalog.=) NEW.work_ref;
    RETURN NEW;
END
$fn$$def$, current_schema());
END
$make$;

-- name: accept rows, shared members once per call -- the acceptance of schema 9
-- (0010_work_queues.sql), taking its items in either of two forms. The array of complete items
-- is unchanged (what schema 14 code sends, and what a single enqueue still sends). The new
-- object form {"shared": [...], "items": [...]} carries the members that requests of one
-- definition share (names, provider safety, fingerprint schema, retry policy, attempt plan,
-- deadline, due time, queue, priority) once per distinct set in "shared"; each item names its
-- set by position ("shared": 0 is the first). enqueue_many of 100 requests of one definition
-- so sends about a third of the bytes, and the server parses about a third (jsonb_in of the
-- parameter was 8 % of the backend's time). An item without "shared" is read whole, as in the
-- array form. An item naming a set that is not there gets NULL names and is refused by the
-- NOT NULL constraints (23502) before anything of the statement is written; only this
-- package's acceptance writes the parameter. The array form runs schema 9's two statements
-- as they were (one statement per form: the object form's bigger statement cost a one-item
-- call 36-95 us more when it served both); every insert, comparison and status is schema
-- 9's. CREATE OR REPLACE keeps owner and grants, not the pinned search_path: pinned again
-- below.
CREATE OR REPLACE FUNCTION durable_schedule_accept_rows(p_scope text, p_items jsonb)
RETURNS TABLE (item integer, status text, work_id uuid, state text, accepted_at timestamptz,
               facts text[])
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
DECLARE
    v_object boolean := jsonb_typeof(p_items) = 'object';
    v_items jsonb := CASE WHEN v_object THEN p_items -> 'items' ELSE p_items END;
    v_shared jsonb := CASE WHEN v_object THEN p_items -> 'shared' END;
    c_item integer[];
    c_id uuid[];
    c_state text[];
    c_at timestamptz[];
BEGIN
    -- The array form runs schema 9's statements unchanged (a single enqueue pays nothing
    -- for the object form); the object form reads its items through the shared sets.
    IF v_object THEN
        WITH one AS (
            SELECT * FROM jsonb_to_recordset(v_items) AS r(
                item integer, work_id uuid, explicit boolean, command_id text,
                idempotency_key text, work_name text, work_version text, payload jsonb,
                provider_safety text, fingerprint_schema text, fingerprint_digest text,
                retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
                due_at timestamptz, source_occurrence_id bigint, queue_name text,
                priority smallint, shared integer)
        ), shared AS (
            SELECT * FROM ROWS FROM (jsonb_to_recordset(v_shared) AS (
                work_name text, work_version text, provider_safety text, fingerprint_schema text,
                retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
                due_at timestamptz, queue_name text, priority smallint))
                WITH ORDINALITY AS s(work_name, work_version, provider_safety, fingerprint_schema,
                                     retry_policy, attempt_plan, execution_deadline, due_at,
                                     queue_name, priority, n)
        ), req AS (
            SELECT one.item, one.work_id, one.explicit, one.command_id, one.idempotency_key,
                   one.payload, one.fingerprint_digest, one.source_occurrence_id,
                   CASE WHEN one.shared IS NULL THEN one.work_name ELSE s.work_name END
                       AS work_name,
                   CASE WHEN one.shared IS NULL THEN one.work_version ELSE s.work_version END
                       AS work_version,
                   CASE WHEN one.shared IS NULL THEN one.provider_safety ELSE s.provider_safety END
                       AS provider_safety,
                   CASE WHEN one.shared IS NULL THEN one.fingerprint_schema
                        ELSE s.fingerprint_schema END AS fingerprint_schema,
                   CASE WHEN one.shared IS NULL THEN one.retry_policy ELSE s.retry_policy END
                       AS retry_policy,
                   CASE WHEN one.shared IS NULL THEN one.attempt_plan ELSE s.attempt_plan END
                       AS attempt_plan,
                   CASE WHEN one.shared IS NULL THEN one.execution_deadline
                        ELSE s.execution_deadline END AS execution_deadline,
                   CASE WHEN one.shared IS NULL THEN one.due_at ELSE s.due_at END AS due_at,
                   CASE WHEN one.shared IS NULL THEN one.queue_name ELSE s.queue_name END
                       AS queue_name,
                   CASE WHEN one.shared IS NULL THEN one.priority ELSE s.priority END AS priority
              FROM one LEFT JOIN shared s ON s.n = one.shared + 1
        ), clock AS (
            SELECT durable_schedule_clock('clock') AS now
        ), work AS (
            INSERT INTO durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
                                      work_version, payload, provider_safety, fingerprint_schema,
                                      fingerprint_digest, retry_policy, attempt_plan,
                                      execution_deadline, accepted_at, due_at, accepted_due_at,
                                      source_occurrence_id, updated_at, queue_name, priority)
            SELECT p_scope, req.work_id, req.command_id, req.idempotency_key, req.work_name,
                   req.work_version, req.payload, req.provider_safety, req.fingerprint_schema,
                   req.fingerprint_digest, req.retry_policy, req.attempt_plan,
                   req.execution_deadline, clock.now, coalesce(req.due_at, clock.now),
                   coalesce(req.due_at, clock.now), req.source_occurrence_id, clock.now,
                   coalesce(req.queue_name, 'default'), coalesce(req.priority, 0)
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
    ELSE
        WITH req AS (
            SELECT * FROM jsonb_to_recordset(p_items) AS r(
                item integer, work_id uuid, explicit boolean, command_id text,
                idempotency_key text, work_name text, work_version text, payload jsonb,
                provider_safety text, fingerprint_schema text, fingerprint_digest text,
                retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
                due_at timestamptz, source_occurrence_id bigint, queue_name text,
                priority smallint)
        ), clock AS (
            SELECT durable_schedule_clock('clock') AS now
        ), work AS (
            INSERT INTO durable_work (scope_id, work_id, command_id, idempotency_key, work_name,
                                      work_version, payload, provider_safety, fingerprint_schema,
                                      fingerprint_digest, retry_policy, attempt_plan,
                                      execution_deadline, accepted_at, due_at, accepted_due_at,
                                      source_occurrence_id, updated_at, queue_name, priority)
            SELECT p_scope, req.work_id, req.command_id, req.idempotency_key, req.work_name,
                   req.work_version, req.payload, req.provider_safety, req.fingerprint_schema,
                   req.fingerprint_digest, req.retry_policy, req.attempt_plan,
                   req.execution_deadline, clock.now, coalesce(req.due_at, clock.now),
                   coalesce(req.due_at, clock.now), req.source_occurrence_id, clock.now,
                   coalesce(req.queue_name, 'default'), coalesce(req.priority, 0)
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
    END IF;

    RETURN QUERY SELECT u.item, 'created'::text, u.work_id, u.state, u.accepted_at,
                        NULL::text[]
                   FROM unnest(c_item, c_id, c_state, c_at) AS u(item, work_id, state,
                                                                 accepted_at);
    IF coalesce(cardinality(c_item), 0) = jsonb_array_length(v_items) THEN
        RETURN;
    END IF;

    -- A new statement: it sees the rows a concurrent transaction committed while the INSERT
    -- waited on them (READ COMMITTED; under REPEATABLE READ the INSERT raised 40001 instead).
    IF v_object THEN
        RETURN QUERY
        WITH one AS (
            SELECT * FROM jsonb_to_recordset(v_items) AS r(
                item integer, work_id uuid, explicit boolean, command_id text,
                idempotency_key text, work_name text, work_version text, payload jsonb,
                provider_safety text, fingerprint_schema text, fingerprint_digest text,
                retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
                due_at timestamptz, source_occurrence_id bigint, queue_name text,
                priority smallint, shared integer)
        ), shared AS (
            SELECT * FROM ROWS FROM (jsonb_to_recordset(v_shared) AS (
                work_name text, work_version text, provider_safety text, fingerprint_schema text,
                retry_policy jsonb, attempt_plan jsonb, execution_deadline timestamptz,
                due_at timestamptz, queue_name text, priority smallint))
                WITH ORDINALITY AS s(work_name, work_version, provider_safety, fingerprint_schema,
                                     retry_policy, attempt_plan, execution_deadline, due_at,
                                     queue_name, priority, n)
        ), req AS (
            SELECT one.item, one.work_id, one.explicit, one.command_id, one.idempotency_key,
                   one.payload, one.fingerprint_digest, one.source_occurrence_id,
                   CASE WHEN one.shared IS NULL THEN one.work_name ELSE s.work_name END
                       AS work_name,
                   CASE WHEN one.shared IS NULL THEN one.work_version ELSE s.work_version END
                       AS work_version,
                   CASE WHEN one.shared IS NULL THEN one.provider_safety ELSE s.provider_safety END
                       AS provider_safety,
                   CASE WHEN one.shared IS NULL THEN one.fingerprint_schema
                        ELSE s.fingerprint_schema END AS fingerprint_schema,
                   CASE WHEN one.shared IS NULL THEN one.retry_policy ELSE s.retry_policy END
                       AS retry_policy,
                   CASE WHEN one.shared IS NULL THEN one.attempt_plan ELSE s.attempt_plan END
                       AS attempt_plan,
                   CASE WHEN one.shared IS NULL THEN one.execution_deadline
                        ELSE s.execution_deadline END AS execution_deadline,
                   CASE WHEN one.shared IS NULL THEN one.due_at ELSE s.due_at END AS due_at,
                   CASE WHEN one.shared IS NULL THEN one.queue_name ELSE s.queue_name END
                       AS queue_name,
                   CASE WHEN one.shared IS NULL THEN one.priority ELSE s.priority END AS priority
              FROM one LEFT JOIN shared s ON s.n = one.shared + 1
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
    ELSE
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
    END IF;

END
$fn$;

-- name: accept, one row array -- the entry point of schema 7 (0008_acceptance.sql) with the
-- same role and scope entry, the same all-or-nothing block and the same answers, in two
-- details cheaper per item: several items are collected into one array of rows (one sort by
-- item, one aggregate) instead of six arrays each sorted by item, and returned with
-- 'rolled_back' in place of 'created' when any item was refused; an item's facts are NULL
-- when none changed, as the comma-joined round trip gave them. It counts the items of either
-- parameter form (above). Pinned again below (CREATE OR REPLACE drops the SET clause).
CREATE TYPE durable_schedule_accept_row AS (item integer, status text, work_id uuid,
                                            state text, accepted_at timestamptz, facts text[]);
CREATE OR REPLACE FUNCTION durable_schedule_accept_work(p_scope text, p_items jsonb,
                                                        p_enter boolean)
RETURNS TABLE (item integer, status text, work_id uuid, state text, accepted_at timestamptz,
               facts text[])
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
DECLARE
    previous_role text := current_user;
    previous_scope text := coalesce(current_setting('durable_schedule.scope_id', true), '');
    o_rows durable_schedule_accept_row[];
    o_ok boolean;
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

    IF jsonb_array_length(CASE WHEN jsonb_typeof(p_items) = 'object' THEN p_items -> 'items'
                               ELSE p_items END) = 1 THEN
        RETURN QUERY SELECT * FROM durable_schedule_accept_rows(p_scope, p_items);
    ELSE
        BEGIN
            SELECT array_agg((r.item, r.status, r.work_id, r.state, r.accepted_at,
                              r.facts)::durable_schedule_accept_row ORDER BY r.item),
                   bool_and(r.status IN ('created', 'duplicate'))
              INTO o_rows, o_ok
              FROM durable_schedule_accept_rows(p_scope, p_items) r;
            IF NOT o_ok THEN
                -- caught right below: undoes this call's inserts, keeps the rows
                RAISE EXCEPTION 'refused items' USING ERRCODE = 'DSR01';
            END IF;
        EXCEPTION WHEN SQLSTATE 'DSR01' THEN
            o_ok := false;
        END;
        RETURN QUERY SELECT u.item,
                            CASE WHEN NOT o_ok AND u.status = 'created' THEN 'rolled_back'
                                 ELSE u.status END,
                            u.work_id, u.state, u.accepted_at, nullif(u.facts, '{}')
                       FROM unnest(o_rows) AS u;
    END IF;

    IF p_enter THEN
        PERFORM set_config('durable_schedule.scope_id', previous_scope, true);
        PERFORM set_config('role', previous_role, true);
    END IF;
END
$fn$;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_accept_rows(text, jsonb) '
                   'SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION durable_schedule_accept_work(text, jsonb, boolean) '
                   'SET search_path = %I, pg_temp', current_schema());
END
$pin$;

-- name: version -- schema 15. The floor stays: code of schema 14 sends the array form, which
-- runs the same statements, gets the same answers and the same routing, so old and new
-- processes may share the store during a rolling deploy (docs/compatibility.md). Code of
-- schema 15 sends the object form and so needs schema 15 (REQUIRED_SCHEMA).
UPDATE durable_schedule_store SET schema_version = 15, updated_at = now();
