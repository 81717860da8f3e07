"""A task that returns a coroutine (a plain wrapper around an ``async def``, or an ``async def``
returning another coroutine) fails its attempt with DS260 ``ExecutorReturnedAwaitable``, as a
Work executor does (docs/work.md "Execution"), and the coroutine is closed (docs/tasks.md
"Arguments and return values").

Before, the attempt failed with ``TypeError: ... return value is coroutine`` -- no word of the
cause or the fix -- and the coroutine was left to the garbage collector, which warned "coroutine
... was never awaited" later, far from the task.
"""

from __future__ import annotations

import gc
import warnings

import pytest
from demo import tasks as demo

from durable_schedule.errors import ExecutorReturnedAwaitable
from tests.work.conftest import run_pass

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("task", [demo.returns_a_coroutine, demo.async_returns_a_coroutine])
def test_task_returning_a_coroutine__fails_with_ds260_and_closes_it(committed_clock, task):
    result = task.enqueue(1, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_pass()
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    failed = task.get_result(result.id)
    assert failed.errors[-1].exception_class is ExecutorReturnedAwaitable
    assert "DS260" in failed.errors[-1].traceback
