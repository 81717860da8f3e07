"""The fingerprint's shared-part fast path hashes exactly the bytes of ``canonical_bytes`` (the
reference encoding, pinned by tests/evaluation/test_fingerprint.py): same digest, same schema,
same refusals, for every combination of the facts it reuses."""

from __future__ import annotations

import enum
import hashlib
import itertools
from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule.errors import InvalidArgument, PlannedWorkWithDueTime
from durable_schedule.evaluation.fingerprint import canonical_bytes, fingerprint
from durable_schedule.evaluation.policy import (
    AttemptPlan,
    ExecutionDeadline,
    ExecutionPolicy,
    RetryPolicy,
)

MIN = timedelta(minutes=1)
A = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
PLAN = AttemptPlan("attempt-plan-v1", (0 * MIN, 5 * MIN, 20 * MIN), 60 * MIN)
POLICIES = [
    None,
    ExecutionPolicy(RetryPolicy()),
    ExecutionPolicy(RetryPolicy(maximum_attempts=3, backoff_algorithm="fixed-v1")),
    ExecutionPolicy.for_attempt_plan(RetryPolicy(maximum_attempts=3), PLAN),
]


def reference(**facts):
    schema, data = canonical_bytes(**facts)
    return schema, hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("policy", "deadline", "due_at", "names", "payload", "safety"),
    list(itertools.product(
        POLICIES,
        [None, A + 90 * MIN, ExecutionDeadline(A + 5 * MIN)],
        [None, A + MIN],
        [("send", "v1"), ("é-send ✓", "2026.1")],
        [b"{}", b'{"a":[1,2.5,"x"]}', "ü".encode()],
        ["idempotent", "reconcile_before_retry"],
    )))
def test_fingerprint__fast_path_equals_the_reference_bytes(policy, deadline, due_at, names,
                                                          payload, safety):
    facts = dict(work_name=names[0], work_version=names[1], payload_bytes=payload,
                 provider_safety=safety, policy=policy, deadline=deadline, due_at=due_at)
    if policy is not None and policy.plan is not None and due_at is not None:
        with pytest.raises(PlannedWorkWithDueTime):
            fingerprint(**facts)
        with pytest.raises(PlannedWorkWithDueTime):
            canonical_bytes(**facts)
        return
    # twice: the second call reads the shared parts the first one stored
    for _ in range(2):
        fp = fingerprint(**facts)
        assert (fp.schema, fp.digest) == reference(**facts)


def test_fingerprint__requests_differing_only_in_a_shared_part_keep_distinct_digests():
    base = dict(work_name="send", work_version="v1", payload_bytes=b"{}",
                provider_safety="idempotent", deadline=None, due_at=None)
    digests = {fingerprint(**base, policy=p).digest for p in POLICIES}
    digests |= {fingerprint(**{**base, "work_version": "v2"}, policy=None).digest,
                fingerprint(**{**base, "provider_safety": "reconcile_before_retry"},
                            policy=None).digest}
    assert len(digests) == len(POLICIES) + 2


def test_fingerprint__non_plain_string_facts_take_the_reference_path():
    class Safety(enum.StrEnum):
        IDEMPOTENT = "idempotent"

    facts = dict(work_name="send", work_version="v1", payload_bytes=bytearray(b"{}"),
                 provider_safety=Safety.IDEMPOTENT, policy=POLICIES[1], deadline=None,
                 due_at=None)
    fp = fingerprint(**facts)
    assert (fp.schema, fp.digest) == reference(**facts)
    assert fp == fingerprint(**{**facts, "payload_bytes": b"{}", "provider_safety": "idempotent"})


def test_fingerprint__fast_path_refuses_what_the_reference_refuses():
    with pytest.raises(InvalidArgument, match="work_name is not encodable"):
        fingerprint(work_name="bad\ud800", work_version="v1", payload_bytes=b"{}",
                    provider_safety="idempotent", policy=None, deadline=None, due_at=None)


class _SpelledInt(int):
    """Equal to and hashing like a plain int, but printing otherwise."""

    def __str__(self) -> str:
        return f"{int(self)}.0"


class _ShoutingStr(str):
    """Equal to and hashing like a plain str, but encoding otherwise."""

    def encode(self, *args, **kwargs) -> bytes:
        return str.encode(self.upper(), *args, **kwargs)


def _odd_policies():
    odd_retry = RetryPolicy(maximum_attempts=_SpelledInt(3),
                            backoff_algorithm=_ShoutingStr("fixed-v1"))
    odd_plan = AttemptPlan(_ShoutingStr("attempt-plan-v1"), PLAN.offsets, PLAN.circuit)
    return [
        (ExecutionPolicy(odd_retry),
         ExecutionPolicy(RetryPolicy(maximum_attempts=3, backoff_algorithm="fixed-v1"))),
        (ExecutionPolicy.for_attempt_plan(RetryPolicy(maximum_attempts=_SpelledInt(3)), odd_plan),
         ExecutionPolicy.for_attempt_plan(RetryPolicy(maximum_attempts=3), PLAN)),
    ]


@pytest.mark.parametrize(("odd", "plain"), _odd_policies())
@pytest.mark.parametrize("odd_first", [True, False])
def test_fingerprint__policy_equal_to_a_cached_one_hashes_the_same_bytes(odd, plain, odd_first):
    # An int or str subclass in a policy field compares and hashes equal to the plain value,
    # so the shared-part cache cannot tell them apart: the policy stores the plain value, and
    # both encodings (cached or not, whichever came first) are the plain value's bytes.
    assert odd == plain and hash(odd) == hash(plain)
    facts = dict(work_name="send-odd", work_version="v1", payload_bytes=b"{}",
                 provider_safety="idempotent", deadline=None, due_at=None)
    order = [odd, plain] if odd_first else [plain, odd]
    digests = [fingerprint(policy=p, **facts) for p in order]
    references = [reference(policy=p, **facts) for p in order]
    assert [(f.schema, f.digest) for f in digests] == references
    assert references[0] == references[1]
    assert type(odd.retry.maximum_attempts) is int
    assert type(odd.retry.backoff_algorithm) is str
    assert odd.plan is None or type(odd.plan.version) is str
