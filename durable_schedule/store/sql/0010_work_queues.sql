-- durable_schedule store, schema 9: queues and priorities for all Work (docs/work.md "Queues
-- and priorities"). Released files are never edited.

-- name: work queue columns -- routing facts of the first acceptance, immutable like the rest.
-- Not part of the fingerprint: they say where and how soon Work runs, not what it does, so a
-- repeated enqueue with another priority returns the original (compare-or-return) unchanged.
ALTER TABLE durable_work
    ADD COLUMN queue_name text NOT NULL DEFAULT 'default',
    ADD COLUMN priority smallint NOT NULL DEFAULT 0,
    ADD CONSTRAINT durable_work_priority_range CHECK (priority BETWEEN -100 AND 100),
    -- The one identifier rule (0009_hardening.sql); every existing row has the default.
    ADD CONSTRAINT durable_work_queue_name CHECK (durable_schedule_is_identifier(queue_name));

-- The claim reads only dispatch rows, so they carry the two routing facts too, copied from the
-- Work row when the dispatch row is inserted (a trigger: every insert path gets it, and the
-- runtime role needs no grant on these columns).
ALTER TABLE durable_work_dispatch
    ADD COLUMN queue_name text NOT NULL DEFAULT 'default',
    ADD COLUMN priority smallint NOT NULL DEFAULT 0;

CREATE FUNCTION durable_work_dispatch_routing()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    SELECT w.queue_name, w.priority INTO NEW.queue_name, NEW.priority
      FROM durable_work w WHERE w.id = NEW.work_ref;
    RETURN NEW;
END
$fn$;
REVOKE ALL ON FUNCTION durable_work_dispatch_routing() FROM PUBLIC;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_work_dispatch_routing() SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;
CREATE TRIGGER durable_work_dispatch_routing
    BEFORE INSERT ON durable_work_dispatch FOR EACH ROW
    EXECUTE FUNCTION durable_work_dispatch_routing();

-- One index serves every claim: per queue, highest priority first, oldest due first.
CREATE INDEX durable_work_dispatch_queue
    ON durable_work_dispatch (queue_name, priority DESC, due_at) WHERE due_at IS NOT NULL;

-- name: claim_work_dispatch -- priority, then due time, per queue; index probes only.
-- A plain "WHERE due_at <= now ORDER BY priority DESC, due_at" would read every not-yet-due
-- row of a higher priority before reaching a due row of a lower one (retries and run_after Work
-- wait in the same index): its cost would grow with the future backlog. Instead the function
-- walks the priorities that exist (a skip scan: one index probe per distinct value) and, for
-- each, takes due rows by due time through the (queue, priority, due) index -- every probe a
-- bounded index range scan. Within one priority, the queues are served in the order given
-- (alphabetical when a worker serves every queue). queues NULL: every queue.
DROP FUNCTION claim_work_dispatch(text, interval, integer);
CREATE FUNCTION claim_work_dispatch(lease_owner text, lease_duration interval,
                                    max_rows integer DEFAULT 1, queues text[] DEFAULT NULL)
RETURNS TABLE (scope_routing_id bigint, work_ref bigint, dispatch_revision bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
AS $fn$
DECLARE
    now_ts timestamptz;
    remaining integer := max_rows;
    served text[];
    q text;
    p smallint;
    priorities smallint[];
    taken integer;
BEGIN
    PERFORM durable_schedule_check_claim(lease_owner, lease_duration, max_rows);
    IF queues IS NOT NULL AND (cardinality(queues) = 0 OR cardinality(queues) > 100
                               OR array_position(queues, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION 'DS404: queues must be NULL or 1-100 queue names' USING ERRCODE = '22023';
    END IF;
    now_ts := durable_schedule_clock('clock');
    IF queues IS NULL THEN
        WITH RECURSIVE names AS (
            SELECT min(d.queue_name) AS name FROM durable_work_dispatch d
             WHERE d.due_at IS NOT NULL
            UNION ALL
            SELECT (SELECT min(d.queue_name) FROM durable_work_dispatch d
                     WHERE d.due_at IS NOT NULL AND d.queue_name > names.name)
              FROM names WHERE names.name IS NOT NULL)
        SELECT array_agg(name ORDER BY name) INTO served FROM names WHERE name IS NOT NULL;
    ELSE
        served := queues;
    END IF;
    IF served IS NULL THEN
        RETURN;
    END IF;
    -- The priorities present in the served queues, highest first.
    SELECT array_agg(DISTINCT pr ORDER BY pr DESC) INTO priorities FROM (
        SELECT levels.pr FROM unnest(served) AS s(name), LATERAL (
            WITH RECURSIVE lv AS (
                SELECT max(d.priority) AS pr FROM durable_work_dispatch d
                 WHERE d.queue_name = s.name AND d.due_at IS NOT NULL
                UNION ALL
                SELECT (SELECT max(d.priority) FROM durable_work_dispatch d
                         WHERE d.queue_name = s.name AND d.due_at IS NOT NULL
                           AND d.priority < lv.pr)
                  FROM lv WHERE lv.pr IS NOT NULL)
            SELECT lv.pr FROM lv WHERE lv.pr IS NOT NULL) AS levels) AS all_levels;
    IF priorities IS NULL THEN
        RETURN;
    END IF;
    FOREACH p IN ARRAY priorities LOOP
        FOREACH q IN ARRAY served LOOP
            RETURN QUERY
            UPDATE durable_work_dispatch d
               SET lease_owner = claim_work_dispatch.lease_owner,
                   lease_expires_at = now_ts + lease_duration,
                   due_at = now_ts + lease_duration,
                   lease_generation = d.lease_generation + 1,
                   dispatch_revision = d.dispatch_revision + 1
             WHERE d.dispatch_id IN (
                    SELECT x.dispatch_id FROM durable_work_dispatch x
                     WHERE x.queue_name = q AND x.priority = p
                       AND x.due_at IS NOT NULL AND x.due_at <= now_ts
                     ORDER BY x.due_at
                     LIMIT remaining
                     FOR UPDATE SKIP LOCKED)
            RETURNING d.scope_routing_id, d.work_ref, d.dispatch_revision;
            GET DIAGNOSTICS taken = ROW_COUNT;
            remaining := remaining - taken;
            IF remaining <= 0 THEN
                RETURN;
            END IF;
        END LOOP;
    END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION claim_work_dispatch(text, interval, integer, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_work_dispatch(text, interval, integer, text[]) TO durable_runtime;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION claim_work_dispatch(text, interval, integer, text[]) '
                   'SET search_path = %I, pg_temp', current_schema());
END
$pin$;

-- name: notify per queue -- the Work wake-up names the queue that became due sooner, so a
-- worker serving other queues does not wake for it (the payload is the queue name: routing
-- configuration, never tenant data).
CREATE FUNCTION durable_work_notify_queue()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    PERFORM pg_notify('durable_work_due', NEW.queue_name);
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION durable_work_notify_queue() FROM PUBLIC;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_work_notify_queue() SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;
DROP TRIGGER durable_work_dispatch_notify_insert ON durable_work_dispatch;
DROP TRIGGER durable_work_dispatch_notify_sooner ON durable_work_dispatch;
CREATE TRIGGER durable_work_dispatch_notify_insert
    AFTER INSERT ON durable_work_dispatch FOR EACH ROW
    WHEN (NEW.due_at IS NOT NULL)
    EXECUTE FUNCTION durable_work_notify_queue();
CREATE TRIGGER durable_work_dispatch_notify_sooner
    AFTER UPDATE OF due_at ON durable_work_dispatch FOR EACH ROW
    WHEN (NEW.due_at IS NOT NULL AND (OLD.due_at IS NULL OR NEW.due_at < OLD.due_at))
    EXECUTE FUNCTION durable_work_notify_queue();

-- name: accept rows with queue and priority -- the acceptance of schema 7 (0008_acceptance.sql),
-- now also writing each item's queue and priority (absent: the default queue, priority 0). They
-- are not compared for a duplicate: a retried enqueue with another priority returns the original
-- Work as it was accepted. CREATE OR REPLACE keeps owner and grants but not the pinned
-- search_path, so it is pinned again below.
CREATE OR REPLACE FUNCTION durable_schedule_accept_rows(p_scope text, p_items jsonb)
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
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_accept_rows(text, jsonb) '
                   'SET search_path = %I, pg_temp', current_schema());
END
$pin$;

-- name: version -- schema 9. The floor stays: code of schema 8 calls the claim with three
-- arguments (queues default to every queue) and inserts Work without queue and priority (the
-- defaults), so it keeps working against this schema.
UPDATE durable_schedule_store SET schema_version = 9, updated_at = now();
