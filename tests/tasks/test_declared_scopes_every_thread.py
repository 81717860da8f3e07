"""``get_result(id)`` looks in the scopes tasks declare in code (``scope`` options) from every
thread (docs/tasks.md "Scopes").

Django keeps one backend instance per thread, and the declared scopes were an attribute of the
instance, filled when a task was validated -- at import, in the importing thread. In another
thread (a threaded WSGI server's request threads, a worker's pool) ``get_result`` of a
fixed-scope task's result answered ``TaskResultDoesNotExist`` for the id ``enqueue()`` had
just returned.
"""

from __future__ import annotations

import threading

import pytest
from demo import tasks as demo
from django.db import connections

from durable_schedule.tasks.compat import TaskResultStatus

pytestmark = pytest.mark.django_db(transaction=True)


def in_another_thread(fn):
    box: list = []

    def run() -> None:
        try:
            box.append(fn())
        except Exception as exc:  # noqa: BLE001 -- the test reads it
            box.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    return box[0]


def test_get_result__a_fixed_scope_tasks_result_is_found_from_another_thread(committed_clock):
    result = demo.fixed_scope_report.enqueue(1)
    got = in_another_thread(lambda: demo.fixed_scope_report.get_result(result.id))
    assert not isinstance(got, Exception), got
    assert got.id == result.id and got.status == TaskResultStatus.READY


def test_refresh__from_another_thread_sees_the_fixed_scope(committed_clock):
    result = demo.fixed_scope_report.enqueue(1)
    assert in_another_thread(result.refresh) is None
