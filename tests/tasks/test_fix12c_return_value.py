"""A task that returns a value that is not JSON fails its attempt with a TypeError naming the
return value and the path inside it (docs/tasks.md "Arguments and return values"), not with the
enqueue-time wording about "a task argument" -- the arguments were accepted long before."""

from __future__ import annotations

import importlib
import sys

import demo
import pytest

from durable_schedule.tasks.compat import TaskResultStatus
from tests.tasks.conftest import run_pass

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "demo.fix12c_returns"
SOURCE = """
import decimal
try:
    from django.tasks import task
except ImportError:
    from django_tasks import task
VALUES = {
    "set": lambda: {"rows": [1, {2, 3}]},
    "bytes": lambda: [b"raw"],
    "decimal": lambda: {"total": decimal.Decimal("1.10")},
    "nan": lambda: {"ratio": float("nan")},
    "long": lambda: {"n": 10 ** 5000},
    "key": lambda: {"by_id": {1: "a"}},
}
@task
def returns(kind):
    return VALUES[kind]()
"""


@pytest.fixture
def returns(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "__path__", [*demo.__path__, str(tmp_path)])
    (tmp_path / "fix12c_returns.py").write_text(SOURCE)
    importlib.invalidate_caches()
    yield importlib.import_module(MODULE).returns
    sys.modules.pop(MODULE, None)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("set", "the task's return value is not a JSON value: return value['rows'][1] is set"),
        ("bytes", "the task's return value is not a JSON value: return value[0] is bytes"),
        (
            "decimal",
            "the task's return value is not a JSON value: return value['total'] is Decimal",
        ),
        ("nan", "the task's return value is not a finite number: return value['ratio'] is nan"),
        (
            "long",
            "the task's return value is an integer too long to write as JSON: "
            "return value['n'] is int",
        ),
        (
            "key",
            "the task's return value's dict keys must be strings: return value['by_id'][1] is int",
        ),
    ],
)
def test_return_value__not_json_fails_the_attempt_naming_the_return_value(
    returns, committed_clock, kind, message
):
    # Before the fix the stored error said "a task argument is not a JSON value" (the wording
    # of the enqueue-time check): an operator was sent looking at the arguments.
    result = returns.enqueue(kind)
    run_pass()
    after = returns.get_result(result.id)
    assert after.status == TaskResultStatus.READY  # the retry policy applies, as documented
    assert [e.exception_class_path for e in after.errors] == ["builtins.TypeError"]
    last_line = after.errors[0].traceback.strip().splitlines()[-1]
    assert last_line == f"TypeError: {message}"
    assert "task argument" not in after.errors[0].traceback
