"""``declare()`` validates at import time: a cron expression that can never fire (30 February,
31 April, a day-of-month range that misses the n-th weekday it is ANDed with) is refused there
with ``ScheduleNeverFires`` (DS117), as ``create`` refuses it, instead of failing the deploy's
``sync_schedules`` (docs/schedules.md "Cron grammar", "Schedules declared in code")."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import ScheduleNeverFires
from durable_schedule.schedules import declared
from tests.lifecycle.test_declared import touch_target

SCOPE = "tenant-a"


@pytest.mark.parametrize("expression", ["0 0 30 2 *", "0 0 31 4,6,9,11 *",
                                        "0 0 1-7 * SUN#2", "0 0 30W 2 *", "0 0 L-29 2 *"])
def test_declare__refuses_a_cron_expression_without_any_instant(expression):
    schedule_id = "never-" + expression.replace(" ", "_")
    try:
        with pytest.raises(ScheduleNeverFires) as refused:
            declared.declare(schedule_id, schedules.Cron(expression, "Europe/Berlin"),
                             target=touch_target(), scope=SCOPE)
        assert refused.value.code == "DS117"
        assert refused.value.context["expression"] == expression
        assert (SCOPE, schedule_id) not in {d.key for d in declared.declarations()}
    finally:
        declared.forget(SCOPE, schedule_id)


@pytest.mark.parametrize("expression", ["0 0 29 2 *", "0 0 * 2 MON#5", "0 0 31 * *",
                                        "0 0 H 2 *"])
def test_declare__accepts_rare_but_real_cron_expressions(expression):
    schedule_id = "rare-" + expression.replace(" ", "_")
    try:
        decl = declared.declare(schedule_id, schedules.Cron(expression), target=touch_target(),
                                scope=SCOPE)
        assert decl.key in {d.key for d in declared.declarations()}
    finally:
        declared.forget(SCOPE, schedule_id)
