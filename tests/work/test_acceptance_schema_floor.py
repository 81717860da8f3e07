"""Code of schema 15 against a store below it (deployed before `migrate`, against
docs/compatibility.md's order): several requests are sent in the object form, which schema 14's
acceptance cannot read; the call raises SchemaBelowFloor (DS401, "run migrate") instead of a
bare database error. tests/hardening/test_object_form_review.py pins the store's answer (22023,
"... of a non-array", nothing written) against a real schema 14 store."""

from __future__ import annotations

import pytest
from django.db import DataError

from durable_schedule.errors import SchemaBelowFloor
from durable_schedule.work import acceptance
from durable_schedule.work.enqueue import WorkRequest

#: What schema 14's durable_schedule_accept_work raises for the object form (psycopg's
#: text of the error includes its CONTEXT line).
_OLD_STORE = ("cannot get array length of a non-array\nCONTEXT:  PL/pgSQL function "
              "durable_schedule_accept_work(text,jsonb,boolean) line 29 at IF")


class _Refusing:
    def __init__(self, message: str) -> None:
        self.message = message

    def execute(self, statement, params):
        raise DataError(self.message)


def _request(i: int) -> WorkRequest:
    return WorkRequest(command_id=f"cmd-{i}", idempotency_key="k", work_name="t.job",
                       work_version="v1", payload={"row": i}, provider_safety="idempotent")


def test_send__several_requests_on_a_store_below_schema_15_is_ds401():
    prepared = acceptance.prepare("scope-a", [_request(0), _request(1)])
    with pytest.raises(SchemaBelowFloor) as caught:
        prepared.send(_Refusing(_OLD_STORE), enter=True)
    assert caught.value.code == "DS401"
    assert isinstance(caught.value.__cause__, DataError)


def test_send__other_errors_and_the_array_form_are_raised_as_they_are():
    several = acceptance.prepare("scope-a", [_request(0), _request(1)])
    with pytest.raises(DataError):
        several.send(_Refusing("value too long for type character varying(5)"), enter=True)
    single = acceptance.prepare("scope-a", [_request(0)])
    with pytest.raises(DataError):
        single.send(_Refusing(_OLD_STORE), enter=True)
