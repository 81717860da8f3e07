"""The Work identity of an occurrence is the same value however it is computed
(docs/protocol/schedules.md rule S1): ``bridge._work_id`` (a per-scope SHA-1 state fed part by
part, the batched pass's path) equals ``uuid5`` over the identity's compact JSON, the module's
definition, for any scope id, schedule id, generation, kind and instant. A retry across a
release must derive the same id, so the derivation is also pinned to a stored value."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import example, given, settings
from hypothesis import strategies as st

from durable_schedule.processor.bridge import (
    WORK_ID_NAMESPACE,
    OccurrenceIdentity,
    _uuid5_of,
    _work_id,
    derive_link,
    work_id_by_definition,
)

# Any text the identifier rule might let through and anything it refuses: quotes, backslashes,
# control and non-BMP characters, which the JSON encoding escapes or keeps raw.
TEXT = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=60)
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=45)),
                         timezone(-timedelta(hours=3, minutes=30))])
INSTANTS = st.builds(lambda d, tz: d.replace(tzinfo=UTC).astimezone(tz),
                     st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9998, 1, 1)),
                     ZONES)


def old_derivation(identity: OccurrenceIdentity) -> uuid.UUID:
    """derive_link's work id as written before the per-scope hash state (f9279d4)."""
    material = json.dumps([identity.scope_id, identity.schedule_id, identity.generation,
                           identity.kind, identity.first_iso],
                          ensure_ascii=False, separators=(",", ":"))
    return uuid.uuid5(WORK_ID_NAMESPACE, material)


@settings(max_examples=1000, deadline=None)
@given(digest=st.binary(min_size=16, max_size=40))
@example(digest=b"\xff" * 20)
@example(digest=b"\x00" * 20)
def test_uuid5_of__is_the_uuid_the_constructor_builds(digest):
    fast, plain = _uuid5_of(digest), uuid.UUID(bytes=digest[:16], version=5)
    assert type(fast) is uuid.UUID
    assert fast == plain and fast.int == plain.int and hash(fast) == hash(plain)
    assert str(fast) == str(plain) and fast.is_safe is plain.is_safe
    assert fast.version == 5 and fast.variant == uuid.RFC_4122
    assert uuid.UUID(str(fast)) == plain


@settings(max_examples=400, deadline=None)
@given(scope_id=TEXT, schedule_id=TEXT, generation=st.integers(min_value=1, max_value=2**31 - 1),
       kind=st.sampled_from(["nominal", "recovery", "coalesced"]), first=INSTANTS)
@example(scope_id='a"\\b', schedule_id="\u2028\x00é𝄞", generation=1, kind="nominal",
         first=datetime(2026, 1, 1, tzinfo=UTC))
def test_work_id__equals_uuid5_over_the_identity_json(scope_id, schedule_id, generation, kind,
                                                       first):
    identity = OccurrenceIdentity(scope_id, schedule_id, generation, kind, first)
    expected = old_derivation(identity)
    assert work_id_by_definition(identity) == expected
    assert _work_id(identity) == expected
    assert derive_link(identity).work_id == expected
    assert derive_link(identity).idempotency_key == f"occurrence:{expected}"
    assert derive_link(identity).as_dict()["work_id"] == str(expected)


def test_work_id__pinned_value_of_a_stored_identity():
    identity = OccurrenceIdentity("tenant-1", "daily-report", 3, "nominal",
                                  datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    assert _work_id(identity) == uuid.UUID("f31ef62a-1262-590b-9ba1-890badd5485f")
