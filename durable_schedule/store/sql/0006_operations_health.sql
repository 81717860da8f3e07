-- durable_schedule store, schema 5: runner heartbeats and the retention index (docs/operations.md
-- "Health" and "Retention"). Released files are never edited.

-- name: heartbeat -- one row per runner process (a --loop runner from start to stop).
-- Not tenant data: it names a process (lease owner, host, pid, version) and the counts of its
-- last pass, never a scope, payload or Work id, so it has no scope_id and no row-level security.
-- Nobody but the owner may touch it directly: runners write it only through
-- durable_runner_beat() below (validated, bounded), the owner's operations read and prune it.
CREATE TABLE durable_runner_heartbeat (
    runner_id uuid PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('schedule', 'work')),
    lease_owner text NOT NULL
        CHECK (length(lease_owner) BETWEEN 1 AND 200 AND lease_owner !~ '[[:cntrl:]]'),
    host text NOT NULL CHECK (length(host) BETWEEN 1 AND 255 AND host !~ '[[:cntrl:]]'),
    pid integer NOT NULL CHECK (pid > 0),
    version text NOT NULL CHECK (length(version) BETWEEN 1 AND 64 AND version !~ '[[:cntrl:]]'),
    started_at timestamptz NOT NULL,
    beat_at timestamptz NOT NULL,
    last_pass_at timestamptz,
    passes bigint NOT NULL DEFAULT 0 CHECK (passes >= 0),
    last_counts jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(last_counts) = 'object'),
    stopped_at timestamptz
);
CREATE INDEX durable_runner_heartbeat_beat ON durable_runner_heartbeat (beat_at);
REVOKE ALL ON durable_runner_heartbeat FROM PUBLIC;

-- name: beat -- the one writer of heartbeats, executed by durable_runtime.
-- SECURITY DEFINER so the runtime role needs no privilege on the table; every argument is
-- validated before a row is touched (DS425), a runner id stays bound to the process that first
-- wrote it, and every time comes from the clock seam.
CREATE FUNCTION durable_runner_beat(p_runner_id uuid, p_kind text, p_owner text, p_host text,
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
    IF p_owner IS NULL OR length(p_owner) NOT BETWEEN 1 AND 200 OR p_owner ~ '[[:cntrl:]]'
       OR p_host IS NULL OR length(p_host) NOT BETWEEN 1 AND 255 OR p_host ~ '[[:cntrl:]]'
       OR p_version IS NULL OR length(p_version) NOT BETWEEN 1 AND 64
       OR p_version ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'DS425: heartbeat owner, host and version must be short text without control characters'
            USING ERRCODE = '22023';
    END IF;
    IF p_pid IS NULL OR p_pid <= 0 OR p_passes IS NULL OR p_passes < 0
       OR (p_seconds_since_pass IS NOT NULL
           AND (p_seconds_since_pass < 0 OR p_seconds_since_pass = 'Infinity'::float8
                OR p_seconds_since_pass = 'NaN'::float8))
       OR p_stopping IS NULL THEN
        RAISE EXCEPTION 'DS425: heartbeat pid, passes and seconds since the last pass must be non-negative numbers'
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
REVOKE ALL ON FUNCTION durable_runner_beat(uuid, text, text, text, integer, text,
                                           double precision, bigint, jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_runner_beat(uuid, text, text, text, integer, text,
                                              double precision, bigint, jsonb, boolean)
    TO durable_runtime;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_runner_beat(uuid, text, text, text, integer, text, '
                   'double precision, bigint, jsonb, boolean) SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;

-- name: retention indexes -- durable_prune and the admin's last-hour throughput read terminal
-- Work by finish time within one scope, and prunable occurrences by age, without scanning a
-- scope's whole history.
CREATE INDEX durable_work_finished ON durable_work (scope_id, finished_at, id)
    WHERE finished_at IS NOT NULL;
CREATE INDEX durable_schedule_occurrence_prunable
    ON durable_schedule_occurrence (scope_id, updated_at)
    WHERE state IN ('skipped', 'superseded', 'canceled');

-- name: retention mark -- per scope, the last terminal Work (finish time, row id) whose
-- permits, quarantine rows and history durable_prune removed: the next run starts after it
-- instead of walking every Work row ever finished. Keyed by scope, so it gets the scope
-- isolation policy like every scoped table; only the owner (durable_prune) touches it.
CREATE TABLE durable_work_retention_mark (
    scope_id text PRIMARY KEY REFERENCES durable_schedule_scope (scope_id),
    finished_at timestamptz NOT NULL,
    work_ref bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON durable_work_retention_mark FROM PUBLIC;
ALTER TABLE durable_work_retention_mark ENABLE ROW LEVEL SECURITY;
ALTER TABLE durable_work_retention_mark FORCE ROW LEVEL SECURITY;
CREATE POLICY durable_scope_isolation ON durable_work_retention_mark
    USING (scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), ''))
    WITH CHECK (scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), ''));

-- name: routing registry -- every routing id, payload-free, for the owner's operations
-- (durable_status, durable_prune) to find every scope. The owner may not read the scope table
-- (forced RLS), and walking the identity sequence would visit every value an
-- INSERT ... ON CONFLICT DO NOTHING ever burnt. The operations then resolve each id through the
-- runtime's routing lookup, one scope at a time. No scope id here, so no RLS; owner-only.
CREATE TABLE durable_schedule_routing (
    routing_id bigint PRIMARY KEY REFERENCES durable_schedule_scope (routing_id)
);
REVOKE ALL ON durable_schedule_routing FROM PUBLIC;

-- A new scope row (inserted by the runtime in durable_schedule_enter_scope) registers its
-- routing id; SECURITY DEFINER so the runtime role needs no privilege on the registry.
CREATE FUNCTION durable_schedule_register_routing()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
AS $fn$
BEGIN
    INSERT INTO durable_schedule_routing (routing_id) VALUES (NEW.routing_id)
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_register_routing() FROM PUBLIC;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_register_routing() SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;
CREATE TRIGGER durable_schedule_scope_register_routing
    AFTER INSERT ON durable_schedule_scope FOR EACH ROW
    EXECUTE FUNCTION durable_schedule_register_routing();

-- Existing scopes: the owner lifts FORCE for this one statement of the migration transaction
-- (ALTER TABLE holds its lock to commit, so no other session sees the table unforced).
ALTER TABLE durable_schedule_scope NO FORCE ROW LEVEL SECURITY;
INSERT INTO durable_schedule_routing (routing_id)
    SELECT routing_id FROM durable_schedule_scope ON CONFLICT DO NOTHING;
ALTER TABLE durable_schedule_scope FORCE ROW LEVEL SECURITY;

-- name: version -- schema 5. The floor stays 4: code of schema 4 never reads the new table and
-- may keep running against this store during a rolling upgrade.
UPDATE durable_schedule_store SET schema_version = 5, updated_at = now();
