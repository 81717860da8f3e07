"""The one error hierarchy of durable_schedule (docs/architecture.md "diagnostics",
docs/protocol/conventions.md rule C7).

Every error carries a stable diagnostic ``code`` (``DS1xx`` schedule, ``DS2xx`` work, ``DS3xx``
security, ``DS4xx`` operations), a ``retriable`` flag and a ``next_action`` sentence that tells
the caller what to do. The catalogue in ``docs/diagnostics.md`` lists every code; a test keeps the
codes unique and listed, so add a code here *and* there.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.exceptions import ImproperlyConfigured
from django.db.migrations.exceptions import IrreversibleError


class DurableError(Exception):
    """Base of every error raised by durable_schedule."""

    code: ClassVar[str] = "DS000"
    retriable: ClassVar[bool] = False
    next_action: ClassVar[str] = "Read the message and docs/diagnostics.md."

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context

    def __str__(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in sorted(self.context.items()))
        tail = f" [{extra}]" if extra else ""
        return f"{self.code}: {self.message}{tail} — {self.next_action}"


# ---------------------------------------------------------------- DS1xx schedule
class ScheduleError(DurableError):
    code = "DS100"


class InvalidScheduleSpec(ScheduleError):
    code = "DS101"
    next_action = (
        "Use schedules.At(when), schedules.After(delay) or schedules.Every(interval, "
        "anchor=...)."
    )


class NonPositiveDuration(ScheduleError):
    code = "DS102"
    next_action = "Give an interval, delay or safety window greater than zero."


class NaiveDatetime(ScheduleError):
    code = "DS103"
    next_action = "Pass an aware datetime (tzinfo set); durable_schedule stores UTC only."


class SubMicrosecondPrecision(ScheduleError):
    code = "DS104"
    next_action = "PostgreSQL keeps microseconds: round the value yourself before passing it."


class UnknownWorkTarget(ScheduleError):
    code = "DS105"
    next_action = "Register the Work with work.define(name, version) before targeting it."


class RevisionMismatch(ScheduleError):
    code = "DS106"
    next_action = "Re-read the schedule with schedules.get() and retry with its current revision."


class ScheduleDeleted(ScheduleError):
    code = "DS107"
    next_action = "Deletion is terminal: create a schedule with a new schedule_id."


class ScheduleNotFound(ScheduleError):
    code = "DS108"
    next_action = "Check the scope and schedule_id; schedules are only visible in their scope."


class ScheduleAlreadyExists(ScheduleError):
    code = "DS109"
    next_action = "Use schedules.update() to change an existing schedule."


class ReleaseRefused(ScheduleError):
    code = "DS110"
    next_action = (
        "release_after_recovery only clears runtime-epoch suspensions; fix the cause and "
        "schedules.update() (new generation) for scope, clock or evaluator suspensions."
    )


class InvalidSchedulePolicy(ScheduleError):
    code = "DS111"
    next_action = ("Use overlap 'queue_one', 'skip', 'buffer_all' or 'allow_all' and misfire "
                   "'run_once' or 'skip'.")


class OccurrenceLinkConflict(ScheduleError):
    code = "DS113"
    next_action = (
        "A stored occurrence link differs from the derived Work identity: investigate "
        "tampering."
    )


class UnevaluableGeneration(ScheduleError):
    code = "DS114"
    next_action = (
        "The stored spec cannot be evaluated: the schedule is suspended; update it to a "
        "valid spec."
    )


class InvalidIdentifier(DurableError):
    code = "DS115"
    next_action = (
        "Identifiers are 1-200 characters, not only whitespace, without surrounding spaces and "
        "without control, format or separator characters (docs/security.md \"Identifiers\")."
    )


class ScheduleNotSuspended(ScheduleError):
    code = "DS116"
    next_action = "Only a suspended schedule can be released."


class ScheduleNeverFires(ScheduleError):
    code = "DS117"
    next_action = (
        "The spec has no nominal instant after the command's acceptance time (PostgreSQL "
        "transaction time): give an At instant in the future, or use After(delay)."
    )


class ScheduleLeaseLost(ScheduleError):
    code = "DS118"
    next_action = (
        "Another dispatcher took this schedule's expired lease over; this pass wrote nothing "
        "for it. Raise --lease-seconds if passes outlive their lease."
    )



# DS145-DS165: schedule lifecycle (docs/schedules.md).
class DeclarationConflict(ScheduleError):
    code = "DS145"
    next_action = (
        "One schedule identity (scope, schedule id) has one declaration in code: remove the "
        "duplicate declare() or give it its own schedule id."
    )


class ScheduleNotPausable(ScheduleError):
    code = "DS146"
    next_action = (
        "Only an active schedule can be paused; a suspended one needs its repair first "
        "(docs/schedules.md operator table)."
    )


class ScheduleNotPaused(ScheduleError):
    code = "DS147"
    next_action = (
        "Only a paused schedule can be resumed; a suspended one is repaired (release or "
        "update), not resumed."
    )


class InvalidBounds(ScheduleError):
    code = "DS148"
    next_action = (
        "start_at and end_at are aware datetimes with start_at <= end_at; max_runs is a "
        "positive integer."
    )


class InvalidJitter(ScheduleError):
    code = "DS149"
    next_action = (
        'jitter is a positive timedelta, shorter than an Every interval or than the shortest'
        ' gap between two instants of a Cron in the year ahead (the error names the gap).'
    )


class JitterPastDeadline(InvalidJitter):
    """A jitter that could make an occurrence's Work due at or after the target's deadline."""

    code = "DS155"
    next_action = (
        "The Work of a jittered instant is due up to the jitter after it, and its deadline is "
        "deadline_after from the pass that materializes it: give a jitter shorter than the "
        "target's deadline_after, or a longer deadline_after (docs/schedules.md \"Jitter\")."
    )


class TriggerSlotBusy(ScheduleError):
    code = "DS150"
    next_action = (
        "The schedule's previous Work still holds the slot (or a pending coalesced or buffered"
        " occurrence waits to run first) and its overlap policy lets only one"
        " run at a time: retry the trigger (same request id) once it finished, or use overlap "
        "allow_all."
    )


class ScheduleNotTriggerable(ScheduleError):
    code = "DS151"
    next_action = (
        'Only an active or paused schedule can be run now; repair a suspended one first.'
    )


class BackfillRefused(ScheduleError):
    code = "DS153"
    next_action = (
        "A backfill covers an active or paused schedule, at most 1000 instants, under "
        "queue_one or buffer_all one new instant per request, and never more runs than "
        "max_runs leaves (docs/schedules.md \"Backfill\")."
    )


class InvalidCatchUp(ScheduleError):
    code = "DS152"
    next_action = (
        'catch_up is "misfire_policy" (the generation\'s misfire policy decides, lateness '
        'measured from the resume) or "skip" (instants missed while paused are skipped and '
        "counted)."
    )


class InvalidBufferLimit(ScheduleError):
    code = "DS154"
    next_action = (
        "buffer_limit is an integer from 1 to 1000 and is given only with overlap "
        "'buffer_all' (default 100) (docs/schedules.md \"Overlap policies\")."
    )


class EmptyPruneRefused(ScheduleError):
    code = "DS159"
    next_action = (
        "sync_schedules --prune found no declaration at all and would delete every schedule "
        "sync manages, in every scope: check --settings and INSTALLED_APPS; if removing them "
        "all is meant, pass --allow-empty (sync(..., allow_empty=True))."
    )


class ReservedActor(ScheduleError):
    code = "DS156"
    next_action = (
        'The actor "sync_schedules" marks what sync_schedules manages (a later --prune deletes '
        "it): only sync_schedules writes under it; name another actor (or rename the user)."
    )


class DeclaredScheduleNotManaged(ScheduleError):
    code = "DS157"
    next_action = (
        "A declaration names a schedule that sync_schedules did not create: give the "
        "declaration another schedule id, or run sync_schedules --adopt to let sync manage it "
        "(one new generation; a later --prune deletes it once no declaration names it)."
    )


class DeclaredIdentityDeleted(ScheduleError):
    code = "DS158"
    next_action = (
        "The declared identity was deleted and deletion is terminal: declare the schedule "
        "under a new schedule id."
    )


class TimeZoneUnavailable(UnevaluableGeneration):
    """A stored cron spec that was valid when accepted names a zone the installed tz database
    no longer has (renamed or removed zone, a link dropped by a tzdata or OS upgrade)."""

    code = "DS160"
    next_action = (
        "The spec was valid when accepted; the zone it names is missing from the tz database "
        "this process loads (a tzdata or OS upgrade removed or renamed it): either install a tz "
        "database that has the zone again and re-issue the schedule (update() without a spec, "
        "or the admin's Re-issue), or update(spec=...) with the zone's current IANA name "
        "(docs/schedules.md \"Time zones\")."
    )


# DS173-DS174: stored state a pass cannot write to (docs/schedules.md, "unevaluable").
class StoredCountOutOfRange(UnevaluableGeneration):
    """A stored per-cause ``missed`` count that is no count (not a non-negative integer) or
    that the skipped range would take past the bigint range: written by hand."""

    code = "DS173"
    next_action = (
        "The schedule's stored missed-instant counts were edited by hand: restore them "
        "(durable_schedule_definition.missed, non-negative integers per cause), then re-issue "
        "the schedule (update() without a spec, or the admin's Re-issue)."
    )


class UnreadableStoredRow(UnevaluableGeneration):
    """A stored value of the schedule's definition or active generation that this code cannot
    load at all (a timestamp past year 9999 or before year 1): written by hand."""

    code = "DS174"
    next_action = (
        "A stored value of the schedule (a timestamp outside years 1-9999) was written by hand "
        "and cannot be read: restore the definition row and its active generation, then "
        "re-issue the schedule (update() without a spec, or the admin's Re-issue)."
    )


# DS175-DS176: schedule lifecycle, further refusals (docs/schedules.md).
class ScheduleNotSuspendable(ScheduleError):
    code = "DS175"
    next_action = (
        "Only an active schedule can be suspended; a paused one is already stopped: resume() "
        "it first if it must be suspended, or leave it paused (docs/schedules.md \"Decisions "
        "recorded\")."
    )


# ---------------------------------------------------------------- DS125-DS139 cron schedules
class InvalidCronExpression(ScheduleError):
    code = "DS125"
    next_action = (
        "Fix the cron field named in the message (field and character position are given); "
        "the grammar is the Cronos one, see docs/schedules.md \"Cron grammar\"."
    )


class UnknownTimeZone(ScheduleError):
    code = "DS126"
    next_action = (
        "Give an IANA zone name zoneinfo can load (e.g. 'Europe/Berlin'); install or update "
        "the system tz database or the tzdata package."
    )


class InvalidDstPolicy(ScheduleError):
    code = "DS127"
    next_action = "Use dst_gap 'shift' or 'skip' and dst_fold 'first' or 'second'."


class CronIdentityRequired(ScheduleError):
    code = "DS128"
    next_action = (
        "The expression uses H (or the spec is an Every without an anchor): pass "
        "identity=(scope, schedule_id) so the preview uses the schedule's own seed/anchor."
    )


class InvalidTzRulesCommand(ScheduleError):
    code = "DS129"
    next_action = "Check the arguments of `manage.py durable_tz_rules` (see docs/schedules.md)."

# ---------------------------------------------------------------- DS2xx work
class WorkError(DurableError):
    code = "DS200"


class UnknownWorkDefinition(WorkError):
    code = "DS201"
    next_action = "Register the Work with work.define(name, version) in every process that runs it."


class DuplicateWorkDefinition(WorkError):
    code = "DS202"
    next_action = "Define each (name, version) once; give changed semantics a new version."


class InvalidRetryPolicy(WorkError):
    code = "DS203"
    next_action = "Fix the retry policy field named in the message (see docs/work.md)."


class InvalidAttemptPlan(WorkError):
    code = "DS204"
    next_action = "Offsets: 1..256, first 0, strictly increasing, circuit > last offset."


class InvalidExecutionDeadline(WorkError):
    code = "DS205"
    next_action = "Pass an aware UTC datetime with at most microsecond precision."


class WorkPrecisionError(WorkError):
    code = "DS206"
    next_action = "Durations and instants keep microseconds: round them before passing."


class IdempotencyConflict(WorkError):
    code = "DS207"
    next_action = (
        "The same command/idempotency key was accepted with different facts: use a new "
        "key."
    )


class WorkFactsTampered(WorkError):
    """The stored Work row of an identity no longer hashes to its fingerprint (issue 11)."""

    code = "DS233"
    next_action = (
        "The row named in the message was changed after acceptance (by SQL, not by "
        "durable_schedule): nothing was written. Investigate who changed it, compare it with "
        "its history, and restore the accepted facts or cancel it (docs/security.md)."
    )


class PlannedWorkWithDueTime(WorkError):
    code = "DS208"
    next_action = (
        "A planned request starts at its acceptance instant: drop due_at or drop the "
        "plan."
    )


class PayloadNotEncodable(WorkError):
    code = "DS209"
    next_action = "Pass a JSON-encodable payload or register a codec."


class WorkNotFound(WorkError):
    code = "DS210"
    next_action = "Check the scope and work id; Work is only visible in its scope."


class LeaseLost(WorkError):
    code = "DS211"
    retriable = False
    next_action = "Another worker owns the row now; drop the result (it was kept as evidence)."


class AdmissionClosed(WorkError):
    code = "DS212"
    next_action = "The deadline or circuit closed execution; reconcile or record proof instead."


class ProofRefused(WorkError):
    code = "DS213"
    next_action = "Proof applies to suspended Work with an unresolved admitted permit."


class DueAfterDeadline(WorkError):
    """A request due at or after its own absolute deadline: it could never be admitted."""

    code = "DS218"
    next_action = (
        "The Work would be due only when its deadline (exclusive) has closed admission, so it "
        "would expire without running: move due_at / run_after before the deadline, or give "
        "a later deadline (docs/work.md \"Timing\")."
    )


class WorkArithmeticOutOfRange(WorkError):
    code = "DS215"
    next_action = "Use durations and instants inside PostgreSQL's timestamp range."


class ExecutorFailed(WorkError):
    code = "DS216"
    retriable = True
    next_action = "The executor raised; the retry policy decides the next attempt."


class WorkStateConflict(WorkError):
    code = "DS217"
    next_action = (
        "The Work's current state does not allow this command (see docs/work.md \"States\"): "
        "re-read it with work.get() and act on what it shows."
    )


class AttemptsExhausted(WorkError):
    code = "DS223"
    next_action = (
        "The Work's attempt counter reached its policy's maximum, so it was closed as failed "
        "without another invocation; inspect how the row got there (history) and enqueue new "
        "Work if the effect is still wanted."
    )


class InvalidConcurrency(WorkError):
    code = "DS225"
    next_action = (
        "Pass --concurrency as an int between 1 and 256 (see docs/operations.md "
        "\"Sizing --concurrency, batches and connections\")."
    )


class AttemptCancelled(WorkError):
    code = "DS226"
    retriable = True
    next_action = (
        "The async executor was cancelled at its deadline or lease end; make it finish "
        "sooner, renew its lease, or widen the deadline. The retry policy decides what follows."
    )


# DS241-DS245: the django.tasks backend and Work queues (docs/tasks.md, docs/work.md).
class InvalidTaskArguments(WorkError, TypeError):
    code = "DS241"
    next_action = (
        "Task arguments and return values are JSON: pass ids and plain values, not model "
        "instances or datetimes (send isoformat() strings); the path names the argument."
    )


class TaskOptionsConflict(WorkError):
    code = "DS242"
    next_action = (
        "One task module path is one Work definition per version: give changed options "
        "(safety, policy) a new version option, and define the task once per process."
    )


class InvalidQueue(WorkError):
    code = "DS244"
    next_action = (
        "Use a queue named in DURABLE_SCHEDULE['QUEUES'] (or add it there); "
        "docs/work.md \"Queues and priorities\"."
    )


class InvalidTaskOptions(WorkError):
    code = "DS243"
    next_action = (
        "Fix the durable task option or the backend's OPTIONS named in the message "
        "(docs/tasks.md \"Options\")."
    )



# DS271-DS273: the django.tasks backend at enqueue (docs/tasks.md).
class TaskArgumentsMismatch(WorkError, TypeError):
    code = "DS271"
    next_action = (
        "Pass the arguments the task function takes (the message names the mismatch and the "
        "signature); a call that does not fit would fail every attempt (docs/tasks.md "
        "\"Arguments and return values\")."
    )


class TaskScopeMismatch(WorkError):
    code = "DS272"
    next_action = (
        "A task with a fixed scope (its `scope` option) runs in that scope only: create the "
        "schedule in that scope, or drop the option (docs/tasks.md \"Periodic tasks\")."
    )


# DS274-DS279: the django.tasks backend, further refusals (docs/tasks.md).
class EnqueueInManualTransaction(WorkError):
    code = "DS274"
    next_action = (
        "enqueue() under manual transaction management (autocommit off, outside atomic()) "
        "cannot tie the task to your commit: put it in transaction.atomic() on the store's "
        "alias; nothing was written (docs/tasks.md \"Transactions\")."
    )


# DS246-DS249: adaptive claim sizing of the Work pipeline (docs/work.md "Batched Work").
class InvalidWaitBudget(WorkError):
    code = "DS246"
    next_action = (
        "Pass the wait budget as seconds > 0 and <= 60: how long an admitted attempt may wait "
        "for the ones before it (docs/operations.md \"Sizing --concurrency, batches and "
        "connections\")."
    )


# DS250-DS252: bounds of the Work runtime (docs/work.md "Accepting Work").
class PayloadTooLarge(PayloadNotEncodable):
    code = "DS250"
    next_action = (
        "Keep a payload or result under 32 MiB of canonical JSON (floats such as 1e+308 count "
        "as the digits PostgreSQL writes back: send them as strings): store big data elsewhere "
        "(a table, an object store) and pass its key (docs/work.md \"Accepting Work\")."
    )


# DS260-DS269: executors at run time (docs/work.md "Execution").
class ExecutorReturnedAwaitable(WorkError):
    code = "DS260"
    next_action = (
        "A synchronous executor or reconciler returned a coroutine (or another awaitable), "
        "which was not run: declare it `async def` (or give its class an `async def "
        "__call__`) so the runtime awaits it on the event loop (docs/work.md \"Execution\")."
    )


# DS285-DS289: executors and the worker's own connections (docs/work.md "Execution").
class TransactionLeftOpen(WorkError):
    code = "DS285"
    next_action = (
        "The executor or reconciler returned with a transaction still open on its thread's "
        "connection (`transaction.set_autocommit(False)` not turned back on, an `atomic()` "
        "entered and never left): the runtime rolled it back, so what it wrote there was not "
        "committed, and the attempt failed (a reconciler's answer is Unknown). Commit your "
        "own work inside `with transaction.atomic():` (docs/work.md \"Execution\")."
    )


class PassInsideTransaction(WorkError):
    code = "DS286"
    next_action = (
        "A Work pass runs its own transactions (each permit commits before its executor runs, "
        "each outcome before the next claim): call process_work_pass outside "
        "transaction.atomic() and with autocommit on -- not from a view under ATOMIC_REQUESTS "
        "nor inside a task's transaction. Nothing was claimed (docs/work.md \"Execution\")."
    )


# ---------------------------------------------------------------- DS3xx security
class SecurityError(DurableError):
    code = "DS300"


class InvalidScope(SecurityError):
    code = "DS301"
    next_action = (
        "Pass a scope id of 1-200 characters, not only whitespace, without control, format or "
        "separator characters (docs/security.md \"Identifiers\")."
    )


class WrongRole(SecurityError):
    code = "DS302"
    next_action = (
        "Grant the migration owner membership in durable_runtime (durable_status "
        "--roles)."
    )


class AccessDenied(SecurityError):
    code = "DS303"
    next_action = "Compare the grants with `manage.py durable_status --roles` and apply the recipe."


class RolesMissing(SecurityError):
    code = "DS304"
    next_action = "Create the NOLOGIN roles with the recipe of `manage.py durable_status --roles`."


class ScopeLost(SecurityError):
    code = "DS305"
    next_action = "A savepoint rollback undid the scope setting: open a new scoped block."


class ScopeNotFound(SecurityError):
    code = "DS306"
    next_action = (
        "Check the scope id: a scope exists once something was written into it (or "
        "operations.provisioning.provision_scope created it); reads never create one."
    )


class NotStoreOwner(SecurityError):
    """The database user may act as the store's roles but is not the migration owner, and the
    call needs the owner: the routed entry of the runners (``durable_schedule_enter_routed``)
    is the owner's alone (docs/security.md "Roles")."""

    code = "DS308"
    next_action = (
        "Run the runners (process_schedules, process_work) as the migration owner, the Django "
        "database user that ran `manage.py migrate`; a login that is only a member of "
        "durable_runtime may enqueue and read, not process claimed rows (docs/security.md "
        "\"Roles\")."
    )


class CommandStoppedByDatabase(DurableError):
    """An operator command (durable_prune, durable_partitions, durable_recover, sync_schedules)
    met a database error it does not retry: a lock or statement timeout, a lost connection, a
    missing privilege. Outside the DS3xx security family on purpose: its cause is named by the
    SQLSTATE in the message, which may or may not be a privilege."""

    code = "DS307"
    next_action = (
        "The command stopped at the database error named in the message (SQLSTATE, statement); "
        "what it committed before that is kept and the message says what it was. Fix the cause "
        "(a session holding locks: pg_locks; a low statement_timeout or lock_timeout; the "
        "database away; a missing grant: durable_status --roles) and run the command again: "
        "each of these commands is safe to re-run (docs/operations.md \"Operator commands and "
        "database errors\")."
    )


# ---------------------------------------------------------------- DS4xx operations
class OperationsError(DurableError):
    code = "DS400"


def alias_of(cur) -> str | None:
    """The DATABASES alias a Django cursor is on (for an error's ``using`` context), None for a
    bare psycopg cursor."""
    alias = getattr(getattr(cur, "db", None), "alias", None)
    return alias if isinstance(alias, str) else None


def _name_the_migrate_command(error: DurableError, template: str) -> None:
    """A plain `migrate` migrates "default" only and leaves a store on another alias as it is:
    when the error knows its alias (context ``using``), its next action names the command that
    migrates that one (checks.migrate_command)."""
    using = error.context.get("using")
    if isinstance(using, str):
        from durable_schedule.checks import migrate_command

        error.next_action = template.format(migrate=migrate_command(using))


class SchemaBelowFloor(OperationsError):
    code = "DS401"
    next_action = "Run `manage.py migrate` before starting this version of durable_schedule."

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message, **context)
        _name_the_migrate_command(
            self, "Run `{migrate}` before starting this version of durable_schedule.")


class SchemaMissing(OperationsError):
    code = "DS402"
    next_action = "Run `manage.py migrate` to create the durable_schedule store."

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message, **context)
        _name_the_migrate_command(self, "Run `{migrate}` to create the durable_schedule store.")


class TransientDatabaseError(OperationsError):
    code = "DS403"
    retriable = True
    next_action = "Retry after rollback; the runner does this 3 times with backoff."


class InvalidLease(OperationsError):
    code = "DS404"
    next_action = (
        "Lease owner: the identifier rule (docs/security.md \"Identifiers\"); lease: a plain "
        "duration (no month or day part) > 0 and <= 10 minutes."
    )


class RetriesExhausted(OperationsError):
    code = "DS405"
    next_action = "The database kept failing; check connectivity and restart the runner."


class InvalidArgument(OperationsError):
    code = "DS406"
    next_action = "Fix the argument named in the message."


class PartitionMaintenanceFailed(OperationsError):
    code = "DS408"
    next_action = "Run `manage.py durable_partitions` as the migration owner."


class ForwardOnlyStore(OperationsError, IrreversibleError):
    """Raised when a migration of this package is reversed; it is also Django's
    ``IrreversibleError``, so ``migrate`` stops the way it does for any irreversible migration."""

    code = "DS409"
    next_action = (
        "The store is forward-only: nothing was changed. To go back, restore a backup taken "
        "before the migration, then `manage.py durable_recover --bump-epoch`."
    )


class ScopeRequired(InvalidArgument, TypeError):
    """A required argument is missing: the scope (or, when the call is ambiguous, the argument
    the message names). A TypeError, as Python's own error for a missing argument is."""

    code = "DS410"
    next_action = ("Pass the scope, or set DURABLE_SCHEDULE['DEFAULT_SCOPE'] in a single-tenant "
                   "project (docs/getting-started.md).")


class InvalidDefaultScope(OperationsError, ValueError):
    """Raised by the settings check (``durable_schedule.E005``) for a bad DEFAULT_SCOPE."""

    code = "DS411"
    next_action = ("Set DURABLE_SCHEDULE['DEFAULT_SCOPE'] to None or to a scope id: 1-200 "
                   "characters, not only whitespace, no control, format or separator characters, "
                   "no surrounding spaces (docs/security.md \"Identifiers\").")


class InvalidHeartbeat(OperationsError):
    code = "DS425"
    next_action = ("A runner heartbeat was refused (bad field or a runner id of another process):"
                   " restart the runner; it takes a fresh runner id.")


class StoreUnreachable(OperationsError):
    code = "DS426"
    next_action = ("Check DATABASES / DATABASE_URL, the network and the pooler; durable_status "
                   "exits 2 until the store answers.")


class InvalidRetention(OperationsError):
    code = "DS427"
    next_action = ("Give --older-than as a whole number with a unit m, h, d or w (30d, 12h, "
                   "90m), at least 1h and at most 365000d, and --batch between 1 and 10000 "
                   "(docs/operations.md \"Retention\").")


class PartitionArchiveRefused(OperationsError):
    code = "DS428"
    next_action = ("Archive only months before the current one, and drop only partitions whose "
                   "transcript (.jsonl + .sha256) was written and verified.")


class InvalidProbeTimeout(OperationsError):
    code = "DS440"
    next_action = ("Give durable_status --timeout as 0 (no bound) or a finite number of seconds "
                   "up to 2147483 (PostgreSQL's longest lock and statement timeout); nothing was "
                   "read (docs/operations.md \"Health\").")


class TransactionAborted(OperationsError):
    """A call inside a caller's ``transaction.atomic()`` whose transaction already failed: an
    earlier statement raised (PostgreSQL answers 25P02 "current transaction is aborted" to
    everything until the rollback, or Django marked the block for rollback)."""

    code = "DS441"
    next_action = (
        "The caller's transaction already failed (an earlier statement in the same "
        "transaction.atomic() block raised) and nothing was written: roll back (leave the "
        "atomic block) and retry the call in a new transaction; to carry on after a statement "
        "that may fail, run that statement in its own nested transaction.atomic() (a "
        "savepoint) (docs/work.md \"Accepting Work\")."
    )


class InvalidPruneMargin(OperationsError):
    code = "DS442"
    next_action = ("Give durable_prune --margin as a whole number with a unit m, h, d or w "
                   "(2d, 12h), at least 1m and at most 365000d; nothing was changed "
                   "(docs/operations.md \"Retention\").")


class InvalidPruneRescan(OperationsError):
    code = "DS443"
    next_action = ("Give durable_prune --rescan alone (it reads every scope in full) or "
                   "--margin alone; nothing was changed (docs/operations.md \"Retention\").")


class MetricsUnavailable(OperationsError):
    code = "DS429"
    next_action = "Install the metrics extra: pip install 'durable-schedule[metrics]'."


class MetricsPortUnavailable(OperationsError):
    code = "DS445"
    next_action = ("Give every --loop runner process on a host its own "
                   "DURABLE_SCHEDULE['METRICS_PORT'] (a free port from 1024 up), or unset it; "
                   "nothing was claimed (docs/operations.md \"Metrics\").")


class ServerChanged(OperationsError):
    code = "DS446"
    next_action = ("The runner reconnected to another database than the one it served (another "
                   "system identifier or database): check DATABASES / DNS / the pooler; after a "
                   "restore run `manage.py durable_recover --bump-epoch`, then restart the "
                   "runners (docs/operations.md \"Recovery after a restore\").")


class TimeZoneSupportOff(OperationsError):
    """``settings.USE_TZ`` is False: Django's connection then reads every ``timestamptz`` as a
    naive local time, so the store's instants could not be compared or returned as UTC."""

    code = "DS450"
    next_action = ("Set USE_TZ = True in the project's settings (Django's default since 5.0): "
                   "durable_schedule stores and returns aware UTC datetimes; nothing was "
                   "written (docs/getting-started.md \"Settings\").")


class PgtriggerNotInstalled(OperationsError, ImproperlyConfigured):
    """``"pgtrigger"`` is missing from INSTALLED_APPS: the store's models declare their
    append-only triggers in ``Meta.triggers``, which only django-pgtrigger's app teaches Django
    (without it, Django's own error is "'class Meta' got invalid attribute(s): triggers")."""

    code = "DS451"
    next_action = ("Add \"pgtrigger\" to INSTALLED_APPS next to \"durable_schedule\" "
                   "(docs/getting-started.md \"Settings\"); it installs the store's append-only "
                   "triggers.")


class UnsupportedDatabase(OperationsError):
    """The store's alias is not PostgreSQL 15 or newer (SQLite, the default of a new project,
    or an older server): the store is row-level security, SQL functions and triggers that only
    PostgreSQL 15+ runs. Reported by the system check ``durable_schedule.E452``."""

    code = "DS452"
    next_action = ("Point DATABASES (the alias DURABLE_SCHEDULE['DATABASE'] names) at "
                   "PostgreSQL 15 or newer with ENGINE 'django.db.backends.postgresql' "
                   "(docs/getting-started.md \"Settings\").")


class PoolerDropsPreparedStatements(OperationsError):
    code = "DS415"
    next_action = (
        "A transaction-mode connection pooler cannot keep prepared statements: set "
        "DURABLE_SCHEDULE['PREPARE_STATEMENTS'] = False, or give PgBouncer >= 1.21 "
        "max_prepared_statements (docs/operations.md \"Prepared statements and connection "
        "poolers\")."
    )


def all_error_classes() -> list[type[DurableError]]:
    """Every concrete error class, for the catalogue test and docs."""
    seen: list[type[DurableError]] = []
    stack: list[type[DurableError]] = [DurableError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen
