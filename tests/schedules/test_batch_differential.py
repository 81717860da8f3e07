"""A batch of 1 and a batch of 100 store the same rows (docs/architecture.md "One batched pass"):
random sets of schedules (Every, At, After, Cron; every overlap and misfire policy; bounds,
jitter; paused, deleted, ended and used-up schedules) in two scopes, the same lifecycle changes
and Work completions applied to both, the same passes; one scope's claims processed one
transaction each, the other's in batches. Every stored occurrence, Work, dispatch row and
history row must be the same in both."""

from __future__ import annotations

import os
import random
from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule import schedules
from durable_schedule.processor.processor import PassCounts, _Pass
from tests.schedules.conftest import (
    MINUTE,
    OWNER,
    SCOPE,
    T0,
    create,
    leave_transaction_forms,
    rows,
    set_work_state,
    take_claims,
)
from tests.schedules.test_batch import snapshot

pytestmark = pytest.mark.django_db

LEASE = timedelta(seconds=30)


def _spec(rng: random.Random):
    kind = rng.choice(["every", "every", "every", "at", "after", "cron"])
    if kind == "every":
        return schedules.Every(rng.choice([5, 10, 15, 30]) * MINUTE)
    if kind == "at":
        return schedules.At(T0 + rng.randint(1, 120) * MINUTE)
    if kind == "after":
        return schedules.After(rng.randint(1, 120) * MINUTE)
    return schedules.Cron(rng.choice(["*/15 * * * *", "5,35 * * * *", "0 * * * *"]), "UTC")


def _options(rng: random.Random, spec) -> dict:
    options = {"overlap": rng.choice(["queue_one", "skip", "buffer_all", "allow_all"]),
               "misfire": rng.choice(["run_once", "skip"])}
    if rng.random() < 0.25:
        options["max_runs"] = rng.randint(1, 3)
    if isinstance(spec, schedules.At | schedules.After):
        return options
    start = T0
    if rng.random() < 0.15:
        start = options["start_at"] = T0 + rng.randint(5, 60) * MINUTE
    if rng.random() < 0.2:
        options["end_at"] = start + rng.randint(61, 150) * MINUTE
    if isinstance(spec, schedules.Every) and rng.random() < 0.25:
        options["jitter"] = timedelta(seconds=rng.randint(1, 120))
    return options


def _pass(clock, when, per_batch: int) -> tuple:
    clock.set(when)
    claims = take_claims(lease=LEASE, max_rows=1000)
    counts = PassCounts()
    run = _Pass(OWNER, per_batch, None, counts, LEASE)
    try:
        run.process(claims)
    finally:
        leave_transaction_forms()
    return (sorted((o.schedule_id, o.action, o.materialized_kind, o.completed, o.reason,
                    o.first, o.last) for o in counts.outcomes),
            None if run.failure is None else (type(run.failure).__name__,
                                              getattr(run.failure, "code", None)))


def _finish_some(rng: random.Random) -> None:
    live = rows("select w.work_id from durable_work w join durable_schedule_occurrence o"
                " on o.scope_id = w.scope_id and o.id = w.source_occurrence_id"
                " where w.scope_id = %s and w.state not in"
                " ('succeeded', 'failed', 'cancelled', 'dead')"
                " order by o.schedule_id, o.first_nominal_utc, o.kind", (SCOPE,))
    for (work_id,) in live:
        roll = rng.random()
        state = "succeeded" if roll < 0.5 else "running" if roll < 0.65 else None
        if state is not None:
            set_work_state(work_id, state, SCOPE)


def _lifecycle(rng: random.Random, names: list[str]) -> None:
    name = rng.choice(names)
    op = rng.choice(["pause", "resume", "delete", "update", "none", "none"])
    info = schedules.get(SCOPE, name)
    if op == "pause" and info.state == "active":
        schedules.pause(SCOPE, name)
    elif op == "resume" and info.state == "paused":
        schedules.resume(SCOPE, name)
    elif op == "delete" and info.state != "deleted":
        schedules.delete(SCOPE, name)
    elif op == "update" and info.state == "active":
        schedules.update(SCOPE, name, expected_revision=info.revision,
                         overlap=rng.choice(["queue_one", "allow_all"]))


def scenario(clock, target, seed: int, per_batch: int) -> tuple[list, dict]:
    """The seed's schedules and passes with ``per_batch`` schedules per transaction: what
    each pass reported and everything stored, then all of it rolled back."""
    _raw("savepoint differential")
    try:
        clock.set(T0)
        rng = random.Random(seed)
        names = [f"s{i:02d}" for i in range(14)]
        for name in names:
            spec = _spec(rng)
            create(name, spec, target, **_options(rng, spec))
        when = T0
        seen = []
        for step in range(14):
            when = when + rng.choice([1, 5, 10, 17, 40, 75, -3, -30]) * MINUTE + timedelta(
                seconds=rng.randint(0, 59))
            seen.append((step, _pass(clock, when, per_batch)))
            _finish_some(rng)
            if rng.random() < 0.4:
                clock.set(when)
                _lifecycle(rng, names)
        stored = snapshot(SCOPE)
    finally:
        _raw("rollback to savepoint differential")
    return seen, stored


def _raw(sql: str) -> None:
    """A savepoint of its own (a durable block cannot nest in an atomic one, the test's
    transaction excepted): the passes' blocks nest inside it as they do in the test's."""
    with connection.cursor() as cur:
        cur.execute(sql)


@pytest.mark.parametrize("seed", range(int(os.environ.get("DIFFERENTIAL_SEEDS", "12"))))
def test_batch_of_one_and_batch_of_a_hundred__store_identical_rows(clock, target, seed):
    alone_seen, alone = scenario(clock, target, seed, 1)
    batch_seen, batched = scenario(clock, target, seed, 100)
    assert len(alone["work"]) > 2
    for (step, one), (_, hundred) in zip(alone_seen, batch_seen, strict=True):
        assert hundred == one, step
    for part in alone:
        assert batched[part] == alone[part], part
