"""The batched pass: the claimed schedules of one scope in one scoped runtime transaction
(docs/architecture.md "One batched pass"; docs/benchmarks.md "Bottlenecks").

The single-schedule step (``step.py``) spends about nine statements and a commit on every
schedule. Here the claimed schedules of one scope share one ``routed`` transaction and each
step of the protocol is one multi-row statement for all of them: fences, one locking read
(definitions, claimed dispatch rows, slots and pending coalesced occurrences, schedule after
schedule in the single step's lock order), occurrence inserts with their Work acceptance, and
the closing write (cursor moves, Work links, dispatch releases, history). Each schedule's
decision is :func:`evaluate_pass` (the single step's) on exactly the rows a pass of its own
would lock, and every multi-row write carries the single-schedule guard per row and reports
which rows it matched, so a schedule's decision, cursor move and Work link are what they
would be alone.

Which schedules take the set-based path: those whose step is one of the shapes that make up
nearly every pass — a superseded claim, a no-op (inactive definition, nothing due, coalesced
occurrence still waiting for a busy slot), a nominal or recovery occurrence bridged to Work.
The others (a fence or clock-jump suspension, a skipped range, a coalesce, a freed pending
coalesced occurrence, a completion) run the single-schedule step itself (``step._step``),
statement for statement, inside the same transaction: exact by construction, and rare.

Failure isolation (docs/reliability.md "Batches"):

* a schedule whose generation cannot be evaluated is left out of the batch before anything is
  written for it (``BatchResult.deferred``); the caller processes it alone after the commit,
  where it is quarantined exactly as in a pass of its own;
* anything else that goes wrong — a guard that matched fewer rows than asked, a conflict, a
  database error — raises out of here, the whole transaction rolls back, and the caller
  (``processor.process_due``) processes every schedule of the batch alone, one transaction
  each, so the failing one fails alone and the others make their progress.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any

from durable_schedule.barriers import (
    SCHEDULE_BRIDGE_BEFORE_COMMIT,
    SCHEDULE_DECISION_AFTER_COMMIT,
    SCHEDULE_DECISION_BEFORE_COMMIT,
    SCHEDULE_LINK_AFTER_COMMIT,
    SCHEDULE_WORK_AFTER_ACCEPTANCE,
    barrier,
)
from durable_schedule.errors import DurableError, SchemaBelowFloor, SchemaMissing, alias_of
from durable_schedule.evaluation import jitter as jittering
from durable_schedule.evaluation.decision import Decision
from durable_schedule.frozen import maker
from durable_schedule.processor import lifecycle as hooks
from durable_schedule.processor.batch_work import (
    BatchAbandoned,
    InstantText,
    WorkBatch,
    batch_statement,
    rows_json,
    run_batch,
)
from durable_schedule.processor.bridge import (
    OccurrenceIdentity,
    make_bridged,
)
from durable_schedule.processor.dispatcher import Claim
from durable_schedule.processor.evaluate import evaluate_pass, generation_fence
from durable_schedule.processor.step import (
    ScheduleOutcome,
    _detail,
    _event,
    _fence_mismatch,
    _Pending,
    _step,
)
from durable_schedule.schedules import records
from durable_schedule.schedules import validation as check
from durable_schedule.schedules.records import TERMINAL_WORK_STATES, Definition, Fences
from durable_schedule.store.transactions import (
    pipeline_connection,
    routed_pipelined,
    sibling_cursor,
)
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION

log = logging.getLogger("durable_schedule.processor")

# The values built per schedule, every field given in order (durable_schedule/frozen.py):
#: ``ScheduleOutcome(routing_id, scope_id, schedule_id, action, work_id, materialized_kind,
#: reason, completed, first, last, detail)``
_outcome = maker(ScheduleOutcome)
#: ``OccurrenceIdentity(scope_id, schedule_id, generation, kind, first_nominal_utc, fresh_id,
#: fresh_proof)``
_identity = maker(OccurrenceIdentity)


class _Unevaluable(Exception):  # noqa: N818
    """Stored state the single step refuses as unevaluable (it quarantines the row)."""


@dataclass
class BatchResult:
    """What one batch did: an outcome per processed claim, the claims left to be processed
    alone after the commit, and which barrier kinds the batch reached."""

    outcomes: dict[Claim, ScheduleOutcome] = field(default_factory=dict)
    deferred: list[Claim] = field(default_factory=list)
    bridged: bool = False
    decided: bool = False  # at least one decision that accepted no Work


@dataclass
class _Item:
    """One claimed schedule of the batch, as it moves through the steps."""

    claim: Claim
    #: The claim's schedule id (read at every step: an attribute, not a property).
    schedule_id: str = field(init=False)
    d: Definition | None = None
    spec: Any = None
    occupant: Any = None
    pending: _Pending | None = None
    decision: Decision | None = None
    identity: OccurrenceIdentity | None = None
    bridged: Any = None
    lease: tuple[str | None, int] | None = None  # the dispatch row's (lease owner, revision)
    spec_text: str | None = None
    target_text: str | None = None

    def __post_init__(self) -> None:
        self.schedule_id = self.claim.schedule_id


def process_batch(claims: list[Claim], lease_owner: str, *,
                  using: str | None = None) -> BatchResult:
    """Process the claims of one routing id in one transaction (see the module docstring)."""
    routing_id = claims[0].routing_id
    if any(c.routing_id != routing_id for c in claims):
        raise ValueError("a batch holds the claims of one routing id")
    # The fences and the locking read go with the scope entry in one round trip
    # (routed_pipelined): both read the scope from the transaction's setting.
    ordered = sorted(claims, key=lambda c: c.schedule_id)
    first = [(batch_statement("lock_fences_in_scope"), {}),
             (batch_statement("lock_batch"), {
                 "routing_id": routing_id, "lease_owner": lease_owner,
                 "schedule_ids": [c.schedule_id for c in ordered],
                 "revisions": [c.dispatch_revision for c in ordered]})]
    with routed_pipelined(routing_id, first, using=using) as (cur, scope_id, (fenced, locked)):
        if scope_id is None:
            raise BatchAbandoned("no scope is visible behind the claimed routing id")
        result = _Batch(cur, scope_id, routing_id, claims, lease_owner).run(fenced, locked)
        # One commit covers every schedule of the batch, so each barrier is one point for the
        # whole batch: reached when at least one schedule would have reached it alone.
        if result.bridged:
            barrier(SCHEDULE_BRIDGE_BEFORE_COMMIT)
        if result.decided:
            barrier(SCHEDULE_DECISION_BEFORE_COMMIT)
    if result.bridged:
        barrier(SCHEDULE_LINK_AFTER_COMMIT)
    if result.decided:
        barrier(SCHEDULE_DECISION_AFTER_COMMIT)
    return result


class _Batch:
    def __init__(self, cur, scope_id: str, routing_id: int, claims: list[Claim],
                 owner: str) -> None:
        self.cur, self.scope_id, self.routing_id, self.owner = cur, scope_id, routing_id, owner
        self.items = [_Item(c) for c in claims]
        self.result = BatchResult()
        self.fences: Fences | None = None
        self.instant_text = InstantText()  # the batch's timestamptz texts, one per instant

    # ------------------------------------------------------------------ reads
    def run(self, fenced: list[tuple], locked: list[tuple]) -> BatchResult:
        """``fenced``, ``locked``: the rows of "lock fences in scope" and "lock batch", read
        in this transaction before anything else (process_batch)."""
        cur, scope_id = self.cur, self.scope_id
        if not fenced:
            # As records.lock_fences: the scope row exists (routed found it), so the store row
            # is missing (an unmigrated or damaged store).
            raise SchemaMissing("the store row or the scope row is missing", scope=scope_id,
                                using=alias_of(cur))
        self.fences = fences = Fences(*fenced[0])
        if fences.schema_version < REQUIRED_SCHEMA or fences.compatibility_floor > SCHEMA_VERSION:
            raise SchemaBelowFloor(f"database schema {fences.schema_version} (floor "
                                   f"{fences.compatibility_floor}) does not fit this code "
                                   f"(needs {REQUIRED_SCHEMA}, is {SCHEMA_VERSION})",
                                   using=alias_of(cur))
        self._lock(self.items, locked)
        self._relock_free_slots()
        specs: dict[tuple, Any] = {}
        released: list[_Item] = []  # no-op: lease released, nothing else written
        active: list[_Item] = []
        rare: list[_Item] = []
        for item in self.items:
            c, lease, d = item.claim, item.lease, item.d
            base = self._base(c)
            if lease is None or lease[0] != self.owner or lease[1] != c.dispatch_revision:
                self.result.outcomes[c] = ScheduleOutcome(**base, action="superseded")
                continue
            if d is None or d.state != "active":
                self._record(c, ScheduleOutcome(**base, action="noop"), False)
                released.append(item)
            elif _fence_mismatch(d, fences) is not None:
                rare.append(item)  # the step suspends it, with its evidence
            else:
                try:
                    item.spec = _spec(d, item.spec_text, specs)
                    check.jitter_within_deadline(d.jitter, d.target_json)  # DS155: quarantined
                    jittering.check_range(d.jitter)  # DS149: quarantined
                    fenced = generation_fence(item.spec, d.cursor_utc)
                except Exception:  # noqa: BLE001 - evaluated alone, where it is quarantined
                    self.result.deferred.append(c)
                    continue
                # A fenced generation (cron time-zone rules changed): the step suspends it.
                # buffer_all: the step reads and runs its buffered occurrences.
                (active if fenced is None and d.overlap != "buffer_all" else rare).append(item)
        fast: list[_Item] = []
        for item in active:
            try:
                item.decision = self._evaluate(item)
            except Exception:  # noqa: BLE001 - as above: alone, after the commit
                self.result.deferred.append(item.claim)
                continue
            (fast if self._is_fast(item) else rare).append(item)
        self._write(fast, released)
        for item in rare:
            where = {"phase": "lock", "scope_id": scope_id, "schedule_id": item.schedule_id,
                     "routing_id": self.routing_id}
            outcome, work = _step(cur, scope_id, item.claim, self.owner, where)
            self._record(item.claim, outcome, work)
        return self.result

    def _base(self, c: Claim) -> dict[str, Any]:
        return {"routing_id": c.routing_id, "scope_id": self.scope_id,
                "schedule_id": c.schedule_id}

    def _lock(self, items: list[_Item], rows: list[tuple]) -> None:
        """Every lock the batch takes before it decides, in one statement ("lock batch"): per
        claimed schedule, in schedule_id order, its definition FOR UPDATE, its dispatch row
        FOR UPDATE and, for a claim still ours on an active definition, its slot (the latest
        linked Work, FOR SHARE) and its pending coalesced occurrence (FOR UPDATE): the single
        step's order, schedule after schedule."""
        ordered = sorted(items, key=lambda i: i.schedule_id)
        if [row[0] for row in rows] != [i.schedule_id for i in ordered]:
            raise BatchAbandoned("the batch's locking read returned other rows than its claims")
        parsed: dict[str | None, Any] = {}

        def shared_json(text: str | None) -> Any:
            if text not in parsed:
                parsed[text] = None if text is None else json.loads(text)
            return parsed[text]

        for item, row in zip(ordered, rows, strict=True):
            if row[1] is not None:
                item.d = records._definition(self.scope_id, item.schedule_id, row[1:32],
                                             generation_json=shared_json)
                # The stored spec and target texts (jsonb output: equal values, equal text):
                # schedules of one spec share its validated spec, of one target a Work template.
                item.spec_text, item.target_text = row[14], row[16]
            if row[33] is not None:
                item.lease = (row[32], row[33])
            if row[34] is not None and row[35] not in TERMINAL_WORK_STATES:
                item.occupant = row[34]
            if row[36] is not None:
                item.pending = _Pending(*row[36:40])

    def _relock_free_slots(self) -> None:
        """Read again, in a statement of its own, the slots the locking read found free for
        the claims still ours on active definitions: that read's snapshot predates any wait
        for a definition lock, so a run-now or backfill Work committed during the wait was not
        in it (lifecycle_queries.sql "relock batch slots"). The definitions are locked now:
        nothing can link a new Work to these schedules until the batch commits."""
        free = {item.schedule_id: item for item in self.items
                if item.occupant is None and item.d is not None and item.d.state == "active"
                and item.lease == (self.owner, item.claim.dispatch_revision)}
        if not free:
            return
        rows = hooks.run_lifecycle(self.cur, "relock_batch_slots", {
            "scope_id": self.scope_id, "schedule_ids": sorted(free)}).fetchall()
        for schedule_id, work_id, state in rows:
            if state not in TERMINAL_WORK_STATES:
                free[schedule_id].occupant = work_id

    def _evaluate(self, item: _Item) -> Decision:
        d, pending = item.d, item.pending
        if pending is not None and pending.generation != d.generation:
            # The single step refuses this stored state as unevaluable (step._lock_pending):
            # the caller leaves it to that step, which quarantines it.
            raise _Unevaluable("foreign pending coalesced occurrence")
        if item.occupant is None:
            # A backfilled run behind the latest linked occurrence (read only for a schedule
            # that ever skipped): the single step reads it too (step._step).
            item.occupant = hooks.revived_occupant(self.cur, d)
        return evaluate_pass(d, self.fences.clock, item.occupant,
                             pending.last if pending else None, spec=item.spec,
                             lifecycle=lambda: hooks.decide_inputs(self.cur, d))

    @staticmethod
    def _is_fast(item: _Item) -> bool:
        """The shapes written set-based; any other runs the single step in this transaction."""
        decision = item.decision
        if decision.action not in ("noop", "nominal", "recovery"):
            return False
        if decision.action == "noop" and item.pending is not None and item.occupant is None:
            return False  # the pending coalesced occurrence runs now: the single step does it
        if decision.action == "nominal" and item.d.jitter is not None:
            return False  # a jittered Work is due later, with its offset on the occurrence row
        # A completion rewrites the definition row: the single step's separate statements.
        return not (decision.next_due is None and item.pending is None)

    # ------------------------------------------------------------------ writes
    def _write(self, fast: list[_Item], released: list[_Item]) -> None:
        cur, scope_id, now = self.cur, self.scope_id, self.fences.clock
        bridging = [i for i in fast if i.decision.action in ("nominal", "recovery")]
        works = WorkBatch(cur, scope_id, now, self.instant_text)
        left_out: set[str] = set()
        for item in bridging:
            d, dec = item.d, item.decision
            item.identity = _identity(scope_id, d.schedule_id, d.generation, dec.action,
                                      dec.first, None, None)
            try:
                added = works.add(item.schedule_id, item.identity, dec.last, d.target_json,
                                  key=item.target_text)
            except DurableError:
                # Its stored target makes no Work request (a queue no longer listed, DS244:
                # held; a payload refused: quarantined): nothing is written for it here, it
                # is processed alone after the commit, where the single bridge refuses it as
                # it always does, and the batch commits without it.
                added = False
            if not added:
                # (Or its payload would take the batch's templates past their budget, a jsonb
                # parameter PostgreSQL would refuse: batch_work.TEMPLATE_BYTES_BUDGET.)
                left_out.add(item.schedule_id)
                self.result.deferred.append(item.claim)
        if left_out:
            fast = [i for i in fast if i.schedule_id not in left_out]
            bridging = [i for i in bridging if i.schedule_id not in left_out]
        connection = pipeline_connection(cur) if works else None
        if connection is not None:
            self._write_pipelined(fast, released, bridging, works, connection)
            return
        # One statement after the other (no pipeline): the same premise, every occurrence and
        # its Work new, checked before the closing rows are built (WorkBatch.resolve).
        fresh = works.bridge() if works else {}
        if fresh:
            barrier(SCHEDULE_WORK_AFTER_ACCEPTANCE)
        for item in bridging:
            occurrence_id, item.bridged = fresh[item.schedule_id]
            item.identity = replace(item.identity, fresh_id=occurrence_id)
        self._finish(fast, released)

    def _write_pipelined(self, fast: list[_Item], released: list[_Item],
                         bridging: list[_Item], works: WorkBatch, connection) -> None:
        """The bridging and the closing statement in one psycopg pipeline: the closing rows are
        built in Python while the server runs the bridging statement, and both results come
        back in one round trip (docs/benchmarks.md "Batched schedule passes, profiled").

        The closing rows need each schedule's bridge result before it exists, so they are
        built for the result nearly every batch gets: every occurrence and its Work inserted
        by the bridging statement (``Bridged(derived, created=True)``, exactly what
        :meth:`WorkBatch.resolve` returns). When the result is anything else (an occurrence or
        Work that existed already: a unique violation of the bridging statement; not the
        runtime in scope) the batch fails before it commits: it rolls back and every schedule
        runs alone (``processor.process_due``), where the single step bridges it, compare or
        return, as the sequential form of this batch would have. The barrier after acceptance
        is reached after both statements, still before the commit: a crash there leaves
        nothing."""
        cur = self.cur
        for item in bridging:
            item.bridged = make_bridged(works.derived(item.schedule_id), True, None)
        closing_cursor = sibling_cursor(cur)
        try:
            with cur.db.wrap_database_errors, connection.pipeline():
                works.send()  # sent now; the server runs it while the closing rows are built
                steps = self._closing_steps(fast, released)
                self._send_closing(closing_cursor, steps)
            # The pipeline's end waited for both results (one round trip): read them.
            got = cur.fetchall()
            closing = closing_cursor.fetchone()
        finally:
            closing_cursor.close()
        fresh = works.resolve(got)  # raises BatchAbandoned unless every row was created
        barrier(SCHEDULE_WORK_AFTER_ACCEPTANCE)
        for item in bridging:
            # (The identities keep fresh_id unset: only the single bridge reads it, and every
            # occurrence here is bridged already.)
            if fresh[item.schedule_id][1] != item.bridged:  # all created: resolve() agrees
                raise BatchAbandoned("a bridge result differs from the closing rows' premise")
        self._check_closing(steps, closing)

    def _finish(self, fast: list[_Item], released: list[_Item]) -> None:
        """The closing statement of every set-based schedule (step._Ctx.finish_step per row,
        and finish_claim for the no-op ones), then each row's counts checked."""
        steps = self._closing_steps(fast, released)
        if not steps:
            return
        self._check_closing(steps, self._send_closing(self.cur, steps).fetchone())

    def _closing_steps(self, fast: list[_Item], released: list[_Item]) -> list[dict[str, Any]]:
        """The rows of "finish steps", one per schedule: a released claim's carries only its
        key and dispatch revision (the statement releases the lease, nothing else)."""
        steps: list[dict[str, Any]] = []
        for item in released:
            steps.append({"schedule_id": item.schedule_id, "revision": None, "old_cursor": None,
                          "new_cursor": None, "dispatch_revision": item.claim.dispatch_revision,
                          "due_at": None, "generation": None, "event": None, "detail": None})
        for item in fast:
            steps.append(self._step_row(item))
        return steps

    def _send_closing(self, cur, steps: list[dict[str, Any]]):
        return run_batch(cur, "finish_steps", {
            "scope_id": self.scope_id, "routing_id": self.routing_id,
            "lease_owner": self.owner, "actor": f"processor:{self.owner}",
            "now": self.fences.clock, "recorded_at": self.fences.clock,
            "rows": rows_json(steps)})

    def _check_closing(self, steps: list[dict[str, Any]], result: tuple) -> None:
        moved, linked, released_ids = result
        want_moved = {s["schedule_id"] for s in steps if s["new_cursor"] is not None}
        want_linked = {s["schedule_id"] for s in steps if "link_id" in s}
        if set(moved) != want_moved or len(moved) != len(want_moved):
            raise BatchAbandoned("a guarded cursor move matched other rows than asked")
        if set(linked) != want_linked or len(linked) != len(want_linked):
            raise BatchAbandoned("a guarded Work link matched other rows than asked")
        if sorted(released_ids) != sorted(s["schedule_id"] for s in steps):
            raise BatchAbandoned("a dispatch row no longer carries its claim")

    def _step_row(self, item: _Item) -> dict[str, Any]:
        """One schedule's row of "finish steps", computed as step._step does. The link columns
        are left out when there is no link to write (every new occurrence is inserted
        linked): jsonb_to_recordset reads a missing key as NULL, exactly as the null it would
        otherwise carry, and the batch's parameter is shorter by four keys a row
        (docs/benchmarks.md "Batched schedule passes, fourth round")."""
        d, decision, c = item.d, item.decision, item.claim
        text = self.instant_text
        moving = decision.new_cursor != d.cursor_utc
        bridged, identity = item.bridged, item.identity
        due = decision.next_due
        detail = _detail(decision, bridged, identity, item.pending, item.occupant, False, due)
        event = None
        if decision.action != "noop" or bridged is not None:
            event = _event(decision, bridged, False)
        self._record(c, _outcome(
            c.routing_id, self.scope_id, c.schedule_id, decision.action,
            bridged.link.work_id if bridged else None, identity.kind if identity else None,
            None, False, decision.first, decision.last, detail), bridged is not None)
        row = {
            "schedule_id": item.schedule_id, "revision": d.revision,
            "old_cursor": text(d.cursor_utc),
            "new_cursor": text(decision.new_cursor) if moving else None,
            "dispatch_revision": c.dispatch_revision, "due_at": text(due),
            "generation": d.generation, "event": event,
            # The detail nested as it is: rows_json writes the same JSON value records.to_json
            # would (one encoding per row instead of three).
            "detail": detail,
        }
        if bridged is not None and bridged.link_row is not None:
            link = bridged.link
            row["link_id"], row["work_id"] = bridged.link_row, link.work_id_str()
            row["command"], row["idempotency_key"] = link.command, link.idempotency_key
        return row

    def _record(self, claim: Claim, outcome: ScheduleOutcome, work: bool) -> None:
        self.result.outcomes[claim] = outcome
        if outcome.action == "superseded":
            return
        if work:
            self.result.bridged = True
        else:
            self.result.decided = True


def _spec(d: Definition, spec_text: str | None, cache: dict[tuple, Any]) -> Any:
    """``d.spec()``, validated once per distinct stored spec of the batch: the strict rebuild
    is a pure function of (kind, evaluator version, stored spec), and a spec is immutable."""
    if d.kind is None or spec_text is None:
        return d.spec()  # raises: the generation row is missing
    key = (d.kind, d.evaluator_version, spec_text)
    spec = cache.get(key)
    if spec is None:
        spec = cache[key] = d.spec()
    return spec
