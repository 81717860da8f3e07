"""``schedules.sync``'s flags are bools (docs/api.md): a string or number was read as its
truthiness, so ``prune="no"`` pruned and ``allow_empty="false"`` let a prune with nothing
declared delete every schedule sync manages. Each is DS406 now, and nothing changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule import schedules, work
from durable_schedule.errors import InvalidArgument
from durable_schedule.schedules import declared

pytestmark = pytest.mark.django_db(transaction=True)

ANCHOR = datetime(2030, 1, 1, tzinfo=UTC)


def decl(schedule_id: str) -> declared.Declaration:
    work.autodiscover()
    target = work.lookup("demo.touch", "v1").target(payload={})
    return declared.Declaration(
        scope="tenant-a",
        schedule_id=schedule_id,
        spec=schedules.Every(timedelta(hours=1), anchor=ANCHOR),
        target=target,
    )


def managed() -> list[tuple[str, str, int]]:
    return [(i.schedule_id, i.state, i.revision) for i in schedules.list("tenant-a")]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"prune": "no"},
        {"prune": 1},
        {"dry_run": "false"},
        {"dry_run": 0},
        {"adopt": "no"},
        {"prune": True, "allow_empty": "false"},
    ],
    ids=repr,
)
def test_sync__a_flag_that_is_not_a_bool_is_ds406_and_changes_nothing(committed_clock, kwargs):
    declared.sync(declared=[decl("a"), decl("b")])
    before = managed()
    assert [s for s, _, _ in before] == ["a", "b"]
    with pytest.raises(InvalidArgument) as caught:
        # "b" is no longer declared: a prune would delete it; allow_empty with nothing
        # declared would delete both
        declared.sync(declared=[] if "allow_empty" in kwargs else [decl("a")], **kwargs)
    assert caught.value.code == "DS406"
    assert next(iter(kwargs.keys() - {"prune"} or kwargs)) in str(caught.value)
    assert managed() == before


def test_sync__bool_flags_still_work(committed_clock):
    declared.sync(declared=[decl("a"), decl("b")])
    report = declared.sync(declared=[decl("a")], prune=True)
    assert report.pruned == [("tenant-a", "b")]
    assert [s for s, state, _ in managed() if state != "deleted"] == ["a"]
