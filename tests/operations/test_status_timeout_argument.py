"""``durable_status --timeout`` accepts 0 (no bound) or a finite number of seconds up to
PostgreSQL's longest timeout; anything else (NaN, infinity, negative, beyond the server's range)
is refused with DS440 before anything is read or printed. Before, NaN and infinity ended the
command with a traceback and a value beyond the server's range made every read fail, reported
as a store that does not answer (exit 2) (docs/operations.md "Health")."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from durable_schedule.operations.probe import MAX_TIMEOUT_SECONDS

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "value", ["nan", "inf", "-inf", "1e400", "-1", "-0.001", "1e10", str(MAX_TIMEOUT_SECONDS + 1)]
)
@pytest.mark.parametrize("mode", [[], ["--json"], ["--metrics"], ["--roles"]])
def test_bad_timeout__ds440_and_nothing_printed(value, mode):
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("durable_status", *mode, f"--timeout={value}", stdout=out)
    assert str(caught.value).startswith("DS440"), str(caught.value)
    assert "--timeout must be 0 (no bound) or a number of seconds up to 2147483" in str(
        caught.value
    )
    assert out.getvalue() == ""


@pytest.mark.parametrize("value", ["0", "30", str(MAX_TIMEOUT_SECONDS)])
def test_timeout_within_bounds__the_store_answers_with_a_json_report(value):
    out = StringIO()
    try:
        call_command("durable_status", "--json", f"--timeout={value}", stdout=out)
    except SystemExit as exc:  # the test store may need an operator (exit 1), never broken
        assert exc.code == 1
    report = json.loads(out.getvalue())
    assert report["reachable"] is True
    assert not any("DS426" in p for p in report["problems"]), report["problems"]
