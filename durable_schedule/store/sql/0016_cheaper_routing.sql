-- durable_schedule store, schema 15: the dispatch routing copy at a lower cost per inserted
-- row (issue 16; measured in docs/benchmarks.md "Acceptance, fifth look"). Released files are
-- never edited.

-- name: dispatch routing, unpinned -- the BEFORE INSERT FOR EACH ROW trigger of
-- 0010_work_queues.sql stays (every insert path still gets the Work row's queue and priority
-- copied into its dispatch row, whatever it wrote, and the runtime role still needs no grant
-- on those columns), with the same body. What changes: the function carried a pinned
-- search_path, so every call -- one per dispatch row, a hundred for enqueue_many of 100 --
-- went through PostgreSQL's SET-clause path (a GUC save, switch and restore per call), which
-- costs more than the function's one index lookup. Now the table is schema-qualified (written
-- with the migration's schema) and the comparison operator is pg_catalog's, so nothing in the
-- body is resolved through the caller's search path and the pin is not needed. CREATE OR
-- REPLACE keeps the owner, the grants (none: EXECUTE stays revoked from PUBLIC) and the
-- trigger, and drops the SET clause.
DO $make$
BEGIN
    EXECUTE format($def$
CREATE OR REPLACE FUNCTION durable_work_dispatch_routing()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    SELECT w.queue_name, w.priority INTO NEW.queue_name, NEW.priority
      FROM %1$I.durable_work w WHERE w.id OPERATOR(pg_catalog.=) NEW.work_ref;
    RETURN NEW;
END
$fn$$def$, current_schema());
END
$make$;

-- name: version -- schema 15. The floor stays: code of schema 14 inserts the same rows and
-- gets the same routing, so old and new processes may share the store during a rolling
-- deploy (docs/compatibility.md).
UPDATE durable_schedule_store SET schema_version = 15, updated_at = now();
