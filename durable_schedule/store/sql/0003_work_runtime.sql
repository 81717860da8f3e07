-- durable_schedule store, schema 2: the Work runtime (docs/protocol/work.md). Released files are never edited.

-- name: version -- schema 2 is readable by code of schema >= 2 only.
UPDATE durable_schedule_store SET schema_version = 2, compatibility_floor = 2, updated_at = now();

-- name: work listing -- work.list() pages a scope's Work in acceptance order (internal id) in one
-- index range scan; without it a scope's listing would sort all its rows (PERFORMANCE.md).
CREATE INDEX durable_work_scope_order ON durable_work (scope_id, id);

-- Work runtime grants: none added. The runtime's transitions change only columns that
-- 0002 already grants (durable_work's runtime columns; durable_work_dispatch due_at, lease_owner,
-- lease_expires_at, dispatch_revision; permit resolution columns); lease_generation of a
-- dispatch row is bumped only by claim_work_dispatch, which runs as the owner.
