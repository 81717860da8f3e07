"""Which scope a task is enqueued into and whose results a read may see (docs/tasks.md "Scopes").

Django's task API has no tenant argument, so the scope comes from, in order: the task's own
``scope`` option (a fixed scope declared in code), the innermost ``with tasks.scope(...)`` block
of the calling thread or coroutine, then the backend's ``OPTIONS["SCOPE"]`` (a single-tenant
project's default). ``get_result(id)`` looks in the ambient scope (the block, else the default)
and in the scopes that tasks declared in code: a result id of any other scope is answered
``TaskResultDoesNotExist``, exactly like an id that does not exist (row-level security makes the
two indistinguishable, and the backend does not try to tell them apart).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from durable_schedule.store.transactions import validate_scope_id

_AMBIENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "durable_schedule_task_scope", default=None)


@contextlib.contextmanager
def scope(scope_id: str) -> Iterator[str]:
    """Enqueue into and read results of ``scope_id`` inside this block (threads and
    coroutines each see their own block)."""
    token = _AMBIENT.set(validate_scope_id(scope_id))
    try:
        yield scope_id
    finally:
        _AMBIENT.reset(token)


def ambient() -> str | None:
    return _AMBIENT.get()
