"""docs/work.md "Execution" (a fenced verdict is kept as evidence) and "Inspection": the text
the runtime stores from user code is always what ``jsonb`` can hold and is bounded (a NUL or an
unpaired surrogate written as its backslash escape, a message at most 2,000 characters), and
recording it never fails. A reconciler's ``Unknown(reason)`` answered after its lease was lost
goes into the ``reconciliation_fenced`` history row as ``verdict_reason``: a reason with a NUL
failed that transaction with a database error (DataError out of the pass, the evidence lost)
and a huge one was stored whole in the append-only history."""

from __future__ import annotations

import pytest

from durable_schedule import work
from durable_schedule.work.failures import MESSAGE_LIMIT
from tests.work.conftest import OWNER, run_pass, work_row
from tests.work.test_review12e_fenced_reconciliation import _detail, crashed, fenced_rows

pytestmark = pytest.mark.django_db
__all__ = ["crashed"]  # the fixture, imported for this module's tests


@pytest.mark.parametrize(("reason", "stored"), [
    ("provider said \x00 nothing", "provider said \\x00 nothing"),
    ("half a pair \udcff", "half a pair \\udcff"),
    ("x" * (3 * MESSAGE_LIMIT), "x" * MESSAGE_LIMIT),
])
def test_fenced_unknown__its_reason_is_stored_escaped_and_bounded(crashed, reason, stored):
    work_id, state = crashed
    state["late"] = work.Unknown(reason)
    counts = run_pass()
    assert counts.lost == 1 and counts.admitted == 0
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")
    [(actor, _, detail)] = fenced_rows(work_id)
    detail = _detail(detail)
    assert actor == OWNER and detail["verdict"] == "unknown"
    assert detail["verdict_reason"] == stored


class Opaque:
    def __str__(self):
        raise RuntimeError("no text")


def test_fenced_unknown__a_reason_that_is_no_text_is_named_as_text(crashed):
    work_id, state = crashed
    state["late"] = work.Unknown(Opaque())
    assert run_pass().lost == 1
    [(_, _, detail)] = fenced_rows(work_id)
    assert _detail(detail)["verdict_reason"] == "<Opaque whose str() raised RuntimeError>"
