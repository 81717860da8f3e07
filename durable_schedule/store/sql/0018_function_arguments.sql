-- durable_schedule store, schema 17: store functions refuse bad arguments with their DS code
-- instead of a bare PostgreSQL error (or, for a read, silently). Released files are never
-- edited. CREATE OR REPLACE keeps owner, grants and SECURITY DEFINER/INVOKER, not a pinned
-- search_path: all three functions had one (0006 and 0009), each is pinned again below.

-- name: beat -- the function of 0006_operations_health.sql with two stricter checks: owner, host
-- and version follow the identifier rule (durable_schedule_is_identifier, 0009_hardening.sql:
-- no bidi or other format characters, which reached durable_status and the admin), and the
-- seconds since the last pass are at most 100 years (a larger value failed with "timestamp out
-- of range" and no DS code). Everything else is unchanged.
CREATE OR REPLACE FUNCTION durable_runner_beat(p_runner_id uuid, p_kind text, p_owner text, p_host text,
                                    p_pid integer, p_version text,
                                    p_seconds_since_pass double precision, p_passes bigint,
                                    p_counts jsonb, p_stopping boolean)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
AS $fn$
DECLARE
    now_ timestamptz := durable_schedule_clock('clock');
    written uuid;
BEGIN
    IF p_runner_id IS NULL OR p_kind IS NULL OR p_kind NOT IN ('schedule', 'work') THEN
        RAISE EXCEPTION 'DS425: heartbeat needs a runner id and a kind (schedule or work)'
            USING ERRCODE = '22023';
    END IF;
    IF p_owner IS NULL OR length(p_owner) NOT BETWEEN 1 AND 200
       OR NOT durable_schedule_is_identifier(p_owner)
       OR p_host IS NULL OR length(p_host) NOT BETWEEN 1 AND 255
       OR NOT durable_schedule_is_identifier(p_host)
       OR p_version IS NULL OR length(p_version) NOT BETWEEN 1 AND 64
       OR NOT durable_schedule_is_identifier(p_version) THEN
        RAISE EXCEPTION 'DS425: heartbeat owner, host and version must be short text without control, format or separator characters'
            USING ERRCODE = '22023';
    END IF;
    IF p_pid IS NULL OR p_pid <= 0 OR p_passes IS NULL OR p_passes < 0
       OR (p_seconds_since_pass IS NOT NULL
           AND (p_seconds_since_pass < 0 OR p_seconds_since_pass > 3153600000
                OR p_seconds_since_pass = 'NaN'::float8))
       OR p_stopping IS NULL THEN
        RAISE EXCEPTION 'DS425: heartbeat pid, passes and seconds since the last pass must be non-negative numbers (seconds at most 3153600000, 100 years)'
            USING ERRCODE = '22023';
    END IF;
    IF p_counts IS NULL OR jsonb_typeof(p_counts) <> 'object' OR length(p_counts::text) > 4096 THEN
        RAISE EXCEPTION 'DS425: heartbeat counts must be a JSON object of at most 4096 characters'
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO durable_runner_heartbeat AS h
           (runner_id, kind, lease_owner, host, pid, version, started_at, beat_at, last_pass_at,
            passes, last_counts, stopped_at)
    VALUES (p_runner_id, p_kind, p_owner, p_host, p_pid, p_version, now_, now_,
            CASE WHEN p_seconds_since_pass IS NULL THEN NULL
                 ELSE now_ - make_interval(secs => p_seconds_since_pass) END,
            p_passes, p_counts, CASE WHEN p_stopping THEN now_ END)
    ON CONFLICT (runner_id) DO UPDATE
       SET beat_at = now_,
           last_pass_at = coalesce(EXCLUDED.last_pass_at, h.last_pass_at),
           passes = EXCLUDED.passes,
           last_counts = EXCLUDED.last_counts,
           stopped_at = EXCLUDED.stopped_at
     WHERE h.kind = EXCLUDED.kind AND h.lease_owner = EXCLUDED.lease_owner
       AND h.host = EXCLUDED.host AND h.pid = EXCLUDED.pid
    RETURNING runner_id INTO written;
    IF written IS NULL THEN
        RAISE EXCEPTION 'DS425: runner id % belongs to another runner process', p_runner_id
            USING ERRCODE = '22023';
    END IF;
    RETURN now_;
END
$fn$;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_runner_beat(uuid, text, text, text, integer, text, '
                   'double precision, bigint, jsonb, boolean) SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;

-- name: enter scope -- the function of 0002_security.sql, refusing a scope the Python layer
-- refuses (DS301) instead of failing later on the scope table's CHECK or on row-level security.
CREATE OR REPLACE FUNCTION durable_schedule_enter_scope(p_scope text)
RETURNS TABLE (previous_role text, previous_scope text)
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
    -- The rule of store/transactions.py validate_scope_id: 1-200 characters, no surrounding
    -- spaces, the identifier rule. Checked first, before the role or the scope is set.
    IF p_scope IS NULL OR length(p_scope) NOT BETWEEN 1 AND 200
       OR p_scope <> btrim(p_scope, E' \t\n\r\f\u000b\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u001c\u001d\u001e\u001f')
       OR NOT durable_schedule_is_identifier(p_scope) THEN
        RAISE EXCEPTION 'DS301: scope must be 1-200 characters without surrounding spaces, control, format or separator characters'
            USING ERRCODE = '22023';
    END IF;
    previous_role := current_user;
    previous_scope := coalesce(current_setting('durable_schedule.scope_id', true), '');
    PERFORM set_config('role', 'durable_runtime', true);
    IF current_user <> 'durable_runtime' THEN
        RAISE EXCEPTION 'DS302: scoped work must run as durable_runtime, current_user is %',
            current_user USING ERRCODE = '42501';
    END IF;
    PERFORM set_config('durable_schedule.scope_id', p_scope, true);
    INSERT INTO durable_schedule_scope (scope_id) VALUES (p_scope) ON CONFLICT DO NOTHING;
    RETURN NEXT;
END
$fn$;


-- name: enter scope to read -- the function of 0009_hardening.sql with the same check: NULL or
-- a malformed scope read as an empty scope, a silent answer for a caller's bug.
CREATE OR REPLACE FUNCTION durable_schedule_enter_scope_to_read(p_scope text)
RETURNS TABLE (previous_role text, previous_scope text)
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
    -- The rule of store/transactions.py validate_scope_id: 1-200 characters, no surrounding
    -- spaces, the identifier rule. Checked first, before the role or the scope is set.
    IF p_scope IS NULL OR length(p_scope) NOT BETWEEN 1 AND 200
       OR p_scope <> btrim(p_scope, E' \t\n\r\f\u000b\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u001c\u001d\u001e\u001f')
       OR NOT durable_schedule_is_identifier(p_scope) THEN
        RAISE EXCEPTION 'DS301: scope must be 1-200 characters without surrounding spaces, control, format or separator characters'
            USING ERRCODE = '22023';
    END IF;
    previous_role := current_user;
    previous_scope := coalesce(current_setting('durable_schedule.scope_id', true), '');
    PERFORM set_config('role', 'durable_runtime', true);
    IF current_user <> 'durable_runtime' THEN
        RAISE EXCEPTION 'DS302: scoped work must run as durable_runtime, current_user is %',
            current_user USING ERRCODE = '42501';
    END IF;
    PERFORM set_config('durable_schedule.scope_id', p_scope, true);
    RETURN NEXT;
END
$fn$;

DO $pin$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['durable_schedule_enter_scope(text)',
                             'durable_schedule_enter_scope_to_read(text)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$pin$;

-- name: version -- schema 17. REQUIRED_SCHEMA stays 15 and the floor stays: the functions keep
-- their signatures and answers for every argument code of schema 15 or 16 sends (it validates
-- the same in Python first), so each runs against the other (docs/compatibility.md).
UPDATE durable_schedule_store SET schema_version = 17, updated_at = now();
