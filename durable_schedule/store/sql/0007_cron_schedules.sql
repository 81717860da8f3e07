-- durable_schedule store, schema 6: cron schedules (docs/schedules.md "Cron").
-- Released files are never edited.
-- A cron generation persists its grammar version, zone name, DST policy, H seed and tz-rules
-- snapshot (offsets and changes from acceptance to the horizon, with their fingerprint) in its
-- append-only spec, and its evaluator version ("ds-cron-v1") in evaluator_version; the
-- evaluator refuses (quarantines) anything else. The store only has to admit the new kind.
-- Occurrences keep their local wall time and fold in the history detail of the pass.

-- name: generation kind -- admit 'cron' beside at / after / every.
ALTER TABLE durable_schedule_generation DROP CONSTRAINT durable_schedule_generation_kind;
ALTER TABLE durable_schedule_generation ADD CONSTRAINT durable_schedule_generation_kind
    CHECK (kind IN ('at', 'after', 'every', 'cron'));

-- Code older than schema 6 would quarantine every cron schedule as an unknown kind.
UPDATE durable_schedule_store SET schema_version = 6, compatibility_floor = 6, updated_at = now();
