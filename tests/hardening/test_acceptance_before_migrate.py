"""Code of schema 15 deployed before `migrate`, against a store of schema 14.

Schema 15 sends several requests in the object form ({"shared": [...], "items": [...]}), which
the schema-9 acceptance function of a schema-14 store cannot read. The Work runtime refuses
such a store before every claim (DS401); acceptance does not spend a round trip on the check,
so it must turn the old function's refusal into the same clear DS401, with nothing written.
A single request is an array and works on the older store, as it did (floor 12).
The code runs in a child process (`manage.py shell`) against a database migrated to 0014.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.hardening.test_cheaper_triggers import _manage, scratch_store

_SCRIPT = """
from durable_schedule import work
from durable_schedule.errors import DurableError
d = work.define("t.before_migrate", version="v1", safety=work.ProviderSafety.IDEMPOTENT)
try:
    work.enqueue_many("tenant-a", [d.request(command=f"c{i}", idempotency_key="k", payload={})
                                   for i in range(3)])
    print("MANY accepted")
except DurableError as exc:
    print("MANY", exc.code, type(exc.__cause__).__name__)
d.enqueue(scope="tenant-a", command="single", idempotency_key="k", payload={})
print("ONE accepted")
"""


@pytest.mark.django_db
def test_enqueue_many__on_a_schema_14_store_is_ds401_with_nothing_written():
    with scratch_store("ds_bfm_", "0014_cheaper_acceptance") as url:
        done = _manage(url, "shell", "-c", _SCRIPT)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = done.stdout.split()
        assert "MANY DS401 DataError" in " ".join(lines), done.stdout
        assert "ONE accepted" in " ".join(lines), done.stdout
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute("select command_id from durable_work order by command_id")
            assert cur.fetchall() == [("single",)]
            cur.execute("select schema_version from durable_schedule_store")
            assert cur.fetchone() == (14,)
