"""store/timestamps.py: the runtime cursor's timestamptz loader gives exactly what Django's
loader gives (same instant, same tzinfo, same wall time and fold, same ISO text), whatever the
session's time zone, for random instants across the range PostgreSQL and Python share."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.db.backends.postgresql.psycopg_any import register_tzloader

from durable_schedule.store import timestamps
from durable_schedule.store.transactions import _cursor

pytestmark = pytest.mark.django_db

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe",
         "America/St_Johns", "Pacific/Chatham", "Africa/Monrovia", "Europe/Amsterdam"]


def instants(seed: int) -> list[datetime]:
    rng = random.Random(seed)
    lo, hi = datetime(1, 1, 3, tzinfo=UTC), datetime(9999, 12, 29, tzinfo=UTC)
    span = int((hi - lo).total_seconds())
    picked = [lo + timedelta(seconds=rng.randrange(span), microseconds=rng.randrange(10**6))
              for _ in range(300)]
    # Around the DST changes of 2026 in Europe and America (folds and gaps), whole seconds,
    # trailing zeros in the fraction, and the local mean time offsets before 1900.
    edges = [datetime(2026, 3, 29, 0, 59, 59, 999999, tzinfo=UTC),
             datetime(2026, 10, 25, 0, 30, tzinfo=UTC), datetime(2026, 10, 25, 1, 30, tzinfo=UTC),
             datetime(2026, 11, 1, 5, 30, 0, 100000, tzinfo=UTC),
             datetime(1850, 6, 1, 12, 0, 0, 10, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC)]
    return picked + edges


def test_loader__needs_psycopg_c_to_exist():
    assert (timestamps.loader_for(UTC) is None) == (timestamps.native_loader() is None)


@pytest.mark.parametrize("zone", ZONES)
def test_loader__equals_djangos_in_every_session_zone(zone):
    if timestamps.native_loader() is None:
        pytest.skip("psycopg's C implementation is not installed: Django's loader is used")
    values = instants(len(zone))
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("select set_config('TimeZone', %s, true)", [zone])
        ours = _cursor(connection)
        django_cursor = connection.connection.cursor()
        register_tzloader(connection.timezone, django_cursor)  # Django's own loader
        fast = timestamps.loader_for(connection.timezone)
        assert ours.cursor.adapters.get_loader(timestamps.TIMESTAMPTZ_OID, 0) is fast
        assert django_cursor.adapters.get_loader(timestamps.TIMESTAMPTZ_OID, 0) is not fast
        query = "select v from unnest(%s::timestamptz[]) with ordinality u(v, n) order by n"
        ours.execute(query, [values])
        got = [row[0] for row in ours.fetchall()]
        django_cursor.execute(query, [values])
        want = [row[0] for row in django_cursor.fetchall()]
    assert len(got) == len(want) == len(values)
    for a, b in zip(got, want, strict=True):
        assert (a, a.tzinfo, a.replace(tzinfo=None), a.fold, a.isoformat()) == \
            (b, b.tzinfo, b.replace(tzinfo=None), b.fold, b.isoformat())


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_loader__repeated_values_equal_djangos(zone):
    # The loader remembers its last text and value: runs of one instant, alternations and
    # repeats after other values all load as Django's loader loads them.
    if timestamps.native_loader() is None:
        pytest.skip("psycopg's C implementation is not installed: Django's loader is used")
    some = instants(7)[:40]
    values = [v for v in some for _ in range(3)] + some + some[::-1] + [some[0], some[1]] * 5
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("select set_config('TimeZone', %s, true)", [zone])
        ours = _cursor(connection)
        django_cursor = connection.connection.cursor()
        register_tzloader(connection.timezone, django_cursor)
        query = "select v from unnest(%s::timestamptz[]) with ordinality u(v, n) order by n"
        for _ in range(2):  # the second statement starts with the first one's last value
            ours.execute(query, [values])
            got = [row[0] for row in ours.fetchall()]
            django_cursor.execute(query, [values])
            want = [row[0] for row in django_cursor.fetchall()]
            assert len(got) == len(want) == len(values)
            for a, b in zip(got, want, strict=True):
                assert (a, a.tzinfo, a.replace(tzinfo=None), a.fold, a.isoformat()) == \
                    (b, b.tzinfo, b.replace(tzinfo=None), b.fold, b.isoformat())


def test_loader__a_repeat_is_the_value_of_a_fresh_parse():
    native = timestamps.native_loader()
    if native is None:
        pytest.skip("psycopg's C implementation is not installed: Django's loader is used")
    with transaction.atomic():
        _cursor(connection)  # a connection, with the session's time zone
        pgconn = connection.connection
        loader = timestamps.loader_for(UTC)(timestamps.TIMESTAMPTZ_OID, pgconn)
        texts = [b"2026-12-02 14:00:00.5+00", b"2026-12-02 14:00:00.5+00",
                 b"2026-12-02 14:00:00.500001+00", b"2026-12-02 14:00:00.5+00",
                 b"1970-01-01 00:00:00+00"]
        for text in texts:
            for data in (text, memoryview(text), bytearray(text)):
                fresh = native(timestamps.TIMESTAMPTZ_OID, pgconn).load(text).replace(tzinfo=UTC)
                got = loader.load(data)
                assert (got, got.tzinfo, got.fold) == (fresh, fresh.tzinfo, fresh.fold)
        # what is remembered is a copy of the text, not a view of psycopg's result buffer
        buffer = bytearray(b"2026-12-02 14:00:01+00")
        first = loader.load(memoryview(buffer))
        buffer[18] = ord("2")
        assert loader.load(memoryview(buffer)) == first + timedelta(seconds=1)
