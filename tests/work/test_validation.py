"""docs/protocol/work.md "Validation and timing rules", each rule alone: enqueue surfaces it with
its code and writes nothing -- through the Python request API and through a stored target's policy
JSON (the Schedule bridge's path). The pure rules themselves are pinned in tests/evaluation."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta

import pytest

from durable_schedule import work
from durable_schedule.errors import DurableError
from durable_schedule.work.enqueue import WorkRequest
from tests.conftest import T0
from tests.work.conftest import MIN, count

pytestmark = pytest.mark.django_db

OFFSETS = tuple(m * MIN for m in (0, 5, 20, 60, 180))
RETRY_ARGS = dict(maximum_attempts=5, maximum_elapsed=timedelta(hours=4),
                  initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))


def retry(**changes) -> work.RetryPolicy:
    return work.RetryPolicy(**{**RETRY_ARGS, **changes})


def plan(offsets=OFFSETS, circuit=240 * MIN, version="attempt-plan-v1") -> work.AttemptPlan:
    return work.AttemptPlan(version, offsets, circuit)


def planned(r=None, p=None) -> work.ExecutionPolicy:
    return work.ExecutionPolicy.for_attempt_plan(r or retry(), p or plan())


def request(**changes) -> WorkRequest:
    fields = dict(command_id="c", idempotency_key="k", work_name="billing.send_invoice",
                  work_version="v1", payload={"order": 1}, provider_safety="idempotent")
    return WorkRequest(**{**fields, **changes})


RULES = [
    ("plan-no-offsets", "DS204", lambda: planned(p=plan(offsets=()))),
    ("plan-257-offsets", "DS204",
     lambda: planned(retry(maximum_attempts=257, maximum_elapsed=timedelta(days=1)),
                     plan(tuple(i * MIN for i in range(257)), 300 * MIN))),
    ("plan-first-offset-not-zero", "DS204", lambda: planned(p=plan((MIN, 5 * MIN)))),
    ("plan-offsets-equal", "DS204", lambda: planned(p=plan((0 * MIN, 5 * MIN, 5 * MIN)))),
    ("plan-offsets-decreasing", "DS204", lambda: planned(p=plan((0 * MIN, 9 * MIN, 5 * MIN)))),
    ("plan-circuit-equals-last-offset", "DS204", lambda: planned(p=plan(circuit=180 * MIN))),
    ("plan-circuit-not-positive", "DS204", lambda: planned(p=plan(circuit=timedelta(0)))),
    ("plan-unknown-version", "DS204", lambda: planned(p=plan(version="attempt-plan-v9"))),
    ("plan-attempts-differ-from-offsets", "DS204",
     lambda: planned(retry(maximum_attempts=4))),
    ("plan-max-elapsed-below-circuit", "DS204",
     lambda: planned(retry(maximum_elapsed=239 * MIN))),
    ("precision-float-offset", "DS206", lambda: planned(p=plan((0, 300.5)))),
    ("precision-float-duration", "DS206", lambda: planned(retry(lease_duration=60.0))),
    ("retry-attempts-below-one", "DS203",
     lambda: work.ExecutionPolicy(retry(maximum_attempts=0))),
    ("retry-duration-not-positive", "DS203",
     lambda: work.ExecutionPolicy(retry(initial_retry_delay=timedelta(0)))),
    ("retry-initial-above-maximum", "DS203",
     lambda: work.ExecutionPolicy(retry(initial_retry_delay=2 * timedelta(hours=1)))),
    ("retry-cadence-not-below-lease", "DS203",
     lambda: work.ExecutionPolicy(retry(renewal_cadence=MIN))),
    ("retry-lease-above-lifetime", "DS203",
     lambda: work.ExecutionPolicy(retry(lease_duration=5 * MIN,
                                        maximum_lease_lifetime=4 * MIN))),
    ("retry-lease-above-ten-minutes", "DS203",
     lambda: work.ExecutionPolicy(retry(lease_duration=11 * MIN,
                                        maximum_lease_lifetime=20 * MIN))),
    ("retry-unknown-backoff", "DS203",
     lambda: work.ExecutionPolicy(retry(backoff_algorithm="jitter-v1"))),
]


@pytest.mark.parametrize("name, code, make_policy", RULES, ids=[r[0] for r in RULES])
def test_enqueue__each_policy_rule_alone_is_refused_with_its_code(clock, name, code,
                                                                  make_policy):
    with pytest.raises(DurableError) as raised:
        work.enqueue("tenant-a", request(policy=make_policy()))
    assert raised.value.code == code
    assert count("durable_work") == 0


VALID_JSON = planned().to_json()

JSON_RULES = [
    ("plan-no-offsets", "DS204", ("plan", "offsets_us"), []),
    ("plan-first-offset-not-zero", "DS204", ("plan", "offsets_us"), [1, 2, 3, 4, 5]),
    ("plan-offsets-equal", "DS204", ("plan", "offsets_us"), [0, 5, 5, 60, 180]),
    ("plan-circuit-equals-last-offset", "DS204", ("plan", "circuit_us"), 180 * 60 * 10**6),
    ("plan-unknown-key", "DS204", ("plan", "jitter"), 1),
    ("plan-attempts-differ-from-offsets", "DS204", ("retry", "maximum_attempts"), 4),
    ("plan-max-elapsed-below-circuit", "DS204", ("retry", "maximum_elapsed_us"), 1),
    ("precision-float-offset", "DS206", ("plan", "offsets_us"), [0, 1.5, 2, 3, 4]),
    ("retry-lease-above-ten-minutes", "DS203", ("retry", "lease_duration_us"), 601 * 10**6),
    ("retry-unknown-backoff", "DS203", ("retry", "backoff_algorithm"), "jitter-v1"),
    ("retry-missing-key", "DS203", ("retry", "renewal_cadence_us"), None),
]


@pytest.mark.parametrize("name, code, path, value", JSON_RULES, ids=[r[0] for r in JSON_RULES])
def test_target_json__each_policy_rule_alone_is_refused_with_its_code(clock, name, code, path,
                                                                      value):
    policy = copy.deepcopy(VALID_JSON)
    if value is None:
        del policy[path[0]][path[1]]
    else:
        policy[path[0]][path[1]] = value
    target = work.WorkTarget("billing.send_invoice", "v1", {"order": 1}, "idempotent",
                             VALID_JSON).to_json()
    target["policy"] = policy
    with pytest.raises(DurableError) as raised:
        stored = work.WorkTarget.from_json(target)
        work.enqueue("tenant-a", stored.to_request(command_id="c", idempotency_key="k",
                                                   work_id=None))
    assert getattr(raised.value, "code", None) == code
    assert count("durable_work") == 0


@pytest.mark.parametrize("changes, code", [
    pytest.param({"deadline": datetime(2030, 1, 1, 12)}, "DS205", id="naive-deadline"),
    pytest.param({"deadline": "2030-01-01T12:00Z"}, "DS205", id="deadline-not-datetime"),
    pytest.param({"policy": planned(), "due_at": T0}, "DS208", id="planned-with-due-time"),
    pytest.param({"due_at": datetime(2030, 1, 1)}, "DS406", id="naive-due-time"),
    pytest.param({"payload": {"x": float("nan")}}, "DS209", id="payload-nan"),
    pytest.param({"payload": {1: "int key"}}, "DS209", id="payload-int-key"),
    pytest.param({"payload": {"x": "nul\x00"}}, "DS209", id="payload-nul"),
    pytest.param({"payload": {"x": object()}}, "DS209", id="payload-object"),
    pytest.param({"payload": "\ud800"}, "DS209", id="payload-lone-surrogate"),
])
def test_enqueue__request_rules_are_refused_with_their_code(clock, changes, code):
    with pytest.raises(DurableError) as raised:
        work.enqueue("tenant-a", request(**changes))
    assert getattr(raised.value, "code", None) == code
    assert count("durable_work") == 0


def test_enqueue__deadline_only_request_keeps_its_initial_due_time(clock):
    accepted = work.enqueue("tenant-a", request(deadline=T0 + 60 * MIN, due_at=T0 + 5 * MIN))
    info = work.get("tenant-a", accepted.work_id)
    assert info.due_at == T0 + 5 * MIN and info.execution.admission_cutoff == T0 + 60 * MIN
