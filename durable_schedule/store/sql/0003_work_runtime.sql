-- durable_schedule store, schema 2: the Work runtime (spec 001). Released files are never edited.

-- name: version -- schema 2 is readable by code of schema >= 2 only.
UPDATE durable_schedule_store SET schema_version = 2, compatibility_floor = 2, updated_at = now();
