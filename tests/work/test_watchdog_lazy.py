"""The watchdog thread of an invocation starts lazily (work/executor.py): an invocation that
returns before a fraction of its first duty (renewal or local cancel point) costs no thread; a
longer one gets its watchdog, which renews on the original cadence and is joined on return."""

from __future__ import annotations

import threading
from datetime import timedelta

from durable_schedule.work.executor import WorkContext, run_guarded
from tests.conftest import T0

MIN = timedelta(minutes=1)


def context(renewer, lease=MIN, deadline=None) -> WorkContext:
    return WorkContext(scope="s", work_id="lazy", work_name="n", work_version="v", attempt=1,
                       permit_no=1, deadline=deadline, due_at=T0, admitted_at=T0,
                       lease_owner="o", lease_generation=1, lease_expires_at=T0 + lease,
                       reconciling=False, renewer=renewer)


def watchdogs() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "durable-work-watchdog-lazy"]


def test_short_invocation__starts_no_watchdog_thread():
    ctx = context(lambda c: (T0, T0 + MIN))
    seen = run_guarded(lambda c, p: watchdogs(), ctx, None, heartbeat=True,
                       cadence_seconds=10.0, using="default")
    assert seen == [] and watchdogs() == []
    assert not ctx.cancelled.is_set()


def test_long_invocation__is_renewed_on_the_cadence_and_the_watchdog_is_joined(
        transactional_db):
    renewed = threading.Event()

    def renewer(c):
        renewed.set()
        return T0, T0 + MIN

    ctx = context(renewer)
    got = run_guarded(lambda c, p: renewed.wait(timeout=5), ctx, None, heartbeat=True,
                      cadence_seconds=0.05, using="default")
    assert got is True
    assert watchdogs() == []  # stopped and joined before run_guarded returned
    assert not ctx.cancelled.is_set()


def test_long_invocation__is_cancelled_at_the_local_cancel_point():
    ctx = context(lambda c: (T0, T0 + MIN), lease=timedelta(milliseconds=100))
    got = run_guarded(lambda c, p: c.cancelled.wait(timeout=5), ctx, None, heartbeat=False,
                      cadence_seconds=10.0, using="default")
    assert got is True
