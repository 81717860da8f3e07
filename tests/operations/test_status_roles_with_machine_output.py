"""``durable_status --json`` is one JSON document and ``--metrics`` one Prometheus exposition in
every case (docs/operations.md "Health"); ``--roles`` prints SQL text, so combined with either
it is refused with DS406 before anything is printed instead of prefixing the document with
the recipe (which no JSON or Prometheus parser then read)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("machine", ["--json", "--metrics"])
def test_roles_with_machine_output_is_refused_before_anything_is_printed(machine):
    out = StringIO()
    with pytest.raises(CommandError, match=r"^DS406: .*--roles"):
        call_command("durable_status", "--roles", machine, stdout=out)
    assert out.getvalue() == ""


def test_roles_alone_still_prints_the_recipe_then_the_report():
    out = StringIO()
    try:
        call_command("durable_status", "--roles", stdout=out)
    except SystemExit as exc:  # the test store may need an operator (exit 1), never broken
        assert exc.code == 1
    assert out.getvalue().startswith("CREATE ROLE durable_runtime")
    assert "schema " in out.getvalue()
