-- durable_schedule store, schema 16: the object form of the acceptance (several items) with
-- the identity key as its only ON CONFLICT arbiter (issue 16; measured in docs/benchmarks.md
-- "Acceptance, sixth look"). Released files are never edited.

-- name: accept rows, identity arbiter -- the function of schema 15 (0016_cheaper_routing.sql)
-- with one change in the object form's insert (see the comment there); the array form (a single
-- enqueue, and code of schema 14) and both forms' comparison statements are unchanged. A work id
-- collision is rare (an explicit work id reused by another command), so the common call pays one
-- subtransaction per call, not a probe of two more indexes and a lock per row. CREATE OR
-- REPLACE keeps owner and grants, not the pinned search_path: pinned again below.
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
        -- The identity key is the only arbiter: ON CONFLICT without a target pre-checks all
        -- three unique indexes of durable_work for each row and inserts into each of them
        -- speculatively (a second look after the insert). A row that collides on another unique index (a work id, or an id,
        -- already stored under another identity) now raises unique_violation instead of
        -- being skipped; the block's subtransaction then undoes this statement's rows and
        -- the statement below, today's with every index an arbiter, runs in its place and
        -- gives the answers it always gave (the same order, so the same waits; under
        -- REPEATABLE READ its 40001 as before).
        BEGIN
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
                ON CONFLICT (scope_id, command_id, idempotency_key) DO NOTHING
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
        EXCEPTION WHEN unique_violation THEN
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
        END;
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

DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_accept_rows(text, jsonb) '
                   'SET search_path = %I, pg_temp', current_schema());
END
$pin$;

-- name: version -- schema 16. The floor stays at 15: the parameter forms, answers and routing
-- are schema 15's, so code of schema 15 runs unchanged against this store and this code runs
-- against a store of schema 15 (docs/compatibility.md).
UPDATE durable_schedule_store SET schema_version = 16, updated_at = now();
