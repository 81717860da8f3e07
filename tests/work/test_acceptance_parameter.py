"""The acceptance parameter built with shared members encoded once per call decodes to the same
items as the reference dict form (``acceptance._item``); the per-request shortcuts (the default
codec's single normalization, the remembered valid names) refuse what they refused before."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from durable_schedule.errors import InvalidIdentifier, PayloadNotEncodable
from durable_schedule.evaluation.policy import AttemptPlan, ExecutionPolicy, RetryPolicy
from durable_schedule.work import acceptance
from durable_schedule.work.enqueue import WorkRequest

MIN = timedelta(minutes=1)
A = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
PLANNED = ExecutionPolicy.for_attempt_plan(
    RetryPolicy(maximum_attempts=2), AttemptPlan("attempt-plan-v1", (0 * MIN, 5 * MIN), 10 * MIN))


def request(i: int, **changes) -> WorkRequest:
    fields = dict(command_id=f'imp"ort-{i}\\', idempotency_key="rôw ✓", work_name="t.import",
                  work_version="v1", payload={"row": i, "text": 'a"b\\c\né', "z": [1, 2.5]},
                  provider_safety="idempotent")
    fields.update(changes)
    return WorkRequest(**fields)


def decoded(prepared) -> list[dict]:
    """The complete items of the parameter: the array form as it is; the object form (several
    items) with each item's shared set merged back in, as the acceptance reads it."""
    parameter = json.loads(prepared.parameter)
    if isinstance(parameter, list):
        return parameter
    assert set(parameter) == {"shared", "items"}
    out = []
    for item in parameter["items"]:
        index = item.pop("shared")
        assert type(index) is int and 0 <= index < len(parameter["shared"])
        out.append({**item, **parameter["shared"][index]})
    return out


def test_parameter__decodes_to_the_reference_items():
    explicit = uuid.uuid4()
    requests = [
        request(0),
        request(1, policy=ExecutionPolicy(RetryPolicy())),
        request(2, policy=PLANNED, deadline=A + 60 * MIN),
        request(3, due_at=A + MIN, queue="mail", priority=-7),
        request(4, work_id=explicit),
        request(5),  # shares the members of item 0
        request(6, work_name="t.other", work_version="v9",
                provider_safety="reconcile_before_retry"),
        request(7, payload=None),
    ]
    sources = [None, 11, None, 2**40, None, None, None, 3]
    prepared = acceptance.prepare("scope-a", requests, sources)
    got = decoded(prepared)
    want = [acceptance._item(i, r, s) for i, (r, s) in enumerate(prepared.items)]
    assert len(got) == len(want) == len(requests)
    for g, w in zip(got, want, strict=True):
        assert uuid.UUID(g.pop("work_id")).version == 4 or g["explicit"]
        w.pop("work_id")
        assert g == w
    assert got[4]["explicit"] is True
    assert json.loads(prepared.parameter)["items"][4]["work_id"] == str(explicit)


def test_parameter__several_items_send_each_shared_set_once_one_item_the_array_form():
    requests = [request(i, **({"queue": "mail"} if i % 3 == 0 else {})) for i in range(9)]
    parameter = json.loads(acceptance.prepare("scope-a", requests).parameter)
    # Two distinct sets (queue "mail", the default queue), in order of first use.
    assert [s["queue_name"] for s in parameter["shared"]] == ["mail", "default"]
    assert [i["shared"] for i in parameter["items"]] == [0, 1, 1, 0, 1, 1, 0, 1, 1]
    for item in parameter["items"]:
        assert "work_name" not in item and "retry_policy" not in item
    (single,) = json.loads(acceptance.prepare("scope-a", [request(0)]).parameter)
    assert single["work_name"] == "t.import" and "shared" not in single


def test_parameter__random_work_ids_differ_per_item():
    prepared = acceptance.prepare("scope-a", [request(i) for i in range(50)])
    assert len({item["work_id"] for item in decoded(prepared)}) == 50


def test_request__the_default_codec_normalizes_once_and_still_refuses(define):
    d = define("t.codec.once")
    payload = {"b": (1, 2), "a": {"x": [3]}}
    req = d.request(command="c", idempotency_key="k", payload=payload)
    payload["a"]["x"].append(4)  # the request holds a detached copy
    assert req.payload == {"a": {"x": [3]}, "b": [1, 2]}
    with pytest.raises(PayloadNotEncodable) as raised:
        d.request(command="c", idempotency_key="k", payload={"bad": float("nan")})
    assert raised.value.code == "DS209"


def test_request__a_remembered_name_does_not_excuse_a_bad_one():
    request(0)  # "t.import" and "v1" are now remembered as valid
    for _ in range(2):
        with pytest.raises(InvalidIdentifier) as raised:
            request(0, work_name=" t.import")
        assert raised.value.code == "DS115"
    with pytest.raises(InvalidIdentifier):
        request(0, queue="bad\x00queue")



def test_parameter__shared_members_remembered_across_calls_match_the_reference():
    # The shared members are remembered across calls (acceptance._SHARED): every call, in any
    # order, with the cache full, cleared or holding other sets, decodes to the reference.
    variants = [
        {}, {"policy": ExecutionPolicy(RetryPolicy(maximum_attempts=3))},
        {"policy": ExecutionPolicy(RetryPolicy(maximum_attempts=4))},
        {"policy": PLANNED, "deadline": A + 60 * MIN}, {"deadline": A + 61 * MIN},
        {"due_at": A + MIN}, {"due_at": A + 2 * MIN}, {"queue": "mail"},
        {"queue": "mail", "priority": 5}, {"priority": -5},
        {"provider_safety": "reconcile_before_retry"}, {"work_version": "v2"},
    ]
    acceptance._SHARED.clear()
    for rounds in range(3):
        for n, changes in enumerate(variants * 2):
            prepared = acceptance.prepare("scope-a", [request(n, **changes)])
            (got,) = decoded(prepared)
            want = acceptance._item(0, prepared.items[0][0], None)
            got.pop("work_id"), want.pop("work_id")
            assert got == want, (rounds, changes)
        if rounds == 1:  # fill the cache past its bound: it is cleared, answers stay right
            for i in range(acceptance._SHARED_MAX + 3):
                acceptance.prepare("scope-a", [request(i, due_at=A + i * MIN)])
            assert len(acceptance._SHARED) <= acceptance._SHARED_MAX


def test_parameter__random_ids_are_version_4_uuids_in_canonical_text():
    ids = acceptance._random_ids(2000)
    assert len(set(ids)) == 2000
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # lower-case hex, 8-4-4-4-12
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
    assert acceptance._random_ids(0) == []


def test_parameter__neighbours_sharing_objects_or_differing_in_one_member_match_the_reference():
    # A run of requests built from the very same objects reuses the previous item's shared set;
    # a neighbour differing in any one shared member (or in an equal but distinct object, such
    # as the same instant written in another offset) takes its own, as the reference says.
    policy = ExecutionPolicy(RetryPolicy(maximum_attempts=3))
    deadline, due = A + 60 * MIN, A + MIN
    same = dict(policy=policy, deadline=deadline, due_at=due, queue="mail", priority=3)
    one_off = [{"work_name": "t.other"}, {"work_version": "v2"},
               {"provider_safety": "reconcile_before_retry"},
               {"policy": ExecutionPolicy(RetryPolicy(maximum_attempts=4))}, {"policy": None},
               {"deadline": deadline + MIN}, {"deadline": None},
               {"deadline": deadline.astimezone(timezone(timedelta(hours=2)))},
               {"due_at": due + MIN}, {"due_at": None}, {"queue": "default"}, {"priority": 4}]
    requests = []
    for i, change in enumerate(one_off):
        requests += [request(3 * i, **same), request(3 * i + 1, **same),
                     request(3 * i + 2, **{**same, **change})]
    requests.append(request(999, **same))
    prepared = acceptance.prepare("scope-a", requests)
    got = decoded(prepared)
    want = [acceptance._item(i, r, s) for i, (r, s) in enumerate(prepared.items)]
    for g, w in zip(got, want, strict=True):
        g.pop("work_id"), w.pop("work_id")
        assert g == w
    sets = [item["shared"] for item in json.loads(prepared.parameter)["items"]]
    assert sets[0] == sets[1] == sets[-1] and sets[2] != sets[0]
