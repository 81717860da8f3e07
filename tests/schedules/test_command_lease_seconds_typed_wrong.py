"""``call_command("process_schedules", lease_seconds=...)`` hands the value over unparsed: one
that is not a number of seconds ("30", True, None's neighbours) is refused with the lease
check's code (DS404) before the database is touched, instead of a ``TypeError`` from ``abs()``
(docs/operations.md: every argument is checked before the first pass)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.schedules.conftest import leave_transaction_forms


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["30", True, b"30", [30]])
def test_command__a_lease_that_is_not_a_number_is_refused_with_its_code(
        clock, monkeypatch, value):
    from durable_schedule.management.commands import process_schedules as command

    touched = []
    monkeypatch.setattr(command, "check_prepared_statements", lambda: touched.append(1))
    with pytest.raises(CommandError, match="DS404: "):
        try:
            call_command("process_schedules", stdout=StringIO(), lease_seconds=value)
        finally:
            leave_transaction_forms()
    assert touched == []
