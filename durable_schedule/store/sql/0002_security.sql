-- durable_schedule store, schema 1: roles, clock seam, row-level security, grants and the
-- trusted functions (docs/security.md). Released file: never edit it; add a new numbered file.
-- Runs inside the migration's transaction, so every SECURITY DEFINER function is created and
-- has EXECUTE revoked from PUBLIC atomically (no window in which PUBLIC may call it).

-- name: keys -- composite keys of the two Django-created tables, led by scope_id (docs/security.md).
ALTER TABLE durable_schedule_generation
    ADD CONSTRAINT durable_schedule_generation_definition_fk FOREIGN KEY (scope_id, schedule_id)
        REFERENCES durable_schedule_definition (scope_id, schedule_id);
-- No foreign key points INTO the Django-created tables: Django's flush (TransactionTestCase,
-- in adopters' suites too) truncates managed tables without CASCADE, which PostgreSQL refuses
-- for a referenced table. Occurrences name their generation without a key; generations are
-- append-only (never deleted), and only the processor writes an occurrence, for a generation it
-- has just read under the definition lock.
ALTER TABLE durable_work_history
    ADD CONSTRAINT durable_work_history_work_fk FOREIGN KEY (scope_id, work_id)
        REFERENCES durable_work (scope_id, work_id);
CREATE INDEX durable_work_history_work ON durable_work_history (scope_id, work_id, id);

-- name: roles -- NOLOGIN roles, created when the migration owner may; else a DBA creates them.
DO $roles$
DECLARE
    may_create boolean;
    r text;
BEGIN
    SELECT rolsuper OR rolcreaterole INTO may_create FROM pg_roles WHERE rolname = current_user;
    FOREACH r IN ARRAY ARRAY['durable_runtime', 'durable_dispatcher'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            IF NOT may_create THEN
                RAISE EXCEPTION 'DS304: role % is missing and % may not create roles', r, current_user
                    USING HINT = 'Create it: CREATE ROLE ' || r || ' NOLOGIN; GRANT ' || r
                                 || ' TO ' || current_user || ';';
            END IF;
            EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS', r);
        END IF;
        -- The owner enters the roles with SET LOCAL ROLE; a superuser needs no membership.
        IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
           AND NOT pg_has_role(current_user, r, 'MEMBER') THEN
            EXECUTE format('GRANT %I TO %I', r, current_user);
        END IF;
    END LOOP;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO durable_runtime, durable_dispatcher',
                   current_schema());
END
$roles$;

-- name: clock -- the clock seam: all protocol time comes from here (docs/security.md "The clock seam").
-- 'transaction' is transaction_timestamp() (schedule commands, docs/protocol/schedules.md "Authoritative time");
-- 'clock' is clock_timestamp() (Work acceptance, docs/protocol/work.md: acceptance is the insertion-time
-- database timestamp). Tests replace the body as the owner; the runtime roles only execute it.
CREATE FUNCTION durable_schedule_clock(kind text DEFAULT 'clock')
RETURNS timestamptz
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    SELECT CASE kind
        WHEN 'transaction' THEN pg_catalog.transaction_timestamp()
        ELSE pg_catalog.clock_timestamp()
    END
$$;
REVOKE ALL ON FUNCTION durable_schedule_clock(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_schedule_clock(text) TO durable_runtime;

-- name: rls -- every table with scope_id: enabled, forced, one isolation policy.
-- NULLIF(..., '') because current_setting(name, true) returns '' (not NULL) once any earlier
-- transaction of the session set it: an unset scope must fail closed (docs/security.md).
DO $rls$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['durable_schedule_scope', 'durable_schedule_definition',
                             'durable_schedule_generation', 'durable_schedule_occurrence',
                             'durable_schedule_history', 'durable_work', 'durable_work_permit',
                             'durable_work_quarantine', 'durable_work_history'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY durable_scope_isolation ON %I
            USING (scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), ''))
            WITH CHECK (scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), ''))$p$, t);
    END LOOP;
END
$rls$;

-- The processor learns a claimed row's scope from its opaque routing id: the runtime may read
-- exactly the one scope row named by the transaction-local routing setting, and nothing else.
CREATE POLICY durable_scope_routing_lookup ON durable_schedule_scope FOR SELECT TO durable_runtime
    USING (routing_id = NULLIF(pg_catalog.current_setting('durable_schedule.routing_id', true), '')::bigint);

-- Dispatch tables hold no scoped data and no scope_id. The runtime sees the rows of its current
-- scope; the dispatcher may read (its granted routing columns of) all rows; the owner, as which
-- the SECURITY DEFINER claim functions run, claims across scopes.
DO $dispatch$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['durable_schedule_dispatch', 'durable_work_dispatch'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY durable_dispatch_runtime ON %I TO durable_runtime
            USING (scope_routing_id = (SELECT s.routing_id FROM durable_schedule_scope s
                   WHERE s.scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), '')))
            WITH CHECK (scope_routing_id = (SELECT s.routing_id FROM durable_schedule_scope s
                   WHERE s.scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), '')))$p$, t);
        EXECUTE format('CREATE POLICY durable_dispatch_dispatcher ON %I FOR SELECT TO durable_dispatcher USING (true)', t);
        EXECUTE format('CREATE POLICY durable_dispatch_owner ON %I TO %I USING (true) WITH CHECK (true)',
                       t, current_user);
    END LOOP;
END
$dispatch$;

-- name: grants -- exact grants; column grants only where a transition changes the column.
REVOKE ALL ON durable_schedule_store, durable_schedule_scope, durable_schedule_definition,
    durable_schedule_generation, durable_schedule_occurrence, durable_schedule_dispatch,
    durable_schedule_history, durable_work, durable_work_dispatch, durable_work_permit,
    durable_work_quarantine, durable_work_history FROM PUBLIC;

-- Row locks (FOR SHARE on fence rows) require UPDATE on some column: updated_at is that column.
GRANT SELECT, UPDATE (updated_at) ON durable_schedule_store TO durable_runtime;
GRANT SELECT, INSERT (scope_id), UPDATE (updated_at) ON durable_schedule_scope TO durable_runtime;
GRANT SELECT, INSERT, UPDATE (state, revision, active_generation, runtime_epoch, scope_generation,
    cursor_utc, suspension_reason, suspension_evidence, suspended_at, updated_at)
    ON durable_schedule_definition TO durable_runtime;
GRANT SELECT, INSERT ON durable_schedule_generation TO durable_runtime;
GRANT SELECT, INSERT, UPDATE (state, last_nominal_utc, work_id, work_command, work_idempotency_key,
    updated_at) ON durable_schedule_occurrence TO durable_runtime;
GRANT SELECT, INSERT (scope_routing_id, schedule_id, due_at), UPDATE (due_at, lease_owner,
    lease_expires_at, dispatch_revision) ON durable_schedule_dispatch TO durable_runtime;
GRANT SELECT, INSERT ON durable_schedule_history TO durable_runtime;
GRANT SELECT, INSERT, UPDATE (due_at, state, attempt, lease_owner, lease_expires_at,
    lease_generation, attempt_started_at, result, last_error, suspension_reason,
    execution_admission_closed_at, execution_admission_closed_reason,
    execution_deadline_reached_at, finished_at, updated_at) ON durable_work TO durable_runtime;
GRANT SELECT, INSERT (scope_routing_id, work_ref, due_at), UPDATE (due_at, lease_owner,
    lease_expires_at, dispatch_revision), DELETE ON durable_work_dispatch TO durable_runtime;
GRANT SELECT, INSERT, UPDATE (outcome, resolved_at, resolved_by, resolution_source)
    ON durable_work_permit TO durable_runtime;
GRANT SELECT, INSERT ON durable_work_quarantine, durable_work_history TO durable_runtime;

GRANT SELECT (dispatch_id, scope_routing_id, schedule_id, lease_owner, lease_expires_at,
    lease_generation, dispatch_revision) ON durable_schedule_dispatch TO durable_dispatcher;

-- Identity columns need USAGE on their sequences for inserts by the runtime.
DO $seq$
DECLARE
    t text;
    c text;
BEGIN
    FOR t, c IN SELECT a.attrelid::regclass::text, a.attname FROM pg_attribute a
                JOIN pg_class k ON k.oid = a.attrelid JOIN pg_namespace n ON n.oid = k.relnamespace
                WHERE a.attidentity <> '' AND k.relkind IN ('r', 'p') AND n.nspname = current_schema()
                  AND (k.relname LIKE 'durable\_schedule\_%' OR k.relname LIKE 'durable\_work%')
                  AND NOT k.relispartition LOOP
        EXECUTE format('GRANT USAGE ON SEQUENCE %s TO durable_runtime', pg_get_serial_sequence(t, c));
    END LOOP;
END
$seq$;

-- name: claim arguments -- the one validation both claim functions run before touching a row.
CREATE FUNCTION durable_schedule_check_claim(lease_owner text, lease_duration interval,
                                             max_rows integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $fn$
BEGIN
    IF lease_owner IS NULL OR btrim(lease_owner) = '' OR lease_owner ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'DS404: lease owner must be non-blank text without control characters'
            USING ERRCODE = '22023';
    END IF;
    IF length(lease_owner) > 200 THEN
        RAISE EXCEPTION 'DS404: lease owner is longer than 200 characters' USING ERRCODE = '22023';
    END IF;
    IF lease_duration IS NULL OR lease_duration <= interval '0'
       OR lease_duration > interval '10 minutes' THEN
        RAISE EXCEPTION 'DS404: lease duration must be > 0 and <= 10 minutes, got %', lease_duration
            USING ERRCODE = '22023';
    END IF;
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'DS404: max_rows must be between 1 and 1000, got %', max_rows
            USING ERRCODE = '22023';
    END IF;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_check_claim(text, interval, integer) FROM PUBLIC;

-- name: claim_schedule_dispatch -- the dispatcher's only entry point (docs/security.md).
-- Validates before touching a row; takes due rows with SKIP LOCKED through the partial due
-- index; the lease expiry becomes the row's next claimable instant; bumps lease generation and
-- dispatch revision (the fencing token the processor names in its WHERE clauses).
CREATE FUNCTION claim_schedule_dispatch(lease_owner text, lease_duration interval,
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
    UPDATE durable_schedule_dispatch d
       SET lease_owner = claim_schedule_dispatch.lease_owner,
           lease_expires_at = now_ts + lease_duration,
           due_at = now_ts + lease_duration,
           lease_generation = d.lease_generation + 1,
           dispatch_revision = d.dispatch_revision + 1
     WHERE d.dispatch_id IN (
            SELECT q.dispatch_id FROM durable_schedule_dispatch q
             WHERE q.due_at IS NOT NULL AND q.due_at <= now_ts
             ORDER BY q.due_at
             LIMIT max_rows
             FOR UPDATE SKIP LOCKED)
    RETURNING d.scope_routing_id, d.schedule_id, d.dispatch_revision;
END
$fn$;
REVOKE ALL ON FUNCTION claim_schedule_dispatch(text, interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_schedule_dispatch(text, interval, integer) TO durable_dispatcher;

-- name: claim_work_dispatch -- the Work runtime's cross-scope claim: same shape and checks.
CREATE FUNCTION claim_work_dispatch(lease_owner text, lease_duration interval,
                                    max_rows integer DEFAULT 1)
RETURNS TABLE (scope_routing_id bigint, work_ref bigint, dispatch_revision bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
AS $fn$
DECLARE
    now_ts timestamptz;
BEGIN
    PERFORM durable_schedule_check_claim(lease_owner, lease_duration, max_rows);
    now_ts := durable_schedule_clock('clock');
    RETURN QUERY
    UPDATE durable_work_dispatch d
       SET lease_owner = claim_work_dispatch.lease_owner,
           lease_expires_at = now_ts + lease_duration,
           due_at = now_ts + lease_duration,
           lease_generation = d.lease_generation + 1,
           dispatch_revision = d.dispatch_revision + 1
     WHERE d.dispatch_id IN (
            SELECT q.dispatch_id FROM durable_work_dispatch q
             WHERE q.due_at IS NOT NULL AND q.due_at <= now_ts
             ORDER BY q.due_at
             LIMIT max_rows
             FOR UPDATE SKIP LOCKED)
    RETURNING d.scope_routing_id, d.work_ref, d.dispatch_revision;
END
$fn$;
REVOKE ALL ON FUNCTION claim_work_dispatch(text, interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_work_dispatch(text, interval, integer) TO durable_runtime;

-- name: transaction forms -- enter and leave the runtime role and scope in one round trip each.
-- SECURITY INVOKER: they run as the caller and switch the role with set_config('role', ...,
-- true), exactly like SET LOCAL ROLE, so row-level security applies to every statement after the
-- switch. They prove current_user is the runtime role before any scope state is set
-- (docs/security.md "Roles"). Executable by the owner and the runtime role only.
CREATE FUNCTION durable_schedule_enter_scope(p_scope text)
RETURNS TABLE (previous_role text, previous_scope text)
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
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

CREATE FUNCTION durable_schedule_leave_scope(p_expected text, p_role text, p_scope text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
    -- A savepoint rolled back inside the block silently drops the scope or the role: refuse.
    IF current_user <> 'durable_runtime'
       OR coalesce(current_setting('durable_schedule.scope_id', true), '') <> p_expected THEN
        RAISE EXCEPTION 'DS305: the scope or role changed inside a scoped block (expected %)',
            p_expected USING ERRCODE = '42501';
    END IF;
    PERFORM set_config('durable_schedule.scope_id', p_scope, true);
    PERFORM set_config('role', p_role, true);
END
$fn$;

CREATE FUNCTION durable_schedule_enter_routed(p_routing_id bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE
AS $fn$
DECLARE
    found_scope text;
BEGIN
    PERFORM set_config('role', 'durable_runtime', true);
    IF current_user <> 'durable_runtime' THEN
        RAISE EXCEPTION 'DS302: routed work must run as durable_runtime, current_user is %',
            current_user USING ERRCODE = '42501';
    END IF;
    -- The routing lookup policy admits exactly the scope row named by this setting.
    PERFORM set_config('durable_schedule.routing_id', p_routing_id::text, true);
    SELECT s.scope_id INTO found_scope FROM durable_schedule_scope s
     WHERE s.routing_id = p_routing_id;
    PERFORM set_config('durable_schedule.routing_id', '', true);
    IF found_scope IS NOT NULL THEN
        PERFORM set_config('durable_schedule.scope_id', found_scope, true);
    END IF;
    RETURN found_scope;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_enter_scope(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_schedule_enter_routed(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION durable_schedule_leave_scope(text, text, text) FROM PUBLIC;
-- The runtime may enter a scope while already in one (a scoped call nested in a scoped block);
-- this grants nothing it lacks: any role may set_config a custom setting. RLS protects against
-- code that forgot its scope, not against code that runs as the runtime on purpose.
GRANT EXECUTE ON FUNCTION durable_schedule_enter_scope(text),
    durable_schedule_leave_scope(text, text, text) TO durable_runtime;

-- name: history partitions -- a new partition starts without RLS or grants: this function
-- forces RLS, creates the exact policy and grants on every child it creates (docs/security.md).
-- Rows for a month without a partition land in the default partition; creating that month's
-- partition later moves them, so an overdue maintenance run loses nothing.
CREATE TABLE durable_schedule_history_default PARTITION OF durable_schedule_history DEFAULT;

CREATE FUNCTION durable_schedule_secure_history_child(child text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', child);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', child);
    IF NOT EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = child::regclass
                   AND polname = 'durable_scope_isolation') THEN
        EXECUTE format($p$CREATE POLICY durable_scope_isolation ON %I
            USING (scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), ''))
            WITH CHECK (scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true), ''))$p$,
            child);
    END IF;
    EXECUTE format('REVOKE ALL ON %I FROM PUBLIC', child);
    EXECUTE format('GRANT SELECT, INSERT ON %I TO durable_runtime', child);
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_secure_history_child(text) FROM PUBLIC;

CREATE FUNCTION ensure_schedule_history_partitions()
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
AS $fn$
DECLARE
    month_start date := date_trunc('month', durable_schedule_clock('clock') AT TIME ZONE 'UTC')::date;
    lower_b timestamptz;
    upper_b timestamptz;
    child text;
    i integer;
BEGIN
    PERFORM durable_schedule_secure_history_child('durable_schedule_history_default');
    FOR i IN 0..1 LOOP
        lower_b := ((month_start + make_interval(months => i))::timestamp AT TIME ZONE 'UTC');
        upper_b := ((month_start + make_interval(months => i + 1))::timestamp AT TIME ZONE 'UTC');
        child := 'durable_schedule_history_' || to_char(lower_b AT TIME ZONE 'UTC', 'YYYYMM');
        IF to_regclass(child) IS NULL THEN
            -- Move rows that waited in the default partition, then attach the new month.
            EXECUTE format('CREATE TABLE %I (LIKE durable_schedule_history INCLUDING DEFAULTS)', child);
            EXECUTE format('ALTER TABLE durable_schedule_history_default DISABLE TRIGGER USER');
            EXECUTE format('WITH moved AS (DELETE FROM durable_schedule_history_default
                              WHERE recorded_at >= %L AND recorded_at < %L RETURNING *)
                            INSERT INTO %I SELECT * FROM moved', lower_b, upper_b, child);
            EXECUTE format('ALTER TABLE durable_schedule_history_default ENABLE TRIGGER USER');
            EXECUTE format('ALTER TABLE durable_schedule_history ATTACH PARTITION %I
                            FOR VALUES FROM (%L) TO (%L)', child, lower_b, upper_b);
            PERFORM durable_schedule_secure_history_child(child);
            RETURN NEXT child;
        ELSE
            PERFORM durable_schedule_secure_history_child(child);
        END IF;
    END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION ensure_schedule_history_partitions() FROM PUBLIC;

-- name: append-only history -- schedule history rows are audit facts: no UPDATE, no DELETE.
CREATE FUNCTION durable_schedule_refuse_change()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    RAISE EXCEPTION 'DS303: % on % is refused: the table is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = '42501';
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_refuse_change() FROM PUBLIC;
CREATE TRIGGER durable_schedule_history_append_only
    BEFORE UPDATE OR DELETE ON durable_schedule_history
    FOR EACH ROW EXECUTE FUNCTION durable_schedule_refuse_change();

-- Pin search_path of every SECURITY DEFINER and maintenance function to this schema with
-- pg_temp last, so objects planted on a caller's search_path are never resolved.
DO $pin$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['claim_schedule_dispatch(text, interval, integer)',
                             'durable_schedule_check_claim(text, interval, integer)',
                             'claim_work_dispatch(text, interval, integer)',
                             'ensure_schedule_history_partitions()',
                             'durable_schedule_secure_history_child(text)',
                             'durable_schedule_refuse_change()',
                             'durable_schedule_enter_scope(text)',
                             'durable_schedule_enter_routed(bigint)',
                             'durable_schedule_leave_scope(text, text, text)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$pin$;

SELECT ensure_schedule_history_partitions();
