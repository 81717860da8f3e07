"""The batched pass's client-side encodings give exactly the values of the plain forms they
replace: ``rows_json`` (the rows of a multi-row statement, encoded without the encoder's
cycle bookkeeping) is the text ``json.dumps`` writes with it, for any JSON tree of the kinds
the rows carry, instants and uuids included."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from durable_schedule.processor.batch_work import _plain, rows_json

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
    | st.uuids()
    | st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-3))]))
)
TREES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None)
@given(rows=st.lists(st.dictionaries(st.text(max_size=12), TREES, max_size=8), max_size=6))
def test_rows_json__is_the_text_json_dumps_writes(rows):
    assert rows_json(rows) == json.dumps(rows, ensure_ascii=False, allow_nan=False, default=_plain)


def test_rows_json__instants_and_uuids_as_text_values_nested_as_they_are():
    work_id = uuid.UUID("f31ef62a-1262-590b-9ba1-890badd5485f")
    row = {
        "at": datetime(2030, 1, 1, 1, tzinfo=UTC),
        "id": work_id,
        "detail": {"link": {"work_id": str(work_id), "created": True}, "é": ["\u2028"]},
    }
    assert json.loads(rows_json([row])) == [
        {
            "at": "2030-01-01T01:00:00+00:00",
            "id": str(work_id),
            "detail": {"link": {"work_id": str(work_id), "created": True}, "é": ["\u2028"]},
        }
    ]
