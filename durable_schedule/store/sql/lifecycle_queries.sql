-- Named queries of the schedule lifecycle (docs/schedules.md "Lifecycle"): pause and resume, run
-- now, bounds and missed-instant accounting. Not a migration: loaded with
-- sqlfiles.query("lifecycle_queries.sql", name); every query runs as durable_runtime in a
-- scoped transaction (row-level security admits the current scope only).

-- name: pause definition -- active -> paused, with who, when and why; the cursor stays.
UPDATE durable_schedule_definition
   SET state = 'paused', revision = revision + 1, paused_at = %(now)s, paused_by = %(actor)s,
       pause_note = %(note)s, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND revision = %(revision)s AND state = 'active'
RETURNING revision

-- name: resume definition -- paused -> active; generation, anchor and grid untouched. The
-- cursor moves only for catch_up 'skip' (to the last instant at or before the resume), and
-- resumed_at is where lateness of the instants that fell while paused is measured from.
UPDATE durable_schedule_definition
   SET state = 'active', revision = revision + 1, paused_at = NULL, paused_by = NULL,
       pause_note = NULL, resumed_at = %(now)s, cursor_utc = %(cursor)s,
       missed = missed || %(missed)s::jsonb, updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND revision = %(revision)s AND state = 'paused' AND cursor_utc <= %(cursor)s
RETURNING revision

-- name: count missed -- add skipped instants to the schedule's per-cause counts.
UPDATE durable_schedule_definition
   SET missed = missed || jsonb_build_object(
           %(cause)s::text, COALESCE((missed ->> %(cause)s::text)::bigint, 0) + %(count)s),
       updated_at = %(now)s
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s

-- name: count runs -- the scheduled runs so far (max_runs): materialized nominal, recovery and
-- coalesced occurrences of every generation, plus the pending ones (a coalesced occurrence of
-- queue_one, the buffered occurrences of buffer_all): they will run.
SELECT count(*)
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND kind IN ('nominal', 'recovery', 'coalesced')
   AND (work_id IS NOT NULL OR state = 'pending')

-- name: lock revived slot -- the oldest unfinished Work of the schedule's linked occurrences that
-- was accepted after the Work of its latest linked occurrence, FOR SHARE. The slot ("lock slot",
-- schedule_queries.sql) is the Work of the latest linked occurrence, because occurrences are
-- linked in the order they are written -- except when a backfill runs an instant a skip dropped:
-- it links that older, skipped occurrence ("revive skipped" below), so its Work can hold the
-- slot behind a later occurrence whose Work has ended. A Work accepted before the latest one
-- (an allow_all run still going after a switch of policy) is not such a run and, as documented
-- (docs/schedules.md "Overlap"), does not hold the slot. Read from the Work side
-- (durable_work_state: the scope's unfinished Work), never a schedule's whole history.
SELECT w.work_id, w.state
  FROM durable_work w
  JOIN durable_schedule_occurrence o ON o.scope_id = w.scope_id AND o.id = w.source_occurrence_id
 WHERE w.scope_id = %(scope_id)s AND w.state IN ('pending', 'running', 'suspended')
   AND o.schedule_id = %(schedule_id)s AND o.work_id = w.work_id
   AND w.id > COALESCE((
        SELECT lw.id
          FROM (SELECT x.scope_id, x.work_id FROM durable_schedule_occurrence x
                 WHERE x.scope_id = %(scope_id)s AND x.schedule_id = %(schedule_id)s
                   AND x.work_id IS NOT NULL
                 ORDER BY x.id DESC
                 LIMIT 1) l
          JOIN durable_work lw ON lw.scope_id = l.scope_id AND lw.work_id = l.work_id), 0)
 ORDER BY w.id
 LIMIT 1
   FOR SHARE OF w

-- name: relock batch slots -- the batched pass's slot read again, for the schedules whose slot
-- its locking read ("lock batch", schedule_batch_queries.sql) found free: the Work of each
-- one's latest linked occurrence, FOR SHARE. That read is one statement, so when it waited for a
-- definition lock (a trigger or a backfill committing Work for the schedule) its occurrence
-- subquery still saw the snapshot from before the wait, without that Work. This statement runs
-- after the definition locks are held, so its snapshot has every such Work (docs/reliability.md
-- "Batches").
SELECT c.schedule_id, w.work_id, w.state
  FROM unnest(%(schedule_ids)s::text[]) AS c(schedule_id)
  JOIN LATERAL (
        SELECT o.scope_id, o.work_id FROM durable_schedule_occurrence o
         WHERE o.scope_id = %(scope_id)s AND o.schedule_id = c.schedule_id
           AND o.work_id IS NOT NULL
         ORDER BY o.id DESC
         LIMIT 1) o ON true
  JOIN durable_work w ON w.scope_id = o.scope_id AND w.work_id = o.work_id
 ORDER BY c.schedule_id
   FOR SHARE OF w

-- name: count buffered -- buffer_all: the buffered occurrences of the active generation that
-- wait to run (trigger and backfill refuse to run beside them; status shows the count).
SELECT count(*)
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND state = 'pending' AND kind IN ('nominal', 'recovery')

-- name: count coalesced -- queue_one: the pending coalesced occurrence of the active generation
-- (0 or 1) that waits to run (trigger refuses to run before it).
SELECT count(*)
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND state = 'pending' AND kind = 'coalesced'

-- name: find manual -- the manual occurrence of one request id, with its link.
SELECT id, generation, first_nominal_utc, state, work_id
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND request_id = %(request_id)s

-- name: insert manual -- a manual occurrence (run now), pending until the bridge links it.
INSERT INTO durable_schedule_occurrence (scope_id, schedule_id, generation, kind,
        first_nominal_utc, last_nominal_utc, state, created_at, updated_at, request_id)
VALUES (%(scope_id)s, %(schedule_id)s, %(generation)s, 'manual', %(at)s, %(at)s, %(state)s,
        %(at)s, %(at)s, %(request_id)s)
RETURNING id, current_user, pg_catalog.current_setting('durable_schedule.scope_id', true)

-- name: latest manual -- the latest manual instant of a generation: two runs requested in one
-- transaction (one transaction timestamp) get distinct identities, 1 µs apart.
SELECT max(first_nominal_utc)
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND kind = 'manual'

-- name: status lifecycle -- durable_status: paused schedules, missed instants per cause and
-- buffered instants (buffer_all) waiting to run, in the current scope (RLS scoped). The last
-- reads the small partial index of pending occurrences.
SELECT (SELECT count(*) FROM durable_schedule_definition WHERE state = 'paused'),
       (SELECT COALESCE(jsonb_object_agg(cause, total), '{}'::jsonb)::text
          FROM (SELECT m.key AS cause, sum(m.value::bigint) AS total
                  FROM durable_schedule_definition d, jsonb_each_text(d.missed) m
                 GROUP BY m.key) t),
       (SELECT count(*) FROM durable_schedule_occurrence o
          JOIN durable_schedule_definition d
            ON d.scope_id = o.scope_id AND d.schedule_id = o.schedule_id
           AND d.active_generation = o.generation
         WHERE o.state = 'pending' AND o.kind IN ('nominal', 'recovery'))

-- name: backfilled -- the recovery occurrences of a generation whose identity a backfill of
-- [start, end] would take: its own single-instant ones (first = last) and skipped ranges that
-- start at an instant of it (misfire or overlap skip), with their state.
SELECT first_nominal_utc, state
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND kind = 'recovery'
   AND (first_nominal_utc = last_nominal_utc OR state = 'skipped')
   AND first_nominal_utc BETWEEN %(start)s AND %(end)s

-- name: skipped ranges -- the generation's skipped ranges (misfire or overlap skip) that overlap
-- a backfill of [start, end]: an instant in one that the backfill skips again was counted in
-- missed when it was first skipped, and is not counted a second time.
SELECT first_nominal_utc, last_nominal_utc
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND kind = 'recovery' AND state = 'skipped'
   AND first_nominal_utc <= %(end)s AND last_nominal_utc >= %(start)s

-- name: revive skipped -- a backfill runs an instant whose recovery identity a skipped
-- occurrence holds (overlap or misfire skip: it never ran). That occurrence becomes the
-- instant's own, pending until the Work bridge links it; a skipped range shrinks to its first
-- instant and its former last instant is returned, so the caller records the rest skipped
-- again. The proof columns as for a freshly inserted occurrence.
WITH skipped AS (
    SELECT id, last_nominal_utc
      FROM durable_schedule_occurrence
     WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
       AND generation = %(generation)s AND kind = 'recovery'
       AND first_nominal_utc = %(first)s AND state = 'skipped' AND work_id IS NULL
       FOR UPDATE)
UPDATE durable_schedule_occurrence o
   SET state = 'pending', last_nominal_utc = o.first_nominal_utc, updated_at = %(now)s
  FROM skipped
 WHERE o.scope_id = %(scope_id)s AND o.id = skipped.id
RETURNING o.id, current_user, pg_catalog.current_setting('durable_schedule.scope_id', true),
          skipped.last_nominal_utc

-- name: recovery firsts -- the first instants of a generation's recovery occurrences in
-- (after, upto]: identities a skipped remainder cannot take.
SELECT first_nominal_utc
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND generation = %(generation)s AND kind = 'recovery'
   AND first_nominal_utc > %(after)s AND first_nominal_utc <= %(upto)s

-- name: covered -- the ranges of the schedule's occurrences that ran or will run (Work linked,
-- or still pending) and overlap a backfill of [start, end]: the schedule already disposed of
-- their instants, so a backfill must not run them a second time. Every generation's, unless
-- the caller asked to re-run what earlier generations ran (this_generation_only).
SELECT first_nominal_utc, last_nominal_utc
  FROM durable_schedule_occurrence
 WHERE scope_id = %(scope_id)s AND schedule_id = %(schedule_id)s
   AND (generation = %(generation)s OR NOT %(this_generation_only)s)
   AND kind IN ('nominal', 'recovery', 'coalesced')
   AND (work_id IS NOT NULL OR state IN ('pending', 'claimed', 'materialized'))
   AND first_nominal_utc <= %(end)s AND last_nominal_utc >= %(start)s
