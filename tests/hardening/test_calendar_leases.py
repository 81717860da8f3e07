"""Issue 11 item 1: both claim functions grant only a lease whose APPLIED length (now + lease
against now, with the clock seam's time and the session TimeZone) is > 0 and <= 10 minutes.

An interval comparison counts every month as 30 days and every day as 24 hours; the addition
the claim performs does not. So a lease with a month or day part is refused at every instant
(its applied length depends on the date and TimeZone, and the check and the claim read the clock
a moment apart: see the last test), and a plain duration applies exactly its nominal length in
February, in a 31-day month, across a DST change and in any session TimeZone."""

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

#: (clock, session TimeZone): February, a 31-day month, a 30-day month, the New York evening
#: that is already May in UTC, and both DST changes of Europe/Berlin in 2031 (spring forward
#: 2031-03-30 01:00 UTC, fall back 2031-10-26 01:00 UTC), one second before each change.
INSTANTS = [
    ("2031-02-10 12:00+00", "UTC"),
    ("2031-03-10 12:00+00", "UTC"),
    ("2031-04-10 12:00+00", "UTC"),
    ("2031-05-01 02:00+00", "America/New_York"),
    ("2031-03-30 00:59:59+00", "Europe/Berlin"),
    ("2031-10-26 00:59:59+00", "Europe/Berlin"),
    ("2031-01-31 23:59:59.999999+00", "Asia/Kolkata"),
]

#: Calendar-valued leases: each compares as <= 10 minutes, and each applies as something else
#: at some instant above (1 day 5 min from March 10; negative in February; -55 min / 1 h 5 min
#: across the DST changes).
CALENDAR = ["1 mon -30 days 5 min", "-1 mon 30 days 5 min", "1 day -23 hours -55 min",
            "1 day -24 hours 5 min", "1 year -365 days 5 min", "-1 day 24 hours 5 min"]

#: Plain durations and their applied length in seconds, the same at every instant.
PLAIN = [("10 minutes", 600), ("5 minutes", 300), ("0.000001 seconds", 0.000001),
         ("23 hours -1379.5 minutes", 30)]


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


def _enter(pg, queue, clock, tz):
    function, role, table = CLAIMS[queue]
    cur = pg.cursor()
    seed_scope(cur, "tenant-a")
    _set_clock(cur, clock)
    before = _rows(cur, table)
    become(cur, role)
    cur.execute("select set_config('TimeZone', %s, true)", (tz,))
    return cur, f"select * from {function}('worker-1', %s::interval, 10)", table, before


@pytest.mark.parametrize("queue", sorted(CLAIMS))
@pytest.mark.parametrize("clock, tz", INSTANTS)
@pytest.mark.parametrize("lease", CALENDAR)
def test_claim__refuses_a_calendar_valued_lease_at_every_instant(pg, queue, clock, tz, lease):
    cur, statement, table, before = _enter(pg, queue, clock, tz)
    err = refused(pg, statement, (lease,))
    assert err is not None and err.sqlstate == "22023", err
    assert "DS404" in str(err) and "no month or day part" in str(err)
    assert _rows(cur, table) == before  # nothing changed


@pytest.mark.parametrize("queue", sorted(CLAIMS))
@pytest.mark.parametrize("clock, tz", INSTANTS)
@pytest.mark.parametrize("lease, applied", PLAIN)
def test_claim__applies_a_plain_lease_exactly_at_every_instant(pg, queue, clock, tz, lease,
                                                                applied):
    cur, statement, table, _ = _enter(pg, queue, clock, tz)
    cur.execute(statement, (lease,))
    assert len(cur.fetchall()) == 1
    cur.execute("reset role")
    cur.execute(f"select extract(epoch from lease_expires_at) - extract(epoch from"
                f" %s::timestamptz), lease_expires_at = due_at, lease_owner from {table}",
                (clock,))
    seconds, same, owner = cur.fetchone()
    assert float(seconds) == pytest.approx(applied, abs=1e-9) and same and owner == "worker-1"


@pytest.mark.parametrize("queue", sorted(CLAIMS))
@pytest.mark.parametrize("lease", ["10 minutes 0.000001 seconds", "0 seconds", "-1 seconds",
                                   "11 minutes", "25 hours"])
def test_claim__refuses_plain_leases_out_of_bounds(pg, queue, lease):
    cur, statement, table, before = _enter(pg, queue, "2031-02-28 23:59:59+00", "Europe/Berlin")
    err = refused(pg, statement, (lease,))
    assert err is not None and "DS404" in str(err) and "10 minutes" in str(err), err
    assert _rows(cur, table) == before


def test_why_one_instant_is_not_enough__a_microsecond_apart_the_same_lease_applies_otherwise(pg):
    # The check and the claim each read the clock; microseconds apart, across a month end, the
    # same calendar-valued lease applies as 5 minutes and then as 1 day 5 minutes.
    cur = pg.cursor()
    cur.execute("set local timezone = 'UTC'")
    cur.execute("select extract(epoch from t + i) - extract(epoch from t)"
                "  from (values ('2031-04-30 23:59:59.999999+00'::timestamptz),"
                "               ('2031-05-01 00:00:00.000001+00'::timestamptz)) v(t),"
                "       (values ('1 mon -30 days 5 min'::interval)) w(i)")
    assert [float(r[0]) for r in cur.fetchall()] == [300, 86700]


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
                "   - '2031-03-30 00:30+00'::timestamptz),"
                " extract(day from make_interval(secs => 600))", (lease, lease, lease))
    assert [float(v) for v in cur.fetchone()] == [0, 0, 300, 0]
    for bad in (timedelta(0), timedelta(minutes=10, microseconds=1), timedelta(days=-1)):
        with pytest.raises(InvalidLease):
            validate_lease("worker-1", bad)
