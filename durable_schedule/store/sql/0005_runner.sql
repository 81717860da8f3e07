-- durable_schedule store, schema 4: wake-up notifications for --loop runners (docs/protocol/runner.md).
-- Released files are never edited.

-- name: notify -- a dispatch row that becomes due sooner wakes idle runners (LISTEN).
-- Payload-free on purpose: a listener learns only that something may be due, never what; the
-- claim function decides. PostgreSQL folds identical notifications of one transaction into one.
CREATE FUNCTION durable_schedule_notify_due()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    PERFORM pg_notify(TG_ARGV[0], '');
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_notify_due() FROM PUBLIC;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_notify_due() SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;

CREATE TRIGGER durable_schedule_dispatch_notify_insert
    AFTER INSERT ON durable_schedule_dispatch FOR EACH ROW
    WHEN (NEW.due_at IS NOT NULL)
    EXECUTE FUNCTION durable_schedule_notify_due('durable_schedule_due');
CREATE TRIGGER durable_schedule_dispatch_notify_sooner
    AFTER UPDATE OF due_at ON durable_schedule_dispatch FOR EACH ROW
    WHEN (NEW.due_at IS NOT NULL AND (OLD.due_at IS NULL OR NEW.due_at < OLD.due_at))
    EXECUTE FUNCTION durable_schedule_notify_due('durable_schedule_due');
CREATE TRIGGER durable_work_dispatch_notify_insert
    AFTER INSERT ON durable_work_dispatch FOR EACH ROW
    WHEN (NEW.due_at IS NOT NULL)
    EXECUTE FUNCTION durable_schedule_notify_due('durable_work_due');
CREATE TRIGGER durable_work_dispatch_notify_sooner
    AFTER UPDATE OF due_at ON durable_work_dispatch FOR EACH ROW
    WHEN (NEW.due_at IS NOT NULL AND (OLD.due_at IS NULL OR NEW.due_at < OLD.due_at))
    EXECUTE FUNCTION durable_schedule_notify_due('durable_work_due');

-- name: next_due -- seconds until the earliest dispatch row is due, for the idle sleep; read by
-- the owner's connection (the runner's), which the dispatch owner policy admits.
CREATE FUNCTION durable_schedule_seconds_until_due(queue text)
RETURNS double precision
LANGUAGE plpgsql STABLE
AS $fn$
DECLARE
    earliest timestamptz;
BEGIN
    IF queue = 'schedule' THEN
        SELECT min(due_at) INTO earliest FROM durable_schedule_dispatch WHERE due_at IS NOT NULL;
    ELSIF queue = 'work' THEN
        SELECT min(due_at) INTO earliest FROM durable_work_dispatch WHERE due_at IS NOT NULL;
    ELSE
        RAISE EXCEPTION 'DS406: unknown queue %', queue USING ERRCODE = '22023';
    END IF;
    RETURN extract(epoch FROM earliest - durable_schedule_clock('clock'));
END
$fn$;
REVOKE ALL ON FUNCTION durable_schedule_seconds_until_due(text) FROM PUBLIC;
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION durable_schedule_seconds_until_due(text) SET search_path = %I, pg_temp',
                   current_schema());
END
$pin$;

-- name: version -- schema 4.
UPDATE durable_schedule_store SET schema_version = 4, compatibility_floor = 4, updated_at = now();
