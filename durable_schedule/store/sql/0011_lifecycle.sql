-- durable_schedule store, schema 10: the schedule lifecycle an operator expects (docs/schedules.md
-- "Lifecycle"): pause/resume, run now, bounds and limits per generation, jitter, missed-instant
-- accounting. Released files are never edited.

-- name: paused state -- 'paused' is an operator state beside the protocol's suspensions: it
-- has its own columns (who, when, why), so a suspension's reason/evidence keep one meaning.
-- resumed_at is the instant lateness of instants that fell while paused is measured from
-- (docs/schedules.md "Pause and resume"); missed counts skipped instants per cause.
ALTER TABLE durable_schedule_definition
    DROP CONSTRAINT durable_schedule_definition_state_check,
    ADD CONSTRAINT durable_schedule_definition_state_check
        CHECK (state IN ('active', 'suspended', 'paused', 'deleted', 'completed')),
    ADD COLUMN paused_at timestamptz,
    ADD COLUMN paused_by text,
    ADD COLUMN pause_note text CHECK (length(pause_note) <= 1000),
    ADD COLUMN resumed_at timestamptz,
    ADD COLUMN missed jsonb NOT NULL DEFAULT '{}'::jsonb
        CHECK (jsonb_typeof(missed) = 'object'),
    ADD CONSTRAINT durable_schedule_definition_paused
        CHECK ((state = 'paused') = (paused_at IS NOT NULL));

-- name: generation bounds -- per generation, immutable like the rest of the row: the first
-- instant allowed (inclusive), the last (inclusive), the number of scheduled runs, and the
-- jitter bound (each instant's Work is due at nominal + a derived offset below it).
ALTER TABLE durable_schedule_generation
    ADD COLUMN start_at timestamptz,
    ADD COLUMN end_at timestamptz,
    ADD COLUMN max_runs integer CHECK (max_runs >= 1),
    ADD COLUMN jitter interval CHECK (jitter > interval '0'),
    ADD CONSTRAINT durable_schedule_generation_bounds
        CHECK (start_at IS NULL OR end_at IS NULL OR start_at <= end_at);

-- name: manual occurrences -- run now: a 'manual' occurrence whose identity is the caller's
-- request id (one per schedule), and the jitter offset each occurrence was given.
ALTER TABLE durable_schedule_occurrence
    DROP CONSTRAINT durable_schedule_occurrence_kind_check,
    ADD CONSTRAINT durable_schedule_occurrence_kind_check
        CHECK (kind IN ('nominal', 'recovery', 'coalesced', 'manual')),
    ADD COLUMN request_id text
        CHECK (length(request_id) BETWEEN 1 AND 200 AND request_id !~ '[[:cntrl:]]'),
    ADD COLUMN jitter_us bigint CHECK (jitter_us >= 0),
    ADD CONSTRAINT durable_schedule_occurrence_manual_request
        CHECK (kind <> 'manual' OR request_id IS NOT NULL);
CREATE UNIQUE INDEX durable_schedule_occurrence_request
    ON durable_schedule_occurrence (scope_id, schedule_id, request_id)
    WHERE request_id IS NOT NULL;

-- name: lifecycle grants -- the runtime writes the new definition columns (column grants do not
-- extend to added columns by themselves).
GRANT UPDATE (paused_at, paused_by, pause_note, resumed_at, missed)
    ON durable_schedule_definition TO durable_runtime;

-- name: version -- schema 10 is readable by code of schema >= 10 only (older code knows neither
-- the paused state nor manual occurrences).
UPDATE durable_schedule_store SET schema_version = 10, compatibility_floor = 10, updated_at = now();
