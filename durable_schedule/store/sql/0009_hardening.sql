-- durable_schedule store, schema 8: hardening (issue 11). Released files are never edited.
-- Runs inside the migration's transaction: every function below is created and has EXECUTE
-- revoked from PUBLIC atomically.

-- name: identifier rule -- the one identifier rule (docs/security.md "Identifiers"), the same
-- as durable_schedule/store/identifiers.py: refuse a value made only of whitespace (what
-- Python's str.isspace accepts) and any character of Unicode category Cc, Cf, Zl, Zp or Cs.
-- PostgreSQL's [[:cntrl:]] and [[:space:]] follow the server locale, so both classes are
-- explicit code point ranges generated from Unicode 15.0 (NUL and surrogates cannot occur in
-- text). E'' literals with doubled backslashes: the regex engine sees \uXXXX / \UXXXXXXXX
-- escapes whatever standard_conforming_strings says. tests/hardening/test_identifiers.py
-- proves SQL and Python agree on every code point. The operator is schema-qualified instead of
-- pinning search_path (nothing in the body resolves through the caller's search_path), and the
-- function is neither STRICT nor SET: both would stop PostgreSQL from inlining it into the
-- expressions that call it. Inlined it costs what the old inline [[:cntrl:]] regex cost
-- (measured, 200,000 calls: 0.36-0.52 s against 1.0-2.1 s pinned). NULL gives NULL.
CREATE FUNCTION durable_schedule_is_identifier(value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT value OPERATOR(pg_catalog.!~) E'[\\u0001-\\u001f\\u007f-\\u009f\\u00ad\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890-\\u0891\\u08e2\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb\\U000110bd\\U000110cd\\U00013430-\\U0001343f\\U0001bca0-\\U0001bca3\\U0001d173-\\U0001d17a\\U000e0001\\U000e0020-\\U000e007f]'
       AND value OPERATOR(pg_catalog.!~) E'^[\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028-\\u2029\\u202f\\u205f\\u3000]*$'
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_is_identifier(text) FROM PUBLIC;
-- The insert trigger below calls it as the inserting role (the runtime).
GRANT EXECUTE ON FUNCTION durable_schedule_is_identifier(text) TO durable_runtime;

-- New rows obey the rule in the tables too, for a writer that bypasses the Python layer. A
-- BEFORE INSERT trigger, not a CHECK constraint: PostgreSQL checks a CHECK (even a NOT VALID
-- one) on every UPDATE of a row, so a row accepted by an older version with such a character
-- could no longer move (a Work row could not finish, a schedule's cursor could not advance).
-- Identifier columns are never updated (no role holds UPDATE on them), so checking inserts
-- covers every identifier written from now on and leaves older rows workable.
CREATE FUNCTION durable_schedule_refuse_bad_identifiers()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    bad text;
BEGIN
    IF TG_TABLE_NAME = 'durable_schedule_scope' THEN
        IF NOT durable_schedule_is_identifier(NEW.scope_id) THEN
            RAISE EXCEPTION 'DS301: scope_id breaks the identifier rule (blank, or a control, '
                            'format or separator character)' USING ERRCODE = '23514';
        END IF;
        RETURN NEW;
    ELSIF TG_TABLE_NAME = 'durable_schedule_definition' THEN
        IF NOT durable_schedule_is_identifier(NEW.schedule_id) THEN
            bad := 'schedule_id';
        END IF;
    ELSIF TG_TABLE_NAME = 'durable_work' THEN
        bad := CASE WHEN NOT durable_schedule_is_identifier(NEW.command_id) THEN 'command_id'
                    WHEN NOT durable_schedule_is_identifier(NEW.idempotency_key)
                        THEN 'idempotency_key'
                    WHEN NOT durable_schedule_is_identifier(NEW.work_name) THEN 'work_name'
                    WHEN NOT durable_schedule_is_identifier(NEW.work_version) THEN 'work_version'
               END;
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'DS115: % breaks the identifier rule (blank, or a control, format or '
                        'separator character)', bad USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_refuse_bad_identifiers() FROM PUBLIC;
CREATE TRIGGER durable_schedule_scope_identifier BEFORE INSERT ON durable_schedule_scope
    FOR EACH ROW EXECUTE FUNCTION durable_schedule_refuse_bad_identifiers();
CREATE TRIGGER durable_schedule_definition_identifier BEFORE INSERT ON durable_schedule_definition
    FOR EACH ROW EXECUTE FUNCTION durable_schedule_refuse_bad_identifiers();
CREATE TRIGGER durable_work_identifiers BEFORE INSERT ON durable_work
    FOR EACH ROW EXECUTE FUNCTION durable_schedule_refuse_bad_identifiers();

-- name: claim arguments -- replaces the check both claim functions PERFORM before they touch a
-- row (0002_security.sql), so the claim bodies stay as they are. Two changes:
-- * the lease owner follows the identifier rule above;
-- * a calendar-valued lease is refused. The claim writes lease_expires_at = now + lease, and an
--   interval with a month or day part applies a length that depends on the instant and the
--   session TimeZone: '1 mon -30 days 5 min' compares as 5 minutes (interval comparison counts
--   a month as 30 days) yet applies as 1 day 5 min from 2031-03-10, as a negative (already
--   expired) lease in February, as 5 minutes in April; a day across a DST change lasts 23 or
--   25 hours. Checking the applied length at one instant is not enough: the check and the claim
--   read the clock microseconds apart, and a month end or DST change between the two readings
--   turns an accepted 5 minutes into 1 day 5 min (tests/hardening/test_calendar_leases.py shows
--   such a pair of instants). With no month and no day part, now + lease - now is the nominal
--   length at every instant and in every TimeZone, so the bound below is the applied lease.
CREATE OR REPLACE FUNCTION durable_schedule_check_claim(lease_owner text, lease_duration interval,
                                                        max_rows integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $fn$
BEGIN
    IF lease_owner IS NULL OR NOT durable_schedule_is_identifier(lease_owner) THEN
        RAISE EXCEPTION 'DS404: lease owner must be non-blank text without control, format or '
                        'separator characters' USING ERRCODE = '22023';
    END IF;
    IF length(lease_owner) > 200 THEN
        RAISE EXCEPTION 'DS404: lease owner is longer than 200 characters' USING ERRCODE = '22023';
    END IF;
    IF lease_duration IS NULL THEN
        RAISE EXCEPTION 'DS404: lease duration must be > 0 and <= 10 minutes, got NULL'
            USING ERRCODE = '22023';
    END IF;
    IF extract(year FROM lease_duration) <> 0 OR extract(month FROM lease_duration) <> 0
       OR extract(day FROM lease_duration) <> 0 THEN
        RAISE EXCEPTION 'DS404: lease duration must be a plain duration (no month or day part: '
                        'their length depends on the date and TimeZone), got %', lease_duration
            USING ERRCODE = '22023';
    END IF;
    IF lease_duration <= interval '0' OR lease_duration > interval '10 minutes' THEN
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

-- name: occurrence paging -- schedules.occurrences() pages one schedule's occurrences by id in
-- one index range scan (keyset paging, docs/protocol/index.md "Speed": never a sort of a
-- schedule's whole history).
-- The produced-Work read uses durable_schedule_occurrence_linked (0004).
CREATE INDEX durable_schedule_occurrence_by_schedule
    ON durable_schedule_occurrence (scope_id, schedule_id, id);

-- name: reads never create tenants -- durable_schedule_enter_scope (0002) inserts the scope row
-- (INSERT ... ON CONFLICT DO NOTHING) so that a write finds its routing id and fences; a read
-- through it left a permanent scope row behind for any typo ('typo-scope' then showed in the
-- admin's scope filter). Reads enter through this twin, which sets role and scope exactly the
-- same way and writes nothing; an unknown scope then reads as an empty one. A write that fails
-- rolls its savepoint back, insert included, so only a committed write creates a scope.
CREATE FUNCTION durable_schedule_enter_scope_to_read(p_scope text)
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
    RETURN NEXT;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_enter_scope_to_read(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION durable_schedule_enter_scope_to_read(text) TO durable_runtime;

-- name: no public execute -- no function of the store is executable by PUBLIC (docs/security.md
-- "Functions"). CREATE FUNCTION grants EXECUTE to PUBLIC by default, and the functions
-- django-pgtrigger installs for the append-only models (pgtrigger_append_only_*,
-- _pgtrigger_should_ignore) were never revoked. A store function is: one of this schema whose
-- name is a store name, or the function of a trigger on a store table (that catches every
-- function pgtrigger installs for our models, under whatever pgid), or pgtrigger's shared
-- ignore helper; never an extension's member. pgtrigger re-installs with CREATE OR REPLACE,
-- which keeps the revoked ACL; a function pgtrigger creates anew (a new trigger) is revoked by
-- the post_migrate handler that runs this after every `migrate` (durable_schedule/apps.py), and
-- `manage.py check` (E003) reports any that is still open. Returns what it revoked.
CREATE FUNCTION durable_schedule_store_functions()
RETURNS SETOF regprocedure
LANGUAGE sql STABLE
AS $fn$
    SELECT p.oid::regprocedure
      FROM pg_catalog.pg_proc p
     WHERE p.pronamespace = pg_catalog.current_schema()::regnamespace
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                        WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
                          AND d.deptype = 'e')
       AND (p.proname ~ '^(durable_|claim_schedule_dispatch$|claim_work_dispatch$|ensure_schedule_history_partitions$|_pgtrigger_should_ignore$)'
            OR p.oid IN (SELECT t.tgfoid FROM pg_catalog.pg_trigger t
                           JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
                          WHERE c.relnamespace = p.pronamespace
                            AND (c.relname LIKE 'durable\_schedule\_%' OR c.relname LIKE 'durable\_work%')))
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_store_functions() FROM PUBLIC;

CREATE FUNCTION durable_schedule_revoke_public_execute()
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
AS $fn$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT s.f FROM durable_schedule_store_functions() AS s(f)
              WHERE pg_catalog.has_function_privilege('public', s.f, 'EXECUTE')
                AND (SELECT p.proowner FROM pg_catalog.pg_proc p WHERE p.oid = s.f)
                    = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        RETURN NEXT f::text;
    END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_revoke_public_execute() FROM PUBLIC;

-- Pin search_path (CREATE OR REPLACE keeps no earlier SET clause of its own accord).
DO $pin$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['durable_schedule_check_claim(text, interval, integer)',
                             'durable_schedule_store_functions()',
                             'durable_schedule_refuse_bad_identifiers()',
                             'durable_schedule_revoke_public_execute()',
                             'durable_schedule_enter_scope_to_read(text)'] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$pin$;

SELECT durable_schedule_revoke_public_execute();

-- name: version -- schema 8, floor unchanged: additive for older code (its claims pass the
-- stricter check, its reads still enter through durable_schedule_enter_scope; an identifier it
-- would accept that breaks the new rule is refused by the insert trigger, SQLSTATE 23514,
-- instead of stored), so old and new processes may share the store
-- during a rolling deploy (docs/compatibility.md). Code of schema 8 needs schema 8.
UPDATE durable_schedule_store SET schema_version = 8, updated_at = now();
