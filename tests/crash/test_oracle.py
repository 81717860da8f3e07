"""The crash suite's oracle agrees with the documented contracts it re-implements: the Work
identity derived from an occurrence identity, and the nominal instants of a spec. If one of these
fails, either the oracle is wrong or the product broke a promise (a retry across a release must
derive the same Work id; instants are ``anchor + k·interval``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.evaluation.timeline import instants_in, spec_to_json
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.conftest import T0
from tests.crash.invariants import expected_link, nominal_instants

pytestmark = pytest.mark.crash

MINUTE = timedelta(minutes=1)


@pytest.mark.parametrize("schedule_id", ["nightly", "a:b:c", "é" * 10, "x" * 190])
@pytest.mark.parametrize("kind", ["nominal", "recovery", "coalesced"])
def test_oracle__derives_the_work_identity_the_bridge_derives(schedule_id, kind):
    first = T0 + 7 * MINUTE + timedelta(microseconds=5)
    link = derive_link(OccurrenceIdentity("tenant-7", schedule_id, 3, kind, first))
    assert expected_link("tenant-7", schedule_id, 3, kind, first) == (
        link.work_id, link.command, link.idempotency_key)


@pytest.mark.parametrize(("spec", "expected"), [
    (schedules.Every(10 * MINUTE), [T0 + 10 * MINUTE, T0 + 20 * MINUTE, T0 + 30 * MINUTE]),
    (schedules.Every(10 * MINUTE, anchor=T0 + 3 * MINUTE),
     [T0 + 3 * MINUTE, T0 + 13 * MINUTE, T0 + 23 * MINUTE]),
    (schedules.Every(10 * MINUTE, anchor=T0 - 37 * MINUTE),
     [T0 + 3 * MINUTE, T0 + 13 * MINUTE, T0 + 23 * MINUTE]),
    (schedules.After(25 * MINUTE), [T0 + 25 * MINUTE]),
    (schedules.At(T0 + 31 * MINUTE), []),
    (schedules.At(T0 + 30 * MINUTE), [T0 + 30 * MINUTE]),
])
def test_oracle__nominal_instants_follow_the_spec(spec, expected):
    kind = type(spec).__name__.lower()
    got = nominal_instants(kind, spec_to_json(spec), T0, T0 + 30 * MINUTE)
    assert got == expected
    product = instants_in(spec, T0, T0, T0 + 30 * MINUTE)
    if expected:
        assert (product.first, product.last, product.count) == (
            expected[0], expected[-1], len(expected))
    else:
        assert product is None
