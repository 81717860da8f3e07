"""``schedules.occurrences(newest_first=...)`` takes True or False only: read as its
truthiness, ``newest_first="no"`` paged backwards (docs/schedules.md "Reading occurrences and
produced Work"); now DS406, like every other paging argument."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import InvalidArgument
from tests.schedules.conftest import MINUTE, SCOPE, T0, TEN, create, run_pass

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("bad", ["no", 1, 0, None])
def test_occurrences__newest_first_that_is_not_a_bool_is_refused(clock, target, bad):
    create("s", schedules.Every(TEN, anchor=T0), target)
    run_pass(clock, T0 + TEN + MINUTE)
    with pytest.raises(InvalidArgument) as caught:
        schedules.occurrences(SCOPE, "s", newest_first=bad)
    assert caught.value.code == "DS406" and caught.value.context["field"] == "newest_first"
    assert len(schedules.occurrences(SCOPE, "s", newest_first=True)) == 1
