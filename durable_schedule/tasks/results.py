"""Work as Django ``TaskResult`` (docs/tasks.md "Status mapping").

The Work states stay the truth; Django's four statuses are a projection of them:

==================  ===========  ==========================================================
Work state          status       why
==================  ===========  ==========================================================
pending             READY        accepted, waiting for its due time or for a retry
running             RUNNING      an attempt holds the lease
succeeded           SUCCESSFUL   the executor (or a reconciler's Applied proof) finished it
failed              FAILED       attempts ran out; ``errors`` holds what each attempt raised
expired             FAILED       the deadline, circuit or max-elapsed window closed first
canceled            FAILED       an operator canceled it (``work.cancel``)
suspended           FAILED       it will not run again without an operator (reconcile said
                                 Unknown, or no worker knows its definition); after
                                 ``work.record_proof``/``work.resume`` it moves on
==================  ===========  ==========================================================

A FAILED result always ends its ``errors`` with why it failed: for ``failed`` the last
attempt's exception; for ``expired``, ``canceled`` and ``suspended`` -- which no attempt raised,
and which may come before any attempt ran -- one more entry whose class is ``TaskExpired``,
``TaskCanceled`` or ``TaskSuspended`` below and whose text is the terminal event's detail.

``worker_ids`` are the lease owners of the admitted attempts in order, so ``attempts`` (and
``TaskContext.attempt``) count admitted attempts -- the runtime's attempt number.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from datetime import datetime
from typing import Any

from django.utils import timezone

from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import scoped
from durable_schedule.tasks.compat import (
    InvalidTask,
    Task,
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultStatus,
)
from durable_schedule.work import codec
from durable_schedule.work.failures import exception_facts
from durable_schedule.work.inspection import WorkInfo, _info
from durable_schedule.work.rows import (
    CANCELED,
    EXPIRED,
    FAILED,
    PENDING,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
)

log = logging.getLogger("durable_schedule.tasks")

_QUERIES = "task_queries.sql"
_WORK_QUERIES = "work_queries.sql"

STATUS_OF_STATE = {
    PENDING: TaskResultStatus.READY,
    RUNNING: TaskResultStatus.RUNNING,
    SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    FAILED: TaskResultStatus.FAILED,
    EXPIRED: TaskResultStatus.FAILED,
    CANCELED: TaskResultStatus.FAILED,
    SUSPENDED: TaskResultStatus.FAILED,
}
_OUTCOME_EVENTS = frozenset({"retry_scheduled", FAILED, EXPIRED, CANCELED, SUSPENDED})


class TaskEnded(Exception):  # noqa: N818 - named for the end it reports, never raised
    """Names, in ``TaskResult.errors``, an end no attempt raised. Never raised: Django's
    ``TaskError.exception_class`` resolves to it so ``errors[-1]`` always says why."""


class TaskExpired(TaskEnded):
    """The deadline, attempt-plan circuit or max-elapsed window closed first."""


class TaskCanceled(TaskEnded):
    """An operator canceled the Work (``work.cancel``)."""


class TaskSuspended(TaskEnded):
    """The Work waits for an operator (reconcile said Unknown, or no worker defines it)."""


_END_OF_STATE = {EXPIRED: TaskExpired, CANCELED: TaskCanceled, SUSPENDED: TaskSuspended}
#: The history events that end the Work in each state: a result at or after the deadline ends
#: it ``expired`` through ``late_result_quarantined`` (its detail names the reason), not an
#: ``expired`` event.
_END_EVENTS = {EXPIRED: frozenset({EXPIRED, "late_result_quarantined"}),
               CANCELED: frozenset({CANCELED}), SUSPENDED: frozenset({SUSPENDED})}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DurableTaskContext(TaskContext):
    """Django's TaskContext, plus the Work runtime's context of this attempt (``work``: its
    deadline, ``cancelled`` event, lease and ``renew()``)."""

    work: Any

    @property
    def attempt(self) -> int:
        return self.work.attempt


def read(scope: str, work_id: uuid.UUID, *, using: str | None = None
         ) -> tuple[WorkInfo, list[tuple], tuple[str, int, datetime | None]] | None:
    """The Work row, its attempt history and its (queue, priority, accepted due time), in one
    scoped transaction; None when absent. A read: it never creates the scope (docs/security.md
    "Reads never create scopes")."""
    with scoped(scope, using=using, create=False) as cur:
        cur.execute(query(_WORK_QUERIES, "get"), {"scope_id": scope, "work_id": work_id})
        row = cur.fetchone()
        if row is None:
            return None
        cur.execute(query(_QUERIES, "attempts"), {"scope_id": scope, "work_id": work_id})
        history = cur.fetchall()
        cur.execute(query(_QUERIES, "routing"), {"scope_id": scope, "work_id": work_id})
        routing = cur.fetchone()
    return _info(row), history, routing


def build(task: Task, alias: str, info: WorkInfo, history: list[tuple],
          routing: tuple[str, int, datetime | None] | None = None) -> TaskResult:
    admitted = _attempts_run(history)
    errors = [_task_error(codec.loads(detail).get("error") if isinstance(detail, str)
                          else (detail or {}).get("error"))
              for event, _attempt, _actor, detail, _at in history if event in _OUTCOME_EVENTS]
    errors = [e for e in errors if e is not None]
    if (not errors and isinstance(info.last_error, dict) and "attempt" in info.last_error
            and info.state != SUCCEEDED):
        # Only an attempt's own failure (the runtime stores its attempt number with it):
        # ``errors`` are the errors of attempts (Django's TaskResult), and a suspension
        # (unknown definition, missing reconciler) or a refused admission writes last_error
        # without running one -- resumed Work read READY with that error and no attempt.
        # An end no attempt raised is named by the TaskEnded entry below.
        last = _task_error(info.last_error)
        errors = [last] if last is not None else []
    ended = _end_error(info.state, history)
    if ended is not None:
        errors.append(ended)
    payload = info.payload or {}
    task = _as_enqueued(task, alias, info, routing)
    result = TaskResult(
        task=task,
        id=str(info.work_id),
        status=STATUS_OF_STATE[info.state],
        enqueued_at=info.accepted_at,
        started_at=admitted[0][1] if admitted else None,
        finished_at=_finished_at(info, history),
        last_attempted_at=admitted[-1][1] if admitted else None,
        args=list(payload.get("args", [])),
        kwargs=dict(payload.get("kwargs", {})),
        backend=alias,
        errors=errors,
        worker_ids=[actor for actor, _at in admitted],
    )
    if info.state == SUCCEEDED:
        object.__setattr__(result, "_return_value", info.result)
    return result


def _attempts_run(history: list[tuple]) -> list[tuple[str, datetime]]:
    """(lease owner, admission instant) of each attempt, in order. An admission the worker
    handed back uninvoked (it was stopping, or its local budget ran out before the call) is
    followed by ``not_invoked`` under the same lease, and the runtime takes its attempt number
    back: counting it made ``attempts`` exceed ``TaskContext.attempt`` and showed a READY task
    that never started with a ``started_at``."""
    admitted: list[tuple[str, datetime]] = []
    for event, _attempt, actor, _detail, at in history:
        if event == "admitted":
            admitted.append((actor, at))
        elif event == "not_invoked" and admitted:
            admitted.pop()
    return admitted


def _finished_at(info: WorkInfo, history: list[tuple]) -> datetime | None:
    """The terminal instant; for suspended Work (FAILED, so ``is_finished``, though the row
    keeps no finished_at because an operator may resume it) the latest suspension's. Without
    it a FAILED result had ``finished_at`` None, which no FAILED result of Django's has."""
    if info.finished_at is not None or info.state != SUSPENDED:
        return info.finished_at
    return next((at for event, _a, _actor, _d, at in reversed(history) if event == SUSPENDED),
                None)


def _as_enqueued(task: Task, alias: str, info: WorkInfo,
                 routing: tuple[str, int, datetime | None] | None) -> Task:
    """The task as it was enqueued: ``using(queue_name=, priority=, run_after=)`` and the
    backend that holds the result (what Django's database backend shows, and what
    ``TaskResult.refresh()`` asks). ``run_after`` is the due time fixed at acceptance when it is
    not the acceptance instant itself (Work accepted with no ``run_after`` is due at once)."""
    changes: dict[str, Any] = {}
    if routing is not None:
        queue, priority, accepted_due_at = routing
        if (task.queue_name, task.priority) != (queue, priority):
            changes.update(queue_name=queue, priority=priority)
        run_after = (accepted_due_at if accepted_due_at is not None
                     and accepted_due_at != info.accepted_at else None)
        if run_after != task.run_after:
            changes["run_after"] = run_after
    if task.backend != alias:
        changes["backend"] = alias
    if not changes:
        return task
    try:
        return dataclasses.replace(task, **changes)
    except InvalidTask:
        return task  # e.g. the backend's QUEUES no longer list it: show the task as defined now


def _end_error(state: str, history: list[tuple]) -> TaskError | None:
    """The entry naming an expired/canceled/suspended end, from its latest event's detail."""
    kind = _END_OF_STATE.get(state)
    if kind is None:
        return None
    ends = _END_EVENTS[state]
    detail: Any = next((d for event, _a, _actor, d, _at in reversed(history) if event in ends),
                       None)
    if isinstance(detail, str):
        detail = codec.loads(detail)
    facts = {k: v for k, v in (detail or {}).items()
             if k in ("reason", "cause") and isinstance(v, str)}
    said = ", ".join(f"{k}={v}" for k, v in sorted(facts.items()))
    path = f"{kind.__module__}.{kind.__qualname__}"
    return TaskError(exception_class_path=path,
                     traceback=f"{path}: the Work is {state}" + (f" ({said})" if said else "")
                     + "\n")


def _task_error(error: Any) -> TaskError | None:
    """A stored error (the runtime's ``last_error`` shape) as Django's TaskError."""
    if not isinstance(error, dict):
        return None
    path = error.get("class")  # module.QualName, as the Work runtime stores a failure
    if not path:
        kind = error.get("type")
        path = kind if kind and "." in kind else f"builtins.{kind}" if kind else (
            "durable_schedule.errors.DurableError")
    text = error.get("traceback") or f"{path}: {error.get('message', '')}\n"
    return TaskError(exception_class_path=path, traceback=text)


def running(task: Task, backend, ctx, payload: dict) -> TaskResult:
    """The TaskResult an executing attempt sees (and the signals carry): read from the store,
    then shown as RUNNING even if the read saw the row just before this attempt's admission."""
    found = read(ctx.scope, ctx.work_id, using=backend.database)
    if found is None:  # pragma: no cover - the runtime holds the row's lease
        raise LookupError(f"Work {ctx.work_id} vanished while running")
    result = build(task, backend.alias, *found)
    worker_ids = list(result.worker_ids)
    if len(worker_ids) < ctx.attempt:
        worker_ids.append(ctx.lease_owner)
    return dataclasses.replace(result, status=TaskResultStatus.RUNNING, worker_ids=worker_ids,
                               finished_at=None)


def context(task_result: TaskResult, ctx) -> DurableTaskContext:
    return DurableTaskContext(task_result=task_result, work=ctx)


def after_attempt(task_result: TaskResult, exc: BaseException | None,
                  value: Any = None, *, late: bool = False) -> TaskResult:
    """The TaskResult ``task_finished`` carries after one attempt (the worker's own clock for
    ``finished_at``: a signal payload, not a stored fact; a failed attempt may still be
    retried, the stored Work says whether). ``late``: the task returned at or after the Work's
    deadline, so the store keeps no success -- it quarantines the value and ends the Work
    ``expired`` -- and the result is FAILED, ending with ``TaskExpired``, as it is read then."""
    if exc is None and late:
        path = f"{TaskExpired.__module__}.{TaskExpired.__qualname__}"
        ended = TaskError(exception_class_path=path,
                          traceback=f"{path}: the Work is {EXPIRED} (the task returned at or "
                                    "after its deadline; its value is quarantined)\n")
        return dataclasses.replace(task_result, status=TaskResultStatus.FAILED,
                                   finished_at=timezone.now(),
                                   errors=[*task_result.errors, ended])
    if exc is None:
        done = dataclasses.replace(task_result, status=TaskResultStatus.SUCCESSFUL,
                                   finished_at=timezone.now())
        object.__setattr__(done, "_return_value", value)
        return done
    # As the runtime stores an attempt's error (work/failures.py): bounded and storable, so a
    # receiver is not handed megabytes of traceback the stored result never holds.
    facts = exception_facts(exc)
    error = TaskError(exception_class_path=facts["class"], traceback=facts["traceback"])
    return dataclasses.replace(task_result, status=TaskResultStatus.FAILED,
                               finished_at=timezone.now(),
                               errors=[*task_result.errors, error])


def notify(signal, sender: type, task_result: TaskResult) -> None:
    """Send ``task_enqueued`` or ``task_finished`` to every receiver, whatever one raises.

    Both report a fact that is already true -- the Work is committed, the attempt has ended --
    so a receiver's exception must not change it: with ``send`` a raising ``task_finished``
    receiver turned a task that had returned into a failed attempt, which the retry policy then
    ran again, and after a failure it replaced the task's own exception in ``errors``; a raising
    ``task_enqueued`` receiver made ``enqueue()`` raise for a task that was accepted, inviting
    a second enqueue. Receiver errors are logged (``durable_schedule.tasks``) instead.
    ``task_started`` is sent with plain ``send`` (definitions.py): nothing has run yet, so a
    raising receiver fails that attempt before the task runs.
    """
    for receiver, response in signal.send_robust(sender=sender, task_result=task_result):
        if isinstance(response, Exception):
            log.error("a receiver of a task signal raised; the task's outcome is unchanged: "
                      "receiver=%r task=%s id=%s status=%s", receiver,
                      task_result.task.module_path, task_result.id, task_result.status,
                      exc_info=(type(response), response, response.__traceback__))
