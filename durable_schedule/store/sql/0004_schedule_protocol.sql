-- durable_schedule store, schema 3: the Schedule protocol (spec 000). Released files are never edited.

-- name: version -- schema 3 is readable by code of schema >= 3 only.
UPDATE durable_schedule_store SET schema_version = 3, compatibility_floor = 3, updated_at = now();
