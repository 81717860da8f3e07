"""The backend's ``OPTIONS["SCOPE"]`` is a scope id or absent (docs/tasks.md "Options" and
"Scopes"). An empty one (``os.environ.get("TENANT_SCOPE", "")`` with the variable unset) was
taken as "no SCOPE": the backend fell through to ``DEFAULT_SCOPE`` or ``"default"``, and a
tenant's tasks were accepted into another scope. It is refused with DS243 when the backend is
built, like every other bad OPTIONS value, and so is any other value that is no scope id (it
was DS301, naming no setting); None still means "not given", as for ``DEFAULT_SCOPE``."""

from __future__ import annotations

import pytest

from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.tasks import DurableBackend


def build(options):
    return DurableBackend("tenant", {"BACKEND": "durable_schedule.tasks.DurableBackend",
                                     "OPTIONS": options})


@pytest.mark.parametrize("scope", ["", 0, False, " tenant-7", "a" * 201, 7])
def test_backend__a_scope_option_that_is_no_scope_id_is_ds243(scope):
    with pytest.raises(InvalidTaskOptions, match="DS243") as caught:
        build({"SCOPE": scope})
    assert "SCOPE" in caught.value.message and caught.value.context["got"] == repr(scope)[:200]


def test_backend__scope_none_or_absent_takes_the_default_and_a_scope_id_is_kept():
    assert build({}).default_scope == build({"SCOPE": None}).default_scope
    assert build({"SCOPE": "tenant-7"}).default_scope == "tenant-7"
