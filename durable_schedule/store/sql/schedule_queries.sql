-- Named queries of the Schedule protocol (docs/protocol/schedules.md), run by durable_schedule.schedules (the
-- scoped API) and durable_schedule.processor (the dispatcher claim and the scoped pass).
-- Not a migration: loaded with sqlfiles.query("schedule_queries.sql", name). Every scoped query
-- runs as durable_runtime with the transaction-local scope set, so row-level security admits
-- the current scope only; the WHERE clauses still name scope_id so every lookup uses a key led
-- by scope_id. jsonb travels as text (::text out, ::jsonb in) so no driver adapter decides the
-- JSON encoding.

-- name: transaction clock -- the command's acceptance instant (docs/protocol/schedules.md "Authoritative time").
SELECT durable_schedule_clock('transaction')

-- name: claim -- the dispatcher's claim (transaction form 1): routing columns only.
SELECT scope_routing_id, schedule_id, dispatch_revision
  FROM claim_schedule_dispatch(%(lease_owner)s, %(lease_duration)s, %(max_rows)s)

-- name: lock fences -- store epoch and scope generation FOR SHARE: a bump waits for this
-- transaction, so it cannot slip between the fence check and the write (docs/protocol/storage.md). The
-- clock column is the processor's cutoff (read in this scoped transaction, one round trip).
SELECT st.runtime_epoch, st.schema_version, st.compatibility_floor, sc.generation, sc.routing_id,
       durable_schedule_clock('clock')
  FROM durable_schedule_store st
 CROSS JOIN durable_schedule_scope sc
 WHERE st.id = 1 AND sc.scope_id = %(scope_id)s
   FOR SHARE OF st, sc

-- name: lock definition -- one definition FOR UPDATE, with its active generation.
-- The safety window and the jitter are read at most 999999999 days (the longest Python
-- timedelta): a longer stored interval (tampered) would fail every read of the row. Read
-- clamped, a window still reaches past the supported UTC range (it behaves as stored), and a
-- jitter past 2**63 us is quarantined by the pass (jitter.check_range, DS149).
SELECT d.id, d.state, d.revision, d.active_generation, d.runtime_epoch, d.scope_generation,
       d.cursor_utc, d.suspension_reason, d.suspension_evidence::text, d.suspended_at,
       d.created_at, d.updated_at,
       g.kind, g.spec::text, g.accepted_at_utc, g.target::text, g.overlap_policy,
       g.misfire_policy,
       CASE WHEN g.safety_window > interval '999999999 days' THEN interval '999999999 days' ELSE g.safety_window END,
       g.evaluator_version, g.created_by, d.schedule_id,
       d.paused_at, d.paused_by, d.pause_note, d.resumed_at, d.missed::text, g.start_at,
       g.end_at, g.max_runs,
       CASE WHEN g.jitter > interval '999999999 days' THEN interval '999999999 days' ELSE g.jitter END,
       g.buffer_limit
  FROM durable_schedule_definition d
  LEFT JOIN durable_schedule_generation g
    ON g.scope_id = d.scope_id AND g.schedule_id = d.schedule_id
   AND g.generation = d.active_generation
 WHERE d.scope_id = %(scope_id)s AND d.schedule_id = %(schedule_id)s
   FOR UPDATE OF d

-- name: lock definition key -- the definition row FOR UPDATE, read as little as a quarantine
-- of a row whose other values this code cannot load needs (processor.step._still_claimed).
SELECT d.state, d.revision, d.active_generation
  FROM durable_schedule_definition d
 WHERE d.scope_id = %(scope_id)s AND d.schedule_id = %(schedule_id)s
   FOR UPDATE OF d

-- name: read definition -- one definition with its active generation, no lock (get).
SELECT d.id, d.state, d.revision, d.active_generation, d.runtime_epoch, d.scope_generation,
       d.cursor_utc, d.suspension_reason, d.suspension_evidence::text, d.suspended_at,
       d.created_at, d.updated_at,
       g.kind, g.spec::text, g.accepted_at_utc, g.target::text, g.overlap_policy,
       g.misfire_policy,
       CASE WHEN g.safety_window > interval '999999999 days' THEN interval '999999999 days' ELSE g.safety_window END,
       g.evaluator_version, g.created_by, d.schedule_id,
       d.paused_at, d.paused_by, d.pause_note, d.resumed_at, d.missed::text, g.start_at,
       g.end_at, g.max_runs,
       CASE WHEN g.jitter > interval '999999999 days' THEN interval '999999999 days' ELSE g.jitter END,
       g.buffer_limit
  FROM durable_schedule_definition d
  LEFT JOIN durable_schedule_generation g
    ON g.scope_id = d.scope_id AND g.schedule_id = d.schedule_id
   AND g.generation = d.active_generation
 WHERE d.scope_id = %(scope_id)s AND d.schedule_id = %(schedule_id)s

-- name: list definitions -- a page of the scope's definitions in schedule_id order (list).
SELECT d.id, d.state, d.revision, d.active_generation, d.runtime_epoch, d.scope_generation,
       d.cursor_utc, d.suspension_reason, d.suspension_evidence::text, d.suspended_at,
       d.created_at, d.updated_at,
       g.kind, g.spec::text, g.accepted_at_utc, g.target::text, g.overlap_policy,
       g.misfire_policy,
       CASE WHEN g.safety_window > interval '999999999 days' THEN interval '999999999 days' ELSE g.safety_window END,
       g.evaluator_version, g.created_by, d.schedule_id,
       d.paused_at, d.paused_by, d.pause_note, d.resumed_at, d.missed::text, g.start_at,
       g.end_at, g.max_runs,
       CASE WHEN g.jitter > interval '999999999 days' THEN interval '999999999 days' ELSE g.jitter END,
       g.buffer_limit
  FROM durable_schedule_definition d
  LEFT JOIN durable_schedule_generation g
    ON g.scope_id = d.scope_id AND g.schedule_id = d.schedule_id
   AND g.generation = d.active_generation
 WHERE d.scope_id = %(scope_id)s AND d.schedule_id > %(after)s
   AND (%(states)s::text[] IS NULL OR d.state = ANY (%(states)s::text[]))
 ORDER BY d.schedule_id
 LIMIT %(limit)s

-- name: insert definition -- a new schedule identity; nothing when it already exists.
INSERT INTO durable_schedule_definition (scope_id, schedule_id, state, revision,
        active_generation, runtime_epoch, scope_generation, cursor_utc, created_at, updated_at)
VALUES (%(scope_id)s, %(schedule_id)s, 'active', 1, 1, %(runtime_epoch)s,
        %(scope_generation)s, %(accepted_at)s, %(accepted_at)s, %(accepted_at)s)
ON CONFLICT (scope_id, schedule_id) DO NOTHING
RETURNING id

-- name: insert generation -- an immutable generation (the table refuses UPDATE and DELETE).
INSERT INTO durable_schedule_generation (scope_id, schedule_id, generation, kind, spec,
        accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,
        evaluator_version, created_by, start_at, end_at, max_runs, jitter, buffer_limit)
VALUES (%(scope_id)s, %(schedule_id)s, %(generation)s, %(kind)s, %(spec)s::jsonb,
        %(accepted_at)s, %(target)s::jsonb, %(overlap)s, %(misfire)s, %(safety_window)s,
        %(evaluator_version)s, %(actor)s, %(start_at)s, %(end_at)s, %(max_runs)s, %(jitter)s,
        %(buffer_limit)s)

-- name: rebind definition -- update: the new generation, fences rebound, suspension cleared.
-- A paused schedule stays paused (pause is the operator's; an update never resumes it).
UPDATE durable_schedule_definition
   SET state = CASE WHEN state = 'paused' THEN 'paused' ELSE 'active' END, revision = revision + 1, active_generation = %(generation)s,
       runtime_epoch = %(runtime_epoch)s, scope_generation = %(scope_generation)s,
       cursor_utc = %(cursor)s, suspension_reason = NULL, suspension_evidence = NULL,
       suspended_at = NULL, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND revision = %(revision)s AND state <> 'deleted'
RETURNING revision

-- name: release definition -- release after recovery: fences rebound, cursor untouched.
UPDATE durable_schedule_definition
   SET state = 'active', revision = revision + 1, runtime_epoch = %(runtime_epoch)s,
       scope_generation = %(scope_generation)s, suspension_reason = NULL,
       suspension_evidence = NULL, suspended_at = NULL, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND revision = %(revision)s AND state = 'suspended'
   AND suspension_reason = 'runtime_epoch_mismatch'
RETURNING revision

-- name: suspend definition -- suspend with reason and evidence; the cursor is not touched.
UPDATE durable_schedule_definition
   SET state = 'suspended', revision = revision + 1, suspension_reason = %(reason)s,
       suspension_evidence = %(evidence)s::jsonb, suspended_at = %(now)s, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND revision = %(revision)s AND state = 'active'
RETURNING revision

-- name: finish definition -- the terminal or final lifecycle states: deleted, completed.
UPDATE durable_schedule_definition
   SET state = %(state)s, revision = revision + 1, suspension_reason = NULL,
       suspension_evidence = NULL, suspended_at = NULL, paused_at = NULL, paused_by = NULL,
       pause_note = NULL, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND revision = %(revision)s AND state = ANY (%(from_states)s::text[])
RETURNING revision

-- name: move cursor -- the cursor only moves forward, in the pass that wrote the disposition.
UPDATE durable_schedule_definition
   SET cursor_utc = %(new_cursor)s, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND revision = %(revision)s AND state = 'active'
   AND cursor_utc = %(old_cursor)s AND %(new_cursor)s > cursor_utc

-- name: upsert dispatch -- an API change re-arms the dispatch row: due time, no lease, bump.
INSERT INTO durable_schedule_dispatch AS d (scope_routing_id, schedule_id, due_at)
VALUES (%(routing_id)s, %(schedule_id)s, %(due_at)s)
ON CONFLICT (scope_routing_id, schedule_id) DO UPDATE
   SET due_at = EXCLUDED.due_at, lease_owner = NULL, lease_expires_at = NULL,
       dispatch_revision = d.dispatch_revision + 1
RETURNING d.dispatch_revision

-- name: lock claimed dispatch -- the claimed row FOR UPDATE: does it still carry our lease?
SELECT lease_owner, dispatch_revision
  FROM durable_schedule_dispatch
 WHERE scope_routing_id = %(routing_id)s AND schedule_id = %(schedule_id)s
   FOR UPDATE

-- name: finish claim -- next due time, lease cleared, revision bumped; names the lease held.
UPDATE durable_schedule_dispatch
   SET due_at = %(due_at)s, lease_owner = NULL, lease_expires_at = NULL,
       dispatch_revision = dispatch_revision + 1
 WHERE scope_routing_id = %(routing_id)s AND schedule_id = %(schedule_id)s
   AND lease_owner = %(lease_owner)s AND dispatch_revision = %(dispatch_revision)s

-- name: release claim -- an interrupted pass gives back a claim whose decision did not commit:
-- due again now (the claim had moved the due time to the lease's end), lease cleared, bump.
UPDATE durable_schedule_dispatch
   SET due_at = durable_schedule_clock('clock'), lease_owner = NULL, lease_expires_at = NULL,
       dispatch_revision = dispatch_revision + 1
 WHERE scope_routing_id = %(routing_id)s AND schedule_id = %(schedule_id)s
   AND lease_owner = %(lease_owner)s AND dispatch_revision = %(dispatch_revision)s

-- name: lock slot -- the Work of the schedule's latest linked occurrence, FOR SHARE.
-- The processor links a new occurrence only while the slot is free, so among the occurrences
-- it links only the latest can hold a nonterminal Work (docs/protocol/schedules.md rule S4); a
-- backfill that revives an older skipped occurrence links it later, and its Work is read
-- beside this one ("lock revived slot", lifecycle_queries.sql). FOR SHARE makes a concurrent terminal
-- transition of that Work wait for this pass (or this pass wait for it), so the requeue trigger
-- and this pass never both miss a pending coalesced occurrence.
SELECT w.work_id, w.state, o.id
  FROM (SELECT x.id, x.scope_id, x.work_id FROM durable_schedule_occurrence x
         WHERE x.scope_id = %(scope_id)s AND x.schedule_id = %(schedule_id)s
           AND x.work_id IS NOT NULL
         ORDER BY x.id DESC
         LIMIT 1) o
  JOIN durable_work w ON w.scope_id = o.scope_id AND w.work_id = o.work_id
   FOR SHARE OF w

-- name: lock pending coalesced -- the schedule's one pending coalesced occurrence, if any.
SELECT id, generation, first_nominal_utc, last_nominal_utc
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND kind = 'coalesced' AND state = 'pending'
   FOR UPDATE

-- name: lock buffered -- buffer_all: the active generation's buffered occurrences (pending
-- nominal and recovery occurrences, which only buffer_all leaves pending past a transaction),
-- oldest first by arrival, FOR UPDATE. At most the generation's buffer_limit rows.
SELECT id, kind, first_nominal_utc
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND state = 'pending' AND kind IN ('nominal', 'recovery')
 ORDER BY id
   FOR UPDATE

-- name: insert occurrence -- an occurrence identity; nothing when it already exists.
-- current_user and the scope setting ride along: the Work bridge's runtime proof (docs/protocol/schedules.md rule S7)
-- for the occurrence this statement created, sampled in this transaction.
INSERT INTO durable_schedule_occurrence (scope_id, schedule_id, generation, kind,
        first_nominal_utc, last_nominal_utc, state, created_at, updated_at, jitter_us)
VALUES (%(scope_id)s, %(schedule_id)s, %(generation)s, %(kind)s, %(first)s, %(last)s,
        %(state)s, %(now)s, %(now)s, %(jitter_us)s)
ON CONFLICT (scope_id, schedule_id, generation, kind, first_nominal_utc) DO NOTHING
RETURNING id, current_user, pg_catalog.current_setting('durable_schedule.scope_id', true)

-- name: lock occurrence -- an occurrence by identity, with its link, FOR UPDATE.
SELECT id, state, last_nominal_utc, work_id, work_command, work_idempotency_key
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND kind = %(kind)s AND first_nominal_utc = %(first)s
   FOR UPDATE

-- name: extend coalesced -- a pending coalesced range only moves its last instant forward.
UPDATE durable_schedule_occurrence
   SET last_nominal_utc = GREATEST(last_nominal_utc, %(last)s), updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND id = %(id)s AND kind = 'coalesced' AND state = 'pending'
RETURNING last_nominal_utc

-- name: write link -- compare-or-return, write half: only an unlinked pending occurrence.
UPDATE durable_schedule_occurrence
   SET work_id = %(work_id)s, work_command = %(command)s,
       work_idempotency_key = %(idempotency_key)s, state = 'materialized', updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND id = %(id)s AND state = 'pending' AND work_id IS NULL

-- name: finish step -- the processor step's closing statement: "move cursor", "write link",
-- "finish claim" and "insert history" above, each with its own unchanged guard, in one round
-- trip. A part is skipped by a NULL parameter (new_cursor, link_id, event); the caller checks
-- every count (a guarded write that matches no row raises and rolls the transaction back). The
-- rows it writes were locked earlier in the step (definition and dispatch FOR UPDATE, the
-- occurrence inserted or locked by this transaction), so it takes no new lock.
WITH cursor_moved AS (
    UPDATE durable_schedule_definition
       SET cursor_utc = %(new_cursor)s::timestamptz, updated_at = %(now)s::timestamptz
     WHERE %(new_cursor)s::timestamptz IS NOT NULL
       AND scope_id = %(scope_id)s::text AND schedule_id = %(schedule_id)s::text
       AND revision = %(revision)s AND state = 'active'
       AND cursor_utc = %(old_cursor)s::timestamptz AND %(new_cursor)s::timestamptz > cursor_utc
    RETURNING 1
), linked AS (
    UPDATE durable_schedule_occurrence
       SET work_id = %(work_id)s::uuid, work_command = %(command)s::text,
           work_idempotency_key = %(idempotency_key)s::text, state = 'materialized',
           updated_at = %(now)s::timestamptz
     WHERE %(link_id)s::bigint IS NOT NULL
       AND scope_id = %(scope_id)s::text AND id = %(link_id)s::bigint AND state = 'pending'
       AND work_id IS NULL
    RETURNING 1
), released AS (
    UPDATE durable_schedule_dispatch
       SET due_at = %(due_at)s::timestamptz, lease_owner = NULL, lease_expires_at = NULL,
           dispatch_revision = dispatch_revision + 1
     WHERE scope_routing_id = %(routing_id)s AND schedule_id = %(schedule_id)s::text
       AND lease_owner = %(lease_owner)s::text AND dispatch_revision = %(dispatch_revision)s
    RETURNING 1
), history AS (
    INSERT INTO durable_schedule_history (scope_id, schedule_id, generation, event, actor,
            detail, recorded_at)
    SELECT %(scope_id)s::text, %(schedule_id)s::text, %(generation)s::integer,
           %(event)s::text, %(actor)s::text, %(detail)s::jsonb, %(recorded_at)s::timestamptz
     WHERE %(event)s::text IS NOT NULL
)
SELECT (SELECT count(*) FROM cursor_moved), (SELECT count(*) FROM linked),
       (SELECT count(*) FROM released)

-- name: retire pending -- supersede (update) or cancel (delete) unstarted occurrences.
UPDATE durable_schedule_occurrence
   SET state = %(state)s, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s AND state = 'pending'
   AND generation < %(below_generation)s
RETURNING id, generation, kind, first_nominal_utc, last_nominal_utc

-- name: insert history -- one audit row per schedule change (partitioned by month).
INSERT INTO durable_schedule_history (scope_id, schedule_id, generation, event, actor, detail,
        recorded_at)
VALUES (%(scope_id)s, %(schedule_id)s, %(generation)s, %(event)s, %(actor)s,
        %(detail)s::jsonb, %(recorded_at)s)
