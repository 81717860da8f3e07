"""A task's version is a Work version (docs/tasks.md "Options"): 1-200 characters, no control,
format or separator characters, no surrounding spaces (DS115, docs/security.md "Identifiers").

Before, only its type was checked: ``@options(version=" v1")`` (or ``"v\\n1"``, or 300
characters) passed ``validate_task`` and ``using()``, and every ``enqueue`` (and
``tasks.target()``) then failed with ``InvalidIdentifier`` instead of Django's ``InvalidTask``;
the backend-wide ``VERSION`` and a ``TASK_OPTIONS`` version were accepted when the backend was
built, so the settings error surfaced at the first enqueue of each task.
"""

from __future__ import annotations

import pytest
from demo import tasks as demo

from durable_schedule import tasks
from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.tasks import DurableBackend
from durable_schedule.tasks.compat import InvalidTask
from tests.work.conftest import rows

pytestmark = pytest.mark.django_db(transaction=True)

BAD_VERSIONS = [" v1", "v1 ", "v\n1", "v\x001", "x" * 201]


def build(options):
    return DurableBackend("checked", {"BACKEND": "durable_schedule.tasks.DurableBackend",
                                      "OPTIONS": options})


@pytest.mark.parametrize("version", BAD_VERSIONS)
def test_options__a_version_that_is_no_work_version_is_invalid_task(committed_clock, version):
    with pytest.raises(InvalidTask, match="version"):
        tasks.options(version=version)(demo.add)
    assert rows("SELECT 1 FROM durable_work") == []


@pytest.mark.parametrize("version", BAD_VERSIONS)
def test_backend__a_bad_version_option_is_ds243_when_built(version):
    with pytest.raises(InvalidTaskOptions, match="VERSION"):
        build({"VERSION": version})
    with pytest.raises(InvalidTaskOptions, match="version"):
        build({"TASK_OPTIONS": {"demo.tasks.add": {"version": version}}})


def test_options__a_work_version_is_accepted(committed_clock):
    result = tasks.options(version="release-2.1")(demo.add).enqueue(1, 2)
    assert rows("SELECT work_version FROM durable_work WHERE work_id = %s",
                [result.id]) == [("release-2.1",)]
