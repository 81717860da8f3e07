"""Demo tasks on the durable backend (docs/tasks.md). Tests use them too: each task that has an
effect writes one ``demo_effect`` row per call, so a test can count how often a task really ran.
"""

from __future__ import annotations

import asyncio
import inspect
from datetime import timedelta

from demo.models import Effect
from durable_schedule import tasks, work

try:
    from django.tasks import task
except ImportError:  # Django 5.2 with the django-tasks backport
    from django_tasks import task

#: Django 6.1 forwards extra ``@task`` keyword arguments to the backend's task class; Django 6.0
#: and the backport take none (their ``task()`` has no ``**kwargs``), so ask the signature.
FORWARDS_OPTIONS = any(p.kind is inspect.Parameter.VAR_KEYWORD
                       for p in inspect.signature(task).parameters.values())


@task
def add(a, b):
    return a + b


@task(queue_name="emails", priority=10)
def send_welcome(user_id, *, template="welcome"):
    return {"sent_to": user_id, "template": template}


@task(takes_context=True)
def record(context, key):
    """One Effect row per run, keyed by the task result id (an idempotent no-op to count)."""
    Effect.objects.create(work_id=context.task_result.id, attempt=context.attempt, key=key)
    return context.attempt


@task
def always_fails(message):
    raise ValueError(message)


@task
def enqueue_child(x):
    """Enqueues ``add(x, 1)`` from inside a run and returns the child's result id."""
    return add.enqueue(x, 1).id


@task
def exits(code):
    """Raises SystemExit, as a library calling sys.exit() would: the worker stops."""
    raise SystemExit(code)


@task
def returns_a_set():
    return {1, 2}


@task
async def async_add(a, b):
    await asyncio.sleep(0)
    return a + b


@task
async def async_sleep(seconds):
    await asyncio.sleep(seconds)
    return "woke up"


@task
async def awaits_a_cancelled_future():
    """Its own await is cancelled (as a shared client's shutdown would): not the runtime's."""
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    await future


@tasks.options(deadline_after=timedelta(seconds=1))
@task
async def async_sleep_bounded(seconds):
    """Cancelled by the worker at its absolute deadline, one second after acceptance."""
    await asyncio.sleep(seconds)
    return "woke up"


@tasks.options(deadline_after=timedelta(seconds=1))
@task(takes_context=True)
def returns_after_its_deadline(context, seconds):
    """Returns ``seconds`` after its absolute deadline: moves the database clock seam there
    (tests only), as a task that overran its deadline would find it."""
    from durable_schedule.testing import ControlledClock

    ControlledClock().set(context.work.deadline + timedelta(seconds=seconds))
    return "too late"


@tasks.options(scope="fixed-tenant")
@task
def fixed_scope_report(x):
    """A task with a fixed scope (docs/tasks.md "Scopes")."""
    return x


@tasks.options(safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY, version="v2")
@task(takes_context=True)
def charge(context, order_id, cents):
    Effect.objects.create(work_id=context.task_result.id, attempt=context.attempt,
                          key=f"charge-{order_id}")
    return {"charged": cents}


@tasks.reconciler(charge)
def charge_happened(context, order_id, cents):
    if Effect.objects.filter(work_id=context.task_result.id).exists():
        return work.Applied({"charged": cents})
    return work.NotApplied()


if FORWARDS_OPTIONS:
    @task(version="v3", deadline_after=timedelta(minutes=5))
    def versioned(x):
        """Durable options written in the decorator itself (Django 6.1)."""
        return x


@tasks.options(safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
@task(takes_context=True)
def charge_then_stop(context, order_id):
    """Charges, then (first attempt only) stops the worker before the outcome is recorded, as a
    crash would: the next claim reconciles the lost attempt."""
    Effect.objects.create(work_id=context.task_result.id, attempt=context.attempt,
                          key=f"charge-{order_id}")
    if context.attempt == 1:
        raise SystemExit(3)
    return {"charged": order_id}


@tasks.reconciler(charge_then_stop)
def charge_then_stop_happened(context, order_id):
    if Effect.objects.filter(work_id=context.task_result.id).exists():
        return work.Applied({"charged": order_id})
    return work.NotApplied()


@tasks.options(safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
@task
def stop_unreconcilable(order_id):
    """Stops the worker before its outcome is recorded; its reconciler cannot tell (Unknown)."""
    raise SystemExit(3)


@tasks.reconciler(stop_unreconcilable)
def stop_unreconcilable_unknown(context, order_id):
    return work.Unknown()


@task
def returns_a_coroutine(a, b):
    """A sync task that hands back an async call instead of awaiting it (a plain wrapper)."""
    return async_add.func(a, b)


@task
async def async_returns_a_coroutine(a, b):
    """An async task that returns another coroutine instead of awaiting it."""
    return async_add.func(a, b)
