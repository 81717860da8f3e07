-- durable_schedule store, schema 11: the claims take at most max_rows rows. Released files are
-- never edited.

-- name: claim limits -- a claim returned more rows than max_rows on PostgreSQL 16 and 17 (CI,
-- tests/schedules/test_batch.py): "UPDATE ... WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP
-- LOCKED)" lets the planner run the subquery more than once (a semi-join it may rescan), and each
-- run with SKIP LOCKED can pick other rows, so more than n rows are leased. A MATERIALIZED CTE is
-- evaluated exactly once: the rows it picked are the rows updated, never more than n. Same
-- checks, same returned columns; CREATE OR REPLACE keeps owner and grants, the pinned
-- search_path is set again below.
CREATE OR REPLACE FUNCTION claim_schedule_dispatch(lease_owner text, lease_duration interval,
                                                   max_rows integer DEFAULT 1)
RETURNS TABLE (scope_routing_id bigint, schedule_id text, dispatch_revision bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
AS $fn$
DECLARE
    now_ts timestamptz;
BEGIN
    PERFORM durable_schedule_check_claim(lease_owner, lease_duration, max_rows);
    now_ts := durable_schedule_clock('clock');
    RETURN QUERY
    WITH picked AS MATERIALIZED (
        SELECT q.dispatch_id FROM durable_schedule_dispatch q
         WHERE q.due_at IS NOT NULL AND q.due_at <= now_ts
         ORDER BY q.due_at
         LIMIT max_rows
         FOR UPDATE SKIP LOCKED)
    UPDATE durable_schedule_dispatch d
       SET lease_owner = claim_schedule_dispatch.lease_owner,
           lease_expires_at = now_ts + lease_duration,
           due_at = now_ts + lease_duration,
           lease_generation = d.lease_generation + 1,
           dispatch_revision = d.dispatch_revision + 1
      FROM picked
     WHERE d.dispatch_id = picked.dispatch_id
    RETURNING d.scope_routing_id, d.schedule_id, d.dispatch_revision;
END
$fn$;

CREATE OR REPLACE FUNCTION claim_work_dispatch(lease_owner text, lease_duration interval,
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
            WITH picked AS MATERIALIZED (
                SELECT x.dispatch_id FROM durable_work_dispatch x
                 WHERE x.queue_name = q AND x.priority = p
                   AND x.due_at IS NOT NULL AND x.due_at <= now_ts
                 ORDER BY x.due_at
                 LIMIT remaining
                 FOR UPDATE SKIP LOCKED)
            UPDATE durable_work_dispatch d
               SET lease_owner = claim_work_dispatch.lease_owner,
                   lease_expires_at = now_ts + lease_duration,
                   due_at = now_ts + lease_duration,
                   lease_generation = d.lease_generation + 1,
                   dispatch_revision = d.dispatch_revision + 1
              FROM picked
             WHERE d.dispatch_id = picked.dispatch_id
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

DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION claim_schedule_dispatch(text, interval, integer) '
                   'SET search_path = %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION claim_work_dispatch(text, interval, integer, text[]) '
                   'SET search_path = %I, pg_temp', current_schema());
END
$pin$;

-- name: version -- schema 11; the floor stays (the functions keep their signatures).
UPDATE durable_schedule_store SET schema_version = 11, updated_at = now();
