"""Issue 11 item 1: both claim functions check the lease as it is APPLIED (now + lease against
now, with the clock seam's time and the session TimeZone), not as an interval comparison that
counts every month as 30 days and every day as 24 hours."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule.errors import InvalidLease
from durable_schedule.processor.dispatcher import validate_lease
from tests.pgroles import DISPATCHER, RUNTIME, become, refused
from tests.store.seed import seed_scope

pytestmark = pytest.mark.django_db

CLAIMS = {
    "schedule": ("claim_schedule_dispatch", DISPATCHER, "durable_schedule_dispatch"),
    "work": ("claim_work_dispatch", RUNTIME, "durable_work_dispatch"),
}

# (clock, session TimeZone, lease, applied lease in seconds or None when refused)
CASES = [
    # February (28 days): Feb 10 + 1 mon - 30 days = Feb 8: negative, refused.
    ("2031-02-10 12:00+00", "UTC", "1 mon -30 days 5 min", None),
    # March (31 days): the observation, 1 day 5 min: refused.
    ("2031-03-10 12:00+00", "UTC", "1 mon -30 days 5 min", None),
    # April (30 days): the calendar parts cancel, 5 minutes apply: accepted.
    ("2031-04-10 12:00+00", "UTC", "1 mon -30 days 5 min", 300),
    # The mirror image: 2 days 5 min from March 10, already expired from January 10.
    ("2031-03-10 12:00+00", "UTC", "-1 mon 30 days 5 min", None),
    ("2031-01-10 12:00+00", "UTC", "-1 mon 30 days 5 min", None),
    ("2031-05-10 12:00+00", "UTC", "-1 mon 30 days 5 min", 300),
    # The session TimeZone decides which month the arithmetic runs in: May 1 02:00 UTC is
    # April 30 22:00 in New York, where + 1 mon - 30 days is 5 minutes (April has 30 days);
    # in UTC it is May (31 days): 1 day 5 min, refused.
    ("2031-05-01 02:00+00", "America/New_York", "1 mon -30 days 5 min", 300),
    ("2031-05-01 02:00+00", "UTC", "1 mon -30 days 5 min", None),
    # DST change of the TimeZone (Europe/Berlin springs forward 2031-03-30 01:00 UTC): that
    # local day lasts 23 hours, so '1 day -23 hours 55 min' applies as -55 min; it falls back
    # 2031-10-26 01:00 UTC (25 hours): 1 h 5 min. On an ordinary day it is 5 minutes (wait:
    # 24 h - 23 h 55 min), in UTC always.
    ("2031-03-30 00:30+00", "Europe/Berlin", "1 day -23 hours -55 min", None),
    ("2031-10-26 00:30+00", "Europe/Berlin", "1 day -23 hours -50 min", None),
    ("2031-03-20 00:30+00", "Europe/Berlin", "1 day -23 hours -55 min", 300),
    ("2031-03-30 00:30+00", "UTC", "1 day -23 hours -55 min", 300),
    # Plain intervals keep their meaning at every instant.
    ("2031-02-28 23:59:59+00", "Europe/Berlin", "10 minutes", 600),
    ("2031-02-28 23:59:59+00", "Europe/Berlin", "10 minutes 0.000001 seconds", None),
    ("2031-02-28 23:59:59+00", "Asia/Kolkata", "0.000001 seconds", 0.000001),
]


def _set_clock(cur, when: str) -> None:
    cur.execute("reset role")
    cur.execute(
        "create or replace function durable_schedule_clock(kind text default 'clock')"
        f" returns timestamptz language sql volatile as $$ select '{when}'::timestamptz $$"
    )


def _rows(cur, table):
    cur.execute("reset role")
    cur.execute(f"select dispatch_id, due_at, lease_owner, lease_expires_at, lease_generation,"
                f" dispatch_revision from {table} order by dispatch_id")
    return cur.fetchall()


@pytest.mark.parametrize("queue", sorted(CLAIMS))
@pytest.mark.parametrize("clock, tz, lease, applied", CASES)
def test_claim__checks_the_applied_lease(pg, queue, clock, tz, lease, applied):
    function, role, table = CLAIMS[queue]
    cur = pg.cursor()
    seed_scope(cur, "tenant-a")
    _set_clock(cur, clock)
    before = _rows(cur, table)
    become(cur, role)
    cur.execute("select set_config('TimeZone', %s, true)", (tz,))
    statement = f"select * from {function}('worker-1', %s::interval, 10)"
    if applied is None:
        err = refused(pg, statement, (lease,))
        assert err is not None and "DS404" in str(err) and err.sqlstate == "22023", err
        assert "apply" in str(err)
        assert _rows(cur, table) == before  # nothing changed
        return
    cur.execute(statement, (lease,))
    assert len(cur.fetchall()) == 1
    cur.execute("reset role")
    cur.execute(f"select extract(epoch from lease_expires_at - %s::timestamptz),"
                f" lease_expires_at = due_at, lease_owner from {table}", (clock,))
    seconds, same, owner = cur.fetchone()
    assert float(seconds) == pytest.approx(applied) and same and owner == "worker-1"


def test_python_lease_check__a_timedelta_has_no_calendar_parts_so_nominal_is_applied(pg):
    # The Python layer (processor.dispatcher.validate_lease, the Work runtime's lease seconds)
    # takes a timedelta or seconds: PostgreSQL receives an interval with no month or day part,
    # whose applied length is the nominal one at every instant and in every TimeZone.
    owner, lease = validate_lease("worker-1", timedelta(days=1, minutes=-1435))
    assert lease == timedelta(minutes=5)
    cur = pg.cursor()
    cur.execute("select set_config('TimeZone', 'Europe/Berlin', true)")
    cur.execute("select extract(month from %s::interval), extract(day from %s::interval),"
                " extract(epoch from '2031-03-30 00:30+00'::timestamptz + %s::interval"
                "   - '2031-03-30 00:30+00'::timestamptz)", (lease, lease, lease))
    assert [float(v) for v in cur.fetchone()] == [0, 0, 300]
    for bad in (timedelta(0), timedelta(minutes=10, microseconds=1), timedelta(days=-1)):
        with pytest.raises(InvalidLease):
            validate_lease("worker-1", bad)
